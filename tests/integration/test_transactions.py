"""The catalog ends exactly as the committed content: abort, savepoints,
conflicts and their retry, concurrent writers, a failing vote.

Catalog rows are read twice: through the catalog (which overlays pending
changes) and from a fresh PostgreSQL connection (what is committed).
Owns only these tests; imports no private SQL helpers of the package.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog.store.connection import ddl_connection
from Products.CMFCore.indexing import processQueue
from ZODB.POSException import ConflictError

import pytest
import threading
import transaction


def _committed_rows(portal) -> dict[str, str]:
    """path -> Title of every cataloged row, read outside any ZODB txn."""
    with ddl_connection(portal.portal_catalog) as conn:
        rows = conn.execute(
            "SELECT path, meta->>'Title' FROM pgcatalog_objects"
        ).fetchall()
    return dict(rows)


def _found(portal) -> dict[str, str]:
    catalog = portal.portal_catalog
    brains = catalog.unrestrictedSearchResults(path="/plone")
    return {b.getPath(): b.Title for b in brains}


def _site(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    api.content.create(container=folder, type="Document", id="a", title="A")
    api.content.create(container=folder, type="Document", id="b", title="B")
    transaction.commit()
    return folder


def test_abort_leaves_the_catalog_as_before(pg_layer):
    portal = pg_layer["portal"]
    folder = _site(portal)
    before = _committed_rows(portal)
    assert _found(portal) == before
    api.content.create(container=folder, type="Document", id="c", title="C")
    folder["a"].title = "A edited"
    folder["a"].reindexObject()
    api.content.delete(obj=folder["b"])
    # Inside the transaction the overlay shows the changes...
    inside = _found(portal)
    assert "/plone/f/c" in inside and "/plone/f/b" not in inside
    assert inside["/plone/f/a"] == "A edited"
    transaction.abort()
    # ...after the abort, nothing of them, in the catalog and in SQL.
    assert _found(portal) == before
    assert _committed_rows(portal) == before


def test_savepoint_rollbacks_keep_only_what_was_committed(pg_layer):
    portal = pg_layer["portal"]
    folder = _site(portal)
    folder["a"].title = "A kept"
    folder["a"].reindexObject()
    # CMFCore queues reindexes; a reindex still queued when a savepoint is
    # taken is lost by its rollback, with ZCatalog too.  Flush the queue
    # first so this test is about the catalog's own savepoints.
    processQueue()
    outer = transaction.savepoint()
    api.content.create(container=folder, type="Document", id="c", title="C")
    processQueue()
    inner = transaction.savepoint()
    api.content.delete(obj=folder["b"])
    folder["a"].title = "A dropped"
    folder["a"].reindexObject()
    inner.rollback()
    assert _found(portal)["/plone/f/a"] == "A kept"
    assert "/plone/f/b" in _found(portal) and "/plone/f/c" in _found(portal)
    outer.rollback()
    assert "/plone/f/c" not in _found(portal)
    api.content.create(container=folder, type="Document", id="d", title="D")
    transaction.commit()
    committed = _committed_rows(portal)
    assert {k: v for k, v in committed.items() if k.startswith("/plone/f")} == {
        "/plone/f": "F",
        "/plone/f/a": "A kept",
        "/plone/f/b": "B",
        "/plone/f/d": "D",
    }
    assert _found(portal) == committed
    # Content and catalog agree.
    assert sorted(folder.objectIds()) == ["a", "b", "d"]


def test_a_rolled_back_addition_and_reorder_leave_positions_as_committed(
    pg_layer,
):
    portal = pg_layer["portal"]
    folder = _site(portal)
    savepoint = transaction.savepoint()
    api.content.create(container=folder, type="Document", id="x", title="X")
    folder.moveObjectsToTop(["x"])
    processQueue()
    assert _found(portal)["/plone/f/x"] == "X"
    savepoint.rollback()
    api.content.delete(obj=folder["a"])
    transaction.commit()
    catalog = portal.portal_catalog
    brains = catalog.unrestrictedSearchResults(
        path={"query": "/plone/f", "depth": 1}, sort_on="getObjPositionInParent"
    )
    assert [b.getId for b in brains] == list(folder.objectIds()) == ["b"]
    stored = catalog._row_data(brains[0].getRID())[0]["getObjPositionInParent"]
    assert stored == folder.getObjectPosition("b") == 0


def _in_other_thread(db, work):
    """Run ``work(portal)`` in its own thread, connection and transaction,
    then commit; the catalog's pending changes follow the thread's
    transaction manager, as in a Zope worker thread."""
    from plone.app.testing import login
    from zope.component.hooks import setSite

    errors = []

    def run():
        conn = db.open()
        try:
            portal = conn.root()["Application"]["plone"]
            setSite(portal)
            login(portal, TEST_USER_NAME)
            work(portal)
            transaction.commit()
        except BaseException as error:  # reported to the test thread
            transaction.abort()
            errors.append(error)
        finally:
            setSite(None)
            conn.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def _retitle(portal, path, title):
    obj = portal.unrestrictedTraverse(path)
    obj.title = title
    obj.reindexObject()


def test_a_conflict_and_its_retry_leave_only_the_retried_state(pg_layer):
    portal = pg_layer["portal"]
    _site(portal)
    db = pg_layer["pgdb"]
    # This writer changes the page, then another commits the same page first.
    _retitle(portal, "f/a", "Loser")
    _in_other_thread(db, lambda p: _retitle(p, "f/a", "Winner"))
    with pytest.raises(ConflictError) as info:
        transaction.commit()
    assert info.value.oid == portal.f.a._p_oid
    transaction.abort()
    assert _committed_rows(portal)["/plone/f/a"] == "Winner"
    # The retry, as the publisher does it: a new transaction, redo, commit.
    transaction.begin()
    assert portal.f.a.title == "Winner"
    _retitle(portal, "f/a", "Retried")
    transaction.commit()
    committed = _committed_rows(portal)
    assert committed["/plone/f/a"] == "Retried"
    assert "Loser" not in committed.values()
    assert _found(portal) == committed


def test_two_writers_adding_to_one_folder_conflict_only_outside_the_catalog(
    pg_layer,
):
    """Every content creation bumps CMFUid's ``portal_uidgenerator``
    counter, so two concurrent creations conflict on that tool, not on the
    catalog; the retry then commits and both pages are found."""
    portal = pg_layer["portal"]
    folder = _site(portal)
    db = pg_layer["pgdb"]

    def mine():
        api.content.create(container=folder, type="Document", id="mine", title="Mine")

    def other(p):
        api.content.create(container=p.f, type="Document", id="theirs", title="Theirs")

    mine()
    _in_other_thread(db, other)
    with pytest.raises(ConflictError) as info:
        transaction.commit()
    assert info.value.class_name == (
        "Products.CMFUid.UniqueIdGeneratorTool.UniqueIdGeneratorTool"
    )
    transaction.abort()
    transaction.begin()
    mine()
    transaction.commit()
    committed = _committed_rows(portal)
    assert committed["/plone/f/mine"] == "Mine"
    assert committed["/plone/f/theirs"] == "Theirs"
    assert _found(portal) == committed


def test_two_writers_editing_pages_of_one_folder_both_commit(pg_layer):
    """The catalog has no shared object: concurrent reindexes of siblings
    do not conflict (ZCatalog's shared index BTrees are the usual hot
    spot)."""
    portal = pg_layer["portal"]
    _site(portal)
    db = pg_layer["pgdb"]
    _retitle(portal, "f/a", "A mine")
    _in_other_thread(db, lambda p: _retitle(p, "f/b", "B theirs"))
    transaction.commit()
    committed = _committed_rows(portal)
    assert committed["/plone/f/a"] == "A mine"
    assert committed["/plone/f/b"] == "B theirs"
    assert _found(portal) == committed


def test_a_reindex_of_an_object_changed_meanwhile_conflicts(pg_layer):
    """A reindex that stores no object (here a partial one) read the page
    before another transaction changed and committed it: committing the
    older values would overwrite the newer row, so the commit conflicts
    and the retry catalogs the current page."""
    portal = pg_layer["portal"]
    _site(portal)
    db = pg_layer["pgdb"]
    page = portal.f.a
    page.title  # read now, before the other writer
    page.reindexObject(idxs=["Title"])
    processQueue()
    _in_other_thread(db, lambda p: _retitle(p, "f/a", "Newer"))
    with pytest.raises(ConflictError) as info:
        transaction.commit()
    assert info.value.oid == page._p_oid
    transaction.abort()
    assert _committed_rows(portal)["/plone/f/a"] == "Newer"
    transaction.begin()
    portal.f.a.reindexObject(idxs=["Title"])
    transaction.commit()
    assert _committed_rows(portal)["/plone/f/a"] == "Newer"
    assert _found(portal) == _committed_rows(portal)


def test_an_edit_conflicts_with_the_removal_of_an_earlier_sibling(pg_layer):
    """The edit of ``f/b`` (its row written again, with its position) read
    the folder's order before another transaction removed ``f/a``, which
    moves ``b`` up and rewrites the folder's positions: committing the edit
    after it would write back ``b``'s old position, so the commit conflicts
    and the retry catalogs the new one (found by the soak under load)."""
    portal = pg_layer["portal"]
    folder = _site(portal)
    assert folder.getObjectPosition("b") == 1
    _retitle(portal, "f/b", "B mine")
    processQueue()
    _in_other_thread(pg_layer["pgdb"], lambda p: p.f.manage_delObjects(["a"]))
    with pytest.raises(ConflictError):
        transaction.commit()
    transaction.abort()
    transaction.begin()
    _retitle(portal, "f/b", "B mine")
    transaction.commit()
    catalog = portal.portal_catalog
    [brain] = catalog(path="/plone/f/b")
    assert catalog._row_data(brain.getRID())[0]["getObjPositionInParent"] == 0
    assert portal.f.getObjectPosition("b") == 0


def _remove_without_storing(site, folder: str, id: str) -> None:
    """Take an item out of its folder and the catalog, storing nothing of
    the item itself (no events: Plone's removal stores the item, which
    ZODB's read-conflict check catches on its own)."""
    site[folder]._delOb(id)
    site.portal_catalog.uncatalog_object(f"/plone/{folder}/{id}")


def test_a_reindex_of_a_page_removed_meanwhile_conflicts(pg_layer):
    """Another transaction removes the page (its row is cleared, the page
    itself not stored) after this one read it: writing this one's row
    would leave a row of a removed page behind, so the commit conflicts."""
    portal = pg_layer["portal"]
    _site(portal)
    page = portal.f.a
    page.reindexObject(idxs=["Title"])
    processQueue()
    _in_other_thread(pg_layer["pgdb"], lambda p: _remove_without_storing(p, "f", "a"))
    with pytest.raises(ConflictError) as info:
        transaction.commit()
    assert info.value.oid == page._p_oid
    transaction.abort()
    assert "/plone/f/a" not in _committed_rows(portal)
    assert _found(portal) == _committed_rows(portal)


def test_a_reindex_after_an_ordering_change_conflicts_with_a_removal(pg_layer):
    """The transaction's first catalog change is an item added to another
    folder (the ordering subscriber notes it): the removal of the
    reindexed page meanwhile must still make the commit conflict."""
    portal = pg_layer["portal"]
    _site(portal)
    api.content.create(container=portal, type="Folder", id="g", title="G")
    transaction.commit()
    api.content.create(container=portal.g, type="Document", id="c", title="C")
    page = portal.f.a
    page.reindexObject(idxs=["Title"])
    processQueue()
    _in_other_thread(pg_layer["pgdb"], lambda p: _remove_without_storing(p, "f", "a"))
    with pytest.raises(ConflictError) as info:
        transaction.commit()
    assert info.value.oid == page._p_oid
    transaction.abort()
    assert "/plone/f/a" not in _committed_rows(portal)
    assert _found(portal) == _committed_rows(portal)


def test_a_reindex_of_a_page_moved_meanwhile_conflicts(pg_layer):
    """Another transaction renames the page's folder (the rows of its
    contents are relocated; a page stores nothing of its path): this one's
    row, with the old path, must not be written back."""
    portal = pg_layer["portal"]
    _site(portal)
    page = portal.f.b
    page.reindexObject(idxs=["Title"])
    processQueue()
    _in_other_thread(
        pg_layer["pgdb"], lambda p: api.content.rename(obj=p.f, new_id="renamed")
    )
    with pytest.raises(ConflictError):
        transaction.commit()
    transaction.abort()
    committed = _committed_rows(portal)
    assert "/plone/f/b" not in committed and "/plone/renamed/b" in committed
    assert _found(portal) == committed


class _FailingVote:
    """A data manager that votes after the storage and refuses."""

    def __init__(self, txn_manager, finalized):
        self.transaction_manager = txn_manager
        self.finalized = finalized

    def abort(self, txn):
        pass

    def tpc_begin(self, txn):
        pass

    def commit(self, txn):
        pass

    def tpc_vote(self, txn):
        # The catalog rows are already written when this vote fails.
        assert self.finalized, "voted before the storage"
        raise RuntimeError("vote refused")

    def tpc_finish(self, txn):
        pass

    def tpc_abort(self, txn):
        pass

    def sortKey(self):
        # After the storage's and the pending catalog's keys.
        return "~~~zz-failing-vote"


def test_a_failing_vote_after_the_catalog_wrote_leaves_no_trace(pg_layer, monkeypatch):
    from plone_pgcatalog.store.processor import CatalogStateProcessor

    finalized = []
    original = CatalogStateProcessor.finalize

    def finalize(self, cursor):
        original(self, cursor)
        finalized.append(True)

    monkeypatch.setattr(CatalogStateProcessor, "finalize", finalize)
    portal = pg_layer["portal"]
    folder = _site(portal)
    before = _committed_rows(portal)
    api.content.create(container=folder, type="Document", id="c", title="C")
    _retitle(portal, "f/a", "A failed")
    api.content.delete(obj=folder["b"])
    txn = transaction.get()
    txn.join(_FailingVote(transaction.manager, finalized))
    with pytest.raises(RuntimeError, match="vote refused"):
        transaction.commit()
    assert finalized
    transaction.abort()
    assert _committed_rows(portal) == before
    assert _found(portal) == before
    # A normal commit afterwards works.
    _retitle(portal, "f/a", "A after")
    transaction.commit()
    committed = _committed_rows(portal)
    assert committed["/plone/f/a"] == "A after"
    assert "/plone/f/c" not in committed and "/plone/f/b" in committed
    assert _found(portal) == committed


def test_a_failed_read_leaves_the_snapshot_usable(pg_layer):
    """A catalog statement that fails must not take the request's read
    snapshot down with it: the error propagates, and the rest of the
    request still loads objects and searches, in the same snapshot."""
    from plone_pgcatalog.store.connection import reading

    import psycopg

    portal = pg_layer["portal"]
    _site(portal)
    catalog = portal.portal_catalog
    before = _found(portal)
    _in_other_thread(
        pg_layer["pgdb"],
        lambda p: api.content.create(container=p.f, type="Document", id="later"),
    )
    with pytest.raises(psycopg.errors.DivisionByZero):
        with reading(catalog) as conn:
            conn.execute("SELECT 1 / 0")
    assert _found(portal) == before  # usable, and still the same snapshot
    portal._p_jar.cacheMinimize()
    assert portal.f.b.Title() == "B"  # the ZODB loads through it too
    transaction.abort()
    assert "/plone/f/later" in _found(portal)
