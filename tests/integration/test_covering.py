"""Covering indexes (``columns.cover``, schemas 9, 10 and 13): the B-trees
of ``portal_type`` and ``review_state`` that also hold each other, the
terms every Plone search carries (the site's path, the security terms,
the effective range) and the date keys listings sort on, so that a
search's count of their matches reads the index only; and the partial
indexes of the sort keys' untyped values, which let a sorted window's
count read indexes only (``query.SearchSQL.count_parts``).  Made with the
typed columns, kept in step when an included column goes or comes, made
on older sites by the upgrade steps 9 -> 10 and 10 -> 11 (and 11 -> 12,
``test_numbered_lists``, which puts the number of a row's security list
in them instead of the list; 13 -> 14 adds the other covered column to
each).  That PostgreSQL then counts by an index-only scan shows in the
benchmark's plans (``benchmarks/README.rst``, "Large results"): on the
few rows of a test site it may as well pick the plain index, so the tests
check what the count reads.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone_pgcatalog import query
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import schema
from psycopg import sql
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import re
import transaction

#: The date sort keys of a Plone site (``columns.SORTED``).
DATES = ["effective", "modified", "created"]

#: The number of a row's list of security terms (``columns.NUMBERED``).
NUMBER = columns.set_column("allowedRolesAndUsers")

#: The other covered column of each (schema 13).
OTHER = {"portal_type": "review_state", "review_state": "portal_type"}

#: What each covering index holds on a Plone site: the column, the other
#: covered column, then the terms every search carries (the security terms
#: by their list's number), then the date sort keys.
FULL = {
    name: [name, OTHER[name], "path", NUMBER, "effectiveRange", *DATES]
    for name in columns.COVERED
}


def _covering(dsn: str) -> dict:
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        return {
            name: columns._index_columns(cur, columns.covering_index_name(name))
            for name in columns.COVERED
        }


def _covering_as(conn: psycopg.Connection, held: dict, version: int) -> None:
    """The covering indexes as an older schema made them (``held``: each
    covered column's index's columns), and the database at ``version``."""
    for name, columns_held in held.items():
        index = columns.covering_index_name(name)
        conn.execute(f"DROP INDEX {index}")
        included = ", ".join(f'"{column}"' for column in columns_held[1:])
        conn.execute(
            f"CREATE INDEX {index} ON pgcatalog_objects ({name}) INCLUDE ({included})"
        )
    conn.execute(
        "UPDATE pgcatalog_state SET value = %s WHERE key = 'schema_version'",
        (version,),
    )


def _upgraded(portal, dsn: str, source: str) -> None:
    """Run the upgrade steps from ``source``: the covering indexes are then
    this code's, the database at this code's schema."""
    _upgrade_from(portal, source)
    assert _covering(dsn) == FULL
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
        ).fetchone() == (schema.SCHEMA_VERSION,)


def _untyped(dsn: str) -> dict:
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        return {
            name: columns._index_columns(cur, columns.untyped_index_name(name))
            for name in columns.SORTED
        }


def _count_scans(dsn: str, statement: str, params) -> list:
    """``(node type, index, columns)`` of each scan of the table in the
    count subqueries (InitPlans) of a search's statement, from its plan
    (EXPLAIN VERBOSE names each column with the scan's alias).  The columns
    of its conditions only, which are the same whichever index PostgreSQL
    picks on the few rows of a test site (a toss-up that the statistics
    the suite's earlier rows left decide), except a partial index's
    predicate, which the plan does not repeat: a count outputs nothing, and a
    sequential scan's output lists every column of the table (the planner
    then returns whole rows, to spare a projection)."""
    with psycopg.connect(dsn) as conn:
        return _scans_of(conn, statement, params)


def _scans_of(conn: psycopg.Connection, statement: str, params) -> list:
    [[plan]] = conn.execute(
        "EXPLAIN (VERBOSE, FORMAT JSON) " + statement, params
    ).fetchall()

    def subtree(node) -> list:
        return [node] + [n for child in node.get("Plans", []) for n in subtree(child)]

    def counts(node) -> list:
        if node.get("Parent Relationship") == "InitPlan":
            return [subtree(node)]
        return [nodes for child in node.get("Plans", []) for nodes in counts(child)]

    def conditions(nodes) -> str:
        # A scan's own conditions, and those of the joins above it: the
        # security terms by the numbers of their lists are a semi-join
        # (``test_numbered_lists``).
        texts = []
        for node in nodes:
            for key in CONDITIONS:
                text = node.get(key)
                texts += text if isinstance(text, list) else [text or ""]
        return " ".join(texts)

    found = []
    for nodes in counts(plan[0]["Plan"]):
        text = conditions(nodes)
        for node in nodes:
            if node.get("Relation Name") != "pgcatalog_objects":
                continue
            alias = re.escape(node["Alias"])
            read = {
                quoted or bare
                for quoted, bare in re.findall(alias + r'\.(?:"([^"]+)"|(\w+))', text)
            }
            found.append((node["Node Type"], node.get("Index Name"), read))
    return found


#: The conditions of a plan's nodes (EXPLAIN's keys).
CONDITIONS = (
    "Index Cond",
    "Filter",
    "Recheck Cond",
    "Hash Cond",
    "Join Filter",
    "Merge Cond",
    "Cache Key",
)


def _partial_index_used(dsn: str, statement: str, params) -> list[str]:
    """The predicates of the partial indexes the count subqueries of a
    statement read, where they are the table's only indexes: whether the
    statement's conditions imply a partial index's predicate, so that
    PostgreSQL can use it (on a large catalog it does, ``benchmarks``),
    whatever it prefers on the few rows of a test site.  Planned on a
    temporary copy of the table, which shadows it in this session only and
    goes with it (nothing of it reaches the test database)."""
    copy = "'pg_temp.pgcatalog_objects'::regclass"
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "CREATE TEMPORARY TABLE pgcatalog_objects"
            " (LIKE public.pgcatalog_objects INCLUDING INDEXES)"
        )
        for index, constraint in conn.execute(
            "SELECT c.relname, k.conname FROM pg_index AS i"
            " JOIN pg_class AS c ON c.oid = i.indexrelid"
            " LEFT JOIN pg_constraint AS k ON k.conindid = i.indexrelid"
            f" WHERE i.indrelid = {copy} AND i.indpred IS NULL"
        ).fetchall():
            # The primary key's index goes with its constraint.
            conn.execute(
                sql.SQL(
                    "ALTER TABLE pg_temp.pgcatalog_objects DROP CONSTRAINT {}"
                ).format(sql.Identifier(constraint))
                if constraint
                else sql.SQL("DROP INDEX pg_temp.{}").format(sql.Identifier(index))
            )
        for kind in ("seqscan", "bitmapscan"):
            conn.execute(f"SET enable_{kind} = off")
        predicates = dict(
            conn.execute(
                "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid)"
                " FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid"
                f" WHERE i.indrelid = {copy}"
            ).fetchall()
        )
        return [
            predicates.get(index)
            for _kind, index, _read in _scans_of(conn, statement, params)
        ]


def _count_columns(dsn: str, statement: str, params) -> set[str]:
    """The columns the count subquery of a search's statement reads
    (``_count_scans``): whichever index PostgreSQL picks on a few rows, an
    index holding them all can count alone."""
    return set().union(*(read for *_, read in _count_scans(dsn, statement, params)))


def test_a_site_has_the_covering_indexes(pg_layer):
    assert _covering(pg_layer["pgcatalog_dsn"]) == FULL
    assert _untyped(pg_layer["pgcatalog_dsn"]) == {name: ["zoid"] for name in DATES}


def test_a_sorted_windows_count_needs_only_indexes(pg_layer, searches, monkeypatch):
    """Counted apart (a large catalog), page 2 sorted on ``effective``:
    the count's first part (the rows with a typed value) reads columns of
    the covering index only; the second (the untyped values) can find its
    rows by the partial index of those rows (``columns.untyped_predicate``),
    which has none on most sites, instead of reading ``idx`` of every
    match.  Which index PostgreSQL prefers on a few rows is a toss-up: at
    times ``effective``'s B-tree, then filtering on ``idx``."""
    monkeypatch.setattr(query, "COUNT_APART_ROWS", -1)
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    found = api.content.find(
        portal_type="Document",
        sort_on="effective",
        sort_order="reverse",
        b_start=2,
        b_size=2,
    )
    assert found.actual_result_count == 4
    page = searches[-1]
    transaction.abort()
    assert page.statement.count("SELECT count(*)") == 2
    typed, untyped = (
        read for *_, read in _count_scans(dsn, page.statement, page.params)
    )
    assert {"portal_type", "effective"} <= typed <= set(FULL["portal_type"])
    with psycopg.connect(dsn) as conn:
        [[predicate]] = conn.execute(
            "SELECT pg_get_expr(indpred, indrelid) FROM pg_index"
            " WHERE indexrelid = to_regclass(%s)",
            (columns.untyped_index_name("effective"),),
        ).fetchall()
    assert "effective IS NULL" in predicate
    assert _partial_index_used(dsn, page.statement, page.params) == [None, predicate]
    # Not so where the sort key is not a date the indexes hold.
    api.content.find(portal_type="Document", sort_on="sortable_title", b_size=2)
    assert searches[-1].statement.count("SELECT count(*)") == 1
    transaction.abort()


def test_a_sort_keys_untyped_values_are_counted(pg_layer, searches, monkeypatch):
    """A row whose ``effective`` in ``idx`` has no typed form (an add-on's
    value of another type) has a sort key all the same: the window counted
    apart counts it, by the second part, as the one-pass window does."""
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "UPDATE pgcatalog_objects SET idx = jsonb_set(idx, '{effective}',"
            " '\"not a date\"') WHERE path = '/plone/page-1'"
        )
        assert conn.execute(
            "SELECT effective FROM pgcatalog_objects WHERE path = '/plone/page-1'"
        ).fetchone() == (None,)

    def pages():
        # Each page of two, in each order: the row without a typed value
        # sorts first in a descending order (on page 1), last in an
        # ascending one (on page 2), read apart from the walk of the others
        # where the window walks from the edge of its matches
        # (``SearchSQL.edge``).
        found = {}
        for order in ("ascending", "reverse"):
            for start in (0, 2):
                transaction.begin()
                page = api.content.find(
                    portal_type="Document",
                    sort_on="effective",
                    sort_order=order,
                    b_start=start,
                    b_size=2,
                )
                paths = [brain.getPath() for brain in page]
                found[(order, start)] = (page.actual_result_count, paths)
        return found

    one_pass = pages()
    monkeypatch.setattr(query, "COUNT_APART_ROWS", -1)
    apart = pages()
    assert searches[-1].statement.count("SELECT count(*)") == 2
    assert "(SELECT edge FROM counted)" in searches[-1].statement
    assert apart == one_pass
    assert {total for total, _ in apart.values()} == {4}
    assert apart[("reverse", 0)][1][0] == "/plone/page-1"
    assert apart[("ascending", 2)][1][-1] == "/plone/page-1"
    # Without the second part the row would not be counted.
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pgcatalog_objects WHERE path LIKE '/plone/page-%'"
            " AND effective IS NOT NULL"
        ).fetchone() == (3,)


def test_a_count_of_a_covered_filter_needs_only_its_covering_index(
    pg_layer, searches, no_group_counts
):
    # The Manager's count as where its groups are not counted (another
    # site in the database, a profile before 21): ``test_group_counts``.
    no_group_counts(_site(pg_layer, count=4))
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
    # (The effective range: as the catalog adds it for this user.  No path:
    # the site is alone in its database, ``test_site_alone``.)
    assert {"portal_type", NUMBER} <= _count_columns(
        dsn, manager.statement, manager.params
    )
    assert _count_columns(dsn, anonymous.statement, anonymous.params) == {
        "review_state",
        NUMBER,
        "effectiveRange",
    }
    assert set(FULL["portal_type"]) >= _count_columns(
        dsn, manager.statement, manager.params
    )
    assert set(FULL["review_state"]) >= _count_columns(
        dsn, anonymous.statement, anonymous.params
    )
    assert "Subject" in _count_columns(dsn, keyword.statement, keyword.params)


def test_a_count_of_a_type_in_a_state_needs_only_a_covering_index(pg_layer, searches):
    """A listing of a type in a state (published news items), as Anonymous
    asks for it: its count reads columns that either covering index holds
    (schema 13), sorted on a date or not."""
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    logout()
    found = []
    for sort in ({}, {"sort_on": "effective", "sort_order": "reverse"}):
        query = dict(portal_type="Document", review_state="published", **sort)
        assert api.content.find(b_size=1, **query).actual_result_count == 2
        found.append(searches[-1])
    transaction.abort()
    for search in found:
        read = _count_columns(dsn, search.statement, search.params)
        # Sorted on a date, the count of the untyped values, apart, tests
        # ``idx`` (by their partial index: ``test_a_sorted_windows_count_
        # needs_only_indexes``); the typed columns' count does not.
        read.discard("idx")
        assert {"portal_type", "review_state", NUMBER, "effectiveRange"} <= read
        for name in columns.COVERED:
            assert set(FULL[name]) >= read, (name, read)


def test_13_to_14_adds_the_other_covered_column(pg_layer):
    """From schema 12's covering indexes: each without the other covered
    column."""
    portal = _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    schema_12 = {
        name: [c for c in held if c != OTHER[name]] for name, held in FULL.items()
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        _covering_as(conn, schema_12, version=12)
    assert _covering(dsn) == schema_12
    transaction.begin()
    # Before the upgrade: the same rows.
    query = dict(portal_type="Document", review_state="private", sort_on="effective")
    assert len(api.content.find(**query)) == 2
    _upgraded(portal, dsn, "13")
    transaction.begin()
    assert len(api.content.find(**query)) == 2


def test_the_covering_indexes_follow_the_columns_ready(pg_layer):
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            assert columns.drop_column(conn, "effectiveRange", "5s")
            # PostgreSQL dropped them with the column; made again without it.
            assert _covering(dsn) == {
                name: [name, OTHER[name], "path", NUMBER, *DATES]
                for name in columns.COVERED
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
    _upgraded(portal, dsn, "9")
    transaction.begin()
    assert len(api.content.find(portal_type="Document")) == 2


def test_10_to_11_adds_the_sort_keys_and_their_untyped_indexes(pg_layer):
    """From schema 9's indexes: covering indexes without the dates, no
    partial indexes."""
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    schema_9 = {
        name: [name, "path", "allowedRolesAndUsers", "effectiveRange"]
        for name in columns.COVERED
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in columns.SORTED:
            conn.execute(f"DROP INDEX {columns.untyped_index_name(name)}")
        _covering_as(conn, schema_9, version=9)
    assert _covering(dsn) == schema_9
    assert _untyped(dsn) == {name: None for name in DATES}
    transaction.begin()
    _upgraded(portal, dsn, "10")
    assert _untyped(dsn) == {name: ["zoid"] for name in DATES}
    transaction.begin()
    assert len(api.content.find(portal_type="Document", sort_on="effective")) == 2
