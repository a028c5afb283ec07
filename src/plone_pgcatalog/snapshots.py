"""Answers kept per committed state of the database, shared by its readers.

Owns: ``SnapshotCache`` and the three caches of the package:
``unique_values`` (``uniqueValues`` of the index objects), ``results``
(the rows searches found) and ``lookups`` (the objects of one value of an
index object, ``_index.get``, and the path of a record id, ``getpath``:
plone.app.uuid's lookups of a UID, which a page repeats for each link).

zodb-pgjsonb begins each read snapshot, then reads the id of the last
committed transaction in it (``connection.snapshot_id``): every reader of
the same id sees the same stored rows, so an answer computed from them is
the answer of all of them.  Never stale: a commit makes a new id, so a new
key.  An answer that lays a transaction's pending changes over the stored
rows is never kept (the callers give no key for it).

``results`` and ``lookups`` can be switched off with the environment
variable ``PGCATALOG_RESULT_CACHE=off`` (the benchmark does, to measure
searches themselves).

Also owns what one transaction read and may ask again (``remember_paths``,
``path_read``, ``remember_uid``, ``uid_read``): not shared, gone with the
transaction, so not switched off with the caches (one transaction reads
one committed state, as ZCatalog's reads of its BTrees do).

Must not open connections or build SQL.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import os
import threading
import transaction


class SnapshotCache:
    """A bounded map of answers: the least recently used go first."""

    def __init__(self, size: int, enabled: bool = True):
        self.size = size
        self.enabled = enabled
        self._answers: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, compute: Callable[[], object], keep=None):
        """The answer kept for ``key``, else ``compute()``, kept unless
        ``key`` is None or ``keep(answer)`` is false."""
        if key is None or not self.enabled:
            return compute()
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        answer = compute()
        if keep is not None and not keep(answer):
            return answer
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return answer

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()


def _switched_off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("0", "off", "false", "no")


unique_values = SnapshotCache(512)
#: Results of up to ``RESULT_ROWS`` rows (a page, the first rows of a
#: large result) are kept, with their first rows' metadata
#: (``search.META_ROWS``: a page read from here costs no round trip):
#: about 12 MB of rows and 23 MB of metadata (1.1 KB a Plone page's) when
#: full.
RESULT_ROWS = 200
results = SnapshotCache(1024, enabled=not _switched_off("PGCATALOG_RESULT_CACHE"))
#: Small answers (a list of record ids, a path), many of them: a site's
#: links by UID.
lookups = SnapshotCache(8192, enabled=results.enabled)


#: The paths one transaction remembers at most (``remember_paths``): a
#: script resolving a whole site's UIDs in one transaction reads them again.
TRANSACTION_PATHS = 10_000
_PATHS_READ = "plone_pgcatalog.paths_read"


#: The UIDs whose rows one transaction remembers at most (``remember_uid``).
TRANSACTION_UIDS = 10_000
_UIDS_READ = "plone_pgcatalog.uids_read"


def _transaction_memo(name: str) -> dict:
    txn = transaction.get()
    try:
        return txn.data(name)
    except KeyError:
        found: dict = {}
        txn.set_data(name, found)
        return found


def remember_paths(state: tuple, rows) -> None:
    """Remember, for this transaction, the stored paths of ``rows``
    (``(record id, path)``) of the committed state and site ``state``
    (``_Rows.cache_key()``): plone.app.uuid reads a UID's record id, then
    asks ``getpath`` for it; with the path read together, that second
    question needs no round trip."""
    found = _transaction_memo(_PATHS_READ)
    for rid, path in rows:
        if len(found) >= TRANSACTION_PATHS:
            return
        found[(*state, rid)] = path


def _read_before(name: str, key: tuple):
    """What this transaction remembered under ``key`` in its memo
    ``name``, or None."""
    try:
        found = transaction.get().data(name)
    except KeyError:
        return None
    return found.get(key)


def path_read(state: tuple, rid: int) -> str | None:
    """The stored path of ``rid`` this transaction read in ``state``, or
    None."""
    return _read_before(_PATHS_READ, (*state, rid))


def remember_uid(state: tuple, name: str, uid: str, rows: list) -> None:
    """Remember, for this transaction, the rows ``(record id, path)``
    whose UUIDIndex ``name`` holds ``uid``, in the committed state and site
    ``state``: where plone.app.uuid asks for a UID's object or path
    (``_index.get``) and then for its brain
    (``unrestrictedSearchResults(UID=)``), the second needs no round trip
    (``uid_read``)."""
    found = _transaction_memo(_UIDS_READ)
    if len(found) < TRANSACTION_UIDS:
        found[(*state, name, uid)] = rows


def uid_read(state: tuple, name: str, uid: str) -> list | None:
    """The rows ``remember_uid`` remembered for ``uid`` in ``state``, or
    None."""
    return _read_before(_UIDS_READ, (*state, name, uid))
