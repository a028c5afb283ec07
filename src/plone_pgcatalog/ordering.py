"""Positions in folders (``getObjPositionInParent``) kept current.

Owns: noticing that the order of a folder's items changed and recording
the folder in the transaction's pending catalog changes, so that the
commit rewrites every child's position in one set-based statement
(``processor.CatalogStateProcessor.finalize``).

ZCatalog's GopipIndex stores nothing: it asks the folders for positions
each time it sorts.  We store positions, so a reorder (Plone's
``moveObjectsByDelta`` and friends notify ``IContainerModifiedEvent``) and
a removal (later siblings move up) must refresh them.  An item that is
added goes to the end and is cataloged with its own position.  The
reorders plone.folder makes without an event (``orderObjects``, moves
with ``suppress_events``: scripts, add-ons) are recorded by its ordering's
methods themselves (``install``).

Must not touch SQL or connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_get
from plone.folder.default import DefaultOrdering
from plone.folder.interfaces import IExplicitOrdering
from plone.folder.interfaces import IOrderableFolder
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.pending import current_pending
from Products.CMFCore.utils import getToolByName


def catalog_of(context):
    """The portal_catalog of ``context``'s site, of any kind, by
    acquisition from ``context`` (its containers), or None: CMFCore's
    ``getToolByName`` gives the current site's, which is another site's
    where code changes a site that is not the current one (several sites in
    one database: a move between them, a script that walks them)."""
    return aq_get(context, "portal_catalog", None, 1)


def pg_catalog(context):
    """The portal_catalog of ``context``'s site if it is this add-on's,
    else None.

    Found by acquisition (``catalog_of``); only for a ``context`` without
    acquisition is CMFCore's ``getToolByName`` the fallback."""
    catalog = catalog_of(context)
    if catalog is None:
        catalog = getToolByName(context, "portal_catalog", None)
    if catalog is None or not IPGCatalogTool.providedBy(catalog):
        return None
    return catalog


def _record(container) -> None:
    if not IOrderableFolder.providedBy(container):
        return
    if not IExplicitOrdering.providedBy(container.getOrdering()):
        return
    catalog = pg_catalog(container)
    if catalog is None:
        return
    names = tuple(
        name
        for name, index in catalog.getIndexDefinitions().items()
        if index.meta_type == "GopipIndex"
    )
    if names:
        catalog.pending_changes().reorder(container, names)


def container_modified(container, event) -> None:
    """A folder's items were reordered, added or removed.

    OFS announces every added item with ``ObjectAddedEvent`` and then this
    event; an item added at the end moves no sibling, so that one pair is
    skipped (``object_moved`` marks it).
    """
    pending = current_pending()
    if pending is not None and pending.take_added(container):
        return
    _record(container)


def object_moved(obj, event) -> None:
    """An item left a folder (siblings after it move up) or arrived in one."""
    old_parent, new_parent = event.oldParent, event.newParent
    if old_parent is not None and new_parent is not None:
        if aq_base(old_parent) is aq_base(new_parent):
            return  # a rename: plone.folder keeps the position
    # Only ordered content folders matter (not, say, portlet mappings).
    if IOrderableFolder.providedBy(new_parent):
        catalog = pg_catalog(new_parent)
        if catalog is not None:
            catalog.pending_changes().mark_added(new_parent)
    if IOrderableFolder.providedBy(old_parent):
        _record(old_parent)


_order_objects = DefaultOrdering.orderObjects
_move_objects_by_delta = DefaultOrdering.moveObjectsByDelta


def orderObjects(self, key=None, reverse=None):
    """plone.folder's ``orderObjects``, which notifies nothing: the
    folder's new positions are recorded for the commit."""
    result = _order_objects(self, key, reverse)
    _record(self.context)
    return result


def moveObjectsByDelta(self, ids, delta, subset_ids=None, suppress_events=False):
    """plone.folder's ``moveObjectsByDelta`` (``moveObjectToPosition``
    calls it); without its event, the new positions are recorded here."""
    result = _move_objects_by_delta(self, ids, delta, subset_ids, suppress_events)
    if suppress_events:
        _record(self.context)
    return result


def install() -> None:
    """Make plone.folder's ordering record the reorders it makes without
    an event (at import)."""
    DefaultOrdering.orderObjects = orderObjects
    DefaultOrdering.moveObjectsByDelta = moveObjectsByDelta
