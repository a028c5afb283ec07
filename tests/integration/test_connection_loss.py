"""A catalog read whose PostgreSQL connection is lost (issue 16, part 2).

``pg_terminate_backend`` of the instance's connections, as an operator or
a failover does: the next catalog read fails at once with
``ConnectionLost``, a ``TransientError`` (Zope's publisher runs the
request again), and the next transaction reads and writes on a new
connection, with nothing half-written and no connection left over.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.errors import ConnectionLost
from transaction.interfaces import TransientError

import psycopg
import pytest
import time
import transaction


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
    """Neither the object nor its catalog row: the commit fails (with
    zodb-pgjsonb's error), and both keep what the last commit stored."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    portal["page"].title = "Lost"
    portal["page"].reindexObject()
    _others(dsn, terminate=True)
    with pytest.raises(psycopg.OperationalError):
        transaction.commit()
    transaction.abort()
    transaction.begin()
    assert portal["page"].title == "Page"
    assert [b.Title for b in catalog(id="page")] == ["Page"]
    assert len(catalog(Title="Lost")) == 0
