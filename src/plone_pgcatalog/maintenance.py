"""Catalog maintenance: refresh, reindex one index, rebuild, with progress.

Owns: the bodies of ZCatalog's maintenance API as ``PGCatalogTool`` offers
it (``refreshCatalog``, ``reindexIndex``, ``clearFindAndRebuild``) and
``ProgressLogHandler``, a ``ZLogHandler``-like progress handler that logs
count, rate and ETA every ``steps`` objects.

The semantics are ZCatalog's: objects are found by path with unrestricted
traversal, progress goes through an ``IProgressHandler`` (``init(ident,
max)``, ``report(current)``, ``info(text)``, ``finish()``).  Memory stays
flat in the number of objects: only paths are listed, each object is
loaded, cataloged and left to the ZODB cache.  Everything is written when
the transaction commits, as any catalog change; batch commits and a
shadow rebuild (build the new rows aside, swap at the end) are later work.

Must not import: ``tool`` (the tool calls this module, not the reverse),
``search`` or any SQL: rows are read through the tool's search API and
written through ``catalog_object`` / ``uncatalog_object``.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from Products.ZCatalog.interfaces import IProgressHandler
from ZODB.POSException import ConflictError
from zope.interface import implementer

import logging
import time
import transaction


logger = logging.getLogger("plone_pgcatalog.maintenance")

#: objects between two progress log lines of the tool's own handler
DEFAULT_STEPS = 1000


@implementer(IProgressHandler)
class ProgressLogHandler:
    """Log progress every ``steps`` objects: count, percentage, rate, ETA.

    As ZCatalog's ``ZLogHandler``, with the rate (objects per second) and
    the remaining time in every line.  ``max`` may be an estimate (a
    rebuild only knows how many rows the catalog had): the ETA then is one.
    """

    def __init__(self, steps: int = DEFAULT_STEPS, savepoint: bool = False,
                 log: logging.Logger = logger, clock=time.monotonic):
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
            f" ETA {_duration(eta)}"
        )

    def finish(self):
        elapsed = self._clock() - self._start
        self.output(f"done in {_duration(elapsed)}")

    def output(self, text):
        self._log.info("%s: %s", self._ident, text)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


def cataloged_paths(tool) -> list[str]:
    """The path of every row the catalog holds (this transaction included)."""
    return [brain.getPath() for brain in tool._search({}, match_all=True)]


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


def refresh_catalog(tool, clear=0, pghandler=None) -> None:
    """Catalog again every object the catalog holds (ZCatalog's
    ``refreshCatalog``); rows of objects that no longer exist are dropped,
    with a log line.  ``clear`` empties the catalog first, as ZCatalog:
    the same objects end up cataloged either way."""
    paths = cataloged_paths(tool)
    if clear:
        tool.manage_catalogClear()
    if pghandler:
        pghandler.init(f"Refreshing catalog: {tool.absolute_url(1)}", len(paths))
    for i, path in enumerate(paths):
        if pghandler:
            pghandler.report(i)
        obj = resolve(tool, path)
        if obj is None:
            logger.info("refreshCatalog: %s no longer exists, uncataloged", path)
            if not clear:
                tool.uncatalog_object(path)
            continue
        try:
            # pghandler not passed on: ZCatalog only tells it about
            # subtransactions, which this catalog does not make.
            tool.catalog_object(obj, path)
        except ConflictError:
            raise
        except Exception:
            logger.exception("Recataloging object at %s failed", path)
    if pghandler:
        pghandler.finish()


def reindex_index(tool, name, REQUEST=None, pghandler=None) -> None:
    """Read index ``name`` (or each of a list of names) again for every
    cataloged object, merging it into the stored rows; metadata and the
    other indexes stay as they are (ZCatalog's ``reindexIndex``).

    An unknown name raises ``KeyError`` as ZCatalog's ``getIndex`` does,
    before anything is read (ZCatalog raises at the first object).
    """
    idxs = (name,) if isinstance(name, str) else tuple(name)
    for index_name in idxs:
        if index_name not in tool._catalog.indexes:
            raise KeyError(index_name)
    paths = cataloged_paths(tool)
    if pghandler:
        pghandler.init(f"reindexing {idxs}", len(paths))
    for i, path in enumerate(paths, 1):
        if pghandler:
            pghandler.report(i)
        obj = resolve(tool, path)
        if obj is None:
            logger.error("reindexIndex could not resolve an object from the uid %r.", path)
            continue
        tool.catalog_object(obj, path, idxs=list(idxs), update_metadata=0)
    if pghandler:
        pghandler.finish()


def clear_find_and_rebuild(tool, pghandler=None) -> None:
    """Forget the site's rows, then catalog every content object found by
    walking the site (Plone's ``clearFindAndRebuild``).

    The number to go given to ``pghandler.init`` is how many rows the
    catalog had before: the walk does not know it in advance.
    """
    if pghandler is None:
        pghandler = ProgressLogHandler()
    expected = len(tool)
    tool.manage_catalogClear()
    portal = aq_parent(aq_inner(tool))
    pghandler.init(f"Rebuilding catalog: {tool.absolute_url(1)}", expected)
    done = 0

    def index(obj, path):
        nonlocal done
        # The walk meets the tool too, wrapped anew: compare the objects.
        if aq_base(obj) is aq_base(tool) or not callable(
            getattr(aq_base(obj), "reindexObject", None)
        ):
            return
        tool.catalog_object(obj)
        done += 1
        pghandler.report(done)

    index(portal, "")
    portal.ZopeFindAndApply(portal, search_sub=True, apply_func=index)
    pghandler.info(f"{done} objects cataloged")
    pghandler.finish()
