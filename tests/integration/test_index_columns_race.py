"""Two processes make the typed columns' missing SQL indexes at once
(``columns.index_columns``: the upgrade step to profile 22, an install,
``create_schema`` putting back what is missing, run by two Zope instances
or two operators at the same time).

Each looks for the indexes, finds them missing and builds them; building
takes a lock that lets the other build too.  The second to commit then
failed on PostgreSQL's unique name of the first one's index
(``pg_class_relname_nsp_index``) instead of finding it made, and its step
ended in an error.  A third connection holds the table so that both have
looked before either builds: the race, every time.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns
from psycopg import sql

import psycopg
import pytest
import threading
import time

#: What each way of making indexes makes: the function, the indexes it
#: makes where they are missing, and what it returns having made them.
MAKERS = {
    "typed columns' indexes": (
        columns.index_columns,
        columns.column_index_names("effectiveRange", "range"),
        ["effectiveRange"],
    ),
    "covering and partial indexes": (
        columns.cover,
        [
            columns.covering_index_name("portal_type"),
            columns.untyped_index_name(columns.SORTED[0]),
        ],
        [f"{columns.SORTED[0]} (its untyped values)", "portal_type"],
    ),
}


def _waiting(dsn: str) -> int:
    """Backends of this database waiting for a lock."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock'"
        ).fetchone()[0]


def _present(dsn: str, names: list[str]) -> list:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT to_regclass(n)::text FROM unnest(%s::text[]) AS n", (names,)
        ).fetchall()


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_two_runs_at_once_both_end_with_the_indexes_made(pg_layer, maker):
    dsn = pg_layer["pgcatalog_dsn"]
    function, indexes, made = MAKERS[maker]
    results: list = []

    def make() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                results.append(function(conn, "30s"))
        except psycopg.Error as error:
            results.append(error)

    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for index in indexes:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
        with psycopg.connect(dsn) as holder:
            # Readers pass; an index build waits (its share lock).
            holder.execute("LOCK TABLE pgcatalog_objects IN EXCLUSIVE MODE")
            runs = [threading.Thread(target=make) for _ in range(2)]
            for run in runs:
                run.start()
            deadline = time.monotonic() + 20
            while _waiting(dsn) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _waiting(dsn) == 2, "both runs wait before building"
            holder.commit()
        for run in runs:
            run.join(60)
        assert not any(isinstance(result, Exception) for result in results), results
        # Each index made by one run, the other finding it made.
        assert sorted(results[0] + results[1]) == sorted(made)
        assert _present(dsn, indexes) == [(index,) for index in indexes]
    finally:
        # Tests share the database's DDL (each restores rows only).
        with psycopg.connect(dsn, autocommit=True) as conn:
            function(conn, "30s")
