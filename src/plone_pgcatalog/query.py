"""Query translation: a ZCatalog query in, SQL and parameters out.

Owns: the meaning of a catalog query, as ZCatalog's ``Catalog.search``
gives it: which keys restrict (those naming an index's query names; other
keys are ignored silently), sorting (``sort_on``, ``sort_order``,
``sort_limit``) and batching (``b_start``, ``b_size``).  Each index's part
comes from its translator in the registry.

A pure function: no database, no Zope objects beyond the index
definitions.  The security terms (allowedRolesAndUsers, effectiveRange)
are added by the tool before the query arrives here.
"""

from __future__ import annotations

from Acquisition import aq_base
from dataclasses import dataclass
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.registry import json_key
from plone_pgcatalog.paths import path_clause
from Products.ZCatalog.query import IndexQuery
from psycopg import sql


_NOT_A_QUERY = frozenset(
    {"sort_on", "sort_order", "sort_limit", "b_start", "b_size", "show_inactive"}
)


@dataclass(frozen=True)
class SearchSQL:
    """A translated query: rows, their order and the window to return."""

    where: sql.Composable
    params: tuple
    order_by: sql.Composable
    limit: int | None
    offset: int

    def ids_query(self) -> tuple[sql.Composed, tuple]:
        """``SELECT zoid, path[, total]`` for the window of the result."""
        windowed = self.limit is not None or self.offset
        columns = sql.SQL("zoid, path")
        if windowed:
            columns += sql.SQL(", count(*) OVER ()")
        statement = sql.SQL("SELECT {} FROM object_state WHERE {} ORDER BY {}").format(
            columns, self.where, self.order_by
        )
        params = list(self.params)
        if self.limit is not None:
            statement += sql.SQL(" LIMIT %s")
            params.append(self.limit)
        if self.offset:
            statement += sql.SQL(" OFFSET %s")
            params.append(self.offset)
        return statement, tuple(params)


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _reverse(order) -> bool:
    return str(order).lower() in ("reverse", "descending")


def _int(query: dict, key: str, default):
    value = query.get(key, default)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{key}: {value!r} is not an integer") from exc


def query_names(index) -> tuple[str, ...]:
    """The query keys an index answers (``effectiveRange``, ``path``...).

    Looked up on the unwrapped index, as ZCatalog does: an index without
    the method must not acquire one.
    """
    method = getattr(aq_base(index), "getIndexQueryNames", None)
    return tuple(method()) if method is not None else (index.getId(),)


def build_query(query: dict, indexes: dict, site_path: str) -> SearchSQL:
    """Translate ``query`` against the index definitions ``indexes``.

    ``site_path`` confines the result to one site, as each ZCatalog
    catalogs only its own site.
    """
    clauses: list[sql.Composable] = [sql.SQL("idx IS NOT NULL")]
    params: list = []

    site_clause, site_params = path_clause(site_path, -1)
    clauses.append(site_clause)
    params += site_params

    for name, index in indexes.items():
        translator = get_translator(index.meta_type)
        if translator is None:
            continue
        for query_name in query_names(index):
            if query_name not in query or query_name in _NOT_A_QUERY:
                continue
            parsed = IndexQuery(
                query,
                query_name,
                getattr(aq_base(index), "query_options", ("query",)),
                getattr(aq_base(index), "operators", ("or", "and")),
                getattr(aq_base(index), "useOperator", "or"),
            )
            if parsed.keys is None:
                continue
            translated = translator.where(index, parsed)
            if translated is None:
                continue
            clause, values = translated
            clauses.append(sql.SQL("(") + clause + sql.SQL(")"))
            params += values

    order_by, sort_clauses = _order_by(query, indexes)
    clauses += sort_clauses

    b_start = _int(query, "b_start", 0)
    b_size = _int(query, "b_size", None)
    sort_limit = _int(query, "sort_limit", None)
    if b_size is not None:
        limit, offset = b_size, b_start
    else:
        limit, offset = sort_limit, 0
    return SearchSQL(
        where=sql.SQL(" AND ").join(clauses),
        params=tuple(params),
        order_by=order_by,
        limit=limit,
        offset=max(offset, 0),
    )


def _order_by(query: dict, indexes: dict):
    """``ORDER BY`` terms and the clauses that drop rows without sort keys."""
    sort_on = _as_list(query.get("sort_on"))
    orders = _as_list(query.get("sort_order"))
    terms: list[sql.Composable] = []
    must_have: list[sql.Composable] = []
    for position, name in enumerate(sort_on):
        index = indexes.get(name)
        if index is None:
            raise UnknownIndexError(f"Unknown sort_on index: {name!r}")
        translator = get_translator(index.meta_type)
        expressions = translator.sort_expressions(index) if translator else None
        if expressions is None:
            raise UnknownIndexError(
                "The index chosen for sort_on is not capable of being used as "
                f"a sort index: {name!r}"
            )
        # One order for all sort indexes, or one per index (ZCatalog's rule).
        if len(orders) == 1:
            reverse = _reverse(orders[0])
        else:
            reverse = position < len(orders) and _reverse(orders[position])
        direction = sql.SQL(" DESC") if reverse else sql.SQL(" ASC")
        terms += [expression + direction for expression in expressions]
        # ZCatalog leaves out objects that have no value in the sort index.
        must_have.append(json_key(name) + sql.SQL(" IS NOT NULL"))
    terms.append(sql.SQL("zoid"))
    return sql.SQL(", ").join(terms), must_have
