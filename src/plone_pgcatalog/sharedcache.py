"""zodb-pgjsonb's process-wide object cache: every poll's invalidations kept.

Owns: the invalidation rule of a zodb-pgjsonb storage's ``SharedLoadCache``
(the ``cache-shared-mb`` cache, which all ZODB connections of a process
share), and its installation on such a storage.

Why: a connection that polls PostgreSQL for the objects other processes
changed hands them to the shared cache with the newest transaction it saw
(``SharedLoadCache.poll_advance(new_tid, changed_zoids)``).  zodb-pgjsonb
1.19 drops those entries only when ``new_tid`` is at least the newest
transaction any connection of the process has reported before (its
"consensus").  When another connection of the process has just committed
or polled further, the poll's invalidations are skipped, and the old state
of an object another process changed stays in the cache, to be served to
every later transaction of the process until the object changes again.

The soak (``benchmarks/soak.py --faults``: two instances, one database)
met it after a PostgreSQL restart, when every connection of an instance
polls again at once: one instance read a 13 s old state of a CMFEditions
BTree for 12 s (each of Zope's three tries of a request failed on the same
write conflict), answered "404 Not Found" for items that existed (an old
state of their folder), and failed in CMFEditions on version histories its
old state did not have yet.  Nothing of the catalog was wrong: its rows
are read with SQL, not through this cache.  With ``cache-shared-mb 0`` the
same runs had none of it.

Dropping a changed object's entry is always right (the next load reads it
from PostgreSQL in the reader's snapshot), so here the entries of every
poll are dropped, and only the advance of the consensus keeps its
condition.  The entries' gates (``get``, ``set``) are unchanged.

Must not import the catalog's modules: this is about the objects' states.
"""

from __future__ import annotations

from zodb_pgjsonb.storage import SharedLoadCache


class InvalidatingSharedLoadCache(SharedLoadCache):
    """A ``SharedLoadCache`` whose ``poll_advance`` drops the changed
    objects' entries whatever transaction the poll reached (see module)."""

    __slots__ = ()

    def poll_advance(self, new_tid, changed_zoids):
        with self._lock:
            for zoid in changed_zoids:
                entry = self._cache.pop(zoid, None)
                if entry is not None:
                    self._current_bytes -= len(entry[0])
            if self._consensus_tid is None or new_tid >= self._consensus_tid:
                self._consensus_tid = new_tid


def keep_invalidations(storage) -> None:
    """Give ``storage`` (a zodb-pgjsonb ``PGJsonbStorage``) the rule of
    ``InvalidatingSharedLoadCache``: its cache object stays the same one,
    which the storage's connections and its cache warmer hold, with its
    entries.  Calling it twice changes nothing."""
    cache = getattr(storage, "_shared_cache", None)
    if type(cache) is SharedLoadCache:
        cache.__class__ = InvalidatingSharedLoadCache
