"""zodb-pgjsonb's process-wide object cache: every poll's invalidations kept.

Owns: the rules of a zodb-pgjsonb storage's ``SharedLoadCache`` (the
``cache-shared-mb`` cache, which all ZODB connections of a process share)
and of its connections' polls, and their installation on such a storage.

Why: a connection that polls PostgreSQL for the objects other processes
changed hands them to the shared cache with the newest transaction it saw
(``SharedLoadCache.poll_advance(new_tid, changed_zoids)``).  zodb-pgjsonb
1.19 drops those entries only when ``new_tid`` is at least the newest
transaction any connection of the process has reported before (its
"consensus"), which a commit of the process itself moves forward at
once.  A poll that read PostgreSQL's last transaction just before such a
commit then skips its invalidations, and the old state of an object
another process changed stays in the cache, served to the process's
transactions until a connection whose last poll came before the change
polls again past the consensus (or the entry is evicted).

The soak (``benchmarks/soak.py --faults``: two instances, one database)
showed it after a PostgreSQL restart, when the connections of an instance
poll again at once: an instance read, for 12 s, the state of a
CMFEditions BTree the other had replaced (each of Zope's three tries of a
write failed on the same write conflict), answered "404 Not Found" for
items that existed, and failed in CMFEditions on version histories it
did not see.  The catalog's rows were right throughout: they are read
with SQL, not through this cache.  Without a rule 2 of 3 such runs
failed so; with ``cache-shared-mb 0`` 2 of 2 passed (README, "Known
issues").

A connection that ZODB opens anew polls first without invalidating
anything (it has no earlier transaction to compare with), and reads what
the cache holds up to its snapshot: the old state of an object another
process changed since the others polled (an integration test shows it
on zodb-pgjsonb alone).  The CI run of this module's first version, which
handled only the skipped invalidations, still showed old reads after the
restart, when ZODB opens connections in place of those the outage left.

So here, for each database Zope's start-up prepares:

- every poll drops the entries of the objects it found changed, whatever
  transaction it reached (dropping an entry is always right: the next
  load reads PostgreSQL in the reader's snapshot);
- the cache knows the transaction up to which every change has been
  dropped (``covered``: polls whose range begins within it extend it)
  and serves an entry only to a reader whose snapshot is within it;
- a connection's poll begins where ``covered`` ends when its own last
  poll is not within it (its first poll, which would begin with nothing,
  or one of a connection that polled past it), and so extends it: the
  cost is an invalidation query over a range a little longer;
- it starts empty, with ``covered`` at PostgreSQL's last transaction, and
  refuses to cache what a reader older than ``covered`` read.

The consensus and the other gates of zodb-pgjsonb's cache are its own.
A reader beyond ``covered`` (a poll not yet told to the cache) reads
PostgreSQL, as without the cache.

Must not import the catalog's modules: this is about the objects' states.
"""

from __future__ import annotations

from zodb_pgjsonb.instance import PGJsonbStorageInstance
from zodb_pgjsonb.storage import SharedLoadCache

import logging

logger = logging.getLogger(__name__)

#: What the classes below use of zodb-pgjsonb's.
_USED_OF_THE_CACHE = ("_lock", "_cache", "_current_bytes", "_max_bytes")
_USED_OF_THE_STORAGE = ("_shared_cache", "new_instance", "current_max_tid")
_USED_OF_THE_INSTANCE = ("_poll",)


class CoveredSharedLoadCache(SharedLoadCache):
    """zodb-pgjsonb's ``SharedLoadCache`` that drops every poll's changed
    objects and serves only readers within ``covered`` (see module)."""

    __slots__ = ("_covered",)

    def __init__(self, max_mb):
        super().__init__(max_mb)
        self._covered = None

    @property
    def covered(self) -> int | None:
        """The transaction up to which every change has been dropped."""
        with self._lock:
            return self._covered

    def poll_advance(self, new_tid, changed_zoids):
        with self._lock:
            for zoid in changed_zoids:
                entry = self._cache.pop(zoid, None)
                if entry is not None:
                    self._current_bytes -= len(entry[0])
            super().poll_advance(new_tid, changed_zoids)

    def begin(self, tid) -> None:
        """Start at ``tid``, PostgreSQL's last transaction: nothing is
        cached yet, so every change up to it is dropped."""
        with self._lock:
            self.poll_advance(tid, [])
            self._covered = tid

    def polled(self, since, through) -> None:
        """A poll dropped the changes after ``since`` through ``through``
        (``poll_advance``).  Without ``begin``, or after ``clear``, the
        first one tells where ``covered`` begins: what was cached before it
        is dropped."""
        with self._lock:
            if self._covered is None:
                self._cache.clear()
                self._current_bytes = 0
                self._covered = through
            elif since is not None and since <= self._covered < through:
                self._covered = through

    def get(self, zoid, polled_tid):
        with self._lock:
            if (
                polled_tid is None
                or self._covered is None
                or polled_tid > self._covered
            ):
                self.misses += 1
                return None
            return super().get(zoid, polled_tid)

    def set(self, zoid, data, tid_bytes, polled_tid):
        with self._lock:
            if self._covered is not None and polled_tid is not None:
                if polled_tid < self._covered:
                    return False
            return super().set(zoid, data, tid_bytes, polled_tid)

    def clear(self):
        with self._lock:
            super().clear()
            self._covered = None


class CoveringStorageInstance(PGJsonbStorageInstance):
    """A zodb-pgjsonb connection whose polls tell the cache what they
    covered, the first beginning where the cache's ``covered`` ends."""

    def _poll(self):
        cache = self._main._shared_cache
        covered = cache.covered
        if covered is not None and (
            self._polled_tid is None or self._polled_tid > covered
        ):
            self._polled_tid = covered
        since = self._polled_tid
        result = super()._poll()
        cache.polled(since, self._polled_tid)
        return result


def _cover(instance) -> None:
    if type(instance) is PGJsonbStorageInstance:
        instance.__class__ = CoveringStorageInstance


def instance_of(connection):
    """The storage instance of ``connection`` (a ``ZODB.Connection``), also
    in a savepoint, where ZODB reads through a TmpStore over it."""
    # Never ``x or y`` on a storage: its truth is ``len()``, which for
    # zodb-pgjsonb counts the objects in PostgreSQL.
    instance = getattr(connection, "_normal_storage", None)
    return connection._storage if instance is None else instance


def on_every_instance(db, install) -> None:
    """Call ``install`` on every storage instance of the zodb-pgjsonb
    storage of ``db`` (a ``ZODB.DB``): on those of its connections now
    (Zope opens one before it tells subscribers the database is open) and
    on each the storage makes from now on."""
    storage = db.storage
    new_instance = storage.new_instance

    def installing():
        instance = new_instance()
        install(instance)
        return instance

    storage.new_instance = installing
    db._connectionMap(lambda connection: install(instance_of(connection)))


def keep_invalidations(db) -> None:
    """Give the zodb-pgjsonb storage of ``db`` (a ``ZODB.DB``) the cache
    and the connections of this module, its existing connections included
    (Zope opens one before it tells subscribers the database is open).
    The new cache starts empty (the cache warmer, which runs later, fills
    it).  Calling it twice changes nothing.  A zodb-pgjsonb whose cache,
    storage or connections no longer have what they use is left as it is,
    with a warning."""
    storage = db.storage
    cache = getattr(storage, "_shared_cache", None)
    if type(cache) is not SharedLoadCache:
        return
    slots = getattr(SharedLoadCache, "__slots__", ())
    missing = sorted(
        {name for name in _USED_OF_THE_CACHE if name not in slots}
        | {name for name in _USED_OF_THE_STORAGE if not hasattr(storage, name)}
        | {
            name
            for name in _USED_OF_THE_INSTANCE
            if not hasattr(PGJsonbStorageInstance, name)
        }
    )
    if missing:
        logger.warning(
            "zodb-pgjsonb has changed (no %s): its shared cache is left as"
            " it is (plone_pgcatalog.sharedcache)",
            ", ".join(missing),
        )
        return
    covered = CoveredSharedLoadCache(max_mb=cache._max_bytes / 1_000_000)
    last = storage.current_max_tid()
    if last is not None:  # else the first poll tells (``polled``)
        covered.begin(last)
    warmer = getattr(storage, "_warmer", None)
    if warmer is not None:
        warmer._shared_cache = covered
    storage._shared_cache = covered
    on_every_instance(db, _cover)
