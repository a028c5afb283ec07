"""The statement timeout of catalog reads (issue 16, runaway searches).

A catalog read that runs longer than ``PGCATALOG_STATEMENT_TIMEOUT`` is
cancelled by PostgreSQL and raises ``SearchTimeout``, naming the setting
and the query; the request's snapshot stays usable: later searches and
object loads of the same transaction work.  The slow reads here wait for
a lock another connection holds, as searches do while an operator runs
``VACUUM FULL`` or ``REINDEX`` on the catalog's table.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import snapshots
from plone_pgcatalog.errors import SearchTimeout
from plone_pgcatalog.store import connection
from Products.ZCatalog.Catalog import CatalogError

import contextlib
import logging
import psycopg
import pytest
import threading
import time
import transaction


@pytest.fixture
def timeout():
    """Sets the catalog's statement timeout (after a test's content is made:
    300 ms would bound its creation too); the setting back afterwards."""
    before = connection.STATEMENT_TIMEOUT
    yield connection.set_statement_timeout
    connection.set_statement_timeout(before)


def _site(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(3):
        api.content.create(
            container=portal, type="Document", id=f"doc-{number}", title="Doc"
        )
    transaction.commit()
    snapshots.results.clear()
    return portal


@contextlib.contextmanager
def _held(dsn: str, statement: str):
    """``statement`` run and its locks held by another connection; for 10 s
    at most, so that a read the timeout misses ends (and its test fails)
    instead of waiting for ever."""
    with psycopg.connect(dsn) as other:
        other.execute(statement)
        release = threading.Timer(10, other.rollback)
        release.start()
        try:
            yield
        finally:
            release.cancel()
            other.rollback()


def _timed_out(call) -> tuple[SearchTimeout, float]:
    started = time.monotonic()
    with pytest.raises(SearchTimeout) as raised:
        call()
    return raised.value, time.monotonic() - started


def _first_read_while_locked(pg_layer, timeout, read):
    """The site, and what the request's first catalog read ``read(catalog)``
    raised while another connection held the table (under a timeout of
    300 ms), checked to have ended in time."""
    portal = _site(pg_layer)
    timeout("300ms")
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    with _held(dsn, "LOCK TABLE pgcatalog_objects IN ACCESS EXCLUSIVE MODE"):
        error, took = _timed_out(lambda: read(portal.portal_catalog))
    assert took < 5
    return portal, error


def test_the_first_search_of_a_request_is_cancelled_at_the_timeout(pg_layer, timeout):
    portal, error = _first_read_while_locked(
        pg_layer, timeout, lambda catalog: len(catalog(portal_type="Document"))
    )
    catalog = portal.portal_catalog
    message = str(error)
    assert "PGCATALOG_STATEMENT_TIMEOUT (300ms)" in message
    assert "'portal_type': 'Document'" in message
    assert isinstance(error, CatalogError)  # what ZCatalog's callers catch
    # The same transaction goes on: searches, brains, object loads.
    found = catalog(portal_type="Document", sort_on="id")
    assert [brain.getId for brain in found] == ["doc-0", "doc-1", "doc-2"]
    assert found[0].getObject().title == "Doc"


def test_a_first_read_that_is_not_a_search_is_cancelled_and_the_snapshot_stays(
    pg_layer, timeout
):
    """The first catalog read of a request that is not a search (the
    change counter, the UID index of a page's head links) sets the
    savepoint alone; the table's lock waits, as under VACUUM FULL."""
    portal, error = _first_read_while_locked(
        pg_layer, timeout, lambda catalog: catalog.getCounter()
    )
    catalog = portal.portal_catalog
    assert "PGCATALOG_STATEMENT_TIMEOUT (300ms)" in str(error)
    portal._p_jar.cacheMinimize()
    assert portal["doc-1"].title == "Doc"  # loaded from the snapshot again
    assert catalog.getCounter() > 0


def test_a_later_read_is_cancelled_and_the_snapshot_stays(pg_layer, timeout):
    """A read after the transaction's first (its savepoint set): the
    change counter, whose table another connection holds."""
    portal = _site(pg_layer)
    timeout("300ms")
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert len(catalog(portal_type="Document")) == 3  # the savepoint is set
    with _held(dsn, "LOCK TABLE pgcatalog_state IN ACCESS EXCLUSIVE MODE"):
        error, took = _timed_out(catalog.getCounter)
    assert took < 5
    assert "PGCATALOG_STATEMENT_TIMEOUT" in str(error)
    assert catalog.getCounter() > 0
    assert [brain.getPath() for brain in catalog(id="doc-1")] == ["/plone/doc-1"]
    portal._p_jar.cacheMinimize()
    assert portal["doc-2"].title == "Doc"
    # Nothing of the transaction was lost: it still commits.
    portal["doc-2"].title = "Changed"
    portal["doc-2"].reindexObject()
    transaction.commit()
    snapshots.results.clear()
    assert [b.getId for b in catalog(Title="Changed")] == ["doc-2"]


def test_without_a_timeout_the_search_waits(pg_layer, timeout):
    """``0`` (the ``pgcatalog`` command's setting): no timeout, where the
    300 ms set before would have cancelled the search."""
    portal = _site(pg_layer)
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    timeout("300ms")
    timeout("0")
    transaction.begin()
    with psycopg.connect(dsn) as other:
        other.execute("LOCK TABLE pgcatalog_objects IN ACCESS EXCLUSIVE MODE")
        # Released while the search waits, past the 300 ms above.
        releaser = threading.Timer(0.6, other.rollback)
        started = time.monotonic()
        releaser.start()
        assert len(catalog(portal_type="Document")) == 3
        releaser.join()
    assert time.monotonic() - started >= 0.5
    with connection.json_cursor(connection.read_connection(catalog)) as cursor:
        assert cursor.execute("SHOW statement_timeout").fetchone() == ("0",)


def test_a_timeout_that_is_not_a_duration_is_refused(timeout):
    with pytest.raises(ValueError, match="not a duration"):
        timeout("30 s")
    assert connection.STATEMENT_TIMEOUT != "30 s"


@pytest.mark.parametrize(
    "value, setting",
    [
        (None, "30s"),
        ("2min", "2min"),
        ("500ms", "500ms"),
        ("0", "0"),
        (" 45S ", "45s"),
        ("server", None),
        ("30s; DROP TABLE x", None),
        ("-1", None),
    ],
)
def test_the_timeout_is_read_from_the_environment(monkeypatch, caplog, value, setting):
    if value is None:
        monkeypatch.delenv("PGCATALOG_STATEMENT_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PGCATALOG_STATEMENT_TIMEOUT", value)
    with caplog.at_level(logging.WARNING):
        assert connection._statement_timeout() == setting
    warned = "is not a duration" in caplog.text
    assert warned == (setting is None and value != "server")
