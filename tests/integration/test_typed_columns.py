"""Typed columns on a real site (``store.columns``): made for the hot
indexes at install, derived from ``idx`` by the table's trigger, filled in
batches when added to a catalog with rows, used by searches once ready,
dropped with their index, and made for a schema-5 site by the upgrade
step 5 -> 6.  The differential suites prove the results; these tests prove
the columns.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import snapshots
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import schema
from plone_pgcatalog.testing import PGCATALOG_PROFILE
from plone_pgcatalog.upgrades import PROFILE_VERSION
from psycopg.rows import tuple_row

import psycopg
import pytest
import transaction

#: Plone's hot indexes and the kind of column each one gets.
HOT = {
    "portal_type": "text",
    "review_state": "text",
    "UID": "text",
    "sortable_title": "text",
    "Subject": "keywords",
    "allowedRolesAndUsers": "keywords",
    "object_provides": "keywords",
    "is_folderish": "boolean",
    "created": "integer",
    "effective": "integer",
    "modified": "integer",
    "getObjPositionInParent": "integer",
    "effectiveRange": "range",
}


def _site(pg_layer, count=3):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(count):
        page = api.content.create(
            container=portal,
            type="Document",
            id=f"page-{number}",
            title=f"Page {number}",
            subject=["red", f"tag-{number}"],
        )
        if number % 2:
            api.content.transition(obj=page, transition="publish")
    transaction.commit()
    return portal


def _query(dsn: str, statement: str, params=()):
    with psycopg.connect(dsn) as conn:
        return conn.execute(statement, params).fetchall()


def _registered(dsn: str) -> dict:
    rows = _query(dsn, "SELECT name, kind, ready FROM pgcatalog_columns")
    return {name: (kind, ready) for name, kind, ready in rows}


def _sql_indexes(dsn: str) -> set[str]:
    rows = _query(
        dsn, "SELECT indexname FROM pg_indexes WHERE tablename = 'pgcatalog_objects'"
    )
    return {name for (name,) in rows}


def _next_transaction(portal) -> None:
    """Begin a transaction: zodb-pgjsonb runs the deferred DDL first."""
    transaction.commit()
    portal._p_jar.sync()


def test_the_hot_indexes_are_ready_typed_columns_with_sql_indexes(pg_layer):
    dsn = pg_layer["pgcatalog_dsn"]
    registered = _registered(dsn)
    for name, kind in HOT.items():
        assert registered.get(name) == (kind, True), name
    indexes = _sql_indexes(dsn)
    for name, kind in HOT.items():
        if columns.KINDS[kind].method is not None:
            assert columns.sql_index_name(name) in indexes, name
        # The expression index on ``idx`` it replaces is gone.
        assert schema.sql_index_name(name) not in indexes, name
    # Text indexes other than SearchableText keep theirs (no column).
    assert schema.sql_index_name("Title") in indexes


def test_every_column_holds_what_idx_holds(pg_layer):
    """Each column is what the row's value derives; a keywords column's
    lists are stored once: in the column, not in ``idx``
    (``columns.stored_once``)."""
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    row = psycopg.sql.SQL("pgcatalog_objects")
    for name, kind in HOT.items():
        derived = columns.derive(kind, columns.value_of(row, name, HOT))
        statement = psycopg.sql.SQL(
            "SELECT count(*), count({column}) FROM pgcatalog_objects"
            " WHERE {column} IS DISTINCT FROM {derived}"
        ).format(column=psycopg.sql.Identifier(name), derived=derived)
        in_idx = psycopg.sql.SQL(
            "SELECT count(*) FROM pgcatalog_objects WHERE idx ? {}"
        ).format(psycopg.sql.Literal(name))
        with psycopg.connect(dsn) as conn:
            different, _ = conn.execute(statement).fetchone()
            (kept,) = conn.execute(in_idx).fetchone()
        assert different == 0, name
        if kind == "keywords":
            assert kept == 0, name
    with_values = _query(
        dsn,
        "SELECT count(*) FROM pgcatalog_objects WHERE object_provides IS NOT NULL",
    )
    assert with_values[0][0] >= 4
    rows = _query(
        dsn,
        'SELECT "portal_type", "Subject", "review_state" FROM pgcatalog_objects'
        " WHERE path = '/plone/page-1'",
    )
    assert rows == [("Document", ["red", "tag-1"], "published")]


def test_searches_use_the_columns_and_find_what_idx_finds(
    pg_layer, searches, monkeypatch
):
    # However many lists earlier tests left: the array (``test_numbered_lists``).
    monkeypatch.setattr(columns, "MANY_LISTS", float("inf"))
    portal = _site(pg_layer)
    found = api.content.find(
        portal_type="Document", Subject="red", sort_on="sortable_title"
    )
    assert [brain.getId for brain in found] == ["page-0", "page-1", "page-2"]
    assert '"portal_type" = ANY(' in searches[-1].statement
    assert '"Subject" && ' in searches[-1].statement
    # The security terms: by the numbers of their lists (``test_numbered_lists``).
    assert '"allowedRolesAndUsers:set" = ANY(' in searches[-1].statement
    # (the matches' conditions, not those of the first rows' metadata)
    statement = searches[-1].statement
    conditions = statement.split(" FROM pgcatalog_objects WHERE ", 1)[1]
    conditions = conditions.split(" OFFSET 0")[0]
    # ``idx`` only for rows without a string title (none).
    assert conditions.endswith(
        "(\"sortable_title\" IS NOT NULL OR idx ? 'sortable_title')"
    )
    assert "idx ->" not in conditions
    # Not ready (as while it is being filled): the same search reads idx,
    # the value as the column would hold it (``columns.typed_value``).
    _query_commit(
        pg_layer["pgcatalog_dsn"],
        "UPDATE pgcatalog_columns SET ready = false WHERE name = 'portal_type'",
    )
    snapshots.results.clear()  # the same committed ZODB state
    transaction.begin()
    found = api.content.find(
        portal_type="Document", Subject="red", sort_on="sortable_title"
    )
    assert [brain.getId for brain in found] == ["page-0", "page-1", "page-2"]
    held = columns.held_value("portal_type", "text").as_string(None)
    assert f"{held} = ANY(" in searches[-1].statement
    assert '"portal_type" = ANY(' not in searches[-1].statement
    del portal


def _query_commit(dsn: str, statement: str, params=()) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(statement, params)


def test_an_added_index_gets_its_column_filled_from_idx_in_batches(
    pg_layer, monkeypatch
):
    portal = _site(pg_layer, count=5)
    dsn = pg_layer["pgcatalog_dsn"]
    # Values stored before the column exists (as a catalog that had the
    # index before this version, or another site's).
    _query_commit(
        dsn,
        "UPDATE pgcatalog_objects SET idx = idx || jsonb_build_object("
        "'pgc_size', CASE WHEN path LIKE '%%-1' OR path LIKE '%%-3' THEN 'big'"
        " WHEN path LIKE '%%-2' THEN '7' END) WHERE path LIKE '/plone/page-%%'",
    )
    monkeypatch.setattr(columns, "FILL_BATCH", 2)
    batches = []
    fill = columns._fill

    def counting(conn, name, kind, lock_timeout):
        filled = fill(conn, name, kind, lock_timeout)
        batches.append(filled)
        return filled

    monkeypatch.setattr(columns, "_fill", counting)
    portal.portal_catalog.addIndex("pgc_size", "FieldIndex")
    _next_transaction(portal)
    assert _registered(dsn)["pgc_size"] == ("text", True)
    assert batches and batches[0] > 2  # more than one batch
    assert columns.sql_index_name("pgc_size") in _sql_indexes(dsn)
    rows = _query(
        dsn,
        "SELECT path, pgc_size FROM pgcatalog_objects"
        " WHERE pgc_size IS NOT NULL ORDER BY path",
    )
    assert rows == [
        ("/plone/page-1", "big"),
        ("/plone/page-2", "7"),
        ("/plone/page-3", "big"),
    ]
    found = api.content.find(pgc_size="big")
    assert sorted(brain.getId for brain in found) == ["page-1", "page-3"]
    # Written from now on: the trigger sets it.
    _query_commit(
        dsn,
        'UPDATE pgcatalog_objects SET idx = idx || \'{"pgc_size": "big"}\''
        " WHERE path = '/plone/page-4'",
    )
    snapshots.results.clear()  # the same committed ZODB state
    transaction.begin()
    found = api.content.find(pgc_size="big")
    assert sorted(brain.getId for brain in found) == ["page-1", "page-3", "page-4"]


def _columns_of(dsn: str) -> set[str]:
    return {
        name
        for (name,) in _query(
            dsn,
            "SELECT attname FROM pg_attribute WHERE attrelid = 'pgcatalog_objects'"
            "::regclass AND attnum > 0 AND NOT attisdropped",
        )
    }


def test_a_deleted_index_takes_its_column_away(pg_layer):
    portal = _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    catalog = portal.portal_catalog
    catalog.addIndex("pgc_flag", "BooleanIndex")
    _next_transaction(portal)
    assert _registered(dsn)["pgc_flag"] == ("boolean", True)
    catalog.delIndex("pgc_flag")
    _next_transaction(portal)
    assert "pgc_flag" not in _registered(dsn)
    assert "pgc_flag" not in _columns_of(dsn)
    assert columns.sql_index_name("pgc_flag") not in _sql_indexes(dsn)
    # The trigger no longer sets it: writes go on.
    api.content.create(container=portal, type="Document", id="after")
    transaction.commit()
    assert [b.getId for b in api.content.find(id="after")] == ["after"]


class _FailingVote:
    """A resource of the transaction whose vote fails, as a conflict found
    at the vote makes a commit fail after its start."""

    transaction_manager = transaction.manager

    def sortKey(self):
        return "~ fails last"

    def abort(self, txn):
        pass

    tpc_begin = commit = tpc_finish = tpc_abort = abort

    def tpc_vote(self, txn):
        raise RuntimeError("the vote fails")


def test_an_index_change_rolled_back_changes_no_column(pg_layer):
    portal = _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    catalog = portal.portal_catalog
    catalog.addIndex("pgc_kept", "FieldIndex")
    _next_transaction(portal)
    assert _registered(dsn)["pgc_kept"] == ("text", True)
    try:
        catalog.delIndex("pgc_kept")
        catalog.addIndex("pgc_never", "FieldIndex")
        transaction.abort()
        _next_transaction(portal)
        assert _registered(dsn)["pgc_kept"] == ("text", True)
        assert "pgc_kept" in _columns_of(dsn)
        assert "pgc_never" not in _registered(dsn)
        assert "pgc_never" not in _columns_of(dsn)
        for kind in ("c", "h"):  # its column's, or the one of ``held_value``
            assert schema.sql_index_name("pgc_never", kind) not in _sql_indexes(dsn)
    finally:
        transaction.abort()
        catalog.delIndex("pgc_kept")
        _next_transaction(portal)
    assert "pgc_kept" not in _columns_of(dsn)


def _attnum(dsn: str, name: str) -> int:
    [[number]] = _query(
        dsn,
        "SELECT attnum FROM pg_attribute WHERE attrelid = 'pgcatalog_objects'"
        "::regclass AND attname = %s AND NOT attisdropped",
        (name,),
    )
    return number


def test_an_index_change_undone_within_its_transaction_changes_no_column(pg_layer):
    portal = _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    catalog = portal.portal_catalog
    catalog.addIndex("pgc_same", "FieldIndex")
    _next_transaction(portal)
    made = _attnum(dsn, "pgc_same")
    try:
        # Added in a savepoint rolled back.
        savepoint = transaction.savepoint()
        catalog.addIndex("pgc_rolled", "FieldIndex")
        savepoint.rollback()
        # Deleted and added again as it was: the column stays (a drop and
        # a new column would have another number).
        catalog.delIndex("pgc_same")
        catalog.addIndex("pgc_same", "FieldIndex")
        _next_transaction(portal)
        assert "pgc_rolled" not in catalog.getIndexDefinitions()
        assert "pgc_rolled" not in _columns_of(dsn)
        assert _attnum(dsn, "pgc_same") == made
        assert _registered(dsn)["pgc_same"] == ("text", True)
    finally:
        transaction.abort()
        catalog.delIndex("pgc_same")
        _next_transaction(portal)
    assert "pgc_same" not in _columns_of(dsn)


def _site_with_index(pg_layer, name: str, meta_type: str, count: int):
    """``(portal, dsn, catalog)`` of a site of ``count`` pages whose catalog
    has the index ``name`` of ``meta_type`` too, its column made."""
    portal = _site(pg_layer, count=count)
    catalog = portal.portal_catalog
    catalog.addIndex(name, meta_type)
    _next_transaction(portal)
    return portal, pg_layer["pgcatalog_dsn"], catalog


def test_an_index_change_whose_commit_fails_late_is_undone(pg_layer):
    """The change ran at the commit's start; the vote failed after it."""
    portal, dsn, catalog = _site_with_index(pg_layer, "pgc_back", "FieldIndex", 2)
    try:
        # Deleted, then added again as another type, in one transaction.
        catalog.delIndex("pgc_back")
        catalog.addIndex("pgc_back", "KeywordIndex")
        catalog.addIndex("pgc_gone", "BooleanIndex")
        transaction.get().join(_FailingVote())
        with pytest.raises(RuntimeError, match="the vote fails"):
            transaction.commit()
        transaction.abort()
        _next_transaction(portal)
        assert catalog.getIndexDefinitions()["pgc_back"].meta_type == "FieldIndex"
        assert "pgc_gone" not in catalog.getIndexDefinitions()
        # As before the transaction: the FieldIndex's column, made again.
        assert _registered(dsn)["pgc_back"] == ("text", True)
        assert "pgc_gone" not in _registered(dsn)
        assert "pgc_gone" not in _columns_of(dsn)
        page = portal["page-1"]
        page.pgc_back = "kept"
        page.reindexObject()
        transaction.commit()
        assert [b.getId for b in api.content.find(pgc_back="kept")] == ["page-1"]
    finally:
        transaction.abort()
        catalog.delIndex("pgc_back")
        _next_transaction(portal)
    assert "pgc_back" not in _columns_of(dsn)


def test_a_name_taken_by_a_column_of_another_kind_keeps_its_index_on_idx(pg_layer):
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        made = schema.create_index(conn, "pgc_shared", "FieldIndex", "5s")
        assert made == "column"
        # Another site's index of that name is a KeywordIndex.
        made = schema.create_index(conn, "pgc_shared", "KeywordIndex", "5s")
        assert made == "indexes"
    assert _registered(dsn)["pgc_shared"] == ("text", True)
    assert schema.sql_index_name("pgc_shared") in _sql_indexes(dsn)


def test_5_to_6_makes_the_columns_of_a_schema_5_site(pg_layer, monkeypatch, searches):
    portal = _site(pg_layer)
    dsn = pg_layer["pgcatalog_dsn"]
    definitions = portal.portal_catalog.getIndexDefinitions()
    # Schema 5 as the last version left it: no typed columns, expression
    # indexes on ``idx``.
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in list(_registered(dsn)):
            columns.drop_column(conn, name, "5s")
        for name, index in definitions.items():
            statement = schema.index_ddl(name, index.meta_type)
            if statement is not None:
                conn.execute(statement)
        conn.execute(
            "UPDATE pgcatalog_state SET value = 5 WHERE key = 'schema_version'"
        )
    assert _registered(dsn) == {}
    transaction.begin()
    assert len(api.content.find(portal_type="Document")) == 3
    assert "(idx -> 'portal_type')" in searches[-1].statement

    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "5")
    setup.upgradeProfile(PGCATALOG_PROFILE)
    _next_transaction(portal)  # the step's change runs

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (str(PROFILE_VERSION),)
    registered = _registered(dsn)
    for name, kind in HOT.items():
        assert registered.get(name) == (kind, True), name
    indexes = _sql_indexes(dsn)
    for kind in ("i", "t", "h"):  # expression indexes of schema 5, or later
        assert schema.sql_index_name("portal_type", kind) not in indexes
    assert columns.sql_index_name("portal_type") in indexes
    assert _query(
        dsn, "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
    ) == [(schema.SCHEMA_VERSION,)]
    transaction.begin()
    assert len(api.content.find(portal_type="Document")) == 3
    assert '"portal_type" = ANY(' in searches[-1].statement


def test_catalog_reads_plan_for_cached_pages(pg_layer):
    """The request's transaction plans with ``random_page_cost`` 1.1 once
    the catalog has read (``connection.RANDOM_PAGE_COST``): at 4, the
    server's default, the planner built the security term's bitmap of
    every row into searches for a few thousand."""

    _site(pg_layer, count=1)
    transaction.begin()
    catalog = pg_layer["portal"].portal_catalog
    assert len(catalog.searchResults(portal_type="Document")) == 1
    conn = connection._pg_connection(connection._storage_instance(catalog))

    def page_cost():
        with conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute("SHOW random_page_cost").fetchone()[0]

    assert page_cost() == "1.1"
    # A failed catalog read goes back to the savepoint: the cost stays.
    with pytest.raises(psycopg.errors.UndefinedColumn):
        with connection.reading(catalog) as reading:
            reading.execute("SELECT no_such_column FROM pgcatalog_objects")
    assert page_cost() == "1.1"
    assert len(catalog.searchResults(portal_type="Document")) == 1


def test_catalog_reads_plan_without_jit_and_parallel_workers(pg_layer):
    """Estimates of set-returning functions (facet counts) and of tables
    whose statistics lag a load made PostgreSQL compile catalog reads with
    JIT and start parallel workers, for queries of milliseconds
    (``connection.PLAN_FOR_REQUESTS``)."""
    _site(pg_layer, count=1)
    transaction.begin()
    catalog = pg_layer["portal"].portal_catalog
    assert len(catalog.searchResults(portal_type="Document")) == 1
    conn = connection._pg_connection(connection._storage_instance(catalog))
    with conn.cursor(row_factory=tuple_row) as cursor:
        assert cursor.execute("SHOW jit").fetchone()[0] == "off"
        shown = cursor.execute("SHOW max_parallel_workers_per_gather").fetchone()
        assert shown[0] == "0"


def test_planning_for_requests_can_be_left_to_the_server(monkeypatch):
    assert connection._plan_for_requests() is True
    monkeypatch.setenv("PGCATALOG_PLANNING", "server")
    assert connection._plan_for_requests() is False
    monkeypatch.setenv("PGCATALOG_PLANNING", "fast please")
    assert connection._plan_for_requests() is True


def test_the_page_cost_setting_is_read_from_the_environment(monkeypatch):

    monkeypatch.setenv("PGCATALOG_RANDOM_PAGE_COST", "2")
    assert connection._random_page_cost() == "2"
    monkeypatch.setenv("PGCATALOG_RANDOM_PAGE_COST", "server")
    assert connection._random_page_cost() is None
    monkeypatch.setenv("PGCATALOG_RANDOM_PAGE_COST", "-1; DROP TABLE x")
    assert connection._random_page_cost() is None


def test_the_catalogs_size_comes_with_the_ready_columns(pg_layer):
    """``columns.READY`` also gives the table's estimated rows, which the
    shape of a sorted window follows (``query.COUNT_APART_ROWS``)."""
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE pgcatalog_objects")
        [[estimate]] = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = 'pgcatalog_objects'::regclass"
        ).fetchall()
    assert estimate >= 3
    transaction.begin()
    assert len(api.content.find(portal_type="Document")) == 3
    assert connection.catalog_rows(portal) == estimate
    assert connection.ready_columns(portal) == {
        name: kind for name, kind, *_ in _query(dsn, columns.READY)
    }
    # And the numbered lists' (``columns.MANY_LISTS``).
    [[lists]] = _query(
        dsn,
        "SELECT reltuples FROM pg_class"
        " WHERE oid = 'pgcatalog_keyword_sets'::regclass",
    )
    assert connection.numbered_lists(portal) == lists


def test_a_column_that_waits_for_readers_leaves_the_index_served(pg_layer):
    """Adding a column needs every reader of the table gone (an exclusive
    lock); while one holds it, the expression indexes serve the index and
    the change fails to be tried again, having changed nothing else."""
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn) as reader:
        reader.execute("SELECT count(*) FROM pgcatalog_objects").fetchone()
        with psycopg.connect(dsn, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.LockNotAvailable):
                schema.create_index(conn, "pgc_waiting", "FieldIndex", "5s")
        reader.rollback()
    assert "pgc_waiting" not in _registered(dsn)
    indexes = _sql_indexes(dsn)
    # The B-tree of the value as the column would hold it (``held_value``).
    assert schema.sql_index_name("pgc_waiting", "h") in indexes
    # The next try, without readers, makes the column, and the expression
    # index goes.
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert schema.create_index(conn, "pgc_waiting", "FieldIndex", "5s") == "column"
    assert _registered(dsn)["pgc_waiting"] == ("text", True)
    indexes = _sql_indexes(dsn)
    assert schema.sql_index_name("pgc_waiting", "h") not in indexes
    assert columns.sql_index_name("pgc_waiting") in indexes


def test_the_first_search_of_a_transaction_is_one_round_trip(
    pg_layer, searches, preludes, monkeypatch
):
    """The first catalog read of a transaction sets its savepoint and reads
    the ready columns (``connection.reading``); a search that is that read
    goes in the same round trip, translated with the columns the last
    snapshot had, and again when they were not those, or when it failed."""
    portal = _site(pg_layer)
    dsn = pg_layer["pgcatalog_dsn"]
    portal.portal_catalog.addIndex("pgc_guess", "FieldIndex")
    _next_transaction(portal)
    _query_commit(
        dsn,
        'UPDATE pgcatalog_objects SET idx = idx || \'{"pgc_guess": "big"}\''
        " WHERE path = '/plone/page-1'",
    )
    # A transaction that has read the column ready: the next one's guess.
    assert len(api.content.find(portal_type="Document")) == 3
    transaction.commit()
    preludes.clear()
    snapshots.results.clear()
    transaction.begin()
    searches.clear()
    assert [b.getId for b in api.content.find(pgc_guess="big")] == ["page-1"]
    assert preludes == []
    assert len(searches) == 1
    assert '"pgc_guess" = ANY(' in searches[-1].statement
    # Read in the same round trip: later reads set no savepoint of their own.
    assert len(api.content.find(portal_type="Document")) == 3
    assert preludes == []
    assert connection.ready_columns(portal)["pgc_guess"] == "text"

    # Not ready any more: the guess is wrong, the search runs again on idx
    # (the value as the column would hold it: ``columns.held_value``).
    held = columns.held_value("pgc_guess", "text").as_string(None) + " = ANY("
    transaction.commit()
    _query_commit(
        dsn, "UPDATE pgcatalog_columns SET ready = false WHERE name = 'pgc_guess'"
    )
    snapshots.results.clear()
    transaction.begin()
    searches.clear()
    assert [b.getId for b in api.content.find(pgc_guess="big")] == ["page-1"]
    assert ['"pgc_guess" = ANY(' in s.statement for s in searches] == [True, False]
    assert held in searches[-1].statement
    assert preludes == []
    assert "pgc_guess" not in connection.ready_columns(portal)

    # Guessed ready, gone since (dropped by hand, the index kept): the
    # search fails, the transaction goes back to its savepoint, and the
    # search runs on idx.
    transaction.commit()
    _query_commit(
        dsn, "UPDATE pgcatalog_columns SET ready = true WHERE name = 'pgc_guess'"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        columns.drop_column(conn, "pgc_guess", "5s")
    portal._p_jar._storage._main._pgcatalog_columns_seen = {
        **connection.likely_columns(portal),
        "pgc_guess": "text",
    }
    snapshots.results.clear()
    transaction.begin()
    searches.clear()
    assert [b.getId for b in api.content.find(pgc_guess="big")] == ["page-1"]
    assert len(preludes) == 1
    assert len(searches) == 1
    assert held in searches[-1].statement
