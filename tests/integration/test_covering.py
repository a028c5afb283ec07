"""Covering indexes (``columns.cover``, schema 9): the B-trees of
``portal_type`` and ``review_state`` that also hold the terms every Plone
search carries (the site's path, the security terms, the effective
range), so that a search's count of their matches reads the index only.
Made with the typed columns, kept in step when an included column goes or
comes, made on older sites by the upgrade step 9 -> 10.  That PostgreSQL
then counts by an index-only scan shows in the benchmark's plans
(``benchmarks/README.rst``, "Large results"): on the few rows of a test
site it may as well pick the plain index, so the tests check what the
count reads.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone_pgcatalog.store import columns
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import re
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


def _count_columns(dsn: str, statement: str, params) -> set[str]:
    """The columns the count subquery (the InitPlan) of a search's
    statement reads, from its plan (EXPLAIN VERBOSE names each one with
    the scan's alias): whichever index PostgreSQL picks on a few rows (the
    plain one of ``portal_type``, at times), an index holding them all can
    count alone.  Its conditions only: a count outputs nothing, and a
    sequential scan's output lists every column of the table (the planner
    then returns whole rows, to spare a projection)."""
    with psycopg.connect(dsn) as conn:
        [[plan]] = conn.execute(
            "EXPLAIN (VERBOSE, FORMAT JSON) " + statement, params
        ).fetchall()

    def counted(node, in_count=False):
        in_count = in_count or node.get("Parent Relationship") == "InitPlan"
        found = set()
        if in_count and node.get("Relation Name") == "pgcatalog_objects":
            alias = re.escape(node["Alias"])
            for key in ("Index Cond", "Filter", "Recheck Cond"):
                text = node.get(key)
                text = " ".join(text) if isinstance(text, list) else text or ""
                found |= {
                    quoted or bare
                    for quoted, bare in re.findall(
                        alias + r'\.(?:"([^"]+)"|(\w+))', text
                    )
                }
        for child in node.get("Plans", []):
            found |= counted(child, in_count)
        return found

    return counted(plan[0]["Plan"])


def test_a_site_has_the_covering_indexes(pg_layer):
    assert _covering(pg_layer["pgcatalog_dsn"]) == FULL


def test_a_count_of_a_covered_filter_needs_only_its_covering_index(pg_layer, searches):
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    # The Manager's search: the site's path, the security terms.
    assert len(api.content.find(portal_type="Document")) == 4
    manager = searches[-1]
    # With a keyword too: not covered.
    assert len(api.content.find(portal_type="Document", Subject="red")) == 4
    keyword = searches[-1]
    # Anonymous's: the effective range too.
    logout()
    assert len(api.content.find(review_state="published")) == 2
    anonymous = searches[-1]
    transaction.abort()
    # (The effective range: as the catalog adds it for this user.)
    assert {"portal_type", "path", "allowedRolesAndUsers"} <= _count_columns(
        dsn, manager.statement, manager.params
    )
    assert _count_columns(dsn, anonymous.statement, anonymous.params) == {
        "review_state",
        "path",
        "allowedRolesAndUsers",
        "effectiveRange",
    }
    assert set(FULL["portal_type"]) >= _count_columns(
        dsn, manager.statement, manager.params
    )
    assert set(FULL["review_state"]) >= _count_columns(
        dsn, anonymous.statement, anonymous.params
    )
    assert "Subject" in _count_columns(dsn, keyword.statement, keyword.params)


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
