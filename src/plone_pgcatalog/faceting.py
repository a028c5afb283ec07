"""Facet counts: how many results each value of an index has (issue 18).

Owns the meaning of ``portal_catalog.facet_counts(query, facets)``: for
the results the query gives the current user (the tool adds the security
terms, as for ``searchResults``), per facet index the number of results
holding each of its values, each facet counted *without its own
criterion* (disjunctive faceting, as Solr's tag/exclude: the counts of
``portal_type`` show what ticking one more type would add).  So a count
equals ``len(searchResults(query without the facet's keys, facet=value))``
under ZCatalog: the differential tests check exactly that.

A facet is an index name (Field, Keyword, Boolean, UUID: the stored
values are counted) or a mapping (``Facet``): a path index counts the
folders ``depth`` levels below ``root`` (each result in or below one, as
``path={"query": folder, "depth": -1}`` finds it); a DateIndex counts
``ranges``, each a ZCatalog range query added to the facet's query.

Each facet becomes its own translated query (``query.build_query``, kept
by ``translations``; with the transaction's pending changes laid over the
rows, as every search); ``store.search.facet_rows`` counts all of them in
one statement, one round trip.  Sorting and batching do not change
counts and are dropped.

Must not compose SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.paths import path_depth
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.query import query_names
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.query import read_indexes
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.results import query_text_configs
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import search
from plone_pgcatalog.store.columns import many_lists
from plone_pgcatalog.store.columns import ready_column
from plone_pgcatalog.store.layout import nul_free
from plone_pgcatalog.store.overlay import Overlay
from plone_pgcatalog.translations import translations

#: Index types whose values are counted as they are stored.
FACETABLE_TYPES = frozenset({"FieldIndex", "KeywordIndex", "BooleanIndex", "UUIDIndex"})
#: Index types counted per folder at a depth.
PATH_TYPES = frozenset({"ExtendedPathIndex", "PathIndex"})
#: Index types counted in date ranges.
DATE_TYPES = frozenset({"DateIndex"})

#: Keys that order or cut a result: they change no count.
_WINDOW_KEYS = frozenset(
    {
        "sort_on",
        "sort-on",
        "sort_order",
        "sort-order",
        "sort_limit",
        "b_start",
        "b_size",
    }
)
#: What a facet given as a mapping may say.
_SPEC_KEYS = frozenset({"index", "name", "depth", "root", "ranges"})


@dataclass(frozen=True)
class Facet:
    """One facet asked for: the values of an index, the folders at a depth
    (a path index), or date ranges (a DateIndex)."""

    #: its key in the answer
    name: str
    index: object
    #: path facets: levels below ``root``
    depth: int | None = None
    root: str | None = None
    #: date facets: ``(label, ZCatalog range query)``
    ranges: tuple[tuple[str, dict], ...] = ()


def facet_query(query: dict, index) -> dict:
    """``query`` without the criterion of the facet ``index`` (any of its
    query names) and without sorting and batching."""
    own = set(query_names(index))
    return {
        key: value
        for key, value in query.items()
        if key not in own and key not in _WINDOW_KEYS
    }


def _facet_indexes(catalog, facets) -> dict[str, Facet]:
    definitions = catalog.getIndexDefinitions()
    if isinstance(facets, (str, dict)):
        facets = [facets]
    facets = list(facets or ())
    if not facets:
        raise QueryError("facet_counts: no facet given")
    chosen: dict[str, Facet] = {}
    for given in facets:
        facet = _facet(catalog, definitions, given)
        if facet.name in chosen and chosen[facet.name] != facet:
            raise QueryError(
                f"facet {facet.name!r} given twice; name one of them ('name')"
            )
        chosen[facet.name] = facet
    return chosen


def _facet(catalog, definitions: dict, given) -> Facet:
    spec = given if isinstance(given, dict) else {"index": given}
    unknown = sorted(set(map(str, spec)) - _SPEC_KEYS)
    if unknown:
        raise QueryError(
            f"facet {given!r}: unknown key(s) {', '.join(unknown)};"
            f" a facet may say {', '.join(sorted(_SPEC_KEYS))}"
        )
    name = spec.get("index")
    index = definitions.get(name) if isinstance(name, str) else None
    kind = index.meta_type if index is not None else None
    if kind not in FACETABLE_TYPES | PATH_TYPES | DATE_TYPES:
        valid = sorted(
            key
            for key, found in definitions.items()
            if found.meta_type in FACETABLE_TYPES | PATH_TYPES | DATE_TYPES
        )
        problem = (
            "is not an index"
            if index is None
            else f"is a {kind}, which has no facet counts"
        )
        raise QueryError(f"facet {name!r} {problem}; valid facets: {', '.join(valid)}")
    label = spec.get("name", name)
    if not isinstance(label, str) or not label:
        raise QueryError(f"facet {given!r}: 'name' must be a non-empty string")
    if kind in PATH_TYPES:
        return Facet(label, index, *_depth_and_root(catalog, spec))
    if kind in DATE_TYPES:
        return Facet(label, index, ranges=_ranges(name, spec.get("ranges")))
    if any(key in spec for key in ("depth", "root", "ranges")):
        raise QueryError(
            f"facet {name!r}: 'depth', 'root' and 'ranges' are for path and"
            " date indexes"
        )
    return Facet(label, index)


def _depth_and_root(catalog, spec: dict) -> tuple[int, str]:
    name = spec["index"]
    depth = spec.get("depth", 1)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise QueryError(
            f"facet {name!r}: 'depth' must be a whole number of levels, 1 or"
            f" more, not {depth!r}"
        )
    site = catalog.site_path()
    root = spec.get("root", site)
    if isinstance(root, (list, tuple)):
        root = "/".join(root)
    if not isinstance(root, str):
        raise QueryError(f"facet {name!r}: 'root' must be a path, not {root!r}")
    root = root.rstrip("/") or "/"
    if root != site and not root.startswith(site + "/"):
        raise QueryError(
            f"facet {name!r}: 'root' {root!r} is not in the site ({site!r})"
        )
    return depth, nul_free(root)  # as paths are held (``PathSearch.keys``)


def _ranges(name: str, ranges) -> tuple[tuple[str, dict], ...]:
    """``{label: {"min": date, "max": date}}`` as ZCatalog range queries
    (both ends included, as ZCatalog's ``min:max``; either may be left out)."""
    if not isinstance(ranges, dict) or not ranges:
        raise QueryError(
            f"facet {name!r}: a date index is counted in ranges: 'ranges',"
            " {label: {'min': date, 'max': date}, ...}"
        )
    found = []
    for label, bounds in ranges.items():
        ends = (
            {key: bounds[key] for key in ("min", "max") if bounds.get(key) is not None}
            if isinstance(bounds, dict)
            else {}
        )
        if not isinstance(label, str) or not ends or set(bounds) - {"min", "max"}:
            raise QueryError(
                f"facet {name!r}: range {label!r}: {bounds!r} is not"
                " {'min': date, 'max': date} (one of them at least)"
            )
        if len(ends) == 2:
            found.append(
                (label, {"query": (ends["min"], ends["max"]), "range": "min:max"})
            )
        else:
            [(end, value)] = ends.items()
            found.append((label, {"query": value, "range": end}))
    return tuple(found)


def facet_counts(
    catalog, query: dict, facets, include_zero: bool = False
) -> dict[str, dict]:
    """``{facet: {value: count}}`` (see module); values in descending
    count, then value order (date ranges in the order given)."""
    return {
        name: values
        for name, (_, values) in counted(catalog, query, facets, include_zero).items()
    }


#: The terms ``searchResults`` adds to every query (``tool._secured_query``):
#: what the user may see.
SECURITY_TERMS = ("allowedRolesAndUsers", "effectiveRange")


def counted(
    catalog, query: dict, facets, include_zero: bool = False
) -> dict[str, tuple[int, dict]]:
    """``{facet: (matches with a value, {value: count})}``.

    ``include_zero`` lists, with 0, the values (and folders) of what the
    user may see that the query does not find: counted over the security
    terms of ``query`` alone, never the whole index (``uniqueValuesFor``
    would list the words of private items to Anonymous)."""
    chosen = _facet_indexes(catalog, facets)
    visible = {key: query[key] for key in SECURITY_TERMS if key in query}
    # The facets that list the values of ``visible`` (``include_zero``),
    # under names no facet of the caller's has.
    zeros: dict[str, str] = {}
    definitions = catalog.getIndexDefinitions()
    pending = current_pending()
    if pending:
        # The indexes the counts test (the query's) and count (the facets').
        reads = read_indexes(query, definitions) | {
            facet.index.getId() for facet in chosen.values()
        }
        overlay = pending.overlay(reads)
    else:
        overlay = Overlay()
    configs = query_text_configs(query, catalog)
    with connection.reading(catalog) as conn:
        context = QueryContext(
            text_configs=configs,
            columns=connection.ready_columns(catalog),
            site_alone=connection.site_alone(catalog),
            many_lists=many_lists(connection.numbered_lists(catalog)),
            read_apart=frozenset(facet.index.getId() for facet in chosen.values()),
        )

        def plan(facet_query_: dict):
            return translations.translate(
                facet_query_,
                definitions,
                catalog.site_path(),
                context,
                overlay,
                match_all=True,
                snapshot=connection.snapshot_id(catalog),
            )

        counts = []
        for name, facet in chosen.items():
            own = facet_query(query, facet.index)
            key = facet.index.getId()
            kind = getattr(get_translator(facet.index.meta_type), "column_kind", None)
            column = ready_column(context.columns, key, kind)
            if facet.depth is not None:
                counts.append(
                    search.PathFacet(
                        name,
                        plan(own),
                        path_depth(facet.root),
                        facet.depth,
                        path_clause(facet.root, -1),
                        plan(visible) if include_zero else None,
                    )
                )
            elif facet.ranges:
                counts.append(
                    search.RangeFacet(
                        name,
                        key,
                        plan(own),
                        tuple(
                            (label, plan({**own, key: bounds}))
                            for label, bounds in facet.ranges
                        ),
                        column,
                    )
                )
            else:
                counts.append(search.ValueFacet(name, key, plan(own), column, kind))
                if include_zero:
                    zero = "include_zero " + name
                    while zero in chosen or zero in zeros:
                        zero = "_" + zero
                    zeros[zero] = name
                    counts.append(
                        search.ValueFacet(zero, key, plan(visible), column, kind)
                    )
        rows = search.facet_rows(conn, counts)
    found: dict[str, dict] = {name: {} for name in chosen}
    totals = dict.fromkeys(chosen, 0)
    for name, value, count in rows:
        if name in zeros:
            if value is not None:
                found[zeros[name]].setdefault(_value(value), 0)
        elif value is None:
            totals[name] = count
        elif count or include_zero:
            # A value may come in several rows (a typed and a JSON one; a
            # folder's 0 of ``include_zero`` and its count): added up.
            value = _value(value)
            found[name][value] = found[name].get(value, 0) + count
    return {
        name: (totals[name], _ordered(chosen[name], values))
        for name, values in found.items()
    }


def _ordered(facet: Facet, values: dict) -> dict:
    if facet.ranges:
        return {label: values[label] for label, _ in facet.ranges if label in values}
    return dict(sorted(values.items(), key=lambda item: (-item[1], str(item[0]))))


def _value(value):
    """A stored value as ``uniqueValuesFor`` gives it (lists are tuples)."""
    return tuple(value) if isinstance(value, list) else value
