"""Covering indexes (``columns.cover``, schema 9): the B-trees of
``portal_type`` and ``review_state`` that also hold the terms every Plone
search carries (the site's path, the security terms, the effective
range), so that a search's count of their matches reads the index only.
Made with the typed columns, kept in step when an included column goes or
comes, made on older sites by the upgrade step 9 -> 10.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone_pgcatalog.store import columns
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import transaction

#: What each covering index holds on a Plone site: the column, then the
#: terms every search carries.
FULL = {
    name: [name, "path", "allowedRolesAndUsers", "effectiveRange"]
    for name in columns.COVERED
}


def _covering(dsn: str) -> dict:
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        return {
            name: columns._index_columns(cur, columns.covering_index_name(name))
            for name in columns.COVERED
        }


def _count_scans(dsn: str, statement: str, params) -> list[dict]:
    """The scans of the count subquery (the InitPlan) of a search's
    statement, in EXPLAIN ANALYZE after VACUUM, with the planner kept off
    sequential and bitmap scans: on a few rows it would read the heap
    anyway, and the question is whether an index can serve the count
    alone."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) pgcatalog_objects")
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET enable_bitmapscan = off")
        [[plan]] = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params
        ).fetchall()

    def scans(node, in_count=False):
        in_count = in_count or node.get("Parent Relationship") == "InitPlan"
        found = [node] if in_count and "Scan" in node["Node Type"] else []
        for child in node.get("Plans", []):
            found += scans(child, in_count)
        return found

    return scans(plan[0]["Plan"])


def test_a_site_has_the_covering_indexes(pg_layer):
    assert _covering(pg_layer["pgcatalog_dsn"]) == FULL


def test_a_count_of_a_covered_filter_reads_the_index_only(pg_layer, searches):
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    # The Manager's search: the site's path, the security terms.
    assert len(api.content.find(portal_type="Document")) == 4
    manager = searches[-1]
    # Anonymous's: the effective range too.
    logout()
    assert len(api.content.find(review_state="published")) == 2
    anonymous = searches[-1]
    transaction.abort()
    for searched, name in ((manager, "portal_type"), (anonymous, "review_state")):
        [scan] = _count_scans(dsn, searched.statement, searched.params)
        assert scan["Node Type"] == "Index Only Scan", scan
        assert scan["Index Name"] == columns.covering_index_name(name)
        assert scan["Heap Fetches"] == 0
        assert scan["Actual Rows"] == {"portal_type": 4, "review_state": 2}[name]
    assert '"effectiveRange" @>' in anonymous.statement


def test_the_covering_indexes_follow_the_columns_ready(pg_layer):
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            assert columns.drop_column(conn, "effectiveRange", "5s")
            # PostgreSQL dropped them with the column; made again without it.
            assert _covering(dsn) == {
                name: [name, "path", "allowedRolesAndUsers"] for name in columns.COVERED
            }
        finally:
            # Tests share the database's DDL (each restores rows only).
            assert columns.add_column(conn, "effectiveRange", "range", "5s")
        assert _covering(dsn) == FULL
        # In step: nothing to do.
        assert columns.cover(conn, "5s") == []


def test_9_to_10_makes_the_covering_indexes(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in columns.COVERED:
            conn.execute(f"DROP INDEX {columns.covering_index_name(name)}")
        conn.execute(
            "UPDATE pgcatalog_state SET value = 8 WHERE key = 'schema_version'"
        )
    assert _covering(dsn) == {name: None for name in columns.COVERED}
    transaction.begin()
    _upgrade_from(portal, "9")
    assert _covering(dsn) == FULL
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
        ).fetchone() == (9,)
    transaction.begin()
    assert len(api.content.find(portal_type="Document")) == 2
