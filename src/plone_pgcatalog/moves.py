"""Moves and renames of folders: descendants' paths rewritten set-based.

Owns: the catalog side of ``IObjectWillBeMovedEvent`` and
``IObjectMovedEvent`` when an object changes place (cut/paste, rename,
plone.api ``move``/``rename``, restapi ``@move``); additions and removals
are not moves and are left to CMFCore.

What CMF does for a moved folder: the events are dispatched to every
descendant, and CMFCore's ``handleContentishEvent`` queues, for each one,
an unindex at its old path and a full reindex at its new one (through
Plone's ``indexObject``, which also sets each descendant's modification
date).  ZCatalog then reads every index of every descendant again.

What happens here instead:

- the moved root records the move in the transaction's pending changes
  (``PendingCatalog.move``): the commit rewrites ``path``,
  ``parent_path`` and ``path_depth`` of every stored row of the subtree in
  one statement, and searches before the commit see them moved;
- the unindex queued for each descendant is dropped: its row moves, it
  does not disappear;
- the full reindex queued for each descendant becomes a partial one of the
  indexes a move can change (``indexes_to_reread``): not the path indexes
  (the statement moves them), nor full text, the item's position among its
  siblings or Plone's indexes of the object's own attributes
  (``UNMOVED_NAMES``).  What is read again: the modification date and
  creators Plone has just set (``modified``, ``Date``, ``Creator``), the
  security indexes, the indexes of add-ons, and the metadata.  The
  security indexes even where the new parent grants what the old one
  did: ZCatalog's full reindex of the descendants mends a value that code
  left stale (local roles changed without ``reindexObjectSecurity``), and
  a user must not keep finding an item ZCatalog hides from them.

CMFCore's queue may be processed before this module's subscriber sees a
descendant's entry: plone.app.discussion's subscriber of the same event,
which CMFCore's runs before, searches the catalog (for the comments at the
old path), and a search processes the queue.  So the indexes to read
again are also kept for the transaction when the move begins
(``expected_reindex``): the catalog takes them for the descendant's
first full reindex, wherever it comes from.

The root itself is cataloged in full, as always; and every descendant of
a folder moved into another site (of the same database), whose catalog
has definitions of its own.  If another change of the
same object is queued in the transaction, CMFCore's queue merges it with
the partial reindex (a full reindex wins), so nothing is lost.

Must not touch SQL or connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from OFS.interfaces import IObjectWillBeMovedEvent
from plone_pgcatalog.ordering import catalog_of
from plone_pgcatalog.ordering import pg_catalog
from plone_pgcatalog.paths import in_subtree
from Products.CMFCore.indexing import getQueue
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.indexing import REINDEX
from Products.CMFCore.indexing import UNINDEX
from zope.lifecycleevent.interfaces import IObjectMovedEvent
from zope.proxy import getProxiedObject
from zope.proxy import isProxy

import transaction

#: Index types whose values a move never changes for a descendant: the
#: path (rewritten in SQL), the words of a text, the position in its
#: (moved along) parent.
UNMOVED_TYPES = frozenset(
    {"ExtendedPathIndex", "PathIndex", "ZCTextIndex", "GopipIndex"}
)
#: Indexes by name that a move never changes for a descendant: Plone's
#: own indexes that read the object's own attributes (its id stays; its
#: parent moves along).  Not among them: ``modified``, ``Date`` and
#: ``Creator``, which Plone's ``notifyModified`` changes on every
#: descendant; what decides who finds an object (its security, its
#: workflow state, ``effective``/``expires``/``effectiveRange``), which
#: ZCatalog's full reindex of the descendants mends where code left it
#: stale; and any index an add-on brings, which is read again.
UNMOVED_NAMES = frozenset(
    {
        "object_provides",
        "portal_type",
        "Type",
        "UID",
        "getId",
        "id",
        "Subject",
        "created",
        "start",
        "end",
        "sortable_title",
        "is_folderish",
        "is_default_page",
        "exclude_from_nav",
        "getRawRelatedItems",
        "in_reply_to",
        "total_comments",
        "commentators",
        "cmf_uid",
        "sync_uid",
        "Language",
    }
)


def _is_move(event) -> bool:
    return event.oldParent is not None and event.newParent is not None


def _path(obj) -> str:
    return "/".join(obj.getPhysicalPath())


def indexes_to_reread(catalog) -> list[str]:
    """The indexes read again for a descendant of a moved folder."""
    return sorted(
        name
        for name, index in catalog.getIndexDefinitions().items()
        if index.meta_type not in UNMOVED_TYPES and name not in UNMOVED_NAMES
    )


def _queued_last(obj, operations: tuple[int, ...]) -> int | None:
    """Position of the newest queue entry of ``obj`` with one of
    ``operations`` (unindex entries hold a proxy of the object)."""
    state = getQueue().getState()
    for position in range(len(state) - 1, -1, -1):
        operation, queued = state[position][:2]
        if isProxy(queued):
            queued = getProxiedObject(queued)
        if queued is obj and operation in operations:
            return position
    return None


#: ``Transaction.data`` key: ``{id(descendant): (new root, names)}`` of
#: the descendants whose full reindex, queued by CMFCore for the move, is
#: to read ``names`` only (``expected_reindex``), once they lie below the
#: moved root's new path.
_EXPECTED = object()


def _expected() -> dict:
    txn = transaction.get()
    try:
        return txn.data(_EXPECTED)
    except KeyError:
        expected: dict = {}
        txn.set_data(_EXPECTED, expected)
        return expected


def expected_reindex(obj) -> list[str] | None:
    """The indexes to read again for ``obj``, a descendant of a folder moved
    in this transaction whose full reindex CMFCore queued and has not been
    made yet; None for any other object.  Asked once the object has moved:
    the catalog asks when it reindexes ``obj`` in full
    (``PGCatalogTool._reindexObject``).  A change queued before the move
    (processed as the move begins) is not it."""
    expected = _expected()
    key = id(aq_base(obj))
    found = expected.get(key)
    if found is None or not in_subtree(_path(obj), found[0]):
        return None
    del expected[key]
    return found[1]


def catalog_moves(obj, event) -> None:
    """Subscriber for ``(IContentish, IObjectEvent)``.

    Registered for exactly what CMFCore's ``handleContentishEvent`` is
    registered for, and after it (CMFCore's ZCML loads first), so that the
    queue entry CMFCore makes for a descendant is there to be changed.
    """
    if IObjectWillBeMovedEvent.providedBy(event):
        object_will_move(obj, event)
    elif IObjectMovedEvent.providedBy(event):
        object_moved(obj, event)


def object_will_move(obj, event) -> None:
    """Before a move: the root records it, descendants keep their rows."""
    if not _is_move(event):
        return
    catalog = pg_catalog(event.object)
    if catalog is None:
        return
    if obj is event.object:
        old = _path(obj)
        new = f"{_path(event.newParent)}/{event.newName}"
        if old == new:
            return
        # Queued changes name paths from before the move: apply them now.
        processQueue()
        catalog.pending_changes().move(old, new)
        return
    # CMFCore queued an unindex at the old path just before this
    # subscriber (same event, registered after it): the row moves instead.
    position = _queued_last(obj, (UNINDEX,))
    if position is not None:
        state = getQueue().getState()
        del state[position]
        getQueue().setState(state)
    if not _across_sites(event):
        _expected()[id(aq_base(obj))] = (
            f"{_path(event.newParent)}/{event.newName}",
            indexes_to_reread(catalog),
        )


def object_moved(obj, event) -> None:
    """After a move: descendants are read again only where a move matters."""
    if not _is_move(event) or obj is event.object:
        return
    catalog = pg_catalog(event.object)
    if catalog is None:
        return
    # Either way the expected reindex is now this queue entry's affair.
    names = expected_reindex(obj)
    position = _queued_last(obj, (REINDEX,))
    if position is None:
        return  # none queued, or the queue was processed before this
    state = getQueue().getState()
    operation, queued, attributes, metadata = state[position]
    if attributes:
        return  # already a partial reindex, not CMFCore's full one
    if _across_sites(event) or names is None:
        return  # CMFCore's full one, by the definitions of the new site
    state[position] = (operation, queued, names, metadata)
    getQueue().setState(state)


def _of_the_move(event, name: str, compute) -> bool:
    """``compute(event)``, once per move: one event is dispatched to every
    descendant in turn.  Kept on the event (attribute ``name``), which
    lives as long as its dispatch: nothing of a move outlives it, and
    threads moving at once keep their own."""
    kept = getattr(event, "__dict__", {})  # an event with slots: not kept
    value = kept.get(name)
    if value is None:
        value = kept[name] = compute(event)
    return value


def _across_sites(event) -> bool:
    """Whether the move takes the object into another site's catalog.

    Then its descendants are read again in full, as CMFCore does: the
    other site's indexes of the same names may be of other types, and its
    rows must not keep the values of the indexes it does not have."""

    def across(event) -> bool:
        old, new = catalog_of(event.oldParent), catalog_of(event.newParent)
        return aq_base(old) is not aq_base(new)

    return _of_the_move(event, "_pgcatalog_across_sites", across)
