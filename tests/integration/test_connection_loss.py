"""A catalog read whose PostgreSQL connection is lost (issue 16, part 2).

``pg_terminate_backend`` of the instance's connections, as an operator or
a failover does: the next catalog read fails at once with
``ConnectionLost``, a ``TransientError`` (Zope's publisher runs the
request again), and the next transaction reads and writes on a new
connection, with nothing half-written and no connection left over.
The objects' loads of the request do the same (``lostloads``).
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import lostloads
from plone_pgcatalog.errors import ConnectionLost
from plone_pgcatalog.sharedcache import instance_of
from psycopg_pool import PoolTimeout
from tests.integration import test_answer_after_commit as after_commit
from transaction.interfaces import TransientError
from ZODB.Connection import Connection
from ZODB.POSException import POSKeyError
from ZODB.utils import p64
from ZODB.utils import u64
from ZPublisher.HTTPRequest import HTTPRequest

import logging
import psycopg
import pytest
import time
import transaction

#: A page titled "Before" (fixture), and one request through the WSGI
#: filter and Zope's publisher.
document = after_commit.document
_publish = after_commit._publish


def _site(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="page", title="Page")
    transaction.commit()
    return portal


def _others(dsn: str, terminate: bool = False) -> int:
    """The number of the database's other client connections (those
    terminated, if ``terminate``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        counted = "WHERE pg_terminate_backend(pid)" if terminate else "WHERE true"
        return conn.execute(
            f"SELECT count(*) FILTER ({counted}) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        ).fetchone()[0]


def test_a_read_on_a_lost_connection_fails_at_once_and_the_next_transaction_works(
    pg_layer,
):
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert len(catalog(portal_type="Document")) == 1
    connections = _others(dsn)
    assert _others(dsn, terminate=True) == connections
    started = time.monotonic()
    with pytest.raises(ConnectionLost) as raised:
        len(catalog(id="page"))
    assert time.monotonic() - started < 5  # no wait for a timeout
    assert isinstance(raised.value, TransientError)
    assert "connection is lost" in str(raised.value)
    with pytest.raises(ConnectionLost):  # every later read of the transaction
        len(catalog(Title="Page"))
    transaction.abort()

    transaction.begin()
    assert [b.getPath() for b in catalog(id="page")] == ["/plone/page"]
    portal["page"].title = "Renamed"
    portal["page"].reindexObject()
    transaction.commit()
    transaction.begin()
    assert [b.Title for b in catalog(id="page")] == ["Renamed"]
    assert _others(dsn) <= connections  # new ones in place of the old


#: A transaction's first catalog read, and what it finds once connected.
FIRST_READS = {
    # Sets the savepoint alone (``reading``), as the UID index does for a
    # page's head links.
    "not a search": lambda catalog: catalog.getCounter() > 0,
    # Sent with the savepoint in one pipeline (``search_first``).
    "a search": lambda catalog: [b.getPath() for b in catalog(id="page")]
    == ["/plone/page"],
}


@pytest.mark.parametrize("read", list(FIRST_READS))
def test_the_first_catalog_read_after_object_loads_on_a_lost_connection(pg_layer, read):
    """The request's snapshot began (objects loaded), then the connection
    went, then its first catalog read."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert portal["page"].title == "Page"
    _others(dsn, terminate=True)
    with pytest.raises(ConnectionLost):
        FIRST_READS[read](catalog)
    transaction.abort()
    transaction.begin()
    assert FIRST_READS[read](catalog)


def test_the_first_read_of_a_transaction_on_a_lost_connection(pg_layer):
    """The connection lost between two transactions' reads: zodb-pgjsonb
    connects anew when the next transaction begins."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert len(catalog(portal_type="Document")) == 1
    transaction.commit()
    _others(dsn, terminate=True)
    transaction.begin()
    assert [b.getPath() for b in catalog(id="page")] == ["/plone/page"]


def test_the_request_is_run_again_and_succeeds(pg_layer):
    """As Zope's publisher does with a ``TransientError``: the transaction
    manager runs the work again, in a new transaction."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    tries = []

    def request():
        tries.append(len(catalog(portal_type="Document")))
        if len(tries) == 1:
            _others(dsn, terminate=True)  # lost while the request runs
        return [b.getPath() for b in catalog(id="page")]

    assert transaction.manager.run(request) == ["/plone/page"]
    assert tries == [1, 1]


def test_a_commit_on_a_lost_connection_writes_nothing(pg_layer):
    """Neither the object nor its catalog row: the commit fails, and both
    keep what the last commit stored.  It fails with ``ConnectionLost``
    where the commit's indexing loads a state first (the page's workflow
    status: the publisher tries the request again), with zodb-pgjsonb's
    error where the store is the first to use the connection."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    portal["page"].title = "Lost"
    portal["page"].reindexObject()
    _others(dsn, terminate=True)
    with pytest.raises((ConnectionLost, psycopg.OperationalError)):
        transaction.commit()
    transaction.abort()
    transaction.begin()
    assert portal["page"].title == "Page"
    assert [b.Title for b in catalog(id="page")] == ["Page"]
    assert len(catalog(Title="Lost")) == 0


class TerminatedAfterBegin:
    """Arms the fault: right after the next request's transaction began
    (its read snapshot taken), terminate its PostgreSQL connection and
    forget every state kept in memory, so that the request's first object
    load reads PostgreSQL on the dead connection (a page served while an
    operator or a failover terminates the backends).  The test's own
    ZODB connection, which the same transaction manager begins, is left
    alone."""

    def __init__(self, monkeypatch, layer):
        self.dsn = layer["pgcatalog_dsn"]
        self.fired = False
        original = Connection.newTransaction
        tests = layer["portal"]._p_jar

        def new_transaction(connection, txn, sync=True):
            original(connection, txn, sync)
            if sync and not self.fired and connection is not tests:
                self.fired = True
                self._terminate(connection)

        monkeypatch.setattr(Connection, "newTransaction", new_transaction)

    def _terminate(self, connection) -> None:
        instance = instance_of(connection)
        with psycopg.connect(self.dsn, autocommit=True) as other:
            other.execute(
                "SELECT pg_terminate_backend(%s)", (instance._conn.info.backend_pid,)
            )
        connection.cacheMinimize()  # every object a ghost
        instance._load_cache.clear()  # zodb-pgjsonb's caches of states
        instance._main._shared_cache.clear()


def test_a_page_whose_object_load_lost_the_connection_is_served_by_a_new_try(
    document, monkeypatch, caplog
):
    """Zope's publisher runs the request again (``lostloads``): before,
    the client got "500 AdminShutdown" (the soak's folder listing)."""
    # As Zope's start-up sets it by default (zope.conf's
    # ``max-conflict-retries``); the test layers leave 0.
    monkeypatch.setattr(HTTPRequest, "retry_max_count", 3)
    fault = TerminatedAfterBegin(monkeypatch, document)
    with caplog.at_level(logging.ERROR, "ZODB.Connection"):
        status, answer = _publish(document, "GET", "/plone/page")
    monkeypatch.undo()
    assert fault.fired
    # The first try's load failed (ZODB logs it), the second served.
    assert "ConnectionLost" in caplog.text
    assert status == "200 OK", answer
    assert answer["title"] == "Before"


def _state_on_a_lost_connection(pg_layer):
    """The page's oid and serial, read by the test's ZODB connection,
    whose PostgreSQL connection is then terminated."""
    portal = _site(pg_layer)
    page = portal["page"]
    transaction.begin()
    assert page.title == "Page"
    instance = instance_of(page._p_jar)
    _others(pg_layer["pgcatalog_dsn"], terminate=True)
    return instance, page._p_oid, page._p_serial


def test_every_read_of_a_state_on_a_lost_connection_is_a_transient_error(pg_layer):
    instance, oid, serial = _state_on_a_lost_connection(pg_layer)
    instance._load_cache.clear()
    instance._main._shared_cache.clear()
    instance._serial_cache.clear()
    reads = {
        "load": lambda: instance.load(oid),
        "load_multiple": lambda: instance.load_multiple([oid]),
        "prefetch": lambda: instance.prefetch([oid]),
        "loadBefore": lambda: instance.loadBefore(oid, p64(u64(serial) + 1)),
        "loadSerial": lambda: instance.loadSerial(oid, serial),
    }
    for name, read in reads.items():
        with pytest.raises(ConnectionLost) as raised:
            read()
        assert isinstance(raised.value, TransientError), name
        assert isinstance(raised.value.__cause__, psycopg.OperationalError), name
        assert "object loads is lost" in str(raised.value), name
    transaction.abort()
    transaction.begin()  # zodb-pgjsonb connects anew
    assert instance_of(pg_layer["portal"]._p_jar).load(oid)[1] == serial


def test_other_errors_of_a_read_pass_unchanged(pg_layer):
    """A missing object is ZODB's ``POSKeyError``; a failure of a
    statement on a working connection (a cancelled read) is psycopg's, and
    so is a pool that gave no connection in time."""
    portal = _site(pg_layer)
    instance = instance_of(portal._p_jar)
    transaction.begin()
    with pytest.raises(POSKeyError):
        instance.load(p64(2**62))
    cancelled = psycopg.errors.QueryCanceled("canceling statement")
    assert not lostloads.lost(cancelled, instance._conn)
    assert not lostloads.lost(ValueError("not a database error"), instance._conn)
    # No connection from the pool in time: the WSGI filter's 503.
    timeout = PoolTimeout("couldn't get a connection after 3.00 sec")
    assert not lostloads.lost(timeout, None)
    _others(pg_layer["pgcatalog_dsn"], terminate=True)
    with pytest.raises(psycopg.OperationalError):
        instance._conn.execute("SELECT 1")
    assert lostloads.lost(cancelled, instance._conn)  # now broken
    transaction.abort()


def test_the_rule_is_on_every_connection_once(pg_layer):
    """Installed at start-up on the connections open then and on every one
    the storage makes later; installing it again changes nothing."""
    portal = _site(pg_layer)
    db = portal._p_jar.db()
    instance = instance_of(portal._p_jar)
    guarded = instance.load
    lostloads.retry_lost_loads(db)
    lostloads.guard(instance)
    assert instance.load is guarded
    assert guarded.__wrapped__.__self__ is instance  # one wrapper, no more
    other = db.open()
    try:
        assert "load" in vars(instance_of(other))
    finally:
        other.close()
