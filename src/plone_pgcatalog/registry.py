"""Index translators: how each ZCatalog index type is extracted and queried.

Owns: one translator per index ``meta_type`` (FieldIndex, KeywordIndex,
DateIndex, BooleanIndex, UUIDIndex, DateRangeIndex, ExtendedPathIndex,
ZCTextIndex, GopipIndex, DateRecurringIndex), the lookup that lets add-ons
register their own as named ``IIndexTranslator`` utilities, and the JSON
form of index values.

Extraction calls the helper methods of ZCatalog's own index classes
(``_get_object_datum``, ``_convert``, ``_get_object_keywords``, ...), so a
value is indexed exactly when and as ZCatalog would index it.

Query translation is pure: ``IndexQuery`` in, ``(sql.Composable, params)``
out.  JSON keys come from index definitions (``sql.Literal``), values are
always bound parameters.  Must not import the tool, connections or brains.
"""

from __future__ import annotations

from DateTime import DateTime
from DateTime.interfaces import DateTimeError
from decimal import Decimal
from plone_pgcatalog.errors import date_error
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.errors import TextQueryError
from plone_pgcatalog.fulltext import And
from plone_pgcatalog.fulltext import has_glob
from plone_pgcatalog.fulltext import has_negation
from plone_pgcatalog.fulltext import index_text
from plone_pgcatalog.fulltext import IndexedText
from plone_pgcatalog.fulltext import like_pattern
from plone_pgcatalog.fulltext import Node
from plone_pgcatalog.fulltext import Not
from plone_pgcatalog.fulltext import parse_text_query
from plone_pgcatalog.fulltext import source_text
from plone_pgcatalog.fulltext import Term
from plone_pgcatalog.fulltext import tsquery_text
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.paths import PathTranslator
from plone_pgcatalog.store.columns import held_value
from plone_pgcatalog.store.columns import set_column
from plone_pgcatalog.store.columns import SETS_TABLE
from plone_pgcatalog.store.columns import stored_once
from plone_pgcatalog.store.columns import TEXT_KEPT
from plone_pgcatalog.store.columns import value_of
from plone_pgcatalog.store.layout import json_key
from plone_pgcatalog.store.layout import nul_free
from plone_pgcatalog.store.layout import ROWS
from plone_pgcatalog.store.layout import SEARCHABLE_TEXT
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.layout import text_key
from plone_pgcatalog.store.layout import words
from Products.PluginIndexes.util import datetime_to_minutes
from psycopg import sql
from psycopg.types.json import Jsonb
from zope.component import queryUtility
from zope.interface import implementer

import datetime
import math


def comparable(value):
    """Return the JSON form of a FieldIndex-like value.

    JSON-native values stay as they are; DateTime and datetime become their
    microseconds since the epoch (they compare like the Python objects); a
    finite ``Decimal`` becomes a JSON number (an integer where it is one,
    else a float: exact to 15 significant digits), so that values compare
    as numbers (as a string, 100 sorted before 99) and 12.5 equals 12.50;
    sequences become lists.  Anything else is stored as its ``str``.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        whole = value.to_integral_value()
        return int(whole) if value == whole else float(value)
    if isinstance(value, DateTime):
        return value.micros()
    if isinstance(value, datetime.datetime):
        return DateTime(value).micros()
    if isinstance(value, (list, tuple, set, frozenset)):
        return [comparable(item) for item in value]
    return str(value)


def query_value(index_name: str, value):
    """Check one query value before it is converted and bound.

    Raises ``QueryError`` naming the index and the value for what ZCatalog
    cannot look up (lists, dicts and sets are unhashable there) and for
    what no index can hold: PostgreSQL text and JSON admit no unpaired
    surrogates, JSON no NaN or infinity.  A NUL character is no reason:
    the converted value is looked up as stored (``stored_value``).
    """
    if isinstance(value, (list, dict, set)):
        raise QueryError(f"index {index_name!r}: {value!r} cannot be a query value")
    if isinstance(value, tuple):
        for item in value:
            query_value(index_name, item)
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise QueryError(
                f"index {index_name!r}: {value!r} is not valid Unicode"
            ) from exc
    elif isinstance(value, float) and not math.isfinite(value):
        raise QueryError(f"index {index_name!r}: {value!r} is not a finite number")
    return value


def stored_value(value):
    """A converted query value as the catalog stores index values: its JSON
    form (``comparable``) with NUL made U+0001 (``layout.nul_free``), so
    that ``"a\\x00b"`` finds the objects whose value is ``"a\\x00b"``, as in
    ZCatalog."""
    return nul_free(comparable(value))


#: The array type of each kind of typed column's values, as parameters.
_ARRAY_OF = {"text": "text[]", "integer": "bigint[]", "boolean": "boolean[]"}


def fits(kind: str | None, value) -> bool:
    """Whether a query value of this type can be looked up in a typed
    column of ``kind`` (``store.columns.KINDS``); else ``idx`` serves (a
    string longer than the columns hold whole: ``columns.TEXT_KEPT``)."""
    if kind in ("text", "keywords"):
        return isinstance(value, str) and len(value) <= TEXT_KEPT
    if kind == "integer":
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and abs(value) < 2**63 - 1
        )
    if kind == "boolean":
        return isinstance(value, bool)
    return False


def _attr(index) -> str:
    names = index.getIndexSourceNames()
    return names[0] if names else index.getId()


def _compare(
    json_expr, text_expr, value, operator: str, typed: bool = False
) -> tuple[sql.Composable, list]:
    """One comparison with ``value``: strings by code point, else as JSON
    (``typed``: the expressions are a typed column, the value fits it)."""
    if isinstance(value, str) or typed:
        return text_expr + sql.SQL(f" {operator} %s"), [value]
    return json_expr + sql.SQL(f" {operator} %s"), [Jsonb(value)]


def _bounds(json_expr, text_expr, name: str, keys: list, range_spec: str, typed=False):
    """``min``, ``max`` or ``min:max`` over the query values, as UnIndex.

    As in ZCatalog, a falsy upper bound (0, "") leaves the range open
    above, and a range naming neither bound matches every value.
    """
    if not isinstance(range_spec, str):
        raise QueryError(f"index {name!r}: range {range_spec!r} is not a string")
    if "min" not in range_spec and "max" not in range_spec:
        return sql.SQL("TRUE"), []  # ZCatalog: every value, unbounded
    if not keys:
        raise QueryError(f"index {name!r}: a range query needs at least one value")
    try:
        low, high = min(keys), max(keys)
    except TypeError as exc:
        raise QueryError(
            f"index {name!r}: range values {keys!r} are not comparable"
        ) from exc
    parts, params = [sql.SQL("TRUE")], []
    if "min" in range_spec:
        clause, values = _compare(json_expr, text_expr, low, ">=", typed)
        parts.append(clause)
        params += values
    if "max" in range_spec and high:
        clause, values = _compare(json_expr, text_expr, high, "<=", typed)
        parts.append(clause)
        params += values
    return sql.SQL(" AND ").join(parts), params


def _range_clause(
    name: str, keys: list, range_spec: str, typed: sql.Composable | None = None
) -> tuple[sql.Composable, list]:
    """Objects whose value of index ``name`` lies in the range; on the
    typed column ``typed`` when given (every key fits it)."""
    bounded = isinstance(range_spec, str) and (
        "min" in range_spec or "max" in range_spec
    )
    if typed is not None and bounded and keys:
        bounds, params = _bounds(typed, typed, name, keys, range_spec, typed=True)
        return sql.SQL("{} IS NOT NULL AND {}").format(typed, bounds), params
    bounds, params = _bounds(json_key(name), text_key(name), name, keys, range_spec)
    return sql.SQL("{} IS NOT NULL AND {}").format(json_key(name), bounds), params


def _value(name: str, context) -> sql.Composable:
    """The JSON value of index ``name`` of the row being tested: in
    ``idx``, or, for an index whose lists are stored once (in their ready
    typed column, not in ``idx``: ``columns.stored_once``), in either."""
    ready = context.columns if context is not None else {}
    if name in stored_once(ready):
        return value_of(ROWS, name, ready)
    return json_key(name)


def _not_only(
    name: str, matches: tuple[sql.Composable, list], context
) -> tuple[sql.Composable, list]:
    """A query with only ``not`` values, as ZCatalog's UnIndex answers it.

    UnIndex starts from every object of the catalog and removes those with
    an excluded value (objects without a value stay), unless no object has
    an excluded value: then it answers with the objects that have a value.
    """
    clause, params = matches
    excluded = sql.SQL("NOT COALESCE({}, FALSE)").format(clause)
    has_value = _value(name, context) + sql.SQL(" IS NOT NULL")
    site, site_params = path_clause(context.site_path, -1)
    any_excluded = sql.SQL("EXISTS (SELECT 1 FROM {} WHERE {} AND {})").format(
        TABLE, site, clause
    )
    return (
        sql.SQL("{} AND ({} OR {})").format(excluded, has_value, any_excluded),
        [*params, *site_params, *params],
    )


@implementer(IIndexTranslator)
class FieldTranslator:
    """FieldIndex (and the single-valued types built like it).

    Strings have a typed column (``column_kind``); values of other types
    are found in ``idx``.
    """

    column_kind = "text"

    def sql_indexes(self, index_name: str) -> list[tuple]:
        """``(kind, method, expression, predicate)`` of each SQL index this
        index type needs (``schema.index_ddl`` creates them), for an index
        without its typed column (``columns.COMPUTED_KINDS``).

        A B-tree on the value the column would hold, computed from ``idx``
        (``held_value``): searches then compare and sort it as they do the
        column (``QueryContext.column``), a long string by its first
        characters.  Values of other types are found in ``idx``, as with
        the column.  Until schema 17, B-trees on ``json_key`` ("i") and
        ``text_key`` ("t") served the index, and a string longer than a
        B-tree entry may be failed the commit (``upgrades``).
        """
        return [("h", "btree", held_value(index_name, self.column_kind), None)]

    query_options = ("query", "range", "not")

    def convert(self, index, value):
        """The stored form of a value, as the ZCatalog index converts it."""
        query_value(index.getId(), value)
        return stored_value(index._convert(value, default=value))

    def extract(self, index, obj):
        datum = index._get_object_datum(obj, _attr(index))
        if datum is None:
            return MISSING
        from Products.PluginIndexes.unindex import _marker

        if datum is _marker:
            return MISSING
        datum = index._convert(datum, default=_marker)
        if datum is _marker:
            return MISSING
        return comparable(datum)

    def equals(
        self, name: str, values: list, typed=None, negated: bool = False
    ) -> tuple[sql.Composable, list]:
        """Objects whose value is one of ``values``: on the typed column
        ``typed`` when every value fits it (``negated``: the clause will be
        negated, so it must not be NULL where the column is)."""
        if typed is not None and all(fits(self.column_kind, v) for v in values):
            clause = typed + sql.SQL(f" = ANY(%s::{_ARRAY_OF[self.column_kind]})")
            if negated:
                clause = sql.SQL("COALESCE({}, FALSE)").format(clause)
            return clause, [list(values)]
        return json_key(name) + sql.SQL(" = ANY(%s)"), [[Jsonb(v) for v in values]]

    def where(self, index, query, context):
        name = index.getId()
        typed = context.column(name, self.column_kind)
        # ZCatalog skips None: it has no order among indexed values.
        keys = [self.convert(index, key) for key in query.keys if key is not None]
        not_keys = [self.convert(index, key) for key in query.get("not") or ()]
        if not query.keys and not_keys:
            return _not_only(name, self.equals(name, not_keys, typed), context)
        range_spec = query.get("range")
        if range_spec:
            all_fit = all(fits(self.column_kind, key) for key in keys)
            clause, params = _range_clause(
                name, keys, range_spec, typed if all_fit else None
            )
        elif not keys:
            return None
        elif query.operator == "and" and len(set(map(repr, keys))) > 1:
            # One value per object: no object equals two different values.
            return sql.SQL("FALSE"), []
        else:
            clause, params = self.equals(name, keys, typed)
        if not_keys:
            excluded, values = self.equals(name, not_keys, typed, negated=True)
            clause = sql.SQL("{} AND NOT {}").format(clause, excluded)
            params = [*params, *values]
        return clause, params

    def sort_expressions(self, index, context=None):
        name = index.getId()
        typed = context.column(name, self.column_kind) if context else None
        if typed is not None:
            # Strings by the column; other values (numbers) by ``idx``,
            # read only where the column has no value.
            other = sql.SQL("(CASE WHEN {} IS NULL THEN {} END)").format(
                typed, json_key(name)
            )
            return [other, typed]
        # Values of one index share one JSON type (ZCatalog's BTrees cannot
        # mix them).  Numbers order by the JSONB value; strings by the
        # second key, by code point.
        numeric = sql.SQL(
            "(CASE WHEN jsonb_typeof({k}) = 'string' THEN NULL ELSE {k} END)"
        ).format(k=json_key(name))
        return [numeric, text_key(name)]


class _NumbersOnly:
    """An index whose values are all ints: sorted on its typed column, or
    on the JSONB value alone, the expression of its B-tree index, which
    can then give the order."""

    column_kind = "integer"

    def sql_indexes(self, index_name: str) -> list[tuple]:
        # Numbers only: no string ranges (FieldTranslator.sql_indexes).
        return [("i", "btree", json_key(index_name), None)]

    def sort_expressions(self, index, context=None):
        typed = context.column(index.getId(), self.column_kind) if context else None
        return [typed if typed is not None else json_key(index.getId())]


@implementer(IIndexTranslator)
class DateTranslator(_NumbersOnly, FieldTranslator):
    """DateIndex: minutes as ZCatalog's DateIndex computes them (an int)."""

    def convert(self, index, value):
        query_value(index.getId(), value)
        try:
            converted = index._convert(value, default=None)
        except (DateTimeError, TypeError, ValueError, OverflowError) as exc:
            raise date_error(index.getId(), value, exc) from exc
        if converted is None:
            raise QueryError(f"index {index.getId()!r}: {value!r} is not a date")
        return converted

    def cache_value(self, index, value):
        """What ``convert`` reads of a DateTime (its minute): a stand-in
        for the value in the translation's key (``translations``), or None
        to key it by its exact value."""
        if type(value) is not DateTime:
            return None
        try:
            return index._convert(value, default=None)
        except (DateTimeError, TypeError, ValueError, OverflowError):
            return None


@implementer(IIndexTranslator)
class BooleanTranslator(FieldTranslator):
    """BooleanIndex: true or false; a missing attribute is false."""

    column_kind = "boolean"

    def sql_indexes(self, index_name: str) -> list[tuple]:
        return [("i", "btree", json_key(index_name), None)]

    query_options = ("query",)

    def extract(self, index, obj):
        from Products.PluginIndexes.unindex import _marker

        datum = index._get_object_datum(obj, _attr(index))
        if datum is _marker:
            return MISSING
        return bool(datum)

    def convert(self, index, value):
        return bool(value)

    def where(self, index, query, context):
        # BooleanIndex answers with its first value only (Python truth).
        if not query.keys:
            return None
        typed = context.column(index.getId(), self.column_kind)
        if typed is not None:
            return typed + sql.SQL(" = %s"), [bool(query.keys[0])]
        return json_key(index.getId()) + sql.SQL(" = %s"), [Jsonb(bool(query.keys[0]))]

    def sort_expressions(self, index, context=None):
        typed = context.column(index.getId(), self.column_kind) if context else None
        if typed is not None:
            return [typed]
        return FieldTranslator.sort_expressions(self, index)


#: A list's number among those of the lists that hold any of the keywords
#: (``KeywordTranslator.overlaps``): against the array of their numbers,
#: read once per statement, where the lists are few; by a semi-join where
#: they are many (``columns.MANY_LISTS``).  PostgreSQL tests a number
#: against an array one element after the other, so a site of many lists
#: (one per owner of private content) would pay for every list on every
#: row; the semi-join probes the lists' primary key once per distinct
#: number (memoized), but costs about 0.2 ms more to plan.  At 500
#: documents (1,512 rows, 3 lists), the count of ``portal_type=Document``
#: as the Manager, medians of 300: the list 2.93 ms, the array 1.15, the
#: semi-join 1.31; with 5,000 lists more: 2.79, 3.00, 1.65.
_IN_FEW_LISTS = sql.SQL(
    " = ANY(ARRAY(SELECT s.id FROM {} AS s WHERE s.terms && %s::text[]))"
).format(sql.Identifier(SETS_TABLE))
_IN_MANY_LISTS = sql.SQL(
    " IN (SELECT s.id FROM {} AS s WHERE s.terms && %s::text[])"
).format(sql.Identifier(SETS_TABLE))


@implementer(IIndexTranslator)
class KeywordTranslator:
    """KeywordIndex: a JSON array of the object's unique keywords; the
    string keywords also in a typed column (``text[]``)."""

    column_kind = "keywords"

    def sql_indexes(self, index_name: str) -> list[tuple]:
        """GIN serves containment and key existence (``@>``, ``?|``) on the
        JSON array of keywords (``FieldTranslator.sql_indexes``)."""
        return [("i", "gin", json_key(index_name), None)]

    query_options = ("query", "range", "not", "operator")

    def extract(self, index, obj):
        keywords = index._get_object_keywords(obj, _attr(index))
        if not keywords:
            return MISSING
        return sorted({comparable(k) for k in keywords}, key=repr)

    @staticmethod
    def overlaps(
        name: str,
        keys: list,
        all_of: bool = False,
        typed=None,
        numbered=None,
        many_lists: bool = False,
    ):
        """Objects whose keywords include any (or all) of ``keys``;
        ``numbered``, the column of the numbers of their lists
        (``store.columns.NUMBERED``), tests any of them by the numbers of
        the lists that hold one (``many_lists``: a semi-join on them): the
        same rows (a row's number is its list's; no list, no number)."""
        if (
            numbered is not None
            and not all_of
            and all(fits("keywords", key) for key in keys)
        ):
            test = _IN_MANY_LISTS if many_lists else _IN_FEW_LISTS
            return numbered + test, [list(keys)]
        if typed is not None and all(isinstance(key, str) for key in keys):
            long = [key for key in keys if not fits("keywords", key)]
            if not long:
                operator = " @> %s::text[]" if all_of else " && %s::text[]"
                return typed + sql.SQL(operator), [list(keys)]
            # A list with a keyword longer than its column holds is in
            # ``idx`` whole (``columns.TEXT_KEPT``).
            if all_of:
                return json_key(name) + sql.SQL(" ?& %s"), [list(keys)]
            kept = [key for key in keys if fits("keywords", key)]
            clause = sql.SQL("({} && %s::text[] OR {} ?| %s)").format(
                typed, json_key(name)
            )
            return clause, [kept, long]
        # Other values than strings (a query cannot mix them: ``query``)
        # in ``idx``, where the lists that hold any are (a list of strings
        # only is in its ready column alone: ``columns.stored_once``).
        if all(isinstance(key, str) for key in keys):
            operator = sql.SQL(" ?& %s") if all_of else sql.SQL(" ?| %s")
            return json_key(name) + operator, [keys]
        if all_of:
            return json_key(name) + sql.SQL(" @> %s"), [Jsonb(keys)]
        return json_key(name) + sql.SQL(" @> ANY(%s)"), [[Jsonb([k]) for k in keys]]

    @staticmethod
    def _in_range(name: str, keys: list, range_spec: str, all_of: bool, context):
        """Objects with a keyword in the range; with ``and``, objects with
        every keyword of the site's catalog in the range (UnIndex intersects
        the objects of each keyword it finds in the range)."""
        bounds, params = _bounds(
            sql.SQL("e.k"),
            sql.SQL("((e.k #>> '{}') COLLATE \"C\")"),
            name,
            keys,
            range_spec,
        )
        value = _value(name, context)
        if not all_of:
            exists = sql.SQL(
                "EXISTS (SELECT 1 FROM jsonb_array_elements({key}) AS e(k)"
                " WHERE {bounds})"
            ).format(key=value, bounds=bounds)
            return (
                sql.SQL("jsonb_typeof({}) = 'array' AND {}").format(value, exists),
                params,
            )
        # Unqualified columns in the subquery are those of "o"; the row
        # being tested is ``ROWS`` (the outer query's name for it).
        site, site_params = path_clause(context.site_path, -1)
        ready = context.columns
        missing_one = sql.SQL(
            "NOT EXISTS (SELECT 1 FROM {table} AS o,"
            " jsonb_array_elements({stored}) AS e(k)"
            " WHERE {site} AND {bounds}"
            " AND NOT {tested} @> jsonb_build_array(e.k))"
        ).format(
            table=TABLE,
            stored=value_of(sql.SQL("o"), name, ready),
            site=site,
            bounds=bounds,
            tested=value_of(ROWS, name, ready),
        )
        return sql.SQL("{} IS NOT NULL AND {}").format(value, missing_one), [
            *site_params,
            *params,
        ]

    def convert(self, index, value):
        """The stored form of one query value."""
        query_value(index.getId(), value)
        return stored_value(value)

    def where(self, index, query, context):
        name = index.getId()
        typed = context.column(name, self.column_kind)
        numbered = context.column(set_column(name), "set") if typed else None
        many = context.many_lists
        keys = [self.convert(index, key) for key in query.keys if key is not None]
        not_keys = [self.convert(index, key) for key in query.get("not") or ()]
        if not query.keys and not_keys:
            return _not_only(
                name,
                self.overlaps(name, not_keys, False, typed, numbered, many),
                context,
            )
        all_of = query.operator == "and"
        range_spec = query.get("range")
        if range_spec:
            clause, params = self._in_range(name, keys, range_spec, all_of, context)
        elif not keys:
            return None
        else:
            clause, params = self.overlaps(name, keys, all_of, typed, numbered, many)
        if not_keys:
            excluded, values = self.overlaps(
                name, not_keys, False, typed, numbered, many
            )
            clause = sql.SQL("{} AND NOT COALESCE({}, FALSE)").format(clause, excluded)
            params = [*params, *values]
        return clause, params

    def sort_expressions(self, index, context=None):
        return None


@implementer(IIndexTranslator)
class UUIDTranslator(FieldTranslator):
    """UUIDIndex: one string per object."""

    query_options = ("query", "range", "not")

    def equals(
        self, name: str, values: list, typed=None, negated: bool = False
    ) -> tuple[sql.Composable, list]:
        """As FieldTranslator's, but one UID on the typed column is
        ``= %s``: plone.app.uuid's lookup of a brain, whose plan is kept
        (``finds_few``).  PostgreSQL keeps a prepared statement's plan made
        blind to its values only where it estimates it as cheap as the
        plans made for them: it estimates ``= %s`` at one row, as it is,
        but ``= ANY(%s)`` at ten values, so it planned every lookup of one
        UID for its value (0.9 ms a brain instead of 0.23 at 500
        documents).  A list of UIDs is planned for its values, and not
        prepared (``finds_few``)."""
        if (
            typed is not None
            and not negated
            and len(values) == 1
            and fits(self.column_kind, values[0])
        ):
            return typed + sql.SQL(" = %s::text"), [values[0]]
        return super().equals(name, values, typed, negated)

    def finds_few(self, index, clause, context) -> bool:
        """Whether ``clause`` (of ``where``) finds an object by its UID on
        the typed column: one object, whatever the UID
        (``query.SearchSQL.plan_kept``).  Not a list of UIDs: PostgreSQL
        never keeps the plan of ``= ANY`` (``equals``), so preparing it
        would gain nothing."""
        typed = context.column(index.getId(), self.column_kind)
        return typed is not None and clause == typed + sql.SQL(" = %s::text")

    def extract(self, index, obj):
        from Products.PluginIndexes.unindex import _marker

        datum = index._get_object_datum(obj, _attr(index))
        if datum is None or datum is _marker:
            return MISSING
        return comparable(datum)


@implementer(IIndexTranslator)
class DateRangeTranslator:
    """DateRangeIndex (``effectiveRange``): ``[since, until]`` in minutes.

    ``null`` stands for an open end, as ``None`` does in ZCatalog.  The
    typed column holds it as an ``int8range``.
    """

    column_kind = "range"

    def sql_indexes(self, index_name: str) -> list[tuple]:
        # A range test reads both bounds of each row; no SQL index serves
        # it (the typed column's B-trees find the rows out of a range:
        # ``residue``).
        return []

    query_options = ("query",)

    def extract(self, index, obj):
        since_field, until_field = index.getSinceField(), index.getUntilField()
        if since_field is None:
            return MISSING
        values = []
        for field in (since_field, until_field):
            value = getattr(obj, field, None)
            if callable(value):
                value = value()
            values.append(index._convertDateTime(value))
        return values

    def _moment(self, index, query):
        """The moment ``query`` tests, in the index's minutes, or None
        where it lies outside the index's floor and ceiling; raises
        ``QueryError`` as ZCatalog fails."""
        name = index.getId()
        if not query.keys:
            # DateRangeIndex reads ``keys[0]`` whatever it was given: ZCatalog
            # fails with IndexError on ``{}`` or ``[]``.
            raise QueryError(f"index {name!r}: no date to test, got {query.keys!r}")
        # ZCatalog takes the first key as the moment to test.
        try:
            minutes = datetime_to_minutes(query.keys[0], index.precision_value)
        except (TypeError, ValueError, OverflowError, DateTimeError) as exc:
            raise date_error(name, query.keys[0], exc) from exc
        if minutes is None:
            raise QueryError(f"index {name!r}: {query.keys[0]!r} is not a date")
        return index._convertDateTime(query.keys[0])

    def where(self, index, query, context):
        name = index.getId()
        moment = self._moment(index, query)
        if moment is None:
            # Outside the index's floor and ceiling: ZCatalog's bounds are
            # open then, so every object with a range matches.
            return json_key(name) + sql.SQL(" IS NOT NULL"), []
        typed = context.column(name, self.column_kind)
        if typed is not None and fits("integer", moment):
            if context.preceded:
                clause = sql.SQL("({c} IS NULL OR {c} @> %s::bigint)")
            else:
                clause = sql.SQL("{c} @> %s::bigint")
            return clause.format(c=typed), [moment]
        clause = sql.SQL(
            "(({k} -> 0) = 'null'::jsonb OR ({k} -> 0) <= %s)"
            " AND (({k} -> 1) = 'null'::jsonb OR ({k} -> 1) >= %s)"
        ).format(k=json_key(name))
        if context.preceded:
            # Narrowing a given result, ZCatalog removes only the objects
            # whose range excludes the moment; objects without one stay.
            clause = sql.SQL("({} IS NULL OR ({}))").format(json_key(name), clause)
        else:
            clause = sql.SQL("({} IS NOT NULL AND {})").format(json_key(name), clause)
        return clause, [Jsonb(moment), Jsonb(moment)]

    def residue(self, index, query, context):
        """The rows ``where`` leaves out, as a condition the typed column's
        B-trees answer (``columns.KINDS``), with its values; None where the
        test is not on that column or they are not there
        (``query.QueryContext.group_counts``).  A count per group takes
        them away from its groups' counts (``query._group_count``): they
        are few (items not yet or no longer in effect), where the moment
        lies in nearly every range.  A range wholly after the moment (its
        lower end after it: the ranges that sort after ``[moment, )``),
        one that ends at or before it (the exclusive upper end), an empty
        one (since after until), and no range where one is needed."""
        name = index.getId()
        if name not in (context.group_counts or ()):
            return None
        typed = context.column(name, self.column_kind)
        moment = self._moment(index, query) if typed is not None else None
        if moment is None or not fits("integer", moment):
            return None
        # Where the test is not the first, a row without a range matches.
        missing = "" if context.preceded else " OR {c} IS NULL"
        clause = sql.SQL(
            "({c} > int8range(%s::bigint, NULL) OR upper({c}) <= %s::bigint"
            " OR {c} = 'empty'" + missing + ")"
        )
        return clause.format(c=typed), [moment, moment]

    def sort_expressions(self, index, context=None):
        return None

    def cache_value(self, index, value):
        """What ``where`` reads of a moment given as a DateTime (the minute
        as ZCatalog computes it, for the error, and the index's own
        conversion): a stand-in for the value in the translation's key
        (``translations``), or None to key it by its exact value."""
        if type(value) is not DateTime:
            return None
        try:
            minutes = datetime_to_minutes(value, index.precision_value)
            moment = index._convertDateTime(value)
        except (TypeError, ValueError, OverflowError, DateTimeError):
            return None
        return minutes, moment


def _without_heading(source: str, obj) -> str:
    """``source`` without the id and title it begins with (Plone's
    SearchableText does): a result shows its title already."""
    for name in ("getId", "Title"):
        value = getattr(obj, name, None)
        try:
            value = value() if callable(value) else value
        except (AttributeError, TypeError):
            value = None
        stripped = source.lstrip()
        if isinstance(value, str) and value and stripped.startswith(value):
            source = stripped[len(value) :]
    return source.lstrip()


@implementer(IIndexTranslator)
class TextTranslator:
    """ZCTextIndex: words matched against a ``tsvector``.

    ``SearchableText`` is stored in the ``searchable_text`` column with
    the exact words (weight A) and their stems in the item's language
    (weight B, ``schema.searchable_vector``); a query matches exact words,
    or stems in one of ``context.text_configs``, and a negated word
    excludes what the word would find (``_matching``).  Other text indexes
    (Title, Description) are stored as words in ``idx`` and matched
    exactly, as ZCatalog's lexicon matches them.
    """

    column_kind = None

    def sql_indexes(self, index_name: str) -> list[tuple]:
        """GIN on the words matched with ``to_tsvector('simple', ...)``
        (``_vector``); SearchableText's column has its index in
        ``schema.BASE_DDL``."""
        if index_name == "SearchableText":
            return []
        return [("i", "gin", words(index_name), None)]

    query_options = ("query",)

    def extract(self, index, obj):
        """The words of ``index``'s attributes, as ZCTextIndex takes them:
        strings only (of a list, its strings); an object whose attributes
        give a string, even one without a word, is indexed (with no
        words: ``getEntryForObject`` gives ``[]``, ``indexSize`` counts
        it), one whose attributes give none is not."""
        texts = []
        given = False
        for attr in index.getIndexSourceNames():
            value = getattr(obj, attr, None)
            if callable(value):
                try:
                    value = value()
                except (AttributeError, TypeError):
                    value = None
            items = value if isinstance(value, (list, tuple, set)) else [value]
            strings = [item for item in items if isinstance(item, str)]
            given = given or bool(strings)
            texts += [text for text in strings if text]
        if not given:
            return MISSING
        source = " ".join(texts)
        text = index_text(source)
        if index.getId() == "SearchableText":
            # The text as written goes with the words: snippets show it.
            return IndexedText(text, source_text(_without_heading(source, obj)))
        return text

    def _text_query(self, index, query) -> Node | None:
        """The parsed search string, or None when it is empty.

        A string without a word to search raises ``TextQueryError`` (a
        ``ParseError``), as ZCTextIndex's parser does; stray operators and
        parentheses around words are dropped instead (README).
        """
        for key in query.keys:
            if not isinstance(key, str):
                raise QueryError(
                    f"index {index.getId()!r}: {key!r} is not a text to search"
                )
        text = " ".join(query.keys)  # as ZCTextIndex: ["", ""] is " "
        if not text:
            return None
        node = parse_text_query(text)
        if node is None:
            raise TextQueryError(
                f"index {index.getId()!r}: {text!r} has no word to search"
                " (only punctuation, operators or negated words, in all or"
                " in one alternative of OR)"
            )
        return node

    def _in_each_language(self, node: Node, context):
        """``(tsquery, params)`` of ``node`` as exact words, or as stems
        of one of ``context.text_configs``.

        Each language's query matches all of ``node`` in that language:
        ``a & b`` needs both words exact, or both stems of one language.
        """
        parts = [sql.SQL("to_tsquery('simple'::regconfig, %s)")]
        params = [tsquery_text(node, "A")]
        stemmed = tsquery_text(node, "B")
        for config in context.text_configs:
            parts.append(sql.SQL("to_tsquery(%s::regconfig, %s)"))
            params += [config, stemmed]
        return sql.SQL("(") + sql.SQL(" || ").join(parts) + sql.SQL(")"), params

    def _matching(self, node: Node, context):
        """``(tsquery, params)`` that finds what ``node`` finds.

        A negation excludes every item that its operand would find on its
        own: the exact words, or their stems in any of the languages.
        Inside one language's query it would exclude only that language's
        stems, and an item with German stems satisfies ``python & !zope``
        in English ("zope" stems to "zope" there, to "zop" in German).  So
        negations are composed outside the per-language queries:
        ``a b -c`` is ``(a & b in one language) && !!(c in any form)``.
        That also keeps a language whose stop words are all of the positive
        words (``the -c`` in English) from reducing to ``!c``: the exact
        words ('simple') have no stop words.  A group that holds a negation
        and is ANDed (``a (b OR NOT c)``) is matched on its own, not in the
        language ``a`` matches in.
        """
        if not has_negation(node):
            return self._in_each_language(node, context)
        if isinstance(node, Not):
            found, params = self._matching(node.operand, context)
            return sql.SQL("(!!") + found + sql.SQL(")"), params
        if isinstance(node, And):
            plain = [op for op in node.operands if not has_negation(op)]
            operands = [op for op in node.operands if has_negation(op)]
            if plain:
                operands.insert(0, plain[0] if len(plain) == 1 else And(tuple(plain)))
            operator = sql.SQL(" && ")
        else:
            operands, operator = list(node.operands), sql.SQL(" || ")
        parts, params = [], []
        for operand in operands:
            part, part_params = self._matching(operand, context)
            parts.append(part)
            params += part_params
        return sql.SQL("(") + operator.join(parts) + sql.SQL(")"), params

    def _vector(self, index):
        name = index.getId()
        return SEARCHABLE_TEXT if name == "SearchableText" else words(name)

    def _tsquery(self, index, node: Node, context):
        """``(tsquery, params)`` of ``node`` for ``index``'s vector."""
        if index.getId() == "SearchableText":
            return self._matching(node, context)
        return sql.SQL("to_tsquery('simple'::regconfig, %s)"), [tsquery_text(node)]

    def _condition(self, index, node: Node, context):
        """``(condition, params)``: SQL true for the rows ``node`` finds.

        A node without globs is one ``@@`` test of a tsquery.  A glob
        (``Term.glob``) is its prefix's test, which an index answers, and a
        word of the vector that the whole pattern matches; the operators
        around globs are SQL's, each group of operands without globs one
        tsquery again (``_matching`` keeps its words in one language).
        """
        vector = self._vector(index)
        if not has_glob(node):
            expression, params = self._tsquery(index, node, context)
            return vector + sql.SQL(" @@ ") + expression, params
        if isinstance(node, Term):
            # SearchableText's exact words have weight A, their stems B: a
            # glob matches words as written, as in ZCTextIndex.  The words
            # alone (``tsvector_to_array``), without their positions: a
            # short prefix reads the words of many items.
            written = index.getId() == "SearchableText"
            words = (
                sql.SQL("ts_filter({}, '{{a}}')").format(vector) if written else vector
            )
            return (
                sql.SQL(
                    "({vector} @@ to_tsquery('simple'::regconfig, %s) AND EXISTS"
                    " (SELECT FROM unnest(tsvector_to_array({words})) AS w(word)"
                    " WHERE w.word LIKE %s))"
                ).format(vector=vector, words=words),
                [tsquery_text(node, "A" if written else ""), like_pattern(node.glob)],
            )
        if isinstance(node, Not):
            found, params = self._condition(index, node.operand, context)
            return sql.SQL("NOT ") + found, params
        kind = type(node)
        plain = [op for op in node.operands if not has_glob(op)]
        operands = [op for op in node.operands if has_glob(op)]
        if plain:
            operands.insert(0, plain[0] if len(plain) == 1 else kind(tuple(plain)))
        parts, params = [], []
        for operand in operands:
            part, part_params = self._condition(index, operand, context)
            parts.append(part)
            params += part_params
        operator = sql.SQL(" AND " if kind is And else " OR ")
        return sql.SQL("(") + operator.join(parts) + sql.SQL(")"), params

    def where(self, index, query, context):
        if not query.keys:
            return None
        node = self._text_query(index, query)
        if node is None:
            return None
        condition, params = self._condition(index, node, context)
        if has_glob(node) and index.getId() == "SearchableText":
            # Inside, the vector is never NULL: SQL's NOT negates as a
            # tsquery's ``!`` does, and an object without text matches no
            # query (as with one tsquery, whose test is then NULL).
            condition = sql.SQL("({} IS NOT NULL AND {})").format(
                self._vector(index), condition
            )
        return condition, params

    def relevance(self, index, query, context):
        """How well a row matches, for ordering a result by relevance."""
        node = self._text_query(index, query)
        if node is None:
            return None
        if index.getId() == "SearchableText":
            # Ranked on the union of the per-language queries, not on
            # ``_matching``'s: ts_rank scores a query whose top operator is
            # AND (``... && !!...``) by the proximity of pairs of its words
            # only, which ranks a match of one positive word 0.  The union
            # ranks as before; the rows it ranks are ``_matching``'s.
            expression, params = self._in_each_language(node, context)
        else:
            expression = sql.SQL("to_tsquery('simple'::regconfig, %s)")
            params = [tsquery_text(node)]
        # ts_rank is a float in (0, 1]; ZCatalog's scores are ints.  As in
        # ZCatalog's Okapi BM25, a match in a shorter text counts more
        # (normalization 1: rank / (1 + log(length))).
        rank = sql.SQL("(ts_rank({}, {}, 1) * 1000000)::bigint").format(
            self._vector(index), expression
        )
        return rank, params

    def sort_expressions(self, index, context=None):
        return None


@implementer(IIndexTranslator)
class PositionTranslator(_NumbersOnly, FieldTranslator):
    """GopipIndex: the position of the object in its folder, an int."""

    query_options = ("query", "range", "not")

    def extract(self, index, obj):
        value = getattr(obj, "getObjPositionInParent", None)
        if callable(value):
            value = value()
        if isinstance(value, int):
            return value
        return MISSING

    def where(self, index, query, context):
        # GopipIndex only sorts; in ZCatalog a query naming it finds nothing.
        return None


@implementer(IIndexTranslator)
class RecurringDateTranslator(KeywordTranslator):
    """DateRecurringIndex: every occurrence, as DateRecurringIndex's ints.

    Stored as a sorted JSON array.  DateRecurringIndex is a UnIndex with
    one entry per occurrence, so it is queried like a keyword index whose
    keywords are the occurrences (values, ranges, ``not``, ``and``).
    Occurrences are ints: no typed column (``text[]`` holds strings).
    """

    column_kind = None

    def sql_indexes(self, index_name: str) -> list[tuple]:
        """GIN on the occurrences (queried with ``@>``), and, as they are
        stored sorted, B-trees on the first and the last, which bound a
        range query.  Only objects with occurrences: the first one's index,
        in the order of the first occurrence (the sort key), also serves
        "has a value" (``sort_presence``), which GIN cannot answer."""
        value = json_key(index_name)
        has_value = sql.SQL("{} IS NOT NULL").format(value)
        return [
            *super().sql_indexes(index_name),
            ("f", "btree", sql.SQL("({} -> 0)").format(value), has_value),
            ("l", "btree", sql.SQL("({} -> -1)").format(value), has_value),
        ]

    query_options = ("query", "range", "not")

    def extract(self, index, obj):
        from plone.event.recurrence import recurrence_sequence_ical
        from plone.event.utils import dt2int
        from plone.event.utils import pydt

        try:
            value = getattr(obj, index.getId())
            if callable(value):
                value = value()
        except AttributeError:
            return MISSING
        if value is None:
            return MISSING
        recurdef = getattr(obj, index.attr_recurdef, None)
        if callable(recurdef):
            recurdef = recurdef()
        if not recurdef:
            dates = [pydt(value)]
        else:
            until = getattr(obj, index.getUntilField(), None)
            if callable(until):
                until = until()
            dates = recurrence_sequence_ical(value, recrule=recurdef, until=until)
        return sorted({dt2int(date) for date in dates if date is not None})

    def convert(self, index, value):
        # DateRecurringIndex._convert: dt2int, 0 standing for "no date".
        from plone.event.utils import dt2int

        query_value(index.getId(), value)
        try:
            return dt2int(value)
        except Exception as exc:  # plone.event raises several kinds
            raise date_error(index.getId(), value, exc) from exc

    def cache_value(self, index, value):
        """What ``convert`` reads of a DateTime (its minute), as
        ``DateTranslator.cache_value``."""
        if type(value) is not DateTime:
            return None
        try:
            return self.convert(index, value)
        except QueryError:
            return None

    def _in_range(self, name, keys, range_spec, all_of, context):
        clause, params = super()._in_range(name, keys, range_spec, all_of, context)
        if all_of or not keys:
            return clause, params
        # Occurrences are stored sorted: an object with one in the range
        # starts before its end and ends after its start.  Both bounds are
        # served by B-trees on the first and last occurrence.
        key = json_key(name)
        bounds, values = [sql.SQL("{} IS NOT NULL").format(key)], []
        if "min" in range_spec:
            bounds.append(sql.SQL("({} -> -1) >= %s").format(key))
            values.append(Jsonb(min(keys)))
        if "max" in range_spec and max(keys):
            bounds.append(sql.SQL("({} -> 0) <= %s").format(key))
            values.append(Jsonb(max(keys)))
        bounds.append(clause)
        return sql.SQL(" AND ").join(bounds), [*values, *params]

    def sort_presence(self, index):
        # Only objects with occurrences have the key (events among all
        # content): written so that the partial indexes of those objects
        # (``schema``: ``... IS NOT NULL``) can answer it, unlike the
        # default (``query._has_key``).
        return json_key(index.getId()) + sql.SQL(" IS NOT NULL")

    def sort_expressions(self, index, context=None):
        # ZCatalog sorts on the tuple of occurrences: the first one, then
        # the others, as Python compares tuples (PostgreSQL arrays too).
        key = json_key(index.getId())
        return [
            sql.SQL("({} -> 0)").format(key),
            sql.SQL(
                "ARRAY(SELECT e::bigint FROM jsonb_array_elements_text({})"
                " WITH ORDINALITY AS a(e, n) ORDER BY n)"
            ).format(key),
        ]


TRANSLATORS: dict[str, IIndexTranslator] = {
    "FieldIndex": FieldTranslator(),
    "KeywordIndex": KeywordTranslator(),
    "DateIndex": DateTranslator(),
    "BooleanIndex": BooleanTranslator(),
    "UUIDIndex": UUIDTranslator(),
    "DateRangeIndex": DateRangeTranslator(),
    "ExtendedPathIndex": PathTranslator(),
    "PathIndex": PathTranslator(),
    "ZCTextIndex": TextTranslator(),
    "GopipIndex": PositionTranslator(),
    "DateRecurringIndex": RecurringDateTranslator(),
}


def get_translator(meta_type: str) -> IIndexTranslator | None:
    """The translator for an index type: an add-on's utility, else ours."""
    translator = queryUtility(IIndexTranslator, name=meta_type)
    if translator is not None:
        return translator
    return TRANSLATORS.get(meta_type)
