"""Index views: ZCatalog's index objects, answering from PostgreSQL.

Owns: what add-ons get from ``portal_catalog.Indexes[name]``,
``_catalog.indexes[name]``, ``_catalog.getIndex(name)`` and
``getIndexObjects()``.  The catalog keeps ZCatalog's own index objects as
definitions only: they hold no data.  An ``IndexView`` wraps one
definition:

- definition attributes (``getId``, ``meta_type``, ``getIndexSourceNames``,
  ``getIndexQueryNames``, ``query_options``, ``indexed_attrs``, the ZMI's
  ``manage_*``...) are the definition's; setting one sets it on the
  definition (GenericSetup's importers do), and the view provides the
  definition's interfaces (plone.restapi and GenericSetup adapt them);
- data methods (``uniqueValues``, ``numObjects``, ``indexSize``,
  ``getEntryForObject``, ``len()``, ``_apply_index``, ``query_index``, the
  read-only ``_index`` and ``_unindex`` mappings) read the catalog's rows
  of the site in PostgreSQL, with this transaction's pending rows laid
  over them (``overlay.Overlay``), as ZCatalog sees what it has indexed.

Values come back in the Python form and order ZCatalog's index gives.
JSON cannot tell a DateTime stored as microseconds (``registry.comparable``)
from an int: where a FieldIndex, KeywordIndex or UUIDIndex holds numbers,
one cataloged object is asked, through the index's own extraction, which
type its value has.

Also owns ``IndexMapping``, ``_catalog.indexes`` as readers see it (views)
over the persistent mapping of definitions, and ``index_data`` (ZCatalog's
``getIndexDataForRID``).  Executes SQL on the request's read connection
(``connection.read_connection``); must not write SQL (the views' writes,
``index_object``, ``unindex_object`` and ``clear``, are the tool's pending
changes), and must not import the tool or brains (it finds the tool by
acquisition).
"""

from __future__ import annotations

from AccessControl import ClassSecurityInfo
from AccessControl.class_init import InitializeClass
from AccessControl.Permissions import manage_zcatalog_indexes
from Acquisition import aq_base
from Acquisition import aq_chain
from Acquisition import aq_inner
from Acquisition import aq_parent
from Acquisition import Implicit
from BTrees.IIBTree import IITreeSet
from BTrees.IIBTree import intersection
from BTrees.LLBTree import LLTreeSet
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from DateTime import DateTime
from plone_pgcatalog import snapshots
from plone_pgcatalog.errors import PGCatalogConfigurationError
from plone_pgcatalog.errors import PGCatalogError
from plone_pgcatalog.extraction import indexable
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.paths import PathTranslator
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.query import by_key
from plone_pgcatalog.registry import BooleanTranslator
from plone_pgcatalog.registry import DateRangeTranslator
from plone_pgcatalog.registry import DateTranslator
from plone_pgcatalog.registry import FieldTranslator
from plone_pgcatalog.registry import fits
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.registry import KeywordTranslator
from plone_pgcatalog.registry import PositionTranslator
from plone_pgcatalog.registry import RecurringDateTranslator
from plone_pgcatalog.registry import stored_value
from plone_pgcatalog.registry import TextTranslator
from plone_pgcatalog.registry import UUIDTranslator
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import layout
from plone_pgcatalog.store.columns import TEXT_KEPT
from plone_pgcatalog.store.columns import typed_value
from plone_pgcatalog.store.columns import value_of
from plone_pgcatalog.store.columns import whole_idx
from plone_pgcatalog.store.layout import json_key
from plone_pgcatalog.store.layout import nul_free
from psycopg import sql
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb
from zope.interface import directlyProvides
from zope.interface import providedBy

import datetime
import functools
import logging
import psycopg

logger = logging.getLogger(__name__)

_MISSING = object()

#: The text of SearchableText in document order: the exact words of the
#: ``tsvector`` (weight A, or D where no weight was set), not their stems;
#: NULL for an object without SearchableText (no entry, where ``ARRAY``
#: gave ``[]``, an entry without words).
_WORDS = sql.SQL(
    "CASE WHEN searchable_text IS NOT NULL THEN"
    " ARRAY(SELECT w.lexeme FROM unnest(searchable_text) AS w,"
    " unnest(w.positions, w.weights) AS p(position, weight)"
    " WHERE p.weight IN ('A', 'D') ORDER BY p.position) END"
)


# -- reading rows --------------------------------------------------------------


class _Rows:
    """The catalog rows of one site, for one call: where and how to read them.

    ``scope()`` is ``FROM <rows> WHERE <cataloged> AND <in the site>``
    with its parameters; the rows are the stored ones with this
    transaction's pending changes laid over them, as searches see them.
    """

    def __init__(self, tool, reads: frozenset[str] | None = None):
        """``reads``: the indexes whose values the call reads (None: any),
        as ``PendingCatalog.overlay`` takes them."""
        self.tool = tool
        self.site_path = "/".join(aq_parent(aq_inner(tool)).getPhysicalPath())
        pending = current_pending()
        self._overlay = pending.overlay(reads) if pending else None

    @functools.cached_property
    def columns(self) -> dict:
        """``{column: kind}`` of the typed columns ready (``store.columns``):
        read when a statement is composed (an answer kept per committed
        state needs no round trip)."""
        with connection.reading(self.tool):
            return connection.ready_columns(self.tool)

    @property
    def source_params(self) -> tuple:
        return self._source[1]

    @property
    def source(self) -> sql.Composable:
        return self._source[0]

    @functools.cached_property
    def _source(self) -> tuple[sql.Composable, tuple]:
        # The same overlay the tool's searches read.
        if not self._overlay:
            return layout.TABLE, ()
        return self._overlay.source(self.columns)

    def cache_key(self, *what) -> tuple | None:
        """A key of ``snapshots.unique_values`` for an answer about these rows, or
        None if they are not only stored rows."""
        if self._overlay:
            return None  # pending changes laid over them
        snapshot = connection.snapshot_id(self.tool)
        if snapshot is None:
            return None
        return (*snapshot, self.site_path, *what)

    def scope(self, joined: sql.Composable | None = None) -> tuple[sql.Composed, list]:
        site, site_params = path_clause(self.site_path, -1)
        statement = sql.SQL("FROM {}{} WHERE {}").format(
            self.source,
            joined if joined is not None else sql.SQL(""),
            site,
        )
        return statement, [*self.source_params, *site_params]

    def fetch(
        self,
        statement: sql.Composable,
        params,
        keep_plan: bool = False,
        json: bool = True,
    ) -> list[tuple]:
        """The rows of ``statement``, planned for its values unless
        ``keep_plan`` (written for it: ``query.SearchSQL.plan_kept``); its
        JSON decoded unless not ``json`` (it reads none: a plain cursor is
        made faster)."""
        try:
            with connection.reading(self.tool) as conn:
                with (
                    connection.json_cursor(conn)
                    if json
                    else conn.cursor(row_factory=tuple_row)
                ) as cursor:
                    # Planned for its values every time, as searches are
                    # (``store.search``): psycopg prepares a statement run
                    # five times on a connection, and after five more runs
                    # PostgreSQL kept the plan made blind to the values.
                    # That plan of plone.app.uuid's lookup of a UID
                    # (``_value_rids``) read every row of the site through
                    # its path range and compared each one's UID: 103 ms
                    # at 10,220 rows instead of an index lookup.
                    cursor.execute(statement, params, prepare=keep_plan)
                    return cursor.fetchall()
        except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable):
            # The catalog's table comes with the first write transaction.
            return []

    @property
    def idx(self) -> sql.Composable:
        """A row's ``idx`` with every value, also those stored in a column
        only (``columns.whole_idx``)."""
        return whole_idx(layout.ROWS, self.columns)

    def value(self, index_name: str) -> sql.Composable:
        """A row's JSON value of one index, wherever it is stored
        (``columns.value_of``)."""
        return value_of(layout.ROWS, index_name, self.columns)

    def row(self, words: sql.Composable, condition: sql.Composable, params):
        """``(zoid, path, idx, words)`` of the first row matching, or None."""
        scope, scope_params = self.scope()
        statement = sql.SQL("SELECT zoid, path, {}, {} {} AND {} LIMIT 1").format(
            self.idx, words, scope, condition
        )
        rows = self.fetch(statement, [*scope_params, *params])
        return rows[0] if rows else None


def _tool_of(context, name: str):
    for item in aq_chain(context):
        if IPGCatalogTool.providedBy(item):
            return item
    raise PGCatalogConfigurationError(
        f"index {name!r}: not reached through a catalog in its site; get it "
        "from portal_catalog (Indexes, _catalog.getIndex or _catalog.indexes)"
    )


def _rid_set(rids: list[int]):
    """ZCatalog's set of record ids: an IITreeSet (LLTreeSet past 32 bits)."""
    try:
        return IITreeSet(rids)
    except (TypeError, OverflowError):
        # Record ids are zoids, which can outgrow ZCatalog's 32-bit ids.
        return LLTreeSet(rids)


def _sorted(values, key=lambda item: item) -> list:
    """In a BTree's order (Python's); mixed types, which a BTree would not
    hold, grouped by type."""
    values = list(values)
    try:
        return sorted(values, key=key)
    except TypeError:
        return sorted(
            values, key=lambda item: (type(key(item)).__name__, repr(key(item)))
        )


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- dates stored as numbers ---------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _datetime_from_micros(micros: int, tz: str, naive: bool) -> DateTime:
    value = DateTime.__new__(DateTime)
    value.__setstate__((micros, naive, tz))
    return value


def _number_decoder(sample) -> Callable | None:
    """How to turn stored microseconds back into values like ``sample``."""
    if isinstance(sample, DateTime):
        tz, naive = sample.timezone(), sample.timezoneNaive()
        return lambda micros: _datetime_from_micros(micros, tz, naive)
    if isinstance(sample, datetime.datetime):
        if sample.tzinfo is None:
            tz = DateTime(sample).timezone()
            return lambda micros: (
                _datetime_from_micros(micros, tz, True)
                .asdatetime()
                .replace(tzinfo=None)
            )
        zone = sample.tzinfo
        return lambda micros: (
            _EPOCH + datetime.timedelta(microseconds=micros)
        ).astimezone(zone)
    return None


# -- the views ------------------------------------------------------------------


class IndexView(Implicit):
    """One index definition, as ZCatalog's index object (see module).

    This class only delegates: an index type without data here (GopipIndex,
    types without a translator) answers as its empty definition does, as in
    ZCatalog.
    """

    security = ClassSecurityInfo()
    security.declareObjectProtected(manage_zcatalog_indexes)

    #: Attributes the definition must not answer for: its data structures
    #: are empty.  (Names starting with "_" are not acquired either.)
    _not_delegated: frozenset[str] = frozenset()

    def __init__(self, definition, catalog=None):
        """``catalog``: the ``_catalog`` holding the definition, wrapped in
        its tool when reached through it (the view finds its site so)."""
        state = self.__dict__
        state["_definition"] = aq_base(definition)
        state["_catalog"] = catalog
        directlyProvides(self, providedBy(aq_base(definition)))

    def _wrapped_definition(self):
        definition = self.__dict__["_definition"]
        catalog = self.__dict__["_catalog"]
        return definition if catalog is None else definition.__of__(catalog)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") or name.startswith("aq_"):
            raise AttributeError(name)
        definition = self.__dict__["_definition"]
        if name in self._not_delegated:
            raise AttributeError(
                f"index {definition.getId()!r}: {name!r} is not available, its "
                "data is in PostgreSQL"
            )
        # Only what the definition itself has: what it would acquire, the
        # view acquires from its own parent, as a wrapped index does.
        if not hasattr(definition, name):
            raise AttributeError(name)
        return getattr(self._wrapped_definition(), name)

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("__") and name.endswith("__"):
            self.__dict__[name] = value  # zope.interface's __provides__
            return
        setattr(self.__dict__["_definition"], name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_definition"], name)

    def __bool__(self) -> bool:
        # An index is there whether or not it holds values; len() would
        # also cost a query.
        return True

    def __len__(self) -> int:
        return len(self._wrapped_definition())

    def __repr__(self) -> str:
        definition = self.__dict__["_definition"]
        return (
            f"<{type(self).__name__} of {definition.meta_type} {definition.getId()!r}>"
        )

    @security.protected(manage_zcatalog_indexes)
    def getDefinition(self):
        """The definition this view wraps (ZCatalog's empty index object)."""
        return self._wrapped_definition()


def _on_btrees(name: str, instead: str):
    """A method of ZCatalog's index that works on its BTrees, which hold
    nothing here: it raises ``PGCatalogError`` naming what to call
    ``instead``."""

    def method(self, *args, **kw):
        raise PGCatalogError(
            f"index {self._name!r}: {name} works on ZCatalog's BTrees, which"
            f" hold no data here (the catalog is in PostgreSQL); use {instead}"
        )

    method.__name__ = name
    return method


class DataIndexView(IndexView):
    """What every index type with data in PostgreSQL answers alike."""

    security = ClassSecurityInfo()

    _not_delegated = frozenset(
        {
            "_index",
            "_unindex",
            "_length",
            "_index_length",
            "_index_value",
            "_since",
            "_until",
            "_since_only",
            "_until_only",
            "_always",
            "_index_parents",
            "_index_items",
            "_depth",
        }
    )

    # ZCatalog's steps of its own indexing and searching, on its BTrees:
    # the definition's are empty, so they would answer nothing or write
    # into the ZODB.  Methods that raise, not missing names: acquisition
    # would find the catalog's ``search`` for a missing one.
    insertForwardIndexEntry = _on_btrees("insertForwardIndexEntry", "index_object")
    removeForwardIndexEntry = _on_btrees("removeForwardIndexEntry", "unindex_object")
    unindex_objectKeywords = _on_btrees("unindex_objectKeywords", "unindex_object")
    insertEntry = _on_btrees("insertEntry", "index_object")
    histogram = _on_btrees("histogram", "uniqueValues(withLengths=True)")
    search = _on_btrees("search", "the catalog's searchResults")
    query = _on_btrees("query", "the catalog's searchResults")

    # -- helpers ----------------------------------------------------------------

    @property
    def _name(self) -> str:
        return self.__dict__["_definition"].getId()

    def _rows(self) -> _Rows:
        name = self._name
        return _Rows(_tool_of(self.__dict__["_catalog"], name), frozenset([name]))

    def _words(self) -> sql.Composable:
        """The words column to fetch with a row (only SearchableText has one)."""
        return sql.SQL("NULL")

    def _has_value(self, rows: _Rows) -> sql.Composable:
        return rows.value(self._name) + sql.SQL(" IS NOT NULL")

    def _raw(self, path: str, idx: dict, words):
        """The stored value of a row for this index, or ``_MISSING``."""
        return idx.get(self._name, _MISSING)

    def _entry(self, raw, rows: _Rows, path: str):
        """ZCatalog's ``_unindex`` entry from the stored value."""
        return raw

    def _entry_from_row(self, rows: _Rows, row, default):
        if row is None:
            return default
        _, path, idx, words = row
        raw = self._raw(path, idx, words)
        if raw is _MISSING:
            return default
        return self._entry(raw, rows, path)

    def _count(self, rows: _Rows) -> int:
        scope, params = rows.scope()
        statement = sql.SQL("SELECT count(*) {} AND {}").format(
            scope, self._has_value(rows)
        )
        found = rows.fetch(statement, params)
        return found[0][0] if found else 0

    def _all_rows(self, rows: _Rows, rids: list[int] | None = None) -> list[tuple]:
        scope, params = rows.scope()
        among = sql.SQL("")
        if rids is not None:
            among = sql.SQL(" AND zoid = ANY(%s::bigint[])")
            params = [*params, list(rids)]
        statement = sql.SQL(
            "SELECT zoid, path, {}, {} {} AND {}{} ORDER BY zoid"
        ).format(rows.idx, self._words(), scope, self._has_value(rows), among)
        return rows.fetch(statement, params)

    # -- IPluggableIndex --------------------------------------------------------

    @security.protected(manage_zcatalog_indexes)
    def getEntryForObject(self, documentId, default=None):
        """What the index holds for one record id (``default`` if nothing)."""
        rows = self._rows()
        row = rows.row(self._words(), sql.SQL("zoid = %s"), [int(documentId)])
        return self._entry_from_row(rows, row, default)

    @security.protected(manage_zcatalog_indexes)
    def numObjects(self) -> int:
        """The number of objects with a value in this index."""
        return self._count(self._rows())

    @security.protected(manage_zcatalog_indexes)
    def indexSize(self) -> int:
        """The number of distinct values (ZCatalog's ``len(index)``)."""
        return len(self)

    @security.protected(manage_zcatalog_indexes)
    def getCounter(self) -> int:
        """Changes with every change of the index: the catalog's counter
        (``getCounter``), which changes with every change of the catalog."""
        return _tool_of(self.__dict__["_catalog"], self._name).getCounter()

    # -- writes: the tool's, at commit ---------------------------------------------
    # Without docstrings, so that no URL publishes them: they change the
    # pending store, which plone.protect's check of writes does not see
    # (a Manager's click on a link could empty an index).

    @security.protected(manage_zcatalog_indexes)
    def index_object(self, documentId, obj, threshold=None) -> int:
        # ``obj`` (as given: its own attributes, or a wrapper's) into this
        # index only, at commit, as ZCatalog's ``index_object``;
        # ``documentId`` is the object's record id (its oid here).  1 if
        # the object gives the index a value (ZCatalog: if the value
        # changed), else 0.
        tool = _tool_of(self.__dict__["_catalog"], self._name)
        return tool.index_one(self._name, documentId, obj)

    @security.protected(manage_zcatalog_indexes)
    def unindex_object(self, documentId) -> None:
        # Record id ``documentId``'s value of this index out, at commit
        # (nothing if there is no such row, as ZCatalog).
        _tool_of(self.__dict__["_catalog"], self._name).unindex_one(
            self._name, documentId
        )

    @security.protected(manage_zcatalog_indexes)
    def clear(self) -> None:
        # The index emptied for every object, at commit (``clearIndex``).
        _tool_of(self.__dict__["_catalog"], self._name).clearIndex(self._name)

    @security.protected(manage_zcatalog_indexes)
    def keyForDocument(self, documentId):
        return self._unindex[documentId]

    @security.protected(manage_zcatalog_indexes)
    def documentToKeyMap(self):
        return self._unindex

    @security.protected(manage_zcatalog_indexes)
    def referencedObjects(self):
        return self._unindex.keys()

    @property
    def _unindex(self) -> ReverseIndex:
        return ReverseIndex(self)

    def _entries(self, rids: list[int] | None = None) -> list[tuple[int, object]]:
        """``(record id, entry)`` of every object with a value, or of those
        of ``rids`` that have one."""
        rows = self._rows()
        entries = []
        for row in self._all_rows(rows, rids):
            entry = self._entry_from_row(rows, row, _MISSING)
            if entry is not _MISSING:
                entries.append((row[0], entry))
        return entries

    # -- searching, as ZCatalog's plan calls it -----------------------------------

    @security.protected(manage_zcatalog_indexes)
    def _apply_index(self, request, resultset=None):
        """``(record ids, (index id,))`` of a query, or None if it names
        no query key of this index."""
        names = self.getIndexQueryNames()
        query = {
            key: value
            for key, value in request.items()
            if any(key == name or key.startswith(name + "_") for name in names)
        }
        if not any(name in query for name in names):
            return None
        return self._search(query, resultset), (self._name,)

    @security.protected(manage_zcatalog_indexes)
    def query_index(self, record, resultset=None):
        """The record ids an ``IndexQuery`` finds."""
        options = {
            option: getattr(record, option)
            for option in record.options
            if option not in ("query", "operator") and hasattr(record, option)
        }
        if "operator" in record.options:
            options["operator"] = record.operator
        query = {record.id: {"query": record.keys, **options}}
        return self._search(query, resultset)

    def _search(self, query: dict, resultset):
        tool = _tool_of(self.__dict__["_catalog"], self._name)
        rids = _rid_set(
            sorted(brain.getRID() for brain in tool._unrestrictedSearchResults(query))
        )
        if resultset is not None:
            return intersection(resultset, rids)
        return rids


class ValueIndexView(DataIndexView):
    """A UnIndex holding one value per object (FieldIndex)."""

    security = ClassSecurityInfo()

    #: Whether numbers may stand for DateTime/datetime (``comparable``).
    _numbers_may_be_dates = True

    # -- values ------------------------------------------------------------------

    def _typed(self, rows: _Rows) -> sql.Composable | None:
        """The index's typed column, when it is ready, or its value computed
        as the column would hold it (``columns.typed_value``)."""
        return typed_value(rows.columns, self._name, self._kind())

    def _others(self, typed: sql.Composable) -> sql.Composable:
        """Rows whose value is in ``idx`` only (not of the column's type):
        found on the column's B-tree (``IS NULL``)."""
        return sql.SQL("{} IS NULL AND {}").format(typed, layout.has_key(self._name))

    def _kind(self) -> str | None:
        meta_type = self.__dict__["_definition"].meta_type
        return getattr(get_translator(meta_type), "column_kind", None)

    def _cut(self, value: sql.Composable) -> sql.Composable:
        """Whether ``value``, of the column, is a long string's first
        characters (``columns.TEXT_KEPT``): its whole value is in ``idx``."""
        if self._kind() != "text":
            return sql.SQL("false")
        return sql.SQL("char_length({}) > {}").format(value, sql.Literal(TEXT_KEPT))

    def _values(self, rows: _Rows) -> list:
        """Distinct stored values: one B-tree probe per value (skip scan)."""
        typed = self._typed(rows)
        if typed is not None:
            return self._typed_values(rows, typed)
        key = json_key(self._name)
        scope, params = rows.scope()
        statement = sql.SQL(
            "WITH RECURSIVE found(value) AS ("
            "(SELECT {k} {scope} AND {k} IS NOT NULL ORDER BY {k} LIMIT 1)"
            " UNION ALL SELECT (SELECT {k} {scope} AND {k} > found.value"
            " ORDER BY {k} LIMIT 1) FROM found WHERE found.value IS NOT NULL)"
            " SELECT value FROM found WHERE value IS NOT NULL"
        ).format(k=key, scope=scope)
        return [value for (value,) in rows.fetch(statement, [*params, *params])]

    def _typed_values(self, rows: _Rows, typed: sql.Composable) -> list:
        # The skip scan on the column's B-tree; values of other types from
        # ``idx`` (rows where the column is NULL: found on that B-tree too),
        # and so the whole values of the long strings the column holds by
        # their first characters (the rows of those: on the B-tree too).
        scope, params = rows.scope()
        statement = sql.SQL(
            "WITH RECURSIVE found(value) AS ("
            "(SELECT {c} {scope} AND {c} IS NOT NULL ORDER BY {c} LIMIT 1)"
            " UNION ALL SELECT (SELECT {c} {scope} AND {c} > found.value"
            " ORDER BY {c} LIMIT 1) FROM found WHERE found.value IS NOT NULL)"
            " SELECT to_jsonb(value) FROM found"
            " WHERE value IS NOT NULL AND NOT {cut}"
            " UNION ALL SELECT DISTINCT {k} {scope} AND {others}"
            " UNION ALL SELECT DISTINCT {k} {scope} AND {c} IN"
            " (SELECT value FROM found WHERE {cut})"
        ).format(
            c=typed,
            k=json_key(self._name),
            scope=scope,
            cut=self._cut(sql.SQL("value")),
            others=self._others(typed),
        )
        return [value for (value,) in rows.fetch(statement, [*params] * 4)]

    def _value_counts(self, rows: _Rows) -> list[tuple]:
        key = json_key(self._name)
        scope, params = rows.scope()
        typed = self._typed(rows)
        if typed is not None:
            # A long string's whole value from ``idx`` (read for it only).
            value = (
                sql.SQL("to_jsonb({c})")
                if self._kind() != "text"
                else sql.SQL("CASE WHEN {cut} THEN {k} ELSE to_jsonb({c}) END")
            )
            statement = sql.SQL(
                "SELECT " + value.as_string(None) + ", count(*)"
                " {scope} AND {c} IS NOT NULL GROUP BY 1 UNION ALL"
                " SELECT {k}, count(*) {scope} AND {others} GROUP BY {k}"
            ).format(
                c=typed,
                k=key,
                scope=scope,
                cut=self._cut(typed),
                others=self._others(typed),
            )
            return rows.fetch(statement, [*params, *params])
        statement = sql.SQL(
            "SELECT {k}, count(*) {scope} AND {k} IS NOT NULL GROUP BY {k}"
        ).format(k=key, scope=scope)
        return rows.fetch(statement, params)

    def _value_rids(self, rows: _Rows, key) -> list[int]:
        """Ids of the objects whose value is ``key`` (``_index.get``), as a
        search finds them: on the typed column where the key fits it (its
        B-tree), else by ``idx``.  By ``idx`` alone, which no SQL index
        holds once the column is ready, plone.app.uuid's lookup of a UID
        read every row of the site: 32 ms at 10,220 rows instead of 0.06."""
        translator = get_translator(self.__dict__["_definition"].meta_type)
        equals = getattr(translator, "equals", None)
        if equals is not None:
            clause, values = equals(self._name, [key], self._typed(rows))
        else:
            # An add-on's translator that names this view without being a
            # FieldTranslator (``IIndexTranslator.index_view``): its value
            # in ``idx``, which its own SQL index may hold.
            clause = sql.SQL("{} = %s").format(json_key(self._name))
            values = [Jsonb(key)]
        scope, params = rows.scope()
        statement = sql.SQL("SELECT zoid {} AND {} ORDER BY zoid").format(scope, clause)
        return [zoid for (zoid,) in rows.fetch(statement, [*params, *values])]

    def _value_items(self, rows: _Rows) -> list[tuple]:
        key = json_key(self._name)
        scope, params = rows.scope()
        statement = sql.SQL(
            "SELECT {k}, array_agg(zoid ORDER BY zoid) {scope} AND {k} IS NOT NULL"
            " GROUP BY {k}"
        ).format(k=key, scope=scope)
        return rows.fetch(statement, params)

    def _with_number(self) -> sql.Composable:
        return sql.SQL("jsonb_typeof({}) = 'number'").format(json_key(self._name))

    # -- numbers that are dates ---------------------------------------------------

    def _sample(self, wrapped):
        """The Python value ZCatalog's index takes from an object."""
        names = self.getIndexSourceNames()
        return self._wrapped_definition()._get_object_datum(
            wrapped, names[0] if names else self._name
        )

    def _decoder(self, rows: _Rows, path: str | None):
        """Turns stored numbers into the index's Python values (or None)."""
        state = self.__dict__
        if "_numbers" in state:
            return state["_numbers"]
        decoder = None
        if self._numbers_may_be_dates:
            if path is None:
                found = rows.row(sql.SQL("NULL"), self._with_number(), [])
                path = found[1] if found else None
            if path is not None:
                decoder = self._decoder_from_object(rows.tool, path)
        state["_numbers"] = decoder
        return decoder

    def _decoder_from_object(self, tool, path: str):
        obj = tool.unrestrictedTraverse(path, None)
        if obj is None:
            logger.warning(
                "index %r: %s is cataloged but cannot be traversed; its numbers "
                "are given as numbers",
                self._name,
                path,
            )
            return None
        return _number_decoder(self._sample(indexable(obj, tool)))

    def _decode(self, value, rows: _Rows, path: str | None = None):
        if not _is_number(value):
            return value
        decoder = self._decoder(rows, path)
        return (
            decoder(value) if decoder is not None and isinstance(value, int) else value
        )

    def _entry(self, raw, rows, path):
        return self._decode(raw, rows, path)

    def __len__(self) -> int:
        # UnIndex's length: its number of distinct values.
        return len(self._values(self._rows()))

    # -- IUniqueValueIndex ---------------------------------------------------------

    @security.protected(manage_zcatalog_indexes)
    def histogram(self) -> dict[int, int]:
        """``{number of objects: how many values have that many}``, as
        ZCatalog's ``histogram`` (a UUIDIndex's: ``{1: number of values}``,
        where ZCatalog's raises ``TypeError``)."""
        return dict(Counter(count for _, count in self.uniqueValues(withLengths=True)))

    @security.protected(manage_zcatalog_indexes)
    def hasUniqueValuesFor(self, name) -> bool:
        return name == self._name

    @security.protected(manage_zcatalog_indexes)
    def uniqueValues(self, name=None, withLengths=False):
        """The index's distinct values, in ZCatalog's order; with
        ``withLengths``, ``(value, number of objects)`` pairs."""
        if name is not None and name != self._name:
            return iter(())
        rows = self._rows()
        key = rows.cache_key(
            "uniqueValues", self._name, type(self).__name__, bool(withLengths)
        )
        if withLengths:

            def compute():
                pairs = [
                    (self._decode(value, rows), count)
                    for value, count in self._value_counts(rows)
                ]
                return self._lengths(_sorted_pairs(pairs))

        else:

            def compute():
                return _sorted(
                    self._decode(value, rows) for value in self._values(rows)
                )

        return iter(snapshots.unique_values.get(key, compute))

    def _lengths(self, pairs: list[tuple]) -> list[tuple]:
        return pairs

    # -- the forward index ----------------------------------------------------------

    @property
    def _index(self) -> ForwardIndex:
        return ForwardIndex(self)

    def _rids_for(self, key) -> list[int]:
        """Ids of the objects whose value is ``key``: kept per committed
        state (``snapshots.lookups``) where they are a page's worth at
        most; a page resolves the same UIDs on every view."""
        rows = self._rows()
        value = stored_value(key)
        return snapshots.lookups.get(
            self._lookup_key(rows, "rids", value),
            lambda: self._value_rids(rows, value),
            keep=lambda rids: len(rids) <= snapshots.RESULT_ROWS,
        )

    def _lookup_key(self, rows: _Rows, what: str, value) -> tuple | None:
        """The key of ``snapshots.lookups`` for ``what`` of ``value``."""
        if not snapshots.lookups.enabled:
            return None
        return rows.cache_key(what, self._name, type(self).__name__, repr(value))

    def _index_entry(self, rids: list[int]):
        return _rid_set(rids)

    def _items(self) -> list[tuple]:
        rows = self._rows()
        return _sorted_pairs(
            [
                (self._decode(value, rows), self._index_entry(rids))
                for value, rids in self._value_items(rows)
            ]
        )

    @security.protected(manage_zcatalog_indexes)
    def items(self) -> list[tuple]:
        """``[(value, set of record ids)]``, as UnIndex.items."""
        # UUIDIndex's _index holds single ids; items() gives sets for all.
        return [
            (key, _rid_set([value]) if isinstance(value, int) else value)
            for key, value in self._items()
        ]


def _sorted_pairs(pairs: list[tuple]) -> list[tuple]:
    """``(key, value)`` pairs in the order of their keys."""
    return _sorted(pairs, key=lambda pair: pair[0])


class DateIndexView(ValueIndexView):
    """DateIndex: ints, as ZCatalog's DateIndex converts dates."""

    security = ClassSecurityInfo()

    _numbers_may_be_dates = False


#: ``{(index name, site path): (statement, the site's parameters)}`` of
#: ``UUIDIndexView._uid_rows``.
_UID_LOOKUPS: dict[tuple[str, str], tuple[sql.SQL, tuple]] = {}


def _uid_lookup(name: str, site_path: str, uid: str) -> tuple[sql.SQL, list]:
    """The statement and parameters finding the rows of ``uid`` in UUIDIndex
    ``name`` of the site at ``site_path`` (``UUIDIndexView._uid_rows``)."""
    known = _UID_LOOKUPS.get((name, site_path))
    if known is None:
        site, site_params = path_clause(site_path, -1)
        where, _ = by_key(
            [site, layout.column(name) + sql.SQL(" = %s")],
            [*site_params, uid],
            1,
            len(site_params),
            1,
        )
        statement = sql.SQL("SELECT zoid, path FROM {} WHERE {} ORDER BY zoid").format(
            layout.TABLE, where
        )
        known = _UID_LOOKUPS[name, site_path] = (
            sql.SQL(statement.as_string(None)),
            tuple(site_params),
        )
    statement, site_params = known
    # ``by_key``'s order: the key's value first, then the others'.
    return statement, [uid, *site_params]


class UUIDIndexView(ValueIndexView):
    """UUIDIndex: one object per value; ``_index`` maps a value to its id."""

    security = ClassSecurityInfo()

    def _rids_for(self, key) -> list[int]:
        """A UID's object on the typed column, by a plan kept for every UID
        (``query.SearchSQL.plan_kept``: the other condition, the site, one
        ``IS TRUE`` test no index answers): plone.app.uuid resolves every
        link by UID.  Its path is read with it (``_uid_rows``, kept per
        committed state as the other lookups are) and remembered for the
        transaction (``snapshots.remember_paths``, ``remember_uid``):
        ``getpath``, which plone.app.uuid's ``uuidToPhysicalPath`` asks
        next, needs no round trip, nor does the search for the UID's brain
        when it follows (``uuidToCatalogBrain`` after ``uuidToObject`` or
        ``uuidToPhysicalPath``: ``results._uid_read``).  Not the metadata:
        most callers want the object or the path only, and the brain loads
        it when it is read (``benchmarks/README.rst``, "One round trip a
        link").  A kept answer is looked up before the typed columns are
        read: those come with the transaction's first catalog statement (a
        round trip), which a page whose links are all kept never sends."""
        rows = self._rows()
        value = stored_value(key)
        if rows.source_params or not fits("text", value):
            return super()._rids_for(key)
        found = snapshots.lookups.get(
            self._lookup_key(rows, "uid rows", value),
            lambda: self._uid_rows(rows, value),
            keep=lambda found: found is not None
            and len(found) <= snapshots.RESULT_ROWS,
        )
        if found is None:
            return super()._rids_for(key)  # no typed column ready
        state = rows.cache_key()
        if state is not None:
            snapshots.remember_paths(state, found)
            snapshots.remember_uid(state, self._name, value, found)
        return [zoid for zoid, _ in found]

    def _uid_rows(self, rows: _Rows, uid: str) -> list[tuple] | None:
        """``(zoid, path)`` of the site's rows of ``uid``, by record id;
        None if the index's typed column is not ready.  A page pays this
        for each of its links: the statement is composed once per index
        and site, its rows are tuples of an int and a string (no JSON
        loaders), and its plan is kept for every UID
        (``query.SearchSQL.plan_kept``)."""
        kind = self._kind()
        if kind is None or rows.columns.get(self._name) != kind:
            return None
        statement, params = _uid_lookup(self._name, rows.site_path, uid)
        return rows.fetch(statement, params, keep_plan=True, json=False)

    def _values(self, rows):
        # Every value is distinct: one pass, not one B-tree probe per value.
        key = json_key(self._name)
        scope, params = rows.scope()
        statement = sql.SQL("SELECT DISTINCT {k} {scope} AND {k} IS NOT NULL").format(
            k=key, scope=scope
        )
        return [value for (value,) in rows.fetch(statement, params)]

    @security.protected(manage_zcatalog_indexes)
    def numObjects(self) -> int:
        # UUIDIndex: as many objects as values.
        return len(self)

    def _lengths(self, pairs):
        return [(key, 1) for key, _ in pairs]

    def _index_entry(self, rids):
        return rids[0]


class KeywordIndexView(ValueIndexView):
    """KeywordIndex: a list of values per object."""

    security = ClassSecurityInfo()

    def _elements(self, rows) -> sql.Composable:
        key = rows.value(self._name)
        return sql.SQL(
            ", jsonb_array_elements(CASE WHEN jsonb_typeof({k}) = 'array'"
            " THEN {k} ELSE '[]'::jsonb END) AS element(value)"
        ).format(k=key)

    def _values(self, rows):
        scope, params = rows.scope(self._elements(rows))
        statement = sql.SQL("SELECT DISTINCT element.value {}").format(scope)
        return [value for (value,) in rows.fetch(statement, params)]

    def _value_counts(self, rows):
        scope, params = rows.scope(self._elements(rows))
        statement = sql.SQL(
            "SELECT element.value, count(*) {} GROUP BY element.value"
        ).format(scope)
        return rows.fetch(statement, params)

    def _value_rids(self, rows, key):
        # A string on the typed column's GIN index (``ValueIndexView``);
        # other values by containment in ``idx``.
        typed = self._typed(rows)
        if typed is not None and isinstance(key, str):
            condition, values = KeywordTranslator.overlaps(
                self._name, [key], typed=typed
            )
        else:
            condition = sql.SQL("{} @> %s").format(json_key(self._name))
            values = [Jsonb([key])]
        scope, params = rows.scope()
        statement = sql.SQL("SELECT zoid {} AND {} ORDER BY zoid").format(
            scope, condition
        )
        return [zoid for (zoid,) in rows.fetch(statement, [*params, *values])]

    def _value_items(self, rows):
        scope, params = rows.scope(self._elements(rows))
        statement = sql.SQL(
            "SELECT element.value, array_agg(zoid ORDER BY zoid) {}"
            " GROUP BY element.value"
        ).format(scope)
        return rows.fetch(statement, params)

    def _with_number(self):
        return sql.SQL(
            "jsonb_path_exists({}, '$[*] ? (@.type() == \"number\")')"
        ).format(json_key(self._name))

    def _sample(self, wrapped):
        names = self.getIndexSourceNames()
        keywords = self._wrapped_definition()._get_object_keywords(
            wrapped, names[0] if names else self._name
        )
        for keyword in keywords:
            if not isinstance(keyword, str):
                return keyword
        return None

    def _entry(self, raw, rows, path):
        return [self._decode(value, rows, path) for value in raw]


class RecurringDateIndexView(KeywordIndexView):
    """DateRecurringIndex: the ints of every occurrence, a tuple per object."""

    security = ClassSecurityInfo()

    _numbers_may_be_dates = False

    def _entry(self, raw, rows, path):
        return tuple(raw)


class BooleanIndexView(DataIndexView):
    """BooleanIndex: True and False.

    ZCatalog stores the less common value (switching at 60%) and gives it
    first; here the less common value comes first (True on a tie).
    """

    security = ClassSecurityInfo()

    def _counts(self) -> dict:
        rows = self._rows()
        key = json_key(self._name)
        scope, params = rows.scope()
        statement = sql.SQL(
            "SELECT {k}, count(*) {scope} AND {k} IS NOT NULL GROUP BY {k}"
        ).format(k=key, scope=scope)
        counts = {True: 0, False: 0}
        for value, count in rows.fetch(statement, params):
            counts[bool(value)] += count
        return counts

    @security.protected(manage_zcatalog_indexes)
    def histogram(self) -> dict[bool, int]:
        """``{True: objects, False: objects}``, as ZCatalog's BooleanIndex."""
        return self._counts()

    @security.protected(manage_zcatalog_indexes)
    def hasUniqueValuesFor(self, name) -> bool:
        return name == self._name

    @security.protected(manage_zcatalog_indexes)
    def uniqueValues(self, name=None, withLengths=False):
        if name is not None and name != self._name:
            return iter(())
        counts = self._counts()
        indexed = counts[True] <= counts[False]
        order = (indexed, not indexed)
        if withLengths:
            return iter([(value, counts[value]) for value in order])
        return iter(order)

    @security.protected(manage_zcatalog_indexes)
    def indexSize(self) -> int:
        return 2  # as BooleanIndex: always both values

    def __len__(self) -> int:
        return self.numObjects()

    def _entry(self, raw, rows, path):
        return int(bool(raw))  # BooleanIndex stores 0 and 1


class DateRangeIndexView(DataIndexView):
    """DateRangeIndex: ``(since, until)`` in minutes, None for open ends."""

    security = ClassSecurityInfo()

    def _entry(self, raw, rows, path):
        return tuple(raw)

    def __len__(self) -> int:
        # DateRangeIndex never counts its length: len() and indexSize() are 0.
        return 0

    @security.protected(manage_zcatalog_indexes)
    def hasUniqueValuesFor(self, name) -> bool:
        return self._wrapped_definition().hasUniqueValuesFor(name)

    @security.protected(manage_zcatalog_indexes)
    def uniqueValues(self, name=None, withLengths=False):
        """Values of ``name`` (the since or the until field): first those of
        ranges with both ends, then those of ranges open at the other end,
        each sorted, as DateRangeIndex gives them."""
        definition = self._wrapped_definition()
        fields = (definition.getSinceField(), definition.getUntilField())
        if name not in fields:
            return iter(())
        end = fields.index(name)
        rows = self._rows()
        key = json_key(self._name)
        scope, params = rows.scope()
        statement = sql.SQL(
            "SELECT {k} -> %s, ({k} -> %s) = 'null'::jsonb, count(*) {scope}"
            " AND {k} IS NOT NULL AND ({k} -> %s) <> 'null'::jsonb GROUP BY 1, 2"
        ).format(k=key, scope=scope)
        found = rows.fetch(statement, [end, 1 - end, *params, end])
        result = []
        for open_ended in (False, True):
            pairs = _sorted_pairs(
                [(value, count) for value, only, count in found if only is open_ended]
            )
            result += pairs if withLengths else [value for value, _ in pairs]
        return iter(result)


class PathIndexView(DataIndexView):
    """ExtendedPathIndex and PathIndex over the ``path`` column."""

    security = ClassSecurityInfo()

    def _has_value(self, rows):
        return sql.SQL("TRUE")

    def _raw(self, path, idx, words):
        return path

    def __len__(self) -> int:
        return self.numObjects()

    @security.protected(manage_zcatalog_indexes)
    def hasUniqueValuesFor(self, name) -> bool:
        return name == self._name

    @security.protected(manage_zcatalog_indexes)
    def uniqueValues(self, name=None, withLengths=False):
        """The path elements; ExtendedPathIndex also keys its terminator,
        None, first.  (With lengths ExtendedPathIndex fails on None; here
        None counts every object.)"""
        if name not in (None, self._name, "getPhysicalPath"):
            return iter(())
        rows = self._rows()
        scope, params = rows.scope(
            sql.SQL(", unnest(string_to_array(path, '/')) AS element(value)")
        )
        statement = sql.SQL(
            "SELECT element.value, count(DISTINCT zoid) {} AND element.value <> ''"
            " GROUP BY element.value"
        ).format(scope)
        pairs = _sorted_pairs(rows.fetch(statement, params))
        if pairs and self.meta_type == "ExtendedPathIndex":
            pairs.insert(0, (None, self._count(rows)))
        if withLengths:
            return iter(pairs)
        return iter([value for value, _ in pairs])


class TextIndexView(DataIndexView):
    """ZCTextIndex: words.  SearchableText's are in ``searchable_text``,
    other text indexes keep their words in ``idx``."""

    security = ClassSecurityInfo()

    _not_delegated = DataIndexView._not_delegated | {"index"}

    @property
    def _column(self) -> bool:
        return self._name == "SearchableText"

    def _words(self):
        return _WORDS if self._column else sql.SQL("NULL")

    def _has_value(self, rows):
        if self._column:
            return sql.SQL("searchable_text IS NOT NULL")
        return json_key(self._name) + sql.SQL(" IS NOT NULL")

    def _raw(self, path, idx, words):
        if self._column:
            return words if words is not None else _MISSING
        text = idx.get(self._name)
        return text.split() if isinstance(text, str) else _MISSING

    def _entry(self, raw, rows, path):
        return list(raw)

    @security.protected(manage_zcatalog_indexes)
    def uniqueValues(self, name=None, withLengths=False):
        raise NotImplementedError  # as ZCTextIndex

    @security.protected(manage_zcatalog_indexes)
    def numObjects(self) -> int:
        """The number of distinct words (ZCTextIndex: its lexicon's words)."""
        rows = self._rows()
        if self._column:
            joined = sql.SQL(
                ", unnest(searchable_text) AS w,"
                " unnest(w.positions, w.weights) AS p(position, weight)"
            )
            word = sql.SQL("w.lexeme")
            condition = sql.SQL("p.weight IN ('A', 'D')")
        else:
            joined = sql.SQL(
                ", regexp_split_to_table(idx ->> {}, '\\s+') AS w(word)"
            ).format(sql.Literal(self._name))
            word = sql.SQL("w.word")
            condition = sql.SQL("w.word <> ''")
        scope, params = rows.scope(joined)
        statement = sql.SQL("SELECT count(DISTINCT {}) {} AND {}").format(
            word, scope, condition
        )
        return rows.fetch(statement, params)[0][0]

    @security.protected(manage_zcatalog_indexes)
    def indexSize(self) -> int:
        """The number of objects with words (ZCTextIndex: document count)."""
        return self._count(self._rows())

    def __len__(self) -> int:
        return 1  # ZCTextIndex is an OFS Item, whose len() is 1


# Most specific first: translators subclass one another.
_VIEWS: tuple[tuple[type, type], ...] = (
    (PositionTranslator, IndexView),  # GopipIndex: a stub in ZCatalog too
    (BooleanTranslator, BooleanIndexView),
    (UUIDTranslator, UUIDIndexView),
    (DateTranslator, DateIndexView),
    (FieldTranslator, ValueIndexView),
    (RecurringDateTranslator, RecurringDateIndexView),
    (KeywordTranslator, KeywordIndexView),
    (DateRangeTranslator, DateRangeIndexView),
    (PathTranslator, PathIndexView),
    (TextTranslator, TextIndexView),
)


def view_class(meta_type: str) -> type:
    """The view class for an index type: the one its translator names
    (``index_view``, as an add-on's may), else ours by its translator."""
    translator = get_translator(meta_type)
    declared = getattr(translator, "index_view", None)
    if declared is not None:
        return declared
    for translator_class, view in _VIEWS:
        if isinstance(translator, translator_class):
            return view
    return IndexView


def index_view(definition, catalog=None) -> IndexView:
    """The view of ``definition``, wrapped in ``catalog`` as ZCatalog's
    ``getIndex`` wraps an index."""
    view = view_class(definition.meta_type)(definition, catalog)
    return view if catalog is None else view.__of__(catalog)


# -- read-only mappings: _index and _unindex ------------------------------------


class ForwardIndex:
    """``index._index``: value → record ids (an int for UUIDIndex), read-only."""

    __allow_access_to_unprotected_subobjects__ = True

    def __init__(self, view: ValueIndexView):
        self._view = view

    def keys(self, min=None, max=None) -> list:
        # The values as stored (``uniqueValues``), and the bounds so.
        keys = list(self._view.uniqueValues())
        if min is not None:
            keys = [key for key in keys if key >= nul_free(min)]
        if max is not None:
            keys = [key for key in keys if key <= nul_free(max)]
        return keys

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def get(self, key, default=None):
        rids = self._view._rids_for(key)
        return self._view._index_entry(rids) if rids else default

    def __getitem__(self, key):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    has_key = __contains__

    def items(self) -> list[tuple]:
        return self._view._items()

    def values(self) -> list:
        return [value for _, value in self.items()]


class ReverseIndex:
    """``index._unindex``: record id → what the index holds, read-only."""

    __allow_access_to_unprotected_subobjects__ = True

    def __init__(self, view: DataIndexView):
        self._view = view

    def get(self, rid, default=None):
        return self._view.getEntryForObject(rid, default)

    def __getitem__(self, rid):
        value = self.get(rid, _MISSING)
        if value is _MISSING:
            raise KeyError(rid)
        return value

    def __contains__(self, rid) -> bool:
        return self.get(rid, _MISSING) is not _MISSING

    has_key = __contains__

    def items(self) -> list[tuple]:
        return self._view._entries()

    def read(self, rids: list[int]) -> dict:
        """``{record id: entry}`` of those of ``rids`` that have a value, in
        one statement (not ZCatalog's: a mapping of its BTree reads one key
        at a time for nothing)."""
        return dict(self._view._entries(list(rids)))

    def keys(self) -> list[int]:
        return [rid for rid, _ in self.items()]

    def values(self) -> list:
        return [value for _, value in self.items()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return self._view.numObjects()


# -- _catalog.indexes ------------------------------------------------------------


class Definitions(Mapping):
    """``{name: index definition}``, each wrapped in the catalog as it is
    read (``getIndexDefinitions``).

    Every search asks for the definitions, and a search whose translation
    is kept reads only the states of all of them and the few its query
    names (``translations.TranslationCache.key``): wrapping every one of
    them was most of that.  ``stored`` is the persistent mapping's own
    dict, unwrapped, for reading the stored states; do not change it.
    ``mapping`` is that persistent mapping, when there is one: its
    connection tells whether this transaction changed any object.
    """

    def __init__(self, stored: dict, catalog, mapping=None):
        self.stored = stored
        self._catalog = catalog
        self.mapping = mapping

    def __getitem__(self, name: str):
        return self.stored[name].__of__(self._catalog)

    def __contains__(self, name) -> bool:
        return name in self.stored

    def __iter__(self):
        return iter(self.stored)

    def __len__(self) -> int:
        return len(self.stored)


class IndexMapping(Implicit):
    """``_catalog.indexes``: views for readers, definitions underneath.

    Reading gives ``IndexView`` objects (ZCatalog gives its index objects);
    setting and deleting change the persistent mapping of definitions.
    ``definition(name)`` and ``definitions()`` give the definitions
    themselves, for the catalog's own use (extraction, query translation,
    moving definitions to another catalog).
    """

    __allow_access_to_unprotected_subobjects__ = True

    def __init__(self, definitions, owner):
        self._definitions = definitions  # the PersistentMapping
        self._owner = owner  # the CatalogDefinitions, if not wrapped

    def _catalog(self):
        parent = aq_parent(aq_inner(self))
        return parent if parent is not None else self._owner

    def index_type(self, name: str) -> str:
        """The ``meta_type`` of index ``name`` (KeyError if there is none),
        without a view or a wrapper."""
        return self._definitions[name].meta_type

    def definition(self, name: str):
        """The definition of index ``name``, wrapped like ``getIndex``'s."""
        return self._definitions[name].__of__(self._catalog())

    def definitions(self) -> Definitions:
        # Reading ``data`` loads a ghost.
        return Definitions(
            self._definitions.data, self._catalog(), aq_base(self._definitions)
        )

    def __getitem__(self, name: str) -> IndexView:
        return index_view(self._definitions[name], self._catalog())

    def get(self, name: str, default=None):
        if name not in self._definitions:
            return default
        return self[name]

    def __contains__(self, name) -> bool:
        return name in self._definitions

    has_key = __contains__

    def __iter__(self):
        return iter(list(self._definitions.keys()))

    def __len__(self) -> int:
        return len(self._definitions)

    def keys(self) -> list[str]:
        return list(self._definitions.keys())

    def values(self) -> list[IndexView]:
        return [self[name] for name in self.keys()]

    def items(self) -> list[tuple[str, IndexView]]:
        return [(name, self[name]) for name in self.keys()]

    def __setitem__(self, name: str, definition) -> None:
        self._definitions[name] = aq_base(definition)

    def __delitem__(self, name: str) -> None:
        del self._definitions[name]


def index_data(
    indexes: IndexMapping, *, rid: int | None = None, uid: str | None = None
):
    """``{index name: entry}`` of one cataloged object, by record id or
    path, as ZCatalog's ``getIndexDataForRID`` ("" where an index holds
    nothing for it).  KeyError if the object is not cataloged in the site.
    """
    views = indexes.items()
    if not views:
        return {}
    rows = _Rows(_tool_of(indexes._catalog(), views[0][0]))
    words = _WORDS if "SearchableText" in indexes else sql.SQL("NULL")
    if rid is not None:
        row = rows.row(words, sql.SQL("zoid = %s"), [int(rid)])
    else:
        # A path as paths are held (``layout.nul_free``): one with NUL is
        # no object's, and is not sent to PostgreSQL, which refuses it.
        row = rows.row(words, sql.SQL("path = %s"), [nul_free(uid)])
    if row is None:
        raise KeyError(rid if rid is not None else uid)
    result = {}
    for name, view in views:
        if isinstance(view, DataIndexView):
            result[name] = view._entry_from_row(rows, row, "")
        else:
            result[name] = view.getEntryForObject(row[0], "")
    return result


for _class in (
    IndexView,
    DataIndexView,
    ValueIndexView,
    DateIndexView,
    UUIDIndexView,
    KeywordIndexView,
    RecurringDateIndexView,
    BooleanIndexView,
    DateRangeIndexView,
    PathIndexView,
    TextIndexView,
):
    InitializeClass(_class)
del _class
