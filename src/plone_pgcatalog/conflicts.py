"""What a catalog-only write checks at the commit, so that it cannot undo
another transaction's change.

Owns the transaction's record of the rows its searches found
(``found_by_searches``), the read of where the stored rows that the commit
replaces are (``read_replaced_paths``, a hook of the pending store) and
ZODB's read-conflict check of an object whose row is written without the
object (``read_current``).

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
