"""What a request's transaction did, for the WSGI filter
(``plone_pgcatalog.wsgi``): subscribers of Zope's publication events.

Owns the request's ``wsgi.OUTCOME`` record, which the filter puts in the
WSGI environ and reads when a database error escapes Zope.  Each request's
transaction gets a ``CommitWatch`` joined as it is about to commit:
ordered after the other data managers, it notes, if the transaction has
changes, when they have all voted (from then on the ``COMMIT`` may have
run: ``UNKNOWN``) and when the storage has finished (``SAVED``).  A commit
that fails before, in the vote (a write conflict, a lost connection),
committed nothing: the record says nothing then, nor for a transaction
without changes.  Each try of a request (Zope runs one again after a write
conflict) starts a record of its own.

It also notes the error a try failed with when that is a database error
(``FAILURE``): Zope's error handling can fail in turn, and what then
leaves Zope is another error (see ``wsgi``).

Must not import the catalog's modules: this is about the publisher.
"""

from __future__ import annotations

from plone_pgcatalog.wsgi import FAILURE
from plone_pgcatalog.wsgi import OUTCOME
from plone_pgcatalog.wsgi import SAVED
from plone_pgcatalog.wsgi import UNAVAILABLE
from plone_pgcatalog.wsgi import UNKNOWN
from transaction.interfaces import IDataManagerSavepoint
from transaction.interfaces import ISavepointDataManager
from zope.interface import implementer

import transaction


def _record(event) -> dict | None:
    # Requests the filter does not wrap have no record.
    return getattr(event.request, "environ", {}).get(OUTCOME)


def _has_changes(txn, watch) -> bool:
    # A transaction joins a data manager for each thing it changes (the
    # ZODB connection, the catalog's pending rows, CMFCore's indexing
    # queue), also in its before-commit hooks; ``transaction`` keeps them
    # in ``_resources`` and offers no public way to ask.  Where that is
    # gone, assume changes: the record then never lets the filter call
    # resending safe when it may not be.
    resources = getattr(txn, "_resources", None)
    if resources is None:
        return True
    return any(resource is not watch for resource in resources)


@implementer(ISavepointDataManager)
class CommitWatch:
    """A data manager that changes nothing and notes, in ``record``, how
    far the commit of the transaction it joined went (see module)."""

    transaction_manager = None

    def __init__(self, record: dict):
        self.record = record
        self.changes = False

    def sortKey(self) -> str:
        # After every other data manager ("~" sorts after the ASCII letters
        # and digits, the catalog's pending rows' "~plone..." included):
        # its vote comes last, its finish after the storage's.
        return "~~plone_pgcatalog.outcome"

    def tpc_vote(self, txn) -> None:
        # Every vote passed: what follows is the storage's COMMIT.
        self.changes = _has_changes(txn, self)
        if self.changes:
            self.record["commit"] = UNKNOWN

    def tpc_finish(self, txn) -> None:
        if self.changes:
            self.record["commit"] = SAVED

    def tpc_begin(self, txn) -> None:
        pass

    def commit(self, txn) -> None:
        pass

    def tpc_abort(self, txn) -> None:
        pass  # the record keeps how far it went

    def abort(self, txn) -> None:
        pass

    def savepoint(self) -> IDataManagerSavepoint:
        return _NothingToRollBack()


@implementer(IDataManagerSavepoint)
class _NothingToRollBack:
    def rollback(self) -> None:
        pass


def started(event) -> None:
    """``IPubStart``: a try of the request begins, nothing done yet."""
    record = _record(event)
    if record is not None:
        record.clear()


def failing(event) -> None:
    """``IPubBeforeAbort``: the try failed with ``event.exc_info``, which
    Zope's error handling has just rendered, or could not.  Notified
    before the abort, which may fail too.  The record keeps a database
    error (``FAILURE``), any other clears it: the last try's counts."""
    record = _record(event)
    if record is not None:
        error = event.exc_info[1]
        record[FAILURE] = error if isinstance(error, UNAVAILABLE) else None


def committing(event) -> None:
    """``IPubBeforeCommit``: the transaction's commit is watched."""
    record = _record(event)
    if record is not None:
        transaction.get().join(CommitWatch(record))
