"""zodb-pgjsonb's process-wide object cache as ``plone_pgcatalog.sharedcache``
leaves it, on a real database: two ZODB databases on one PostgreSQL
database stand for two Zope processes.  And the databases Zope's start-up
prepares have it (``startup.prepare_database``, which the test layer calls
as Zope's subscriber does)."""

from __future__ import annotations

from persistent.mapping import PersistentMapping
from plone_pgcatalog import sharedcache
from plone_pgcatalog import testing
from plone_pgcatalog.sharedcache import CoveredSharedLoadCache
from ZODB.DB import DB
from zodb_pgjsonb.storage import PGJsonbStorage

import os
import psycopg
import pytest
import transaction


@pytest.fixture
def two_processes():
    """``(this, other)``: two ``ZODB.DB`` on one new PostgreSQL database;
    ``this`` has the add-on's cache rule."""
    server = testing.server_dsn()
    name = f"pgcatalog_sharedcache_{os.getpid()}"
    testing.drop_database(server, name)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(server, dbname=name)
    other = DB(PGJsonbStorage(dsn, cache_warm_pct=0))
    this = DB(PGJsonbStorage(dsn, cache_warm_pct=0))
    sharedcache.keep_invalidations(this)
    try:
        yield this, other
    finally:
        this.close()
        other.close()
        testing.drop_database(server, name)


def _write(db: DB, value: int) -> None:
    tm = transaction.TransactionManager()
    conn = db.open(tm)
    try:
        root = conn.root()
        if "x" not in root:
            root["x"] = PersistentMapping()
        root["x"]["value"] = value
        tm.commit()
    finally:
        conn.close()


def test_a_connection_opened_anew_reads_what_another_process_wrote(two_processes):
    """zodb-pgjsonb's first poll of a connection invalidates nothing: the
    state this process cached before another wrote was served to it."""
    this, other = two_processes
    _write(other, 1)
    first = this.open(transaction.TransactionManager())
    assert first.root()["x"]["value"] == 1  # cached, process-wide
    _write(other, 2)

    opened_anew = this.open(transaction.TransactionManager())  # first is open

    assert opened_anew.root()["x"]["value"] == 2
    # Its first poll began where the cache's covered range ended, and so
    # extended it: what it loaded serves the next connection from the cache.
    cache = this.storage._shared_cache
    assert cache.covered == this.storage.current_max_tid()
    hits = cache.hits
    third = this.open(transaction.TransactionManager())
    assert third.root()["x"]["value"] == 2
    assert cache.hits > hits
    first.close()
    opened_anew.close()
    third.close()


def test_a_connection_that_polled_past_what_is_covered_extends_it(two_processes):
    """Were ``covered`` left behind (``clear``), the next poll of any
    connection begins within it again."""
    this, other = two_processes
    _write(other, 1)
    tm = transaction.TransactionManager()
    conn = this.open(tm)
    conn.root()["x"]["value"]
    cache = this.storage._shared_cache
    last = this.storage.current_max_tid()
    cache.clear()
    cache.polled(None, last - 1)  # behind the connection's own poll
    _write(other, 2)

    tm.begin()  # polls

    assert cache.covered == this.storage.current_max_tid() > last
    assert conn.root()["x"]["value"] == 2
    conn.close()


def test_zodb_pgjsonb_alone_serves_the_old_state_to_a_new_connection(two_processes):
    """The behaviour the test above guards against, without the rule (if
    this fails, zodb-pgjsonb invalidates a new connection's cache itself)."""
    _, other = two_processes
    plain = DB(PGJsonbStorage(other.storage._dsn, cache_warm_pct=0))
    try:
        _write(other, 1)
        first = plain.open(transaction.TransactionManager())
        assert first.root()["x"]["value"] == 1
        _write(other, 2)

        opened_anew = plain.open(transaction.TransactionManager())

        assert opened_anew.root()["x"]["value"] == 1
        first.close()
        opened_anew.close()
    finally:
        plain.close()


def test_the_site_database_has_the_rule(pg_layer):
    db = pg_layer["app"]._p_jar.db()

    assert type(db.storage._shared_cache) is CoveredSharedLoadCache
    assert db.storage._shared_cache.covered is not None


def test_a_zodb_pgjsonb_without_what_the_rule_uses_is_left_alone(
    two_processes, monkeypatch, caplog
):
    _, other = two_processes
    monkeypatch.setattr(sharedcache, "_USED_OF_THE_CACHE", ("_lock", "_entries"))
    cache = other.storage._shared_cache

    sharedcache.keep_invalidations(other)

    assert other.storage._shared_cache is cache
    assert "no _entries" in caplog.text
