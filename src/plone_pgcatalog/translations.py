"""Translations of queries, kept per Zope process.

A site asks the same searches again and again (navigation, folder
listings, portlets, the search page); translating one (``query.build_query``:
the plan, each index's translator, the composed SQL) costs about 0.1 to
0.3 ms of Python, on the path of every search, also of one whose rows
the result cache has (``snapshots``).  A query already translated on the
same index definitions gets its ``SearchSQL`` from here.

Owns the key (``TranslationCache.key``), which holds everything the
translation reads:

- the query's keys and values in their order, each value with its exact
  type (``1``, ``True`` and ``1.0`` translate differently); a translator may
  name the part of a value it reads (``cache_value``: a DateIndex and a
  DateRangeIndex read the minute, so the ``effectiveRange`` of every
  anonymous search in one minute is one key);
- the index definitions as committed: each index's oid and the serial of
  the state read (a change committed by any process gives a new serial;
  this process reads it in its next transaction), and the translators of
  the indexes each query key is sent to (an add-on may register one: its
  translations are kept only if it says they may be,
  ``translation_cacheable``);
- the site's path, the text search configurations, the typed columns
  ready in the snapshot and ``match_all``.

Not kept: a query holding a value that cannot be frozen into a key (a
publisher ``record``, a set, an object of another type) or more than a
key may hold (``BUDGET``: a list of thousands of UIDs), a translation made
while an index definition is changed and not committed (a savepoint
included), or one with this transaction's pending changes laid over the
rows (its SQL carries them).  Errors are not kept: a bad query raises on
every try.

Must not compose SQL itself or touch connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from collections import OrderedDict
from DateTime import DateTime
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import query_names
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.query import SearchSQL
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.registry import TRANSLATORS
from plone_pgcatalog.store.overlay import Overlay
from ZODB.utils import z64

import datetime
import functools
import threading

#: Translations kept (least recently used dropped first): each is a
#: ``SearchSQL`` of a few KB.
SIZE = 2000

#: What a key may hold of a query's values: each value, list item and
#: record key counts 1, a string or bytes 1 more for each 100 characters.
#: A query above it is translated every time, so that each translation kept
#: is a few KB.
BUDGET = 2000

#: Values kept in a key as they are (with their exact type).
_PLAIN = frozenset(
    {
        str,
        int,
        float,
        bool,
        type(None),
        bytes,
        datetime.date,
        datetime.datetime,
        datetime.time,
    }
)


#: Our translators, whose translations depend on the key's parts alone.
_OURS = tuple(TRANSLATORS.values())


class _NotFrozen(Exception):
    """A value of a query (or a translator) that no key can stand for."""


class _Budget:
    """What is left of ``BUDGET`` while a key is made."""

    def __init__(self):
        self.left = BUDGET

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise _NotFrozen("more than a key may hold")


def freeze(value, stand_in=None, budget: _Budget | None = None):
    """A hashable stand-in for a query value, equal for two values only
    when they are the same values of the same types.  ``stand_in(item)``,
    if given, may name what a translator reads of each single value (in
    lists and records too), or return None.  Raises ``_NotFrozen`` for a
    value no key can stand for, or one larger than ``BUDGET``."""
    budget = budget or _Budget()
    budget.spend(1)
    kind = type(value)
    if kind is list or kind is tuple:
        return kind, tuple(freeze(item, stand_in, budget) for item in value)
    if kind is dict:
        return kind, tuple(
            (freeze(key, None, budget), freeze(item, stand_in, budget))
            for key, item in value.items()
        )
    if stand_in is not None:
        read = stand_in(value)
        if read is not None:
            return "read", read
    if kind is str or kind is bytes:
        budget.spend(len(value) // 100)
    if kind in _PLAIN:
        return kind, value
    if kind is DateTime:
        # Equal DateTimes may differ in their zone, which a translation
        # may show (a ``DateTime`` is read in its zone by add-ons).
        return kind, value.micros(), value.timezone()
    raise _NotFrozen(kind)


def _committed_states(indexes) -> tuple | None:
    """``((name, oid, serial), ...)`` of the committed states the index
    definitions ``indexes`` hold, or None when one holds changes of this
    transaction or is not stored.  Every search asks (``key``): one loop,
    on the definitions as stored (``indexes.Definitions.stored``), with
    each connection's savepoint looked up once."""
    states = []
    last_jar = savepoint = None
    for name, index in getattr(indexes, "stored", indexes).items():
        base = aq_base(index)
        changed = getattr(base, "_p_changed", True)
        if changed is None:  # a ghost: its serial may not be its state's
            base._p_activate()
            changed = base._p_changed
        jar = base._p_jar
        if changed or jar is None or base._p_serial == z64:
            return None  # changed, or added, in this transaction; or not stored
        if jar is not last_jar:
            # A savepoint stores the changes made so far aside and marks
            # the objects unchanged, with their committed serial.
            last_jar, savepoint = jar, getattr(jar, "_savepoint_storage", None)
        if savepoint is not None and base._p_oid in savepoint.index:
            return None
        states.append((name, base._p_oid, base._p_serial))
    return tuple(states)


#: ``{(database, transaction id, definitions oid): states}``: what
#: ``_committed_states`` found in a committed state of the database
#: (``connection.snapshot_id``).  Every reader of that state loaded the
#: same definitions, so one loop over them serves all its searches
#: (``_states_in``).
_STATES_SEEN: dict[tuple, tuple] = {}
_STATES_KEPT = 64


def _states_in(indexes, snapshot: tuple | None) -> tuple | None:
    """``_committed_states(indexes)``, found once per committed state of
    the database (``snapshot``, ``connection.snapshot_id``) while the
    definitions' connection holds no change of this transaction and no
    savepoint: their objects are then as that state has them.  A search
    whose translation is kept spent about a tenth of its time in the loop
    (``benchmarks/README.rst``, "Kept answers without a round trip")."""
    mapping = getattr(indexes, "mapping", None)
    jar = getattr(mapping, "_p_jar", None)
    if (
        snapshot is None
        or jar is None
        or getattr(jar, "_registered_objects", True)
        or getattr(jar, "_savepoint_storage", None) is not None
    ):
        return _committed_states(indexes)
    key = (*snapshot, mapping._p_oid)
    states = _STATES_SEEN.get(key)
    if states is None:
        states = _committed_states(indexes)
        if states is not None:
            if len(_STATES_SEEN) >= _STATES_KEPT:
                _STATES_SEEN.clear()
            _STATES_SEEN[key] = states
    return states


def _pure(index):
    """The translator of ``index``, if its translations may be kept: ours
    (``registry.TRANSLATORS``), or an add-on's that says so with
    ``translation_cacheable = True`` (see ``interfaces``)."""
    translator = get_translator(index.meta_type)
    if translator is None:
        return None  # build_query raises UnknownIndexError; nothing kept
    if translator in _OURS or getattr(translator, "translation_cacheable", False):
        return translator
    raise _NotFrozen(translator)


def _names(value) -> list:
    """The index names of a ``sort_on`` (a name or a sequence of names)."""
    if isinstance(value, str):
        return [value]
    return (
        [name for name in value if isinstance(name, str)]
        if isinstance(value, (list, tuple))
        else []
    )


class _Definitions:
    """Which indexes each query key is sent to (``query_names``; by name:
    the index objects are each connection's own), worked out once per
    state of the definitions."""

    def __init__(self, indexes: dict):
        self.named: dict[str, tuple[str, ...]] = {}
        for name, index in indexes.items():
            for query_name in query_names(index):
                self.named[query_name] = (*self.named.get(query_name, ()), name)


class TranslationCache:
    """``SearchSQL`` per translation key, least recently used dropped."""

    def __init__(self, size: int = SIZE):
        self.size = size
        self._kept: OrderedDict = OrderedDict()
        self._definitions: dict = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._definitions.clear()
            _STATES_SEEN.clear()
            self.hits = self.misses = 0

    def translate(
        self,
        query: dict,
        indexes: dict,
        site_path: str,
        context: QueryContext,
        overlay: Overlay | None = None,
        match_all: bool = False,
        snapshot: tuple | None = None,
    ) -> SearchSQL:
        """``build_query(...)``, or the translation kept for its key.
        ``snapshot``: the committed state read (``connection.snapshot_id``),
        if known."""
        key = (
            None if overlay else self.key(query, indexes, site_path, context, snapshot)
        )
        if key is not None:
            key = (key, match_all)
            with self._lock:
                found = self._kept.get(key)
                if found is not None:
                    self._kept.move_to_end(key)
                    self.hits += 1
                    return found
        translated = build_query(
            query, indexes, site_path, context, overlay, match_all=match_all
        )
        if key is not None:
            with self._lock:
                self.misses += 1
                self._kept[key] = translated
                if len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return translated

    def _definitions_of(self, indexes: dict, states: tuple) -> _Definitions:
        definitions = self._definitions.get(states)
        if definitions is None:
            definitions = _Definitions(indexes)
            with self._lock:
                if len(self._definitions) > 16:
                    self._definitions.clear()
                self._definitions[states] = definitions
        return definitions

    def answering(
        self, indexes: dict, name: str, snapshot: tuple | None = None
    ) -> tuple[str, ...]:
        """The names of the indexes of ``indexes`` that the query key
        ``name`` is sent to (``query_names``), worked out once per state of
        the definitions as the keys are; ``snapshot`` as ``translate``
        takes it."""
        states = _states_in(indexes, snapshot)
        if states is None:
            return _Definitions(indexes).named.get(name, ())
        return self._definitions_of(indexes, states).named.get(name, ())

    def key(
        self,
        query: dict,
        indexes: dict,
        site_path: str,
        context,
        snapshot: tuple | None = None,
    ) -> tuple:
        """The translation key of ``query`` (see module), or None when it
        cannot have one."""
        states = _states_in(indexes, snapshot)
        if states is None:
            return None
        definitions = self._definitions_of(indexes, states)
        budget = _Budget()
        try:
            values = []
            for name, value in query.items():
                answering = definitions.named.get(name)
                if answering:
                    # ``query._plan`` sends the key to each of them.
                    translators = tuple(_pure(indexes[each]) for each in answering)
                    read = getattr(translators[0], "cache_value", None)
                    stand_in = None
                    if read is not None and len(answering) == 1:
                        stand_in = functools.partial(read, indexes[answering[0]])
                    values.append((name, translators, freeze(value, stand_in, budget)))
                elif name in ("sort_on", "sort-on"):
                    # The sort indexes' translators compose the order.
                    sorters = tuple(
                        _pure(indexes[sort])
                        for sort in _names(value)
                        if sort in indexes
                    )
                    values.append((name, sorters, freeze(value, None, budget)))
                else:
                    values.append((name, None, freeze(value, None, budget)))
        except _NotFrozen:
            return None
        return (
            states,
            tuple(values),
            site_path,
            context.text_configs,
            tuple(sorted(context.columns.items())),
            context.large,
            context.site_alone,
            context.many_lists,
            context.group_counts,
        )


#: The process's translations (``results.search_results`` uses it).
translations = TranslationCache()
