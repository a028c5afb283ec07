"""How far a request's commit went, as the WSGI filter learns it
(``plone_pgcatalog.publication``), with the real ``transaction`` package
and data managers that fail where a storage can."""

from __future__ import annotations

from plone_pgcatalog import publication
from plone_pgcatalog.wsgi import OUTCOME
from plone_pgcatalog.wsgi import SAVED
from plone_pgcatalog.wsgi import UNKNOWN
from transaction.interfaces import IDataManager
from transaction.interfaces import ISavepointDataManager
from types import SimpleNamespace
from ZODB.POSException import ConflictError
from zope.interface import implementer
from zope.interface.verify import verifyObject

import psycopg
import pytest
import transaction


@implementer(IDataManager)
class Storage:
    """A data manager that writes, failing in ``fails_in`` if given (the
    ZODB connection's place: it sorts before the watch)."""

    transaction_manager = None

    def __init__(self, fails_in: str | None = None, error=None):
        self.fails_in = fails_in
        self.error = error
        self.committed = False

    def _step(self, name):
        if name == self.fails_in:
            raise self.error

    def sortKey(self):
        return "pgjsonb:1"

    def tpc_begin(self, txn):
        self._step("tpc_begin")

    def commit(self, txn):
        self._step("commit")

    def tpc_vote(self, txn):
        self._step("tpc_vote")

    def tpc_finish(self, txn):
        self._step("tpc_finish")
        self.committed = True

    def tpc_abort(self, txn):
        pass

    def abort(self, txn):
        pass


@pytest.fixture
def request_record():
    """A request's record and its publication events' request."""
    record = {}
    request = SimpleNamespace(environ={OUTCOME: record})
    transaction.begin()
    publication.started(SimpleNamespace(request=request))
    yield record, SimpleNamespace(request=request)
    transaction.abort()


def _commit(event, storage) -> None:
    transaction.get().join(storage)
    publication.committing(event)
    transaction.commit()


def test_a_commit_that_ended_is_saved(request_record):
    record, event = request_record
    storage = Storage()
    _commit(event, storage)
    assert storage.committed
    assert record == {"commit": SAVED}


def test_a_conflict_in_the_vote_committed_nothing(request_record):
    record, event = request_record
    with pytest.raises(ConflictError):
        _commit(event, Storage("tpc_vote", ConflictError("conflict")))
    assert "commit" not in record


def test_a_connection_lost_in_the_finish_leaves_the_outcome_unknown(request_record):
    """The storage's ``COMMIT`` failed on a lost connection: PostgreSQL may
    have committed."""
    record, event = request_record
    error = psycopg.OperationalError("server closed the connection")
    with pytest.raises(psycopg.OperationalError):
        _commit(event, Storage("tpc_finish", error))
    assert record == {"commit": UNKNOWN}


def test_a_transaction_without_changes_is_not_watched(request_record):
    record, event = request_record
    publication.committing(event)
    transaction.commit()
    assert record == {}


def test_changes_made_by_a_before_commit_hook_are_watched(request_record):
    record, event = request_record
    storage = Storage()
    transaction.get().addBeforeCommitHook(lambda: transaction.get().join(storage))
    publication.committing(event)
    transaction.commit()
    assert storage.committed
    assert record == {"commit": SAVED}


def test_each_try_of_a_request_starts_a_record_of_its_own(request_record):
    record, event = request_record
    _commit(event, Storage())
    transaction.begin()
    publication.started(event)
    assert record == {}


def test_requests_the_filter_does_not_wrap_have_no_record():
    event = SimpleNamespace(request=SimpleNamespace(environ={}))
    transaction.begin()
    transaction.get().join(Storage())
    publication.started(event)
    publication.committing(event)
    transaction.commit()  # nothing joined, nothing raised


def test_the_watch_is_a_savepoint_data_manager(request_record):
    """Before-commit hooks may take savepoints after it joined."""
    record, event = request_record
    watch = publication.CommitWatch(record)
    assert verifyObject(ISavepointDataManager, watch)
    transaction.get().join(watch)
    transaction.savepoint().rollback()
    transaction.get().join(Storage())
    transaction.commit()
    assert record == {"commit": SAVED}


def _failing_try(event, error) -> None:
    publication.failing(
        SimpleNamespace(request=event.request, exc_info=(type(error), error, None))
    )


def test_a_try_that_failed_with_a_database_error_is_noted(request_record):
    record, event = request_record
    error = psycopg.OperationalError("the connection is closed")
    _failing_try(event, error)
    assert record == {"failure": error}
    # A later try that failed with another error (after a conflict, Zope
    # tries again) clears it, and a new try's start too.
    _failing_try(event, ConflictError())
    assert record == {"failure": None}
    _failing_try(event, error)
    publication.started(event)
    assert record == {}


def test_a_failure_of_a_request_the_filter_does_not_wrap_is_not_noted():
    event = SimpleNamespace(request=SimpleNamespace(environ={}))
    _failing_try(event, psycopg.OperationalError("closed"))
    assert event.request.environ == {}
