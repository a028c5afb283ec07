"""Catalog maintenance: refresh, reindex one index, rebuild, with progress.

Owns: the bodies of ZCatalog's maintenance API as ``PGCatalogTool`` offers
it (``refreshCatalog``, ``reindexIndex``, ``clearFindAndRebuild``), the
batched rebuild (``rebuild``: the tool's ``rebuild`` and
``manage_catalogRebuild``, the ``pgcatalog rebuild`` command) and
``ProgressLogHandler``, a ``ZLogHandler``-like progress handler that logs
count, rate and ETA every ``steps`` objects.

The semantics are ZCatalog's: objects are found by path with unrestricted
traversal, progress goes through an ``IProgressHandler`` (``init(ident,
max)``, ``report(current)``, ``info(text)``, ``finish()``).  Objects are
walked, loaded, cataloged and left to the ZODB cache, which is
garbage-collected as the walk goes.

A rebuild never clears the catalog first: each object's new row replaces
its stored row, and the commit that ends the rebuild clears the site's
rows that it did not write (``PendingCatalog.keep_only``), so a reader
sees every object at every moment.  ``clear_find_and_rebuild`` does it in
the caller's transaction (its pending rows grow with the site);
``rebuild`` commits every ``batch_size`` objects (flat memory), retrying a
batch that conflicts with a concurrent edit of one of its objects; so do
``reindex_index`` and ``refresh_catalog`` when given a ``batch_size`` (the
command line, the jobs, upgrade steps), which the tool's ZCatalog API
does not give them.

Must not import: ``tool`` (the tool calls this module, not the reverse) or
SQL: rows are read through the tool's search API (``search`` only for the
snapshot's transaction id) and written through ``catalog_object`` /
``uncatalog_object`` and the pending store.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from array import array
from collections.abc import Callable
from collections.abc import Iterator
from plone_pgcatalog.errors import PGCatalogConfigurationError
from plone_pgcatalog.errors import SearchTimeout
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import search
from Products.CMFCore.interfaces import ISiteRoot
from Products.ZCatalog.interfaces import IProgressHandler
from transaction.interfaces import TransientError
from ZODB.POSException import ConflictError
from ZODB.utils import u64
from zope.interface import implementer

import logging
import time
import transaction

logger = logging.getLogger("plone_pgcatalog.maintenance")

try:
    from plone.app.discussion.interfaces import DISCUSSION_ANNOTATION_KEY
except ImportError:  # an add-on since Plone 6.1, not always there
    DISCUSSION_ANNOTATION_KEY = None

#: objects between two progress log lines of the tool's own handler
DEFAULT_STEPS = 1000
#: objects per transaction of a batched rebuild, reindex or refresh (the
#: command line, the jobs, upgrade steps), and between two garbage
#: collections of the ZODB cache where one transaction does it all
DEFAULT_BATCH_SIZE = 1000
#: tries of a batch whose commit conflicts with another transaction
BATCH_ATTEMPTS = 5


@implementer(IProgressHandler)
class ProgressLogHandler:
    """Log progress every ``steps`` objects: count, percentage, rate, ETA.

    As ZCatalog's ``ZLogHandler``, with the rate (objects per second) and
    the remaining time in every line.  ``max`` may be an estimate (a
    rebuild only knows how many rows the catalog had): the ETA then is one.
    """

    def __init__(
        self,
        steps: int = DEFAULT_STEPS,
        savepoint: bool = False,
        log: logging.Logger = logger,
        clock=time.monotonic,
    ):
        self._steps = max(int(steps), 1)
        self._log = log
        self._clock = clock
        self.savepoint = savepoint

    def init(self, ident, max, savepoint=None):
        self._ident = ident
        self._max = max
        if savepoint is not None:
            self.savepoint = savepoint
        self._start = self._clock()
        self.output(f"started ({max} objects to go)")

    def info(self, text):
        self.output(text)

    def report(self, current, *args, **kw):
        if current <= 0 or current % self._steps:
            return
        if self.savepoint:
            # As ZCatalog's handlers: lets the ZODB cache drop what it holds.
            transaction.savepoint(optimistic=True)
        elapsed = self._clock() - self._start
        rate = current / elapsed if elapsed > 0 else 0.0
        remaining = max(self._max - current, 0)
        eta = remaining / rate if rate else 0.0
        percent = 100.0 * current / self._max if self._max else 100.0
        self.output(
            f"{current}/{self._max} ({percent:.1f}%), {rate:.1f} objects/s,"
            f" ETA {duration(eta)}"
        )

    def finish(self):
        elapsed = self._clock() - self._start
        self.output(f"done in {duration(elapsed)}")

    def output(self, text):
        self._log.info("%s: %s", self._ident, text)


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def cataloged_paths(tool) -> list[str]:
    """The path of every row the catalog holds (this transaction included)."""
    return [brain.getPath() for brain in tool.searchAll()]


def resolve(tool, path: str):
    """The object at ``path`` (unrestricted), or None.

    Acquisition could answer a deleted object's path with another object
    (a parent's attribute of the same name): only an object whose physical
    path is ``path`` counts.
    """
    root = tool.getPhysicalRoot()
    obj = root.unrestrictedTraverse(path, None)
    if obj is None:
        return None
    try:
        found = "/".join(obj.getPhysicalPath())
    except AttributeError:
        return None
    return obj if found == path else None


def refresh_catalog(
    tool,
    clear=0,
    pghandler=None,
    batch_size: int | None = None,
    attempts: int = BATCH_ATTEMPTS,
) -> int:
    """Catalog again every object the catalog holds (ZCatalog's
    ``refreshCatalog``); rows of objects that no longer exist are dropped,
    with a log line.  ``clear`` empties the catalog first, as ZCatalog:
    the same objects end up cataloged either way.  The number of objects
    cataloged again or dropped.

    ``batch_size`` commits every ``batch_size`` objects, as
    ``reindex_index``'s; then the catalog is never cleared first (readers
    would see it empty until the last batch): each row is replaced by the
    new one, and with ``clear`` an object that fails to catalog loses its
    row, which ends in the same catalog.
    """
    paths = cataloged_paths(tool)
    cleared = clear and not batch_size
    if cleared:
        tool.manage_catalogClear()
    if pghandler:
        pghandler.init(f"Refreshing catalog: {tool.absolute_url(1)}", len(paths))

    def refreshed(path: str) -> bool:
        obj = resolve(tool, path)
        if obj is None:
            logger.info("refreshCatalog: %s no longer exists, uncataloged", path)
            if not cleared:
                tool.uncatalog_object(path)
            return True
        try:
            # pghandler not passed on: ZCatalog only tells it about
            # subtransactions, which this catalog does not make.  With
            # ``clear``, as after ZCatalog's clear (also where the rows
            # were not cleared first: ``_anew``).
            if clear:
                _anew(tool, obj, path)
            else:
                tool.catalog_object(obj, path)
        except (TransientError, SearchTimeout):
            # A conflict, a lost connection (``ConnectionLost``): the
            # transaction is tried again; a timeout: every object after
            # would time out as well.
            raise
        except Exception:
            logger.exception("Recataloging object at %s failed", path)
            if clear and not cleared:
                # Where clearing first would have left it out.
                tool.uncatalog_object(path)
                return True
            return False
        return True

    # Reported from 0, as ZCatalog's refreshCatalog does.
    done = _each_path(
        tool,
        paths,
        refreshed,
        first=0,
        what="refresh",
        batch_size=batch_size,
        attempts=attempts,
        pghandler=pghandler,
    )
    if pghandler:
        pghandler.finish()
    return done


def reindex_index(
    tool,
    name,
    REQUEST=None,
    pghandler=None,
    paths=None,
    batch_size: int | None = None,
    attempts: int = BATCH_ATTEMPTS,
) -> int:
    """Read index ``name`` (or each of a list of names) again for every
    cataloged object (or those at ``paths``), merging it into the stored
    rows; metadata and the other indexes stay as they are (ZCatalog's
    ``reindexIndex``).  The number of objects read.

    An unknown name raises ``KeyError`` as ZCatalog's ``getIndex`` does,
    before anything is read (ZCatalog raises at the first object).

    Without ``batch_size``, everything is in the caller's transaction: its
    pending changes grow with the site (some 16 KB an object for a page's
    SearchableText), and savepoints keep them.  With it, what the current
    transaction holds is committed first, then every ``batch_size``
    objects, and the objects after the last full batch are left to the
    caller's commit (memory stays flat; readers see each batch's rows once
    it commits): only for callers that own the transaction (the command
    line, a job, an upgrade step), never inside another operation.  A
    batch whose commit conflicts with a concurrent edit of one of its
    objects is read again from fresh objects, up to ``attempts`` times, as
    ``rebuild``'s.
    """
    idxs = (name,) if isinstance(name, str) else tuple(name)
    for index_name in idxs:
        if index_name not in tool._catalog.indexes:
            raise KeyError(index_name)
    if paths is None:
        paths = cataloged_paths(tool)
    if pghandler:
        pghandler.init(f"reindexing {idxs}", len(paths))

    def reindexed(path: str) -> bool:
        obj = resolve(tool, path)
        if obj is None:
            logger.error(
                "reindexIndex could not resolve an object from the uid %r.", path
            )
            return False
        tool.catalog_object(obj, path, idxs=list(idxs), update_metadata=0)
        return True

    done = _each_path(
        tool,
        paths,
        reindexed,
        first=1,
        what=f"reindex {', '.join(idxs)}",
        batch_size=batch_size,
        attempts=attempts,
        pghandler=pghandler,
    )
    if pghandler:
        pghandler.finish()
    return done


def _each_path(
    tool,
    paths: list[str],
    write: Callable[[str], bool],
    *,
    first: int,
    what: str,
    batch_size: int | None,
    attempts: int,
    pghandler,
) -> int:
    """``write(path)`` for each path, reported to ``pghandler`` from
    ``first``; with ``batch_size``, a commit after every ``batch_size``
    paths written (``write`` says whether it wrote: the paths it wrote in
    a batch that conflicts are written again).  The number written.

    Before the first batch, what the transaction holds is committed on its
    own: a batch that conflicts is aborted, which must not take the
    caller's earlier changes with it (an upgrade step's: the steps that
    ran before it in the same transaction).

    Without ``batch_size`` the ZODB cache is garbage-collected every
    ``DEFAULT_BATCH_SIZE`` paths, as ZCatalog does at its subtransactions:
    the objects read are let go (the pending changes stay until the
    commit)."""
    batch_size = max(int(batch_size), 1) if batch_size else 0
    if batch_size:
        transaction.commit()
    batch: list[str] = []
    batches = done = 0
    for i, path in enumerate(paths, first):
        if pghandler:
            pghandler.report(i)
        if write(path):
            batch.append(path)
        if not batch_size and (i - first + 1) % DEFAULT_BATCH_SIZE == 0:
            connection._jar(tool).cacheGC()
        if batch_size and len(batch) >= batch_size:
            batches += 1
            _commit_paths(tool, batch, write, what, batches, attempts, pghandler)
            done += len(batch)
            batch = []
    return done + len(batch)


def _commit_paths(
    tool,
    batch: list[str],
    write: Callable[[str], bool],
    what: str,
    number: int,
    attempts: int,
    pghandler,
) -> None:
    """Commit batch ``number`` of ``_each_path``; after a conflict, the
    batch's paths are written again from fresh objects.  The commit lets
    the ZODB cache shrink back to its size."""

    def again(attempt: int) -> None:
        if attempt > 1:
            batch[:] = [path for path in batch if write(path)]

    _commit_retrying(
        again,
        f"plone_pgcatalog {what} {tool.site_path()}: batch {number}",
        attempts,
        pghandler,
        label=f"batch {number}",
        retry_text=lambda: f"writing its {len(batch)} objects again",
    )
    if pghandler:
        pghandler.info(f"batch {number} committed ({len(batch)} objects)")


def _commit_retrying(
    prepare: Callable[[int], None],
    note: str,
    attempts: int,
    pghandler,
    *,
    label: str,
    retry_text: Callable[[], str],
) -> None:
    """Commit the current transaction, batch ``label`` of a batched
    operation: ``prepare(attempt)`` runs first; after a ``ConflictError``
    the transaction is aborted and both run again, ``prepare`` then writing
    the batch again from fresh objects, up to ``attempts`` times (then the
    error is raised; the batches committed before stay).  ``retry_text()``
    says what is done again, for the progress handler."""
    for attempt in range(1, attempts + 1):
        try:
            prepare(attempt)
            transaction.get().note(note)
            transaction.commit()
            return
        except ConflictError as exc:
            transaction.abort()
            if attempt == attempts:
                raise
            if pghandler:
                pghandler.info(
                    f"{label} conflicted ({type(exc).__name__}): {retry_text()}"
                    f" ({attempt}/{attempts - 1})"
                )


def clear_index(tool, name: str, pghandler=None) -> int:
    """Empty index ``name`` for every row of the site, at commit (ZCatalog's
    ``clearIndex``): a search on it finds nothing until it is reindexed;
    the other indexes and metadata stay.  The number of rows cleared (the
    rows that had a value).

    An unknown name raises ``KeyError`` as ``reindex_index`` does.
    """
    from plone_pgcatalog.extraction import CatalogPatch

    if name not in tool._catalog.indexes:
        raise KeyError(name)
    if name == "path":
        raise ValueError("index 'path' cannot be cleared: it is the rows' own column")
    view = tool._catalog.getIndex(name)
    if view.numObjects() == 0:
        # An index catalog.xml has just added (GenericSetup's importer
        # clears it as it sets its attributes): nothing to write.
        return 0
    # The rows that have a value (a text index's entries are its words:
    # every row, rather than read them all).
    held = None if name == "SearchableText" else set(view.referencedObjects())
    rows = [
        (brain.getRID(), brain.getPath())
        for brain in tool.searchAll()
        if held is None or brain.getRID() in held
    ]
    if pghandler:
        pghandler.init(f"clearing {name}", len(rows))
    pending = tool.pending_changes()
    for i, (zoid, path) in enumerate(rows, 1):
        pending.patch(CatalogPatch.removing(zoid, path, name))
        if pghandler:
            pghandler.report(i)
    if pghandler:
        pghandler.finish()
    return len(rows)


def content_objects(tool, root=None) -> Iterator:
    """What a rebuild catalogs: the site (or the object ``root`` of it) and
    every object below it that has a callable ``reindexObject``, the
    catalog excepted (Plone's rule).

    A site below it whose catalog is this kind stops the walk
    (``nested_site_error``): its rows would be taken for the outer
    site's."""
    site = aq_parent(aq_inner(tool))
    for obj in _walk(site if root is None else root):
        base = aq_base(obj)
        if base is not aq_base(site) and pg_catalog_of_site(obj) is not None:
            raise nested_site_error(obj, site)
        # The walk meets the tool too, wrapped anew: compare the objects.
        if base is aq_base(tool) or not callable(getattr(base, "reindexObject", None)):
            continue
        yield obj
        yield from _comments(obj)


def _comments(obj) -> Iterator:
    """The plone.app.discussion comments of ``obj``, which the walk does not
    meet (they are kept in an annotation): Plone's ``clearFindAndRebuild``
    catalogs them after their object, as here."""
    if DISCUSSION_ANNOTATION_KEY is None:
        return
    annotations = getattr(aq_base(obj), "__annotations__", None)
    if not annotations or DISCUSSION_ANNOTATION_KEY not in annotations:
        return
    conversation = annotations[DISCUSSION_ANNOTATION_KEY].__of__(obj)
    yield from conversation.getComments()


def pg_catalog_of_site(obj):
    """The catalog of ``obj`` if ``obj`` is a site whose own
    ``portal_catalog`` is this kind, else None."""
    if not ISiteRoot.providedBy(obj):
        return None
    catalog = getattr(aq_base(obj), "portal_catalog", None)
    return catalog if IPGCatalogTool.providedBy(catalog) else None


def nested_site_error(inner, outer) -> PGCatalogConfigurationError:
    """The error for the site ``inner`` below the site ``outer`` where
    both would keep their catalog in the table.

    Several sites share the catalog's table, told apart by their paths: a
    site is its whole subtree (its searches, ``manage_catalogClear``, a
    rebuild's clearing of rows it did not write).  A site inside another
    would have its rows found, cleared and rebuilt by the outer one.
    ZCatalog keeps one catalog per site and allows it; here one of the two
    must move out or keep ZCatalog."""
    inner_path = "/".join(inner.getPhysicalPath())
    outer_path = "/".join(outer.getPhysicalPath())
    return PGCatalogConfigurationError(
        f"the site {inner_path} lies inside the site {outer_path}: plone_pgcatalog"
        " tells the sites of a database apart by their paths, so a site with"
        " its catalog cannot lie inside another; move"
        f" {inner_path} out of {outer_path} or keep ZCatalog in one of them"
    )


def _walk(obj) -> Iterator:
    """``obj`` and every object below it, in ``ZopeFindAndApply``'s order.

    Items are listed by id and fetched when the walk gets to them, so that
    an item another transaction removed meanwhile is skipped (a batched
    rebuild commits, and sees other commits, as it walks).  As
    ``ZopeFindAndApply``, objects that were ghosts go back to being ghosts.
    """
    yield obj
    base = aq_base(obj)
    if not hasattr(base, "objectItems"):
        return
    try:
        if hasattr(base, "objectIds") and hasattr(base, "_getOb"):
            ids = list(obj.objectIds())
            children = (obj._getOb(id, None) for id in ids)
        else:
            children = iter([item for _, item in obj.objectItems()])
    except TransientError:  # a conflict, a lost connection
        raise
    except Exception:  # as ZopeFindAndApply: a container that cannot list
        return
    for child in children:
        if child is None:
            continue
        ghost = getattr(child, "_p_changed", 0) is None
        yield from _walk(child)
        if ghost:
            child._p_deactivate()


def _zoid(obj) -> int | None:
    oid = getattr(aq_base(obj), "_p_oid", None)
    return None if oid is None else u64(oid)


def _snapshot_tid(tool) -> int:
    """The last transaction the objects that this transaction reads come from."""
    with connection.reading(tool) as conn:
        return search.snapshot_tid(conn)


class _Rebuild:
    """The state of one rebuild: what it wrote, its progress."""

    def __init__(self, tool, pghandler, clock=time.monotonic):
        self.tool = tool
        self.pghandler = pghandler if pghandler is not None else ProgressLogHandler()
        self.site_path = tool.site_path()
        # Read before anything is cataloged: rows of objects stored after
        # this transaction were written by their own commits (see keep_only).
        self.since = _snapshot_tid(tool)
        self.expected = len(tool)
        #: zoids of the rows written (by committed batches), 8 bytes each
        self.written = array("q")
        self.done = 0
        self.batches = 0
        self.clock = clock
        self.start = clock()
        self.pghandler.init(
            f"Rebuilding catalog: {tool.absolute_url(1)}", self.expected
        )

    def catalog(self, obj) -> int | None:
        """Catalog ``obj`` (a full row replaces the stored one, a new
        record as after ZCatalog's clear: ``_anew``); its zoid."""
        zoid = _anew(self.tool, obj)
        self.done += 1
        self.pghandler.report(self.done)
        return zoid

    def keep_only(self, zoids) -> None:
        """Forget, at commit, the site's rows that the rebuild did not write."""
        self.tool.pending_changes().keep_only(self.site_path, zoids, self.since)

    def collect_garbage(self) -> None:
        jar = connection._jar(self.tool)
        jar.cacheGC()

    def committed(self, count: int) -> None:
        """A batch of ``count`` objects is committed: say so, with the rate."""
        self.batches += 1
        elapsed = self.clock() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        remaining = max(self.expected - self.done, 0)
        eta = remaining / rate if rate else 0.0
        self.pghandler.info(
            f"batch {self.batches} committed ({count} objects):"
            f" {self.done} objects, {rate:.1f} objects/s, ETA {duration(eta)}"
        )

    def finish(self) -> None:
        self.pghandler.info(f"{self.done} objects cataloged")
        self.pghandler.finish()


def clear_find_and_rebuild(tool, pghandler=None) -> None:
    """Catalog every content object found by walking the site, then forget
    the rows of the site that the walk did not write (Plone's
    ``clearFindAndRebuild``), all in the current transaction.

    The catalog is not cleared first: each row is replaced by the new one
    and rows of objects that no longer exist (or are no longer content)
    are cleared by the same commit, so readers see the old catalog until
    the commit and the new one after it.  As the caller's transaction
    holds every row until it commits, memory grows with the site (the
    ZODB cache is garbage-collected as the walk goes; savepoints would not
    help, they keep the pending rows): on a large site use ``rebuild``,
    which commits in batches, where the caller owns the transaction.

    The number to go given to ``pghandler.init`` is how many rows the
    catalog had before: the walk does not know it in advance.
    """
    run = _Rebuild(tool, pghandler)
    for obj in content_objects(tool):
        zoid = run.catalog(obj)
        if zoid is not None:
            run.written.append(zoid)
        if run.done % DEFAULT_BATCH_SIZE == 0:
            run.collect_garbage()
    run.keep_only(run.written)
    run.finish()


def rebuild(
    tool,
    batch_size: int = DEFAULT_BATCH_SIZE,
    pghandler=None,
    attempts: int = BATCH_ATTEMPTS,
) -> int:
    """``clear_find_and_rebuild`` that commits every ``batch_size`` objects;
    the number of objects cataloged.

    Commits the current transaction (what it holds first, on its own: see
    ``_each_path``): only for callers that own it (the command line, a ZMI
    button), never inside another operation.  Memory
    stays flat: after each commit no pending row is left and the ZODB
    cache is garbage-collected; the rebuild keeps 8 bytes per object (the
    zoids it wrote), which the last batch's commit uses to forget the rows
    of the site that the rebuild did not write.  Readers see every object
    at every moment: its old row until the batch with the new one commits.

    A batch whose commit conflicts with another transaction (an object of
    the batch changed since the batch read it, ``catalog_object``'s
    read-conflict check) is aborted and cataloged again from fresh objects,
    up to ``attempts`` times; then the ``ConflictError`` is raised, the
    committed batches stay (the catalog is as correct as before them).
    """
    batch_size = max(int(batch_size), 1)
    transaction.commit()
    run = _Rebuild(tool, pghandler)
    batch: list[tuple[str, int]] = []  # (path, zoid) of this batch's objects
    for obj in content_objects(tool):
        path = "/".join(obj.getPhysicalPath())
        if run.batches:
            # The walk lists folders in an older snapshot: an object removed
            # since (with its folder) is not cataloged again.
            found = resolve(tool, path)
            if found is None or aq_base(found) is not aq_base(obj):
                continue
        zoid = run.catalog(obj)
        if zoid is not None:
            batch.append((path, zoid))
        if len(batch) >= batch_size:
            _commit_batch(run, batch, attempts, final=False)
            batch = []
    _commit_batch(run, batch, attempts, final=True)
    run.finish()
    return run.done


def _anew(tool, obj, path: str | None = None) -> int | None:
    """Catalog ``obj`` as ZCatalog catalogs it after clearing the catalog,
    a new record: a text index whose attributes give no string keeps no
    words of the stored row (``PendingCatalog.anew``).  Its zoid."""
    tool.catalog_object(obj, path)
    zoid = _zoid(obj)
    if zoid is not None:
        tool.pending_changes().anew(zoid)
    return zoid


def _commit_batch(
    run: _Rebuild, batch: list[tuple[str, int]], attempts: int, final: bool
) -> None:
    """Commit the batch of cataloged ``(path, zoid)``, cataloging it again
    from fresh objects after a conflict; the last batch also forgets the
    rows that the rebuild did not write."""
    number = run.batches + 1

    def prepare(attempt: int) -> None:
        if attempt > 1:
            batch[:] = _catalog_again(run.tool, batch)
        if final:
            kept = array("q", run.written)
            kept.extend(zoid for _, zoid in batch)
            run.keep_only(kept)

    _commit_retrying(
        prepare,
        f"plone_pgcatalog rebuild {run.site_path}: batch {number}",
        attempts,
        run.pghandler,
        label=f"batch {number}",
        retry_text=lambda: f"cataloging its {len(batch)} objects again",
    )
    run.written.extend(zoid for _, zoid in batch)
    run.collect_garbage()
    run.committed(len(batch))


def _catalog_again(tool, batch: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Catalog the objects now at the batch's paths (after an abort)."""
    again = []
    for path, _ in batch:
        obj = resolve(tool, path)
        if obj is None or not callable(getattr(aq_base(obj), "reindexObject", None)):
            continue  # removed meanwhile: its row went with it
        zoid = _anew(tool, obj)
        if zoid is not None:
            again.append((path, zoid))
    return again
