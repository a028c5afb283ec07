"""After an undo: the catalog mended in the background.

zodb-pgjsonb's undo (history-preserving storages) restores object states;
the catalog's rows stay as the undone transaction left them, since the
state processor cannot read the restored objects (``processor.
CatalogStateProcessor.undone``, which notifies ``processor.RowsUndone``).
ZCatalog's BTrees are objects of the ZODB: its undo restores them with the
content.  So once the undo has committed, a "Verify and repair" job
(``jobs.repair_below``: the objects at and below the paths the undo
concerns compared with their rows, the missing, stale and orphaned rows
mended) runs on each site the undo concerns, in the background, its
progress on the catalog's pages; where a job runs on the site already,
after it.

Owns: the subscriber of ``RowsUndone`` and the after-commit hook that
starts the jobs.  The Zope root is found from the request (the ZMI's Undo
tab, a script run with a request) or the current site; an undo made
without either (a bare ZODB script) is only logged (``processor.UNDONE``
says how to mend the catalog by hand).

Must not compose SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog import jobs
from plone_pgcatalog.ordering import pg_catalog
from plone_pgcatalog.paths import in_subtree
from zope.component.hooks import getSite
from zope.globalrequest import getRequest

import logging
import transaction

logger = logging.getLogger("plone_pgcatalog.undo")

#: The title of the job an undo starts.
TITLE = "Verify and repair after an undo"


#: The key of the transaction's ``Undone`` (``transaction.data``).
_KEY = "plone_pgcatalog.undone"


@dataclass
class Undone:
    """What the undos of one transaction concern: the transactions undone
    and the paths of the catalog rows (``processor.RowsUndone``)."""

    tids: list[int] = field(default_factory=list)
    paths: set[str] = field(default_factory=set)


def rows_undone(event) -> None:
    """``processor.RowsUndone``: mend the catalog once the undo commits,
    once for all the transactions it undoes (the ZMI undoes several in
    one)."""
    txn = transaction.get()
    try:
        undone = txn.data(_KEY)
    except KeyError:
        undone = Undone()
        txn.set_data(_KEY, undone)
        txn.addAfterCommitHook(mend, args=(undone,))
    undone.tids.append(event.tid)
    undone.paths.update(event.paths)


def mend(committed: bool, undone: Undone) -> list:
    """Start a Verify and repair job on each site of ``undone``'s paths
    (after the undo's commit), or queue it after the job running there
    (``jobs.start_or_queue``); the jobs started."""
    if not committed:
        return []
    tids = ", ".join(str(tid) for tid in undone.tids)
    paths = sorted(undone.paths)
    root = _zope_root()
    if root is None:
        logger.warning(
            "undo of transaction %s: no Zope request or site to start %r in;"
            " run it on the sites of %s",
            tids,
            TITLE,
            ", ".join(paths[:10]),
        )
        return []
    started = []
    for catalog in _catalogs(root, paths):
        site = catalog.site_path()
        below = [path for path in paths if in_subtree(path, site)]
        work = jobs.repair_below(below)
        job = jobs.start_or_queue(catalog, TITLE, work, user="undo")
        if job is None:
            logger.info(
                "undo of transaction %s: %r queued on %s, after the job running"
                " there",
                tids,
                TITLE,
                catalog.site_path(),
            )
            continue
        logger.info(
            "undo of transaction %s: job %s (%s) started on %s",
            tids,
            job.id,
            TITLE,
            catalog.site_path(),
        )
        started.append(job)
    return started


def _zope_root():
    """The Zope application of this thread's request or site, or None."""
    request = getRequest()
    parents = getattr(request, "get", lambda key, default=None: default)("PARENTS")
    for candidate in [*(parents or [])[-1:], getSite()]:
        if candidate is not None:
            try:
                return candidate.getPhysicalRoot()
            except AttributeError:
                continue
    return None


def _catalogs(root, paths: list[str]) -> list:
    """The catalogs of this add-on whose sites hold ``paths``, once each:
    each found from the path's nearest object that still exists."""
    found = {}
    for path in paths:
        catalog = pg_catalog(_nearest(root, path))
        if catalog is None:
            continue
        site = catalog.site_path()
        if in_subtree(path, site) and site not in found:
            found[site] = catalog
    return list(found.values())


def _nearest(root, path: str):
    """The object at ``path``, or at its nearest ancestor that exists."""
    names = [name for name in path.split("/") if name]
    while names:
        obj = root.unrestrictedTraverse("/".join(names), None)
        if obj is not None:
            return obj
        names.pop()
    return root
