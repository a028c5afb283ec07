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
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.fulltext import fold
from plone_pgcatalog.fulltext import to_tsquery_text
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.paths import PathTranslator
from psycopg import sql
from psycopg.types.json import Jsonb
from zope.component import queryUtility
from zope.interface import implementer

import datetime



#: The column that holds the catalog's index values.
IDX = sql.Identifier("idx")

# Text compares like Python's str: by code point.  With UTF-8, byte order
# ("C" collation) is code point order; a language collation is not.
COLLATE_C = sql.SQL(' COLLATE "C"')


def json_key(index_name: str) -> sql.Composed:
    """``idx->'name'``: the JSONB value of one index."""
    return sql.SQL("(idx -> {})").format(sql.Literal(index_name))


def text_key(index_name: str) -> sql.Composed:
    """``idx->>'name'`` compared by code point, as Python compares str."""
    return sql.SQL("((idx ->> {})").format(sql.Literal(index_name)) + COLLATE_C + (
        sql.SQL(")")
    )


def comparable(value):
    """Return the JSON form of a FieldIndex-like value.

    JSON-native values stay as they are; DateTime and datetime become their
    microseconds since the epoch (they compare like the Python objects);
    sequences become lists.  Anything else is stored as its ``str``.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, DateTime):
        return value.micros()
    if isinstance(value, datetime.datetime):
        return DateTime(value).micros()
    if isinstance(value, (list, tuple, set, frozenset)):
        return [comparable(item) for item in value]
    return str(value)


def _attr(index) -> str:
    names = index.getIndexSourceNames()
    return names[0] if names else index.getId()


def _compare(index_name: str, value, operator: str) -> tuple[sql.Composable, list]:
    """One comparison of the index value with ``value`` (str or JSON)."""
    if isinstance(value, str):
        return text_key(index_name) + sql.SQL(f" {operator} %s"), [value]
    return json_key(index_name) + sql.SQL(f" {operator} %s"), [Jsonb(value)]


def _range_clause(index, keys, range_spec: str) -> tuple[sql.Composable, list]:
    name = index.getId()
    parts, params = [], []
    if "min" in range_spec:
        clause, values = _compare(name, min(keys), ">=")
        parts.append(clause)
        params += values
    if "max" in range_spec:
        clause, values = _compare(name, max(keys), "<=")
        parts.append(clause)
        params += values
    if not parts:
        raise QueryError(f"index {name!r}: range {range_spec!r} is not valid")
    return sql.SQL(" AND ").join(parts), params


@implementer(IIndexTranslator)
class FieldTranslator:
    """FieldIndex (and the single-valued types built like it)."""

    query_options = ("query", "range", "not")

    def convert(self, index, value):
        """The stored form of a value, as the ZCatalog index converts it."""
        return comparable(index._convert(value, default=value))

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

    def where(self, index, query):
        name = index.getId()
        keys = [self.convert(index, key) for key in query.keys or ()]
        clauses, params = [], []
        range_spec = query.get("range")
        if range_spec and keys:
            clause, values = _range_clause(index, keys, range_spec)
            clauses.append(clause)
            params += values
        elif keys:
            if query.get("operator", "or") == "and" and len(set(map(repr, keys))) > 1:
                # One value per object: no object equals two different values.
                return sql.SQL("FALSE"), []
            clauses.append(json_key(name) + sql.SQL(" = ANY(%s)"))
            params.append([Jsonb(key) for key in keys])
        not_keys = query.get("not")
        if not_keys:
            not_values = [Jsonb(self.convert(index, key)) for key in not_keys]
            clauses.append(
                sql.SQL("({} IS NOT NULL AND NOT {} = ANY(%s))").format(
                    json_key(name), json_key(name)
                )
            )
            params.append(not_values)
        if not clauses:
            return None
        return sql.SQL(" AND ").join(clauses), params

    def sort_expressions(self, index):
        name = index.getId()
        # Values of one index share one JSON type (ZCatalog's BTrees cannot
        # mix them).  Numbers order by the JSONB value; strings by the
        # second key, by code point.
        numeric = sql.SQL(
            "(CASE WHEN jsonb_typeof({k}) = 'string' THEN NULL ELSE {k} END)"
        ).format(k=json_key(name))
        return [numeric, text_key(name)]


@implementer(IIndexTranslator)
class DateTranslator(FieldTranslator):
    """DateIndex: minutes as ZCatalog's DateIndex computes them (an int)."""

    def convert(self, index, value):
        converted = index._convert(value, default=None)
        if converted is None:
            raise QueryError(f"index {index.getId()!r}: {value!r} is not a date")
        return converted


@implementer(IIndexTranslator)
class BooleanTranslator(FieldTranslator):
    """BooleanIndex: true or false; a missing attribute is false."""

    query_options = ("query",)

    def extract(self, index, obj):
        from Products.PluginIndexes.unindex import _marker

        datum = index._get_object_datum(obj, _attr(index))
        if datum is _marker:
            return MISSING
        return bool(datum)

    def convert(self, index, value):
        return bool(value)


@implementer(IIndexTranslator)
class KeywordTranslator:
    """KeywordIndex: a JSON array of the object's unique keywords."""

    query_options = ("query", "range", "not", "operator")

    def extract(self, index, obj):
        keywords = index._get_object_keywords(obj, _attr(index))
        if not keywords:
            return MISSING
        return sorted({comparable(k) for k in keywords}, key=repr)

    def where(self, index, query):
        name = index.getId()
        if query.get("range"):
            raise QueryError(
                f"index {name!r}: range queries on a KeywordIndex are not "
                "supported by plone_pgcatalog yet"
            )
        keys = [comparable(key) for key in query.keys or ()]
        clauses, params = [], []
        if keys:
            and_ = query.get("operator", "or") == "and"
            if all(isinstance(key, str) for key in keys):
                op = sql.SQL(" ?& %s") if and_ else sql.SQL(" ?| %s")
                clauses.append(json_key(name) + op)
                params.append(keys)
            elif and_:
                clauses.append(json_key(name) + sql.SQL(" @> %s"))
                params.append(Jsonb(keys))
            else:
                clauses.append(json_key(name) + sql.SQL(" @> ANY(%s)"))
                params.append([Jsonb([key]) for key in keys])
        not_keys = [comparable(key) for key in query.get("not") or ()]
        if not_keys:
            clauses.append(
                sql.SQL("NOT COALESCE({} @> ANY(%s), FALSE)").format(json_key(name))
            )
            params.append([Jsonb([key]) for key in not_keys])
        if not clauses:
            return None
        return sql.SQL(" AND ").join(clauses), params

    def sort_expressions(self, index):
        return None


@implementer(IIndexTranslator)
class UUIDTranslator(FieldTranslator):
    """UUIDIndex: one string per object."""

    query_options = ("query", "range", "not")

    def extract(self, index, obj):
        from Products.PluginIndexes.unindex import _marker

        datum = index._get_object_datum(obj, _attr(index))
        if datum is None or datum is _marker:
            return MISSING
        return comparable(datum)


@implementer(IIndexTranslator)
class DateRangeTranslator:
    """DateRangeIndex (``effectiveRange``): ``[since, until]`` in minutes.

    ``null`` stands for an open end, as ``None`` does in ZCatalog.
    """

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

    def where(self, index, query):
        if not query.keys:
            return None
        name = index.getId()
        # ZCatalog takes the first key as the moment to test.
        moment = index._convertDateTime(query.keys[0])
        if moment is None:
            raise QueryError(f"index {name!r}: {query.keys[0]!r} is not a date")
        clause = sql.SQL(
            "({k} IS NOT NULL"
            " AND (({k} -> 0) = 'null'::jsonb OR ({k} -> 0) <= %s)"
            " AND (({k} -> 1) = 'null'::jsonb OR ({k} -> 1) >= %s))"
        ).format(k=json_key(name))
        return clause, [Jsonb(moment), Jsonb(moment)]

    def sort_expressions(self, index):
        return None


@implementer(IIndexTranslator)
class TextTranslator:
    """ZCTextIndex: words matched against a ``tsvector``.

    ``SearchableText`` is stored in the ``searchable_text`` column; other
    text indexes (Title, Description) as text in ``idx``, turned into a
    ``tsvector`` at query time.
    """

    query_options = ("query",)

    def extract(self, index, obj):
        texts = []
        for attr in index.getIndexSourceNames():
            value = getattr(obj, attr, None)
            if callable(value):
                try:
                    value = value()
                except (AttributeError, TypeError):
                    value = None
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if isinstance(value, (list, tuple)):
                value = " ".join(str(v) for v in value if v)
            if value:
                texts.append(str(value))
        if not texts:
            return MISSING
        # Folded as the query words are: case and accents do not matter.
        return fold(" ".join(texts).replace("\x00", ""))

    def where(self, index, query):
        if not query.keys:
            return None
        text = " ".join(str(key) for key in query.keys if key)
        tsquery = to_tsquery_text(text)
        if tsquery is None:
            return None
        name = index.getId()
        if name == "SearchableText":
            vector = sql.SQL("searchable_text")
        else:
            vector = sql.SQL("to_tsvector('simple'::regconfig, {})").format(
                sql.SQL("COALESCE(idx ->> {}, '')").format(sql.Literal(name))
            )
        return vector + sql.SQL(" @@ to_tsquery('simple'::regconfig, %s)"), [tsquery]

    def sort_expressions(self, index):
        return None


@implementer(IIndexTranslator)
class PositionTranslator(FieldTranslator):
    """GopipIndex: the position of the object in its folder, an int."""

    query_options = ("query", "range", "not")

    def extract(self, index, obj):
        value = getattr(obj, "getObjPositionInParent", None)
        if callable(value):
            value = value()
        if isinstance(value, int):
            return value
        return MISSING


@implementer(IIndexTranslator)
class RecurringDateTranslator:
    """DateRecurringIndex: every occurrence, as DateRecurringIndex's ints.

    Stored as a sorted JSON array; a query matches an object when one of its
    occurrences matches, as in Products.DateRecurringIndex.
    """

    query_options = ("query", "range")

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
        from plone.event.utils import dt2int
        from plone.event.utils import pydt

        try:
            return dt2int(pydt(value))
        except Exception as exc:  # plone.event raises several kinds
            raise QueryError(
                f"index {index.getId()!r}: {value!r} is not a date"
            ) from exc

    def where(self, index, query):
        if not query.keys:
            return None
        keys = [self.convert(index, key) for key in query.keys]
        key = json_key(index.getId())
        range_spec = query.get("range")
        if range_spec:
            conditions, variables = [], []
            if "min" in range_spec:
                conditions.append("@ >= $min")
                variables.append(("min", min(keys)))
            if "max" in range_spec:
                conditions.append("@ <= $max")
                variables.append(("max", max(keys)))
            path = "$[*] ? (" + " && ".join(conditions) + ")"
            return (
                sql.SQL("jsonb_path_exists({}, {}, %s)").format(key, sql.Literal(path)),
                [Jsonb(dict(variables))],
            )
        return key + sql.SQL(" @> ANY(%s)"), [[Jsonb([k]) for k in keys]]

    def sort_expressions(self, index):
        # The first occurrence orders the object.
        return [sql.SQL("({} -> 0)").format(json_key(index.getId()))]


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
