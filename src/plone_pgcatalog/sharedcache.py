"""zodb-pgjsonb's process-wide object cache: every poll's invalidations kept.

Owns: the invalidation rule of a zodb-pgjsonb storage's ``SharedLoadCache``
(the ``cache-shared-mb`` cache, which all ZODB connections of a process
share), and its installation on such a storage.

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
with SQL, not through this cache.  Without this rule 2 of 3 such runs
failed so; with it 3 of 3 passed, as did 2 of 2 with ``cache-shared-mb
0`` (README, "Known issues").

Dropping a changed object's entry is always right (the next load reads it
from PostgreSQL in the reader's snapshot), so here the entries of every
poll are dropped; the consensus and the entries' gates (``get``, ``set``)
are zodb-pgjsonb's.  Left open: a connection ZODB opens anew polls first
without invalidating anything (zodb-pgjsonb has no earlier transaction
to compare with), so until a connection that polled before a change
polls again (at its next transaction: a request's time), it can read the
old state of an object another process just changed.

Must not import the catalog's modules: this is about the objects' states.
"""

from __future__ import annotations

from zodb_pgjsonb.storage import SharedLoadCache

import logging

logger = logging.getLogger(__name__)

#: What ``poll_advance`` below uses of zodb-pgjsonb's class.
_USED = ("_lock", "_cache", "_current_bytes")


class InvalidatingSharedLoadCache(SharedLoadCache):
    """A ``SharedLoadCache`` whose ``poll_advance`` drops the changed
    objects' entries whatever transaction the poll reached (see module);
    the rest of it, the consensus's advance included, is zodb-pgjsonb's."""

    __slots__ = ()

    def poll_advance(self, new_tid, changed_zoids):
        with self._lock:
            for zoid in changed_zoids:
                entry = self._cache.pop(zoid, None)
                if entry is not None:
                    self._current_bytes -= len(entry[0])
            super().poll_advance(new_tid, changed_zoids)


def keep_invalidations(storage) -> None:
    """Give ``storage`` (a zodb-pgjsonb ``PGJsonbStorage``) the rule of
    ``InvalidatingSharedLoadCache``: its cache object stays the same one,
    which the storage's connections and its cache warmer hold, with its
    entries.  Calling it twice changes nothing.  A zodb-pgjsonb whose
    cache no longer has what the rule uses is left as it is, with a
    warning."""
    cache = getattr(storage, "_shared_cache", None)
    if type(cache) is not SharedLoadCache:
        return
    if not set(_USED) <= set(SharedLoadCache.__slots__):
        logger.warning(
            "zodb-pgjsonb's SharedLoadCache has changed (no %s): its"
            " invalidations are left as they are (plone_pgcatalog.sharedcache)",
            ", ".join(sorted(set(_USED) - set(SharedLoadCache.__slots__))),
        )
        return
    cache.__class__ = InvalidatingSharedLoadCache
