"""CMFCore's indexing queue, made safe for several threads.

Owns: the guard that keeps ``processQueue`` from processing a thread's
queue again while that thread is processing it.

Products.CMFCore.indexing keeps the guard in one module-level set,
``processing``, holding the one global queue object (an ``IndexQueue``,
a ``threading.local``: its items are per thread, the object is not).  Two
threads that call ``processQueue`` at once race on that set: the second
skips its own queue while the first processes (its reindexes are then not
flushed before its search or before its commit's checks), and whichever
thread finishes second fails with ``KeyError: <IndexQueue ...>``.  The
soak (``benchmarks/soak.py``, two instances of four threads) hit it: a 500
on a create, raised from this catalog's before-commit hook
(``conflicts.read_replaced_paths``), which calls ``processQueue`` as
Plone's own ``searchResults`` does.  Every Plone site served by several
threads has the race; this catalog calls ``processQueue`` at each commit
too, so it would meet it more often.

``install()`` replaces that set with one whose members are per thread: the
guard means within a thread what it meant, and threads no longer share it.
Idempotent; done when the package is imported.
"""

from __future__ import annotations

from Products.CMFCore import indexing

import threading


class PerThreadSet:
    """A set whose members each thread holds apart (the operations
    ``processQueue`` uses: ``in``, ``add``, ``remove``)."""

    def __init__(self):
        self._local = threading.local()

    def _members(self) -> set:
        members = getattr(self._local, "members", None)
        if members is None:
            members = self._local.members = set()
        return members

    def __contains__(self, item) -> bool:
        return item in self._members()

    def __len__(self) -> int:
        return len(self._members())

    def add(self, item) -> None:
        self._members().add(item)

    def remove(self, item) -> None:
        self._members().remove(item)

    def discard(self, item) -> None:
        self._members().discard(item)


def install() -> None:
    """Give ``Products.CMFCore.indexing`` a per-thread ``processing`` guard."""
    if not isinstance(indexing.processing, PerThreadSet):
        indexing.processing = PerThreadSet()
    # CMFCore makes its one queue object when first asked, without a lock:
    # made now, at import, while one thread runs.
    indexing.getQueue()
