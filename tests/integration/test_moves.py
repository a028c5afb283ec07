"""Moves and renames of folders: paths rewritten set-based (``moves.py``).

A rename or move of a folder with descendants rewrites the stored rows'
paths in one statement at commit; descendants are read again only for the
indexes a move can change (never full text); the root is cataloged in
full.  Searches before the commit see the subtree where it is now, and
after the commit the catalog equals a fresh rebuild.
"""

from __future__ import annotations

from AccessControl.SecurityManagement import getSecurityManager
from AccessControl.SecurityManagement import newSecurityManager
from AccessControl.SecurityManagement import setSecurityManager
from DateTime import DateTime
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog import extraction
from plone_pgcatalog.store import processor
from plone_pgcatalog.store.connection import ddl_connection
from tests.conftest import collect_in

import pytest
import transaction


def _tree(portal, children: int = 3, grandchildren: int = 2):
    """``/plone/a`` with pages and subfolders, and an empty ``/plone/b``."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    a = api.content.create(container=portal, type="Folder", id="a", title="A")
    api.content.create(container=portal, type="Folder", id="b", title="B")
    for i in range(children):
        sub = api.content.create(
            container=a, type="Folder", id=f"f{i}", title=f"Sub {i} rhubarb"
        )
        api.content.create(container=a, type="Document", id=f"p{i}", title=f"P{i}")
        for j in range(grandchildren):
            api.content.create(
                container=sub, type="Document", id=f"d{j}", title=f"Deep {j} rhubarb"
            )
    transaction.commit()
    return a


def _paths(**query) -> list[str]:
    catalog = api.portal.get_tool("portal_catalog")
    return sorted(b.getPath() for b in catalog.unrestrictedSearchResults(**query))


def _stored_rows(portal) -> dict[str, tuple]:
    """Every stored catalog row of the site: path -> (parent, depth, idx, meta)."""
    with ddl_connection(portal.portal_catalog) as conn:
        rows = conn.execute(
            "SELECT path, parent_path, path_depth, idx, meta, searchable_text::text"
            " FROM pgcatalog_objects WHERE path LIKE '/plone%'"
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def _without_times(rows: dict) -> dict:
    """Rows with the values that carry the time of cataloging left out."""
    timely = ("modified", "Date", "ModificationDate")
    return {
        path: (
            parent,
            depth,
            {k: v for k, v in idx.items() if k not in timely},
            {k: v for k, v in meta.items() if k not in timely},
            text,
        )
        for path, (parent, depth, idx, meta, text) in rows.items()
    }


class _Spy:
    """Counts calls of a function and the SQL statements the commit runs."""

    def __init__(self, monkeypatch):
        self.full_rows: list[str] = []
        self.patches: list[tuple[str, frozenset]] = []
        self.relocations = 0
        real_row, real_patch = extraction.extract_row, extraction.extract_patch

        def extract_row(zoid, path, *args, **kw):
            self.full_rows.append(path)
            return real_row(zoid, path, *args, **kw)

        def extract_patch(zoid, path, indexes, only, *args, **kw):
            self.patches.append((path, frozenset(only)))
            return real_patch(zoid, path, indexes, only, *args, **kw)

        from plone_pgcatalog import tool

        monkeypatch.setattr(tool, "extract_row", extract_row)
        monkeypatch.setattr(tool, "extract_patch", extract_patch)
        real_finalize = processor.CatalogStateProcessor.finalize
        spy = self

        class CountingCursor:
            def __init__(self, cursor):
                self._cursor = cursor

            def execute(self, statement, *args, **kw):
                text = getattr(statement, "as_string", None)
                text = text(self._cursor) if text else str(statement)
                if text.startswith("UPDATE pgcatalog_objects AS o SET path = m.path"):
                    spy.relocations += 1
                return self._cursor.execute(statement, *args, **kw)

            def __getattr__(self, name):
                return getattr(self._cursor, name)

        def finalize(self, cursor):
            return real_finalize(self, CountingCursor(cursor))

        monkeypatch.setattr(processor.CatalogStateProcessor, "finalize", finalize)


def test_rename_moves_every_descendant_in_one_statement(pg_layer, monkeypatch):
    portal = pg_layer["portal"]
    _tree(portal, children=4, grandchildren=3)
    spy = _Spy(monkeypatch)
    api.content.rename(obj=portal["a"], new_id="renamed")
    transaction.commit()
    # The root in full (and its parent: its contents changed), the
    # descendants partially, never their full text.
    assert "/plone/renamed" in spy.full_rows
    assert [p for p in spy.full_rows if p.startswith("/plone/renamed/")] == []
    # (The root may have a patch too, its position: plone.app.discussion's
    # subscriber searches, so the root's full reindex is made early, and
    # the later change of its position is a patch of its own.)
    below = [(p, names) for p, names in spy.patches if p.startswith("/plone/renamed/")]
    assert len({path for path, _ in below}) == 4 + 4 + 4 * 3
    for _path, names in below:
        assert "SearchableText" not in names and "path" not in names
        # Read again, also under a parent that grants the same: ZCatalog's
        # full reindex mends a value code left stale.
        assert "allowedRolesAndUsers" in names
        assert "modified" in names  # Plone sets it on every descendant
        assert "Subject" not in names and "portal_type" not in names
    assert spy.relocations == 1
    assert _paths(path="/plone/a") == []
    assert len(_paths(path="/plone/renamed")) == 1 + 4 + 4 + 12
    assert _paths(path={"query": "/plone/renamed/f1", "depth": 1}) == [
        f"/plone/renamed/f1/d{j}" for j in range(3)
    ]
    assert "/plone/renamed/f2/d0" in _paths(SearchableText="rhubarb")


def test_after_a_move_the_catalog_equals_a_fresh_rebuild(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal)
    api.content.move(source=portal["a"], target=portal["b"])
    api.content.rename(obj=portal["b"]["a"]["f0"], new_id="g0")
    transaction.commit()
    moved = _without_times(_stored_rows(portal))
    portal.portal_catalog.clearFindAndRebuild()
    transaction.commit()
    assert _without_times(_stored_rows(portal)) == moved
    assert "/plone/b/a/g0/d1" in moved


def test_searches_before_the_commit_see_the_subtree_moved(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal)
    api.content.move(source=portal["a"], target=portal["b"])
    assert _paths(path="/plone/a") == []
    assert _paths(path={"query": "/plone/b/a", "depth": 1}) == sorted(
        [f"/plone/b/a/f{i}" for i in range(3)] + [f"/plone/b/a/p{i}" for i in range(3)]
    )
    assert _paths(path={"query": "/plone/b", "depth": 2}) == sorted(
        ["/plone/b", "/plone/b/a"]
        + [f"/plone/b/a/f{i}" for i in range(3)]
        + [f"/plone/b/a/p{i}" for i in range(3)]
    )
    assert "/plone/b/a/f0/d0" in _paths(Title="Deep")
    # Sorted on position, as the navigation asks.
    catalog = api.portal.get_tool("portal_catalog")
    ordered = [
        b.getId
        for b in catalog(
            path={"query": "/plone/b/a", "depth": 1}, sort_on="getObjPositionInParent"
        )
    ]
    assert ordered == ["f0", "p0", "f1", "p1", "f2", "p2"]


def test_moves_in_a_row_and_a_new_folder_at_the_old_path(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal, children=2, grandchildren=1)
    api.content.rename(obj=portal["a"], new_id="x")
    api.content.move(source=portal["x"], target=portal["b"])
    # A new folder where the moved one was, with a child of the same name.
    a = api.content.create(container=portal, type="Folder", id="a", title="New A")
    api.content.create(container=a, type="Document", id="p0", title="New P0")
    expected = sorted(
        ["/plone/b", "/plone/b/x", "/plone/b/x/f0", "/plone/b/x/f0/d0"]
        + ["/plone/b/x/f1", "/plone/b/x/f1/d0", "/plone/b/x/p0", "/plone/b/x/p1"]
    )
    assert _paths(path="/plone/b") == expected
    assert _paths(path="/plone/a") == ["/plone/a", "/plone/a/p0"]
    transaction.commit()
    assert _paths(path="/plone/b") == expected
    assert _paths(path="/plone/a") == ["/plone/a", "/plone/a/p0"]
    assert [b.Title for b in api.content.find(path="/plone/a/p0")] == ["New P0"]
    assert [b.Title for b in api.content.find(path="/plone/b/x/p0")] == ["P0"]


def test_a_folder_moved_out_of_a_moved_folder(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal, children=2, grandchildren=2)
    api.content.move(source=portal["a"], target=portal["b"])
    api.content.move(source=portal["b"]["a"]["f1"], target=portal)
    api.content.rename(obj=portal["b"], new_id="c")
    expected = {
        "/plone/c/a/f0/d0",
        "/plone/c/a/f0/d1",
        "/plone/f1/d0",
        "/plone/f1/d1",
    }
    assert expected <= set(_paths(Title="Deep"))
    transaction.commit()
    assert set(_paths(Title="Deep")) == expected
    assert _paths(path="/plone/a") == [] and _paths(path="/plone/b") == []


def test_a_move_rolled_back_to_a_savepoint_or_aborted(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal, children=2, grandchildren=1)
    before = _paths(path="/plone")
    savepoint = transaction.savepoint()
    api.content.rename(obj=portal["a"], new_id="gone")
    assert _paths(path="/plone/gone")
    savepoint.rollback()
    assert _paths(path="/plone") == before
    transaction.commit()
    assert _paths(path="/plone") == before
    api.content.rename(obj=portal["a"], new_id="gone")
    transaction.abort()
    assert _paths(path="/plone") == before


def test_an_edit_queued_before_a_move_is_kept(pg_layer, monkeypatch):
    portal = pg_layer["portal"]
    _tree(portal, children=1, grandchildren=1)
    page = portal["a"]["f0"]["d0"]
    page.title = "Edited before the move"
    page.reindexObject()
    spy = _Spy(monkeypatch)
    api.content.move(source=portal["a"], target=portal["b"])
    # The queued edit is cataloged before the move, then its row moves.
    assert "/plone/a/f0/d0" in spy.full_rows
    assert _paths(Title="Edited") == ["/plone/b/a/f0/d0"]
    transaction.commit()
    assert _paths(Title="Edited") == ["/plone/b/a/f0/d0"]


def test_moved_into_a_shared_folder_the_security_is_read_again(pg_layer, monkeypatch):
    portal = pg_layer["portal"]
    _tree(portal, children=1, grandchildren=1)
    api.user.create(email="m@example.org", username="member2", password="secret-Pw1!")
    portal["b"].manage_setLocalRoles("member2", ["Reader"])
    portal["b"].reindexObjectSecurity()
    transaction.commit()
    spy = _Spy(monkeypatch)
    api.content.move(source=portal["a"], target=portal["b"])
    transaction.commit()
    assert all("allowedRolesAndUsers" in names for _path, names in spy.patches)
    catalog = portal.portal_catalog
    brains = catalog.unrestrictedSearchResults(
        allowedRolesAndUsers="user:member2", path="/plone/b/a"
    )
    assert sorted(b.getPath() for b in brains) == [
        "/plone/b/a",
        "/plone/b/a/f0",
        "/plone/b/a/f0/d0",
        "/plone/b/a/p0",
    ]


def _move_scenario(layer) -> list:
    """Moves and renames, then what a battery of queries finds, as Manager."""
    portal = layer["portal"]
    _tree(portal, children=3, grandchildren=2)
    catalog = api.portal.get_tool("portal_catalog")
    answers = []

    def record():
        for query in (
            {"path": "/plone", "sort_on": "path"},
            {"path": {"query": "/plone/b", "depth": 1}},
            {
                "path": {"query": "/plone/b/a", "depth": 1},
                "sort_on": "getObjPositionInParent",
            },
            {"path": {"query": "/plone/b/x", "depth": -1}, "sort_on": "sortable_title"},
            {"SearchableText": "rhubarb", "sort_on": "path"},
            {"portal_type": "Document", "path": "/plone/b", "sort_on": "getId"},
            {"getId": "a"},
            {"getId": "x"},
            {"Title": "Deep", "sort_on": "path"},
        ):
            found = catalog.unrestrictedSearchResults(**query)
            answers.append(
                (repr(query), [(b.getPath(), b.getId, b.Title) for b in found])
            )

    api.content.move(source=portal["a"], target=portal["b"])
    record()
    transaction.commit()
    record()
    api.content.rename(obj=portal["b"]["a"], new_id="x")
    portal["b"]["x"].moveObjectsToTop(["p2"])
    record()
    transaction.commit()
    record()
    api.content.move(source=portal["b"]["x"]["f1"], target=portal)
    api.content.copy(source=portal["f1"], target=portal["b"]["x"], id="f1copy")
    api.content.delete(obj=portal["b"]["x"]["f0"])
    record()
    transaction.commit()
    record()
    return answers


def test_moves_equal_zcatalog():
    from tests.conftest import collect_in

    expected = collect_in("zcatalog", _move_scenario)
    found = collect_in("pg", _move_scenario)
    assert len(found) == len(expected)
    for (query, oracle), (_, answer) in zip(expected, found):
        assert answer == oracle, query


def test_getpath_of_a_moved_row_before_the_commit(pg_layer):
    portal = pg_layer["portal"]
    _tree(portal, children=1, grandchildren=1)
    catalog = portal.portal_catalog
    rid = catalog.getrid("/plone/a/f0/d0")
    api.content.rename(obj=portal["a"], new_id="z")
    assert catalog.getpath(rid) == "/plone/z/f0/d0"
    transaction.commit()
    assert catalog.getpath(rid) == "/plone/z/f0/d0"


def test_plone_app_discussion_asks_for_the_old_paths_without_a_search(
    pg_layer, searches
):
    """plone.app.discussion (loaded in every test layer, as Plone loads it
    wherever it is installed) searches the comments at each moved object's
    old path, in the move's transaction.  Every row left that subtree: the
    answer is empty without a statement (``results.vacated``), where each
    search had laid the transaction's growing changes over the rows."""
    portal = pg_layer["portal"]
    _tree(portal, children=3, grandchildren=2)
    searches.clear()
    api.content.rename(obj=portal["a"], new_id="renamed")
    assert [s for s in searches if "Discussion Item" in repr(s.params)] == []
    # The old place is empty, the new one full, before the commit.
    assert _paths(path="/plone/a") == []
    assert _paths(path={"query": "/plone/a/f0", "depth": 1}) == []
    assert len(_paths(path="/plone/renamed")) == 1 + 3 + 3 + 6
    # Something cataloged at the old place since is found there.
    with api.env.adopt_roles(["Manager"]):
        api.content.create(container=portal, type="Folder", id="a", title="New A")
    assert _paths(path="/plone/a") == ["/plone/a"]
    # A folder moved to the old place brings its rows.
    api.content.rename(obj=portal["a"], new_id="other")
    api.content.move(source=portal["renamed"]["f1"], target=portal, id="a")
    assert _paths(path="/plone/a") == ["/plone/a", "/plone/a/d0", "/plone/a/d1"]
    transaction.commit()
    assert _paths(path="/plone/a") == ["/plone/a", "/plone/a/d0", "/plone/a/d1"]
    assert _paths(path="/plone/other") == ["/plone/other"]


def _found_by_ben(portal):
    old = getSecurityManager()
    user = portal.acl_users.getUserById("ben").__of__(portal.acl_users)
    newSecurityManager(None, user)
    try:
        return sorted(
            b.getPath() for b in portal.portal_catalog(portal_type="Document")
        )
    finally:
        setSecurityManager(old)


def _stale_then_moved(layer):
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.user.create(email="ben@example.org", username="ben", password="Ben-secret-1!")
    a = api.content.create(container=portal, type="Folder", id="a", title="A")
    api.content.create(container=portal, type="Folder", id="b", title="B")
    sub = api.content.create(container=a, type="Folder", id="sub", title="Sub")
    doc = api.content.create(container=sub, type="Document", id="doc", title="Doc")
    doc.manage_setLocalRoles("ben", ["Reader"])
    doc.reindexObjectSecurity()
    transaction.commit()
    seen = [("shared", _found_by_ben(portal))]
    # Code that takes the role away without reindexing (ZMI, a script):
    # both catalogs are stale alike.
    doc.manage_delLocalRoles(["ben"])
    transaction.commit()
    seen.append(("unshared, not reindexed", _found_by_ben(portal)))
    # a and b grant the same; ZCatalog reads the descendants again in
    # full, and so must this catalog read their security.
    api.content.move(source=portal.a.sub, target=portal.b)
    transaction.commit()
    seen.append(("sub moved from a to b", _found_by_ben(portal)))
    return seen


def test_a_move_mends_a_stale_security_index_as_zcatalog():
    """Found by a helper's security probe: the security of the moved
    descendants was read again only where the parents granted otherwise,
    and a user kept finding an item ZCatalog hid from them."""
    zcatalog = collect_in("zcatalog", _stale_then_moved)
    assert zcatalog[-1] == ("sub moved from a to b", [])
    assert collect_in("pg", _stale_then_moved) == zcatalog


def _stale_expiry_then_moved(layer):
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    a = api.content.create(container=portal, type="Folder", id="a", title="A")
    api.content.create(container=portal, type="Folder", id="b", title="B")
    sub = api.content.create(container=a, type="Folder", id="sub", title="Sub")
    doc = api.content.create(container=sub, type="Document", id="doc", title="Doc")
    for o in (a, portal.b, sub, doc):
        api.content.transition(obj=o, transition="publish")
    transaction.commit()

    def anon():
        logout()
        try:
            found = portal.portal_catalog(portal_type="Document")
            return sorted(brain.getPath() for brain in found)
        finally:
            login(portal, TEST_USER_NAME)

    seen = [("published", anon())]
    # Code that expires the page without reindexing (a script): stale alike.
    doc.setExpirationDate(DateTime() - 1)
    transaction.commit()
    seen.append(("expired, not reindexed", anon()))
    api.content.move(source=portal.a.sub, target=portal.b)
    transaction.commit()
    seen.append(("sub moved from a to b", anon()))
    return seen


def test_a_move_mends_a_stale_expiry_as_zcatalog():
    """From the review of the fix above: ``effectiveRange`` decides what
    Anonymous finds too, and ZCatalog's full reindex mends it on a move."""
    zcatalog = collect_in("zcatalog", _stale_expiry_then_moved)
    assert zcatalog[-1] == ("sub moved from a to b", [])
    assert collect_in("pg", _stale_expiry_then_moved) == zcatalog


@pytest.mark.parametrize("case_relocations", [8, 0], ids=["case", "join"])
def test_relocated_rows_are_read_where_the_moves_put_them(
    pg_layer, monkeypatch, case_relocations
):
    """``relocation.relocated_rows`` (a search's view of moved subtrees
    before the commit) puts each stored row where ``relocation.relocate``
    says, for any composition of moves: parent path and depth included.
    Read from a temporary table of stored rows that stands in for the
    catalog's (PostgreSQL reads ``pg_temp`` first)."""
    from hypothesis import example
    from hypothesis import given
    from hypothesis import settings
    from hypothesis import strategies as st
    from plone_pgcatalog.paths import path_depth
    from plone_pgcatalog.store import relocation
    from plone_pgcatalog.store.relocation import compose
    from plone_pgcatalog.store.relocation import parent_of
    from plone_pgcatalog.store.relocation import relocate
    from plone_pgcatalog.store.relocation import relocated_rows
    from tests.unit.test_relocation import _PATHS
    from tests.unit.test_relocation import STORED

    import psycopg

    # The CASE tests up to a few relocations, the join beyond.
    monkeypatch.setattr(relocation, "CASE_RELOCATIONS", case_relocations)

    with psycopg.connect(pg_layer["pgcatalog_dsn"]) as conn:
        conn.execute(
            "CREATE TEMP TABLE pgcatalog_objects (zoid bigint, path text COLLATE"
            ' "C", parent_path text COLLATE "C", path_depth integer, idx jsonb,'
            " searchable_text tsvector)"
        )
        for zoid, path in enumerate(STORED):
            conn.execute(
                "INSERT INTO pgcatalog_objects VALUES (%s, %s, %s, %s, '{}', NULL)",
                (zoid, path, parent_of(path), path_depth(path)),
            )

        @settings(max_examples=1000, deadline=None)
        @given(st.lists(st.tuples(_PATHS, _PATHS), min_size=1, max_size=6))
        # A row below two relocated prefixes takes the longer one's.
        @example([("/s/a", "/s/b"), ("/s/b/x", "/s/c")])
        def relocated_as_composed(moves):
            moves = [(old, new) for old, new in moves if not new.startswith(old + "/")]
            relocations = compose(moves)
            if not relocations:
                return
            statement, params = relocated_rows(relocations, {})
            read = {
                STORED[zoid]: (path, parent, depth)
                for zoid, path, parent, depth, _idx, _text in conn.execute(
                    statement, params
                )
            }
            expected = {
                path: (
                    relocate(path, relocations),
                    parent_of(relocate(path, relocations)),
                    path_depth(relocate(path, relocations)),
                )
                for path in STORED
                if relocate(path, relocations) != path
                or any(
                    path == r.stored or path.startswith(r.stored + "/")
                    for r in relocations
                )
            }
            assert read == expected, (moves, relocations)

        relocated_as_composed()
        conn.rollback()


def test_thousands_of_moves_are_read_before_the_commit(pg_layer):
    """A paste of many items (each a relocation of its own) is read by the
    join: the ``CASE`` tests took 19 parameters a relocation, and 3,500
    took more than PostgreSQL's 65,535 (helper-35's review)."""
    from plone_pgcatalog.store.relocation import compose
    from plone_pgcatalog.store.relocation import relocated_rows

    import psycopg

    moves = [(f"/plone/a/d{i}", f"/plone/b/d{i}") for i in range(3500)]
    statement, params = relocated_rows(compose(moves), {})
    with psycopg.connect(pg_layer["pgcatalog_dsn"]) as conn:
        conn.execute(statement, params).fetchall()
