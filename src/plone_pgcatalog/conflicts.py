"""What a catalog-only write checks at the commit, so that it cannot undo
another transaction's change.

Owns the transaction's record of the rows its searches found
(``found_by_searches``), the read of where the stored rows that the commit
replaces are (``read_replaced_paths``, a hook of the pending store) and
ZODB's read-conflict checks of an object whose row is written without the
object (``read_current``) and of the folder order a row's position was
read from (``read_current_order``).

Must not build query clauses; reads through ``store.search``.
"""

from __future__ import annotations

from Acquisition import aq_base
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import search
from Products.CMFCore.indexing import processQueue

import psycopg
import transaction

_FOUND = "plone_pgcatalog.found"


def found_by_searches() -> set[int]:
    """Rows the searches of this transaction found, so cataloged rows."""
    txn = transaction.get()
    try:
        return txn.data(_FOUND)
    except KeyError:
        found: set[int] = set()
        txn.set_data(_FOUND, found)
        return found


def read_replaced_paths(catalog, pending) -> None:
    """Before the commit: where the stored rows that catalog-only writes
    replace are in this transaction's snapshot (``read_paths``).

    The commit writes those rows by zoid, while another transaction may
    have moved or removed them since (a move of a folder relocates its
    descendants' rows, a deletion clears the object's row; neither stores
    the object): the state processor then refuses the commit with a
    ``ConflictError`` rather than write a row back where it no longer
    belongs (an orphan, or an old path).  Objects the commit stores are
    left out: their rows go with their states, which ZODB checks.
    """
    processQueue()  # what the queue still holds is part of this commit
    candidates = set(pending.rows) | set(pending.patches)
    if not candidates:
        return
    zoids = sorted(candidates - connection.changed_in_transaction(catalog))
    if not zoids:
        return
    try:
        with connection.reading(catalog) as conn:
            pending.read_paths = search.stored_paths(conn, zoids)
    except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable):
        pass  # no catalog column yet: nothing stored to replace


def read_current(content) -> None:
    """Have the commit check that ``content`` is still as it was read.

    A catalog row is read from the object; when the transaction does not
    store the object (a reindex of an unchanged object, a partial reindex,
    a rebuild), no write conflict would stop a row read from an older
    version from overwriting the row of a newer one that another
    transaction committed meanwhile.  ZODB's read-conflict check does: the
    commit fails with a ``ConflictError`` and the publisher retries, as
    ZCatalog's BTrees conflict in such a case.  Objects the transaction
    stores are checked by their write anyway (ZODB skips them here).
    """
    base = aq_base(content)
    jar = getattr(base, "_p_jar", None)
    if jar is not None and base._p_oid is not None and base._p_serial is not None:
        jar.readCurrent(base)


def read_current_order(content) -> None:
    """Have the commit check that the order of ``content``'s folder is still
    as it was read, when the row holds the item's position.

    ZCatalog's GopipIndex stores no position; this catalog does, read from
    the folder when the row is extracted.  An edit of an item (its row
    written again) while another transaction removes an earlier sibling
    (which rewrites the positions of the folder's rows) does not conflict
    in the ZODB: they store different objects.  Committed after the
    removal, the edit's row would keep the position from before it (found
    by the soak: ``verify`` saw one stale ``getObjPositionInParent``).  The
    read-conflict check of the folder's order (plone.folder keeps it in a
    persistent list) makes that commit conflict, and the retry reads the
    new order.
    """
    from plone.folder.interfaces import IOrderableFolder

    parent = getattr(content, "aq_parent", None)
    if parent is None or not IOrderableFolder.providedBy(parent):
        return
    order = getattr(parent.getOrdering(), "_order", None)
    if order is None:
        return  # an ordering without plone.folder's stored list
    stored = order()
    saved = getattr(getattr(stored, "_p_jar", None), "_savepoint_storage", None)
    if getattr(stored, "_p_changed", False) or (
        saved is not None and stored._p_oid in getattr(saved, "index", {})
    ):
        # This transaction stores the order (a savepoint may have written
        # it already): its write is checked.
        return
    activate = getattr(stored, "_p_activate", None)
    if activate is not None:
        # A ghost's serial is unknown (zero): the check would compare
        # nothing.  The position was read from the folder's OIBTree of
        # positions, which may not have loaded the list.
        activate()
        read_current(stored)
