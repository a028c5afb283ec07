"""Plans kept for folder listings (``query.SearchSQL.plan_kept``): the
statement of a folder's listing is prepared on the catalog's connection
and kept there from one request to the next, one for every folder; a
type's search counted from the groups keeps one plan whose branch its
count chooses (``plan_forced``); other searches are planned for their
values every time.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import snapshots
from plone_pgcatalog.store import connection
from psycopg.rows import tuple_row

import psycopg
import pytest
import re
import transaction


def _site(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for name in ("a", "b"):
        folder = api.content.create(container=portal, type="Folder", id=name)
        for number in range(3):
            api.content.create(container=folder, type="Document", id=f"{name}-{number}")
        # Positions not in the order of creation.
        folder.moveObjectsToTop([f"{name}-2"])
    transaction.commit()


def _listing(catalog, folder: str) -> list[str]:
    """Plone's navigation of one folder."""
    found = catalog.searchResults(
        path={"query": f"/plone/{folder}", "depth": 1},
        portal_type=["Document", "Folder"],
        sort_on="getObjPositionInParent",
    )
    return [brain.getId for brain in found]


#: The beginnings of the reads' statements (``_prepared``).
READS = ("SELECT ", "WITH ")


def _prepared(catalog, beginnings=READS) -> dict[str, tuple[int, int]]:
    """``{statement: (generic plans, custom plans)}`` of the statements
    prepared on the catalog's connection of this transaction that begin
    with one of ``beginnings``: by default the reads (the commits' writes
    keep their plans too, ``store.processor._write_rows``)."""
    conn = connection._pg_connection(connection._storage_instance(catalog))
    with conn.cursor(row_factory=tuple_row) as cursor:
        rows = cursor.execute(
            "SELECT statement, generic_plans, custom_plans"
            " FROM pg_prepared_statements WHERE statement ^@ ANY(%s::text[])",
            (list(beginnings),),
        ).fetchall()
    # One text may be prepared twice: psycopg keys a statement by its text
    # and the types of its parameters.
    found: dict[str, tuple[int, int]] = {}
    for statement, generic, custom in rows:
        before = found.get(statement, (0, 0))
        found[statement] = (before[0] + generic, before[1] + custom)
    return found


@pytest.fixture
def catalog(pg_layer, monkeypatch):
    # Every search and lookup runs its statement: none answered from a
    # kept result.
    monkeypatch.setattr(snapshots.results, "enabled", False)
    monkeypatch.setattr(snapshots.lookups, "enabled", False)
    _site(pg_layer["portal"])
    return pg_layer["portal"].portal_catalog


def test_a_folders_listing_keeps_its_plan_from_request_to_request(catalog, searches):
    expected = {name: [f"{name}-2", f"{name}-0", f"{name}-1"] for name in "ab"}
    # Ten requests: each its first catalog read (sent with the savepoint,
    # ``connection.search_first``), then a listing after another search.
    for request in range(10):
        transaction.begin()
        folder = "ab"[request % 2]
        assert _listing(catalog, folder) == expected[folder]
        assert len(catalog.searchResults(portal_type="Folder")) == 2
        assert _listing(catalog, "ba"[request % 2]) == expected["ba"[request % 2]]
        transaction.abort()
    listings = [found for found in searches if "parent_path" in found.statement]
    assert len(listings) == 20 and all(found.kept for found in listings)
    assert {found.statement for found in listings} == {listings[0].statement}
    # The type's search keeps its plan too, one its count chooses the
    # branch of (``SearchSQL.by_the_count``: forced generic).
    others = [found for found in searches if found not in listings]
    assert len(others) == 10
    assert all(found.kept == connection.FORCED for found in others)
    assert all("SELECT many FROM counted" in found.statement for found in others)
    # One statement prepared for both folders, run 20 times: after
    # PostgreSQL's five custom plans, the plan it keeps.
    transaction.begin()
    catalog.searchResults(portal_type="Folder")
    prepared = _prepared(catalog)
    kept = [
        plans for statement, plans in prepared.items() if "parent_path" in statement
    ]
    assert len(kept) == 1
    generic, custom = kept[0]
    assert generic + custom == 20
    assert generic >= 10
    # The type's search is prepared too, with only the plan made blind to
    # its values (``connection.GENERIC_PLAN``).
    searched = [statement for statement in prepared if '"portal_type"' in statement]
    assert len(searched) == 2
    [typed] = [statement for statement in searched if "parent_path" not in statement]
    assert "SELECT many FROM counted" in typed and prepared[typed][1] == 0
    transaction.abort()


def test_a_listing_with_pending_changes_is_planned_for_them(catalog, searches):
    """The transaction's own new item is in the listing (read-your-writes):
    its rows come as the statement's parameters, planned every time."""
    transaction.begin()
    folder = api.content.get(path="/a")
    api.content.create(container=folder, type="Document", id="new")
    assert _listing(catalog, "a")[-1] == "new"
    transaction.abort()
    assert not searches[-1].kept
    transaction.begin()
    assert "new" not in _listing(catalog, "a")
    assert searches[-1].kept
    transaction.abort()


def test_a_lookup_by_uid_keeps_its_plan(catalog, searches):
    """plone.app.uuid's lookup of an object by its UID (links resolved by
    UID, relations), as many requests run it: one plan kept for every
    UID, and PostgreSQL runs it (written ``= ANY(%s)``, it estimated the
    plan blind to the values at ten UIDs and made a plan for every one)."""
    from plone.app.uuid.utils import uuidToCatalogBrain
    from plone.app.uuid.utils import uuidToObject

    pages = [api.content.get(path=f"/{name}/{name}-0") for name in "ab"]
    uids = [api.content.get_uuid(page) for page in pages]
    for request in range(8):
        transaction.begin()
        uid = uids[request % 2]
        assert (
            uuidToCatalogBrain(uid).getPath() == pages[request % 2].absolute_url_path()
        )
        assert uuidToObject(uid) == pages[request % 2]
        transaction.abort()
    lookups = [found for found in searches if '("UID" = %s::text)' in found.statement]
    # (uuidToObject finds the path by the UID index object, ``indexes``.)
    assert len(lookups) >= 8 and all(found.kept for found in lookups)
    transaction.begin()
    catalog.searchResults(portal_type="Folder")
    [(generic, custom)] = [
        plans
        for statement, plans in _prepared(catalog).items()
        if re.search(r'\("UID" = \$\d+::text\)', statement)
    ]
    # Five plans made for the values, then the kept one.
    assert generic + custom == len(lookups) and generic >= len(lookups) - 5
    transaction.abort()


def test_reads_planned_for_their_values_are_never_prepared(catalog):
    """psycopg prepares a statement a connection runs five times, and after
    five more runs PostgreSQL keeps a plan made blind to the values: for
    plone.app.uuid's lookup of a path by UID (the UID index object) that
    plan read every row of the site (103 ms at 10,220 rows).  Only the
    statements of ``SearchSQL.plan_kept`` are prepared: written for it,
    the key's clause first, the other conditions one ``IS TRUE`` test."""
    from plone.app.uuid.utils import uuidToObject
    from plone.app.uuid.utils import uuidToPhysicalPath

    page = api.content.get(path="/a/a-0")
    uid = api.content.get_uuid(page)
    for request in range(12):
        transaction.begin()
        assert uuidToObject(uid) == page
        assert uuidToPhysicalPath(uid) == "/plone/a/a-0"
        assert len(catalog.searchResults(portal_type="Document")) == 6
        # A window past the end asks for the count apart.
        past = catalog.searchResults(portal_type="Document", b_start=50, b_size=10)
        assert past.actual_result_count == 6
        assert _listing(catalog, "a")[0] == "a-2"
        transaction.abort()
    transaction.begin()
    catalog.searchResults(portal_type="Folder")
    # Those that search the catalog's rows (not one row by its zoid), but
    # the transaction's first read's question where the paths lie, whose
    # plan is the same for every value (``layout.PATH_ENDS``).
    prepared = _prepared(catalog)
    ends = [statement for statement in prepared if "min(path)" in statement]
    assert len(ends) == 1 and "path > $1 ORDER BY path LIMIT 1" in ends[0]
    # The statements whose count chooses their branch keep one generic
    # plan by design (``SearchSQL.by_the_count``): a type's first rows, a
    # window of it, the other type's (the count of a window past the end
    # is planned for its values).
    counted = [statement for statement in prepared if "SELECT many FROM" in statement]
    assert len(counted) == 2, counted
    assert all(prepared[statement][1] == 0 for statement in counted)
    searched = [
        statement
        for statement in prepared
        if "FROM pgcatalog_objects WHERE" in statement
        and statement not in ends
        and statement not in counted
    ]
    assert len(searched) == 2, searched  # the listing, the UID's path
    for statement in searched:
        assert ") IS TRUE" in statement, statement
    transaction.abort()


def _latest(catalog, b_start: int = 0) -> list[str]:
    """A page of the latest documents, as a listing of news asks for it."""
    found = catalog.searchResults(
        portal_type="Document",
        sort_on="modified",
        sort_order="reverse",
        b_start=b_start,
        b_size=2,
    )
    return [brain.getId for brain in found], found.actual_result_count


def _plan_cache_mode(catalog) -> str:
    conn = connection._pg_connection(connection._storage_instance(catalog))
    with conn.cursor(row_factory=tuple_row) as cursor:
        return cursor.execute("SHOW plan_cache_mode").fetchone()[0]


def test_a_window_from_the_edge_runs_the_plan_kept_for_it(catalog, searches):
    """A window sorted on a date is walked from the edge of its matches
    (``SearchSQL.from_the_edge``), in a catalog of any size (this one has a
    dozen rows): PostgreSQL is made to run one plan for every value, from
    the first run (``plan_forced``), both as a transaction's first read and
    after it; ``plan_cache_mode`` is as it was before and after the
    statement."""
    from DateTime import DateTime

    # Modified on six days, in another order than their creation's.
    latest = ["b-0", "a-2", "b-2", "a-0", "b-1", "a-1"]
    for days, name in enumerate(reversed(latest)):
        page = api.content.get(path=f"/{name[0]}/{name}")
        page.setModificationDate(DateTime("2024/01/01 12:00 UTC") + days)
        page.reindexObject(idxs=["modified"])
    transaction.commit()
    for request in range(6):
        transaction.begin()
        start = 2 * (request % 3)
        # The transaction's first read...
        assert _latest(catalog, start) == (latest[start : start + 2], 6)
        assert _plan_cache_mode(catalog) == "auto"
        # ...and one after it, where another mode was set.
        conn = connection._pg_connection(connection._storage_instance(catalog))
        conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        assert _latest(catalog, 4 - start) == (latest[4 - start : 6 - start], 6)
        assert _plan_cache_mode(catalog) == "force_custom_plan"
        transaction.abort()
    windows = [found for found in searches if "AS edge" in found.statement]
    assert len(windows) == 12
    assert all(found.kept == connection.FORCED for found in windows)
    transaction.begin()
    catalog.searchResults(portal_type="Folder")
    kept = [
        plans
        for statement, plans in _prepared(catalog).items()
        if "AS edge" in statement
    ]
    # Two statements (the first page has no ``OFFSET``), run 12 times: never
    # a plan made for the values.
    assert len(kept) == 2
    assert [sum(counts) for counts in zip(*kept)] == [12, 0]
    transaction.abort()


def test_a_failed_window_from_the_edge_leaves_the_mode_as_it_was(catalog):
    """The statement fails after the mode was changed for it: the change
    is undone with the savepoint the read goes back to, as the transaction's
    first read and after it."""
    from plone_pgcatalog.store import search
    from psycopg import sql

    failing = sql.SQL("SELECT 1 / 0")
    transaction.begin()
    assert connection.search_first(catalog, failing, (), connection.FORCED) is None
    assert _plan_cache_mode(catalog) == "auto"
    with pytest.raises(psycopg.errors.DivisionByZero):
        with connection.reading(catalog) as conn:
            search._execute(conn, failing, (), connection.FORCED)
    assert _plan_cache_mode(catalog) == "auto"
    # The transaction reads on.
    assert len(catalog.searchResults(portal_type="Folder")) == 2
    transaction.abort()


def test_a_commits_catalog_writes_keep_their_plans(catalog):
    """The statements that write a commit's catalog rows keep one plan
    (``store.processor._write_rows``): each row by its key, the same plan
    for every value.  PostgreSQL planned them for their values at every
    commit (its custom plan of an ``unnest`` always looked cheaper), 1.1 ms
    of a modification.  Ten modifications: generic plans only."""
    page = api.content.get(path="/a/a-0")
    for number in range(10):
        transaction.begin()
        page.title = f"Edited {number}"
        page.reindexObject()
        transaction.commit()
    transaction.begin()
    assert catalog.searchResults(Title="Edited 9")[0].getId == "a-0"
    written = _prepared(
        catalog,
        ("UPDATE pgcatalog_objects AS s SET path", "INSERT INTO pgcatalog_objects"),
    )
    transaction.abort()
    # The row's update and its insert of new rows, each run by every commit,
    # never with a plan of their own (PostgreSQL makes one for each of the
    # first five runs of a statement whose generic plan is not forced).
    # Counted on this transaction's connection, where the count of generic
    # plans may be lower than ten (seen once on PostgreSQL 15 in a full
    # run: 1): psycopg deallocates the least recently used of more than
    # 100 prepared statements, and a connection of the pool serves many
    # tests in a run.
    assert len(written) == 2, written
    for statement, (generic, custom) in written.items():
        assert custom == 0 and generic >= 1, (statement, generic, custom)
