"""Counts kept per group of rows (``columns.GROUPED``: the type, the
workflow state, the number of the security list): statement-level
triggers keep them in step with every write of the catalog's table, and a
search whose conditions name only those columns counts its matches from
them (``query.SearchSQL.group_count``).  The counts must always equal the
rows' (``GROUP BY``); the differential suites show that ``len()`` stays
ZCatalog's.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.connection import ddl_connection
from psycopg import sql
from tests.integration.test_typed_columns import _next_transaction
from tests.integration.test_typed_columns import _query
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from
from ZODB.utils import u64

import psycopg
import transaction

_GROUP = 'portal_type, review_state, "allowedRolesAndUsers:set"'


def _kept(dsn: str) -> list:
    """Each group's count: the sum of its rows (a pack adds rows of its own,
    which the next commit of the group merges)."""
    return sorted(
        _query(
            dsn,
            f"SELECT {_GROUP}, sum(n)::bigint FROM pgcatalog_counts"
            f" GROUP BY {_GROUP} HAVING sum(n) <> 0",
        ),
        key=repr,
    )


def _counted(dsn: str) -> list:
    return sorted(
        _query(
            dsn,
            f"SELECT {_GROUP}, count(*) FROM pgcatalog_objects GROUP BY {_GROUP}",
        ),
        key=repr,
    )


def _triggers(dsn: str) -> set[str]:
    rows = _query(
        dsn,
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 'pgcatalog_objects'::regclass"
        " AND starts_with(tgname, 'pgcatalog_counts')",
    )
    return {name for (name,) in rows}


def _in_step(dsn: str) -> None:
    assert _triggers(dsn) == {name for name, _ in columns.COUNTS_TRIGGERS.values()}
    assert _kept(dsn) == _counted(dsn)


def test_the_counts_follow_every_kind_of_write(pg_layer):
    portal = _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    _in_step(dsn)
    folder = api.content.create(container=portal, type="Folder", id="f")
    api.content.create(container=folder, type="News Item", id="n")
    api.content.create(container=folder, type="Document", id="d")
    transaction.commit()
    _in_step(dsn)
    api.content.transition(obj=folder["d"], transition="publish")
    transaction.commit()
    _in_step(dsn)
    # A sharing change: the lists' numbers, written straight (once_patch).
    folder.manage_setLocalRoles("sharer", ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    _in_step(dsn)
    # A rename (the subtree's rows relocated), a move, a deletion.
    api.content.rename(obj=folder, new_id="g")
    transaction.commit()
    _in_step(dsn)
    api.content.move(source=portal["g"]["n"], target=portal)
    transaction.commit()
    _in_step(dsn)
    api.content.delete(obj=portal["g"], check_linkintegrity=False)
    transaction.commit()
    _in_step(dsn)
    # A rebuild, and an abort: the counts are the transaction's.
    portal.portal_catalog.clearFindAndRebuild()
    transaction.commit()
    _in_step(dsn)
    api.content.create(container=portal, type="Document", id="gone")
    transaction.abort()
    _in_step(dsn)


def test_a_search_of_the_groups_columns_counts_from_them(pg_layer, searches):
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    # The Manager's search names the type and the security terms only.
    assert len(api.content.find(portal_type="Document")) == 4
    assert columns.COUNTS_TABLE in searches[-1].statement
    assert len(api.content.find(portal_type="Document", review_state="private")) == 2
    assert columns.COUNTS_TABLE in searches[-1].statement
    # Any other condition: counted from the rows.
    assert len(api.content.find(portal_type="Document", Subject="red")) == 4
    assert columns.COUNTS_TABLE not in searches[-1].statement
    depth = {"query": "/plone", "depth": 1}
    assert len(api.content.find(portal_type="Document", path=depth)) == 4
    assert columns.COUNTS_TABLE not in searches[-1].statement
    # The whole site, alone in its database: no test of the path at all.
    assert len(api.content.find(portal_type="Document", path="/plone")) == 4
    assert columns.COUNTS_TABLE in searches[-1].statement
    # Anonymous's: the effective range too, whose rows out of it its
    # B-trees find.
    logout()
    assert len(api.content.find(portal_type="Document")) == 2
    assert columns.COUNTS_TABLE in searches[-1].statement
    assert "LIMIT g.grouped" in searches[-1].statement
    transaction.abort()
    _in_step(dsn)


def test_the_counts_go_and_come_with_a_grouped_column(pg_layer, searches):
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    catalog = portal.portal_catalog
    try:
        catalog.delIndex("review_state")
        _next_transaction(portal)
        assert _triggers(dsn) == set()
        assert _kept(dsn) == []
        # Writes go on without them; searches count the rows.
        api.content.create(container=portal, type="Document", id="more")
        transaction.commit()
        assert len(api.content.find(portal_type="Document")) == 4
        assert columns.COUNTS_TABLE not in searches[-1].statement
        catalog.addIndex("review_state", "FieldIndex")
        _next_transaction(portal)
        catalog.reindexIndex("review_state", None)
        transaction.commit()
        _in_step(dsn)
        assert len(api.content.find(portal_type="Document")) == 4
        assert columns.COUNTS_TABLE in searches[-1].statement
    finally:
        # Tests share the database's DDL (each restores rows only).
        with ddl_connection(catalog) as conn:
            schema.create_index(conn, "review_state", "FieldIndex", "30s")


def test_20_to_21_keeps_the_counts_of_a_site_made_before(
    pg_layer, searches, no_group_counts
):
    """A site of profile 20: the table of counts came with the DDL of this
    code's first start, empty, without its triggers; its searches count
    the rows.  The step makes the triggers and the counts."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    no_group_counts(portal)
    assert len(api.content.find(portal_type="Document")) == 3
    assert columns.COUNTS_TABLE not in searches[-1].statement
    transaction.abort()
    _upgrade_from(portal, "20")
    _in_step(dsn)
    assert len(api.content.find(portal_type="Document")) == 3
    assert columns.COUNTS_TABLE in searches[-1].statement


def test_21_to_22_makes_the_indexes_anonymous_counts_use(pg_layer, searches):
    """A site of profile 21: the effective range's column without its
    B-trees (made before the kind had them); Anonymous's searches count
    their rows, also where one of the two is there.  The step makes them,
    and the searches count from the groups, less the rows the indexes
    find out of the range."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    indexes = columns.column_index_names("effectiveRange", "range")
    assert len(indexes) == 2
    try:
        for index in indexes:
            with psycopg.connect(dsn) as conn:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
            _next_transaction(portal)
            logout()
            assert len(api.content.find(portal_type="Document")) == 1
            assert columns.COUNTS_TABLE not in searches[-1].statement
            transaction.abort()
            login(portal, TEST_USER_NAME)
        _upgrade_from(portal, "21")
        found = _query(
            dsn, "SELECT to_regclass(n)::text FROM unnest(%s::text[]) AS n", (indexes,)
        )
        assert found == [(index,) for index in indexes]
        logout()
        assert len(api.content.find(portal_type="Document")) == 1
        assert columns.COUNTS_TABLE in searches[-1].statement
    finally:
        # Tests share the database's DDL (each restores rows only).
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.index_columns(conn, "30s")


def test_a_sorted_window_reads_its_matches_where_the_rows_are_not_known(
    pg_layer, searches
):
    """A window sorted on a date counted apart (``SearchSQL.
    _from_the_edge``) walks the date's index from the matches' edge where
    they are many among the table's rows, as the table's statistics count
    them; before the table's first ``ANALYZE`` (``reltuples`` -1) its
    matches are read and sorted, whatever their count, as a window in zoid
    order's are (the test took every count for many there)."""
    portal = _site(pg_layer, count=24)
    dsn = pg_layer["pgcatalog_dsn"]
    expected = _query(
        dsn,
        "SELECT path FROM pgcatalog_objects WHERE portal_type = 'Document'"
        " ORDER BY modified, zoid LIMIT 6",
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE pgcatalog_objects")
    try:
        # Another window each time: not a result the snapshot holds already.
        for start, rows, branch in ((0, None, "walk"), (3, -1, "few")):
            if rows is not None:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(
                        "UPDATE pg_class SET reltuples = %s"
                        " WHERE oid = 'pgcatalog_objects'::regclass",
                        (rows,),
                    )
            _next_transaction(portal)
            del searches[:]
            brains = api.content.find(
                portal_type="Document", sort_on="modified", b_start=start, b_size=3
            )
            window = [path for (path,) in expected[start : start + 3]]
            assert [brain.getPath() for brain in brains] == window
            assert brains.actual_result_count == 24
            [search] = searches
            assert "AS edge" in search.statement
            assert _branch_run(dsn, search.statement, search.params) == branch
            transaction.abort()
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE pgcatalog_objects")


#: The counts' SQL indexes (``columns.COUNTS_INDEXES_DDL``).
_COUNTS_INDEXES = ["pgcatalog_counts_type", "pgcatalog_counts_state"]


def _counts_scans(plan: dict) -> list[str]:
    """How each scan of the counts in ``plan`` (EXPLAIN's JSON) reads them:
    the index's name, or "Seq Scan"."""
    found = []
    if plan.get("Index Name") in _COUNTS_INDEXES:
        found.append(plan["Index Name"])
    elif plan.get("Relation Name") == columns.COUNTS_TABLE:
        # Not the insert or delete, nor a bitmap's heap (its index says).
        if plan["Node Type"] in ("Seq Scan", "Tid Scan", "Tid Range Scan"):
            found.append(plan["Node Type"])
    for child in plan.get("Plans", []):
        found += _counts_scans(child)
    return found


def test_the_counts_are_read_and_merged_by_their_indexes(pg_layer, searches):
    """Among many groups (as on a site of 100,000 rows, 2,389 groups), a
    type's count and a state's read their groups through the counts'
    indexes, and a commit's merge finds its groups' rows by the type's."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    logout()
    api.content.find(review_state="published")
    transaction.abort()
    login(portal, TEST_USER_NAME)
    api.content.find(portal_type="Document")
    transaction.abort()
    state_count, type_count = (
        s for s in searches if columns.COUNTS_TABLE in s.statement
    )
    with psycopg.connect(dsn) as conn:
        conn.execute(
            f"INSERT INTO pgcatalog_counts ({_GROUP}, n) SELECT 'type-' || g % 40,"
            " 'state-' || g % 7, g, 1 FROM generate_series(1, 3000) AS g"
        )
        conn.execute("ANALYZE pgcatalog_counts")
        for search in (type_count, state_count):
            plan = conn.execute(
                "EXPLAIN (FORMAT JSON) " + search.statement, search.params
            ).fetchone()[0]
            assert _counts_scans(plan[0]["Plan"]) == [
                _COUNTS_INDEXES[search is state_count]
            ], search.statement
        # A commit's change of a state, as the trigger sees it (its
        # transition tables), merged.
        for table in ("old_rows", "new_rows"):
            conn.execute(
                f"CREATE TEMP TABLE {table} AS SELECT * FROM pgcatalog_objects"
                " WHERE portal_type = 'Document' LIMIT 1"
            )
        conn.execute("UPDATE new_rows SET review_state = 'published'")
        conn.execute("ANALYZE old_rows, new_rows")
        merge = columns._MERGE.format(rows=columns._CHANGES["UPDATE"])
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + merge).fetchone()[0]
        assert set(_counts_scans(plan[0]["Plan"])) == {"pgcatalog_counts_type"}, plan
        conn.rollback()
    # The estimate of 3,000 groups outlives the rollback: the table's own.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE pgcatalog_counts")


def test_22_to_23_indexes_the_counts(pg_layer, searches):
    """A site of profile 22: the counts without their indexes, merged by
    the trigger function of then.  The step makes the indexes and the
    function anew; the counts stay the rows'."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    merged_by_type = columns._SAME_GROUP.split(" AND ", 1)[1]
    function = (
        "SELECT prosrc FROM pg_proc WHERE proname = %s",
        (columns.COUNTS_FUNCTION,),
    )
    try:
        with psycopg.connect(dsn) as conn:
            for index in _COUNTS_INDEXES:
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index)))
            conn.execute(
                columns.COUNTS_FUNCTION_DDL.replace(" AND " + merged_by_type, "")
            )
        [(source,)] = _query(dsn, *function)
        assert merged_by_type not in source
        _upgrade_from(portal, "22")
        found = _query(
            dsn,
            "SELECT to_regclass(n)::text FROM unnest(%s::text[]) AS n",
            (_COUNTS_INDEXES,),
        )
        assert found == [(index,) for index in _COUNTS_INDEXES]
        [(source,)] = _query(dsn, *function)
        assert merged_by_type in source
        api.content.transition(obj=portal["page-0"], transition="publish")
        transaction.commit()
        _in_step(dsn)
        found = api.content.find(portal_type="Document", review_state="published")
        assert len(found) == 2
        assert columns.COUNTS_TABLE in searches[-1].statement
    finally:
        # Tests share the database's DDL (each restores rows only).
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.rebuild_trigger(conn)


def test_a_group_without_a_type_is_merged_into_one_row(pg_layer):
    """Rows without a ``portal_type`` (NULL in their group): a commit's
    merge finds the group's rows by ``c.portal_type IS NULL``
    (``columns._SAME_GROUP``), also rows that statements without the merge
    added (a pack's), and leaves one row of the group, as for a group with
    a type (helper-44's review: the sums alone stayed right without it)."""
    portal = _site(pg_layer, count=5)
    dsn = pg_layer["pgcatalog_dsn"]
    # Private Documents: one group.
    zoids = [u64(portal[f"page-{number}"]._p_oid) for number in (0, 2, 4)]
    untyped = "UPDATE pgcatalog_objects SET idx = idx - 'portal_type' WHERE zoid = %s"
    without_a_type = (
        "SELECT review_state, n FROM pgcatalog_counts WHERE portal_type IS NULL"
    )
    with psycopg.connect(dsn) as conn:
        # Two statements without the merge (a pack, a rebuild's batches):
        # rows of their own.
        for zoid in zoids[:2]:
            conn.execute(untyped, (zoid,))
            conn.commit()
        assert _query(dsn, without_a_type) == [("private", 1), ("private", 1)]
        # A commit's statement (under the commit lock): merges them.
        conn.execute("SELECT pg_advisory_xact_lock(0)")
        conn.execute(columns.MERGE_COUNTS)
        conn.execute(untyped, (zoids[2],))
        conn.commit()
    assert _kept(dsn) == _counted(dsn)
    assert _query(dsn, without_a_type) == [("private", 3)]


def test_the_schema_put_back_makes_counts_a_failed_step_left_out(
    pg_layer, searches, no_group_counts
):
    """Every grouped column ready, but the triggers missing (the step that
    makes them after the last one was marked ready failed, and a column
    ready is not made again): putting back what is missing of the schema
    (an install, an upgrade step) makes them, and the counts."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    no_group_counts(portal)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert columns.counts_behind(conn)
        assert "counts per group" in schema.create_schema(conn, "30s")
        assert not columns.counts_behind(conn)
        assert "counts per group" not in schema.create_schema(conn, "30s")
    _in_step(dsn)
    portal._p_jar.sync()
    assert len(api.content.find(portal_type="Document")) == 3
    assert columns.COUNTS_TABLE in searches[-1].statement


def test_a_pack_of_an_orphan_row_holds_up_no_commit(pg_layer):
    """zodb-pgjsonb's packer deletes unreachable states in one long
    transaction without the commit lock; the foreign key takes their
    catalog rows along, also a row the catalog was never told to remove
    (``test_orphans``).  Had the trigger merged that change into the
    group's count row, it would hold that row until the pack commits, and
    every commit of the group (a private Document created, published or
    deleted) would wait for the pack holding the commit lock, or deadlock
    with it (found by helper-41).  A cascade only adds rows of its own,
    which the group's next commit merges."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    orphan, other = (u64(portal[name]._p_oid) for name in ("page-0", "page-2"))
    portal._delObject("page-0", suppress_events=True)  # the catalog is not told
    transaction.commit()
    with psycopg.connect(dsn) as pack, psycopg.connect(dsn) as commit:
        # What the packer runs, its transaction still open.
        pack.execute("DELETE FROM object_state WHERE zoid = %s", (orphan,))
        # A commit's uncatalog of another private Document, as the
        # processor writes it: it does not wait for the pack.
        commit.execute("SET lock_timeout = '2s'")
        commit.execute("SELECT pg_advisory_xact_lock(0)")
        commit.execute("DELETE FROM pgcatalog_objects WHERE zoid = %s", (other,))
        commit.commit()
        pack.commit()
    _in_step(dsn)
    # The group's next commit merges the pack's row into its own.
    api.content.create(container=portal, type="Document", id="next")
    transaction.commit()
    _in_step(dsn)
    rows = _query(
        dsn,
        "SELECT count(*) FROM pgcatalog_counts"
        " WHERE portal_type = 'Document' AND review_state = 'private'",
    )
    assert rows == [(1,)]


def _branch_run(dsn: str, statement: str, params) -> str:
    """Which branch of a window read by its count ran (``SearchSQL.
    _by_the_count``): "walk" (the primary key, its conditions one
    ``COALESCE`` test) or "few" (the matches read and sorted)."""
    plan = _query(dsn, "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)[0][0]

    def scans(node):
        if node.get("Relation Name") == "pgcatalog_objects":
            yield node
        for child in node.get("Plans", []):
            # Not the count, nor the first rows' metadata read by zoid.
            if child.get("Parent Relationship") not in ("InitPlan", "SubPlan"):
                yield from scans(child)

    ran = [n for n in scans(plan[0]["Plan"]) if n.get("Actual Loops", 0) > 0]
    walked = [n for n in ran if "COALESCE" in str(n.get("Filter", ""))]
    assert len(ran) == 1, ran
    return "walk" if walked else "few"


def test_a_window_in_zoid_order_is_read_as_its_count_says(pg_layer, searches):
    """A window of the groups' columns alone, counted from their counts,
    keeps one plan for every value (``plan_forced``), and its count
    chooses the branch: a type of many rows walks the primary key, one of
    few is read by its index and sorted.  The rows are the window's of
    the matches in zoid order either way."""
    portal = _site(pg_layer, count=24)
    for number in range(4):
        api.content.create(container=portal, type="Folder", id=f"folder-{number}")
    transaction.commit()
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        # ``reltuples``: the branch compares the count with the table's rows.
        conn.execute("ANALYZE pgcatalog_objects")
    _next_transaction(portal)
    expected = {}
    for portal_type, branch in (("Document", "walk"), ("Folder", "few")):
        zoids = _query(
            dsn,
            "SELECT path FROM pgcatalog_objects WHERE portal_type = %s ORDER BY zoid",
            (portal_type,),
        )
        expected[portal_type] = [path for (path,) in zoids]
        del searches[:]
        brains = api.content.find(portal_type=portal_type, b_start=2, b_size=2)
        assert [brain.getPath() for brain in brains] == expected[portal_type][2:4]
        assert brains.actual_result_count == len(zoids)
        [search] = searches
        assert search.kept == "forced"
        assert "AND NOT (SELECT many FROM counted)" in search.statement
        assert _branch_run(dsn, search.statement, search.params) == branch
    # Both kinds hold rows in the window.
    assert all(len(paths) > 3 for paths in expected.values())
    # Rows not known (-1 before the table's first ``ANALYZE``): the
    # matches are read, whatever their count, not the table walked.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE pg_class SET reltuples = -1"
            " WHERE oid = 'pgcatalog_objects'::regclass"
        )
    try:
        # Another window: not the result the transaction holds already.
        _next_transaction(portal)
        del searches[:]
        brains = api.content.find(portal_type="Document", b_start=1, b_size=2)
        assert [brain.getPath() for brain in brains] == expected["Document"][1:3]
        [search] = searches
        assert _branch_run(dsn, search.statement, search.params) == "few"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE pgcatalog_objects")
