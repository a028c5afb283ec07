"""The catalog changes of one ZODB transaction, waiting for its commit.

Owns: ``PendingCatalog``, joined to the transaction as a data manager so
that savepoints, savepoint rollback and abort apply to catalog changes
exactly as they apply to objects.  The state processor reads it during the
commit; nothing else is written anywhere until then.

Must not touch SQL or connections.
"""

from __future__ import annotations

from plone_pgcatalog.extraction import CatalogRow
from transaction.interfaces import IDataManagerSavepoint
from transaction.interfaces import ISavepointDataManager
from zope.interface import implementer

import transaction


_KEY = "plone_pgcatalog.pending"


@implementer(ISavepointDataManager)
class PendingCatalog:
    """Rows to write and paths to remove when the transaction commits."""

    transaction_manager = None

    def __init__(self, txn: transaction.interfaces.ITransaction):
        self.txn = txn
        self.rows: dict[int, CatalogRow] = {}
        self.removed_paths: set[str] = set()
        #: subtrees whose rows are cleared unless cataloged again
        self.cleared_subtrees: set[str] = set()
        #: zoids whose rows the state processor wrote with the object state
        self.written: set[int] = set()

    # -- what the tool records ------------------------------------------------

    def catalog(self, row: CatalogRow) -> None:
        self.rows[row.zoid] = row

    def uncatalog(self, path: str) -> None:
        """Forget the object at ``path``; its row is cleared at commit."""
        for zoid in [z for z, row in self.rows.items() if row.path == path]:
            del self.rows[zoid]
        self.removed_paths.add(path)

    def uncatalog_subtree(self, path: str) -> None:
        """Forget every object at and below ``path`` (a catalog clear)."""
        below = path.rstrip("/") + "/"
        for zoid in [
            z for z, row in self.rows.items()
            if row.path == path or row.path.startswith(below)
        ]:
            del self.rows[zoid]
        self.cleared_subtrees.add(path)

    def __bool__(self) -> bool:
        return bool(self.rows or self.removed_paths or self.cleared_subtrees)

    # -- IDataManager ---------------------------------------------------------

    def abort(self, txn) -> None:
        self._clear()

    def tpc_begin(self, txn) -> None:
        pass

    def commit(self, txn) -> None:
        pass

    def tpc_vote(self, txn) -> None:
        pass

    def tpc_finish(self, txn) -> None:
        self._clear()

    def tpc_abort(self, txn) -> None:
        self._clear()

    def sortKey(self) -> str:
        return "~plone_pgcatalog.pending"

    def savepoint(self) -> PendingSavepoint:
        return PendingSavepoint(self)

    def _clear(self) -> None:
        self.rows.clear()
        self.removed_paths.clear()
        self.cleared_subtrees.clear()
        self.written.clear()


@implementer(IDataManagerSavepoint)
class PendingSavepoint:
    """Restores the pending changes as they were when it was taken."""

    def __init__(self, pending: PendingCatalog):
        self.pending = pending
        self.rows = dict(pending.rows)
        self.removed_paths = set(pending.removed_paths)
        self.cleared_subtrees = set(pending.cleared_subtrees)

    def rollback(self) -> None:
        self.pending.rows = dict(self.rows)
        self.pending.removed_paths = set(self.removed_paths)
        self.pending.cleared_subtrees = set(self.cleared_subtrees)


def current_pending(create: bool = False) -> PendingCatalog | None:
    """The pending catalog changes of this thread's current transaction."""
    txn = transaction.get()
    try:
        return txn.data(_KEY)
    except KeyError:
        if not create:
            return None
    pending = PendingCatalog(txn)
    txn.join(pending)
    txn.set_data(_KEY, pending)
    return pending
