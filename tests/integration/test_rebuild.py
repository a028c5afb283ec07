"""The rebuild in place: ``clearFindAndRebuild`` (one transaction) and the
batched ``rebuild`` (a commit every ``batch_size`` objects); the batched
``reindex_index`` and ``refresh_catalog`` of the command line, the jobs
and the upgrade steps.

Readers on other connections keep the complete catalog while a batched
rebuild runs, rows of objects that are gone are dropped at its end, the
pending rows and the ZODB cache stay bounded by one batch, and a batch
that conflicts with a concurrent edit is cataloged again.  The rebuild's
progress handler (``info`` after every committed batch, ``report`` after
every object) is where the tests look in while it runs.
"""

from __future__ import annotations

from Acquisition import aq_base
from concurrent.futures import ThreadPoolExecutor
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone.dexterity.utils import createContent
from plone_pgcatalog import maintenance
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.testing import SITE_ID
from zope.component.hooks import setSite

import logging
import psycopg
import pytest
import transaction


class Hooks:
    """An IProgressHandler that runs callbacks while the rebuild runs."""

    def __init__(self, on_report=None, on_info=None):
        self.on_report = on_report
        self.on_info = on_info
        self.calls = []

    def init(self, ident, max):
        self.calls.append(("init", max))

    def report(self, current, *args, **kw):
        self.calls.append(("report", current))
        if self.on_report:
            self.on_report(current)

    def info(self, text):
        self.calls.append(("info", text))
        if self.on_info and text.startswith("batch ") and " committed " in text:
            self.on_info(text)

    def finish(self):
        self.calls.append(("finish",))

    def committed_batches(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "info" and " committed " in c[1]]


def _pages(portal, count: int = 12) -> None:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for i in range(count):
        api.content.create(
            container=portal,
            type="Document",
            id=f"p{i}",
            title=f"Page {i}",
            subject=("a",) if i % 2 else ("b",),
        )
    transaction.commit()


def _in_other_thread(function, *args):
    """``function(*args)`` in a thread of its own (its own transactions)."""
    with ThreadPoolExecutor(1) as executor:
        return executor.submit(function, *args).result()


def _with_site(db, work):
    """``work(portal)`` on a new ZODB connection; commits what it changed."""
    conn = db.open()
    try:
        portal = conn.root()["Application"][SITE_ID]
        setSite(portal)
        login(portal, TEST_USER_NAME)  # a Manager (see _pages)
        result = work(portal)
        transaction.commit()
        return result
    finally:
        transaction.abort()
        logout()
        setSite(None)
        conn.close()


def _read_catalog(portal) -> dict:
    """What a reader asks: everything, one field query, a full-text query."""
    catalog = portal.portal_catalog

    def paths(**query):
        return sorted(b.getPath() for b in catalog.unrestrictedSearchResults(**query))

    return {
        "all": paths(path="/" + SITE_ID),
        "subject a": paths(Subject="a"),
        "title": paths(Title="Page"),
        "count": len(catalog),
    }


def _read_elsewhere(layer) -> dict:
    return _in_other_thread(_with_site, layer["pgdb"], _read_catalog)


def _sql(layer, statement, params=()):
    with psycopg.connect(layer["pgcatalog_dsn"], autocommit=True) as conn:
        return conn.execute(statement, params).fetchall()


_COUNTER = "SELECT value FROM pgcatalog_state WHERE key = 'counter'"


def _stored_titles(layer) -> dict[str, str]:
    """path -> Title of every committed row of the site (a fresh connection)."""
    found = _sql(
        layer,
        "SELECT path, meta->>'Title' FROM pgcatalog_objects"
        " WHERE (path = %s OR path LIKE %s)",
        ("/" + SITE_ID, f"/{SITE_ID}/%"),
    )
    return dict(found)


def _titles(portal, **query) -> list[str]:
    catalog = portal.portal_catalog
    return sorted(b.Title for b in catalog.unrestrictedSearchResults(**query))


# -- readers keep the complete catalog -------------------------------------------


def test_readers_see_the_complete_catalog_after_every_batch(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal)
    before = _read_elsewhere(pg_layer)
    assert len(before["all"]) >= 13 and before["count"] == len(before["all"])
    counters = []
    seen = []

    def after_batch(text):
        counters.append(_sql(pg_layer, _COUNTER)[0][0])
        seen.append(_read_elsewhere(pg_layer))

    hooks = Hooks(on_info=after_batch)
    done = portal.portal_catalog.rebuild(batch_size=4, pghandler=hooks)
    assert done == len(before["all"])
    # Several batches, each one committed (the change counter moved), and
    # the reader saw the whole catalog each time.
    assert len(seen) == -(-done // 4) >= 4
    assert counters == sorted(set(counters))
    assert seen == [before] * len(seen)


def test_clear_find_and_rebuild_readers_see_the_old_catalog_until_commit(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 4)
    portal.p1.title = "Renamed"
    transaction.commit()
    before = _read_elsewhere(pg_layer)
    portal.portal_catalog.clearFindAndRebuild()
    assert _read_elsewhere(pg_layer) == before
    # This transaction sees its own rebuild (read-your-writes).
    assert _titles(portal, Title="Renamed") == ["Renamed"]
    transaction.commit()
    after = _read_elsewhere(pg_layer)
    assert after["all"] == before["all"]
    assert after["title"] == [p for p in before["title"] if p != "/plone/p1"]


# -- what the rebuild fixes -------------------------------------------------------


@pytest.mark.parametrize(
    "batched", [True, False], ids=["rebuild", "clearFindAndRebuild"]
)
def test_rows_of_deleted_objects_go_and_stale_rows_are_fixed(pg_layer, batched):
    portal = pg_layer["portal"]
    _pages(portal, 6)
    catalog = portal.portal_catalog
    portal._delObject("p2", suppress_events=True)
    portal.p3.title = "Lighthouse"
    portal.p4.setSubject(("z",))
    transaction.commit()
    assert "/plone/p2" in _stored_titles(pg_layer)  # an orphan row
    if batched:
        catalog.rebuild(batch_size=2, pghandler=Hooks())
    else:
        catalog.clearFindAndRebuild(pghandler=Hooks())
        # Read-your-writes: the orphan is gone before the commit too.
        assert "/plone/p2" not in [b.getPath() for b in catalog.searchAll()]
        transaction.commit()
    stored = _stored_titles(pg_layer)
    assert "/plone/p2" not in stored
    assert stored["/plone/p3"] == "Lighthouse"
    assert _titles(portal, Subject="z") == ["Page 4"]
    assert _titles(portal, Title="Lighthouse") == ["Lighthouse"]
    assert len(catalog) == len(stored) == len(list(_walk_paths(catalog)))


def _walk_paths(catalog):
    from plone_pgcatalog.maintenance import content_objects

    for obj in content_objects(catalog):
        yield "/".join(obj.getPhysicalPath())


def test_objects_created_while_it_runs_keep_their_rows(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 8)
    portal._delObject("p1", suppress_events=True)  # an orphan, for contrast
    transaction.commit()

    def create(portal):
        # A page in the site's root: the walk has listed the root already.
        api.content.create(container=portal, type="Document", id="late", title="Late")

    created = []

    def after_batch(text):
        if not created:
            created.append(_in_other_thread(_with_site, pg_layer["pgdb"], create))

    portal.portal_catalog.rebuild(batch_size=3, pghandler=Hooks(on_info=after_batch))
    stored = _stored_titles(pg_layer)
    assert created and stored["/plone/late"] == "Late"
    assert "/plone/p1" not in stored


def test_objects_deleted_while_it_runs_are_not_cataloged_again(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 8)

    def delete(portal):
        portal.manage_delObjects(["p7"])

    deleted = []

    def after_batch(text):
        if not deleted:
            deleted.append(_in_other_thread(_with_site, pg_layer["pgdb"], delete))

    portal.portal_catalog.rebuild(batch_size=3, pghandler=Hooks(on_info=after_batch))
    assert deleted
    stored = _stored_titles(pg_layer)
    assert "/plone/p7" not in stored and "/plone/p6" in stored


# -- batches --------------------------------------------------------------------


def test_batches_commit_and_pending_rows_stay_within_one_batch(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 10)
    for i in range(10):
        portal[f"p{i}"].title = f"New {i}"
    transaction.commit()
    pending_sizes = []
    after_first = []

    def after_object(current):
        pending = current_pending()
        pending_sizes.append(len(pending.rows) if pending else 0)

    def after_batch(text):
        if not after_first:
            after_first.append(_stored_titles(pg_layer))

    hooks = Hooks(on_report=after_object, on_info=after_batch)
    done = portal.portal_catalog.rebuild(batch_size=5, pghandler=hooks)
    assert max(pending_sizes) == 5
    assert len(hooks.committed_batches()) == -(-done // 5)
    # Each batch is a transaction of its own, named in the transaction log.
    notes = _sql(
        pg_layer,
        "SELECT description FROM transaction_log WHERE description LIKE %s",
        ("plone_pgcatalog rebuild /plone: batch %",),
    )
    assert len(notes) == len(hooks.committed_batches())
    # The first batch's rows are visible from a fresh connection before the
    # rebuild ends; pages come later in the walk than the site itself.
    stored = _stored_titles(pg_layer)
    assert sorted(stored) == sorted(after_first[0])
    assert stored["/plone/p9"] == "New 9"
    assert after_first[0]["/plone/p9"] == "Page 9"
    assert sum(t != stored[p] for p, t in after_first[0].items()) >= 5


def test_batched_rebuild_logs_count_rate_and_eta_per_batch(pg_layer, caplog):
    portal = pg_layer["portal"]
    _pages(portal, 4)
    with caplog.at_level(logging.INFO, logger="plone_pgcatalog.maintenance"):
        done = portal.portal_catalog.rebuild(batch_size=3)
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "plone_pgcatalog.maintenance" and " committed " in r.getMessage()
    ]
    assert len(lines) == -(-done // 3)
    assert all("objects/s" in line and "ETA" in line for line in lines), lines
    assert f"batch {len(lines)} committed" in lines[-1]
    assert f": {done} objects," in lines[-1]


def test_memory_stays_bounded_by_the_batch_size(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    portal.invokeFactory("Folder", "bulk")
    folder = portal.bulk
    # Stored without events (fast): only the rebuild catalogs them.
    for start in range(0, 2000, 500):
        for i in range(start, start + 500):
            item = createContent("Document", id=f"d{i}", title=f"Item {i}")
            folder._setObject(f"d{i}", item, suppress_events=True)
        transaction.commit()
    assert _titles(portal, Title="Item 1999") == []
    jar = portal._p_jar
    cache_size = jar._cache.cache_size
    peak = {"pending": 0, "cache": 0}

    def after_object(current):
        pending = current_pending()
        peak["pending"] = max(peak["pending"], len(pending.rows) if pending else 0)

    def after_batch(text):
        peak["cache"] = max(peak["cache"], jar._cache.cache_non_ghost_count)

    jar.cacheMinimize()
    hooks = Hooks(on_report=after_object, on_info=after_batch)
    done = portal.portal_catalog.rebuild(batch_size=200, pghandler=hooks)
    assert done > 2000
    assert peak["pending"] == 200
    # After each batch the cache is back to its target size, give or take
    # what the walk itself holds: far below the objects cataloged.
    assert 0 < peak["cache"] <= cache_size + 200 < done
    assert len(_stored_titles(pg_layer)) == len(portal.portal_catalog)
    assert _titles(portal, Title="Item 1999") == ["Item 1999"]


# -- concurrent edits -------------------------------------------------------------


def test_a_batch_that_conflicts_with_an_edit_is_cataloged_again(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 6)

    def edit(portal):
        # Behind the catalog's back: only the rebuild can catalog it.
        portal.p3.title = "Edited meanwhile"

    edited = []

    def after_object(current):
        pending = current_pending()
        p3 = portal.p3
        if edited or pending is None or p3._p_oid is None:
            return
        from ZODB.utils import u64

        if u64(p3._p_oid) in pending.rows:
            # p3's row is pending in this batch; another transaction
            # changes p3 and commits first.
            edited.append(_in_other_thread(_with_site, pg_layer["pgdb"], edit))

    hooks = Hooks(on_report=after_object)
    portal.portal_catalog.rebuild(batch_size=100, pghandler=hooks)
    assert edited
    assert any(
        "conflicted (ReadConflictError)" in c[1] for c in hooks.calls if c[0] == "info"
    )
    assert _stored_titles(pg_layer)["/plone/p3"] == "Edited meanwhile"
    assert _titles(portal, Title="meanwhile") == ["Edited meanwhile"]


def _during_the_batch_of(portal, name, work):
    """A progress handler that runs ``work`` in another transaction once
    the row (or a reindex's patch) of ``portal[name]`` is pending in the
    batch."""
    from ZODB.utils import u64

    done = []

    def after_object(current):
        pending = current_pending()
        if done or pending is None:
            return
        zoid = u64(portal[name]._p_oid)
        if zoid in pending.rows or zoid in pending.patches:
            done.append(work())

    return Hooks(on_report=after_object), done


def _remove_without_storing(site):
    """p3 out of the site and the catalog, storing nothing of p3 (Plone's
    removal stores it, which the read-conflict check catches on its own)."""
    site._delOb("p3")
    site.portal_catalog.uncatalog_object("/plone/p3")


def test_a_batch_whose_object_is_removed_meanwhile_leaves_no_row_of_it(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 6)
    hooks, done = _during_the_batch_of(
        portal,
        "p3",
        lambda: _in_other_thread(_with_site, pg_layer["pgdb"], _remove_without_storing),
    )
    portal.portal_catalog.rebuild(batch_size=100, pghandler=hooks)
    assert done
    assert any("conflicted" in c[1] for c in hooks.calls if c[0] == "info")
    stored = _stored_titles(pg_layer)
    assert "/plone/p3" not in stored and "/plone/p4" in stored


def test_a_batch_whose_folder_is_renamed_meanwhile_leaves_no_old_path(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    for i in range(4):
        api.content.create(container=folder, type="Document", id=f"d{i}", title="D")
    transaction.commit()

    def rename(site):
        api.content.rename(obj=site.f, new_id="renamed")

    hooks, done = _during_the_batch_of(
        folder,
        "d1",
        lambda: _in_other_thread(_with_site, pg_layer["pgdb"], rename),
    )
    portal.portal_catalog.rebuild(batch_size=100, pghandler=hooks)
    assert done
    stored = set(_stored_titles(pg_layer))
    assert not [path for path in stored if path.startswith("/plone/f/")]
    assert {f"/plone/renamed/d{i}" for i in range(4)} <= stored


# -- batched reindex and refresh ------------------------------------------------


def _found_elsewhere(layer, **query) -> list[str]:
    """The paths another connection's search finds (committed rows only)."""

    def search(portal):
        found = portal.portal_catalog.unrestrictedSearchResults(**query)
        return sorted(brain.getPath() for brain in found)

    return _in_other_thread(_with_site, layer["pgdb"], search)


def _retitled_behind_the_catalog(portal, count: int) -> list[str]:
    """Pages ``p0``... with new titles that only a reindex catalogs."""
    _pages(portal, count)
    for i in range(count):
        portal[f"p{i}"].title = f"Renamed {i}"
    transaction.commit()
    return [f"/plone/p{i}" for i in range(count)]


def test_batched_reindex_commits_full_batches_and_leaves_the_rest(pg_layer):
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 10)
    pending_sizes = []
    seen_after_batches = []

    def after_object(current):
        pending = current_pending()
        pending_sizes.append(len(pending.patches) + len(pending.rows) if pending else 0)

    def after_batch(text):
        seen_after_batches.append(_found_elsewhere(pg_layer, Title="Renamed"))

    hooks = Hooks(on_report=after_object, on_info=after_batch)
    done = maintenance.reindex_index(
        portal.portal_catalog, "Title", pghandler=hooks, paths=paths, batch_size=4
    )
    assert done == 10
    # Reported before each object is read (as ZCatalog's reindexIndex):
    # the fourth is read, and its batch committed, after its report.
    assert max(pending_sizes) == 3
    assert hooks.committed_batches() == [
        "batch 1 committed (4 objects)",
        "batch 2 committed (4 objects)",
    ]
    # Each full batch is a transaction of its own, named in the log, and
    # readers elsewhere see it as it commits.
    notes = _sql(
        pg_layer,
        "SELECT description FROM transaction_log WHERE description LIKE %s"
        " ORDER BY tid",
        ("plone_pgcatalog reindex Title /plone: batch %",),
    )
    assert [note for (note,) in notes] == [
        "plone_pgcatalog reindex Title /plone: batch 1",
        "plone_pgcatalog reindex Title /plone: batch 2",
    ]
    assert seen_after_batches == [paths[:4], sorted(paths[:8])]
    # The last two are the caller's: not committed until it commits.
    assert _found_elsewhere(pg_layer, Title="Renamed") == sorted(paths[:8])
    transaction.commit()
    assert _found_elsewhere(pg_layer, Title="Renamed") == sorted(paths)
    # Metadata stays as it was (ZCatalog's reindexIndex).
    assert _stored_titles(pg_layer)["/plone/p9"] == "Page 9"


def test_batched_reindex_keeps_memory_within_a_batch(pg_layer):
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 12)
    jar = portal._p_jar
    peak = {"pending": 0, "cache": 0}

    def after_object(current):
        pending = current_pending()
        held = len(pending.patches) + len(pending.rows) if pending else 0
        peak["pending"] = max(peak["pending"], held)

    def after_batch(text):
        peak["cache"] = max(peak["cache"], jar._cache.cache_non_ghost_count)

    jar._cache.cache_size = 5  # the pages outnumber it
    jar.cacheMinimize()
    hooks = Hooks(on_report=after_object, on_info=after_batch)
    maintenance.reindex_index(
        portal.portal_catalog, ["Title"], pghandler=hooks, paths=paths, batch_size=3
    )
    transaction.commit()
    assert peak["pending"] == 2  # seen before the batch's third is read
    # Each batch's commit lets the cache shrink back to its size: the
    # site's objects on the path and at most one batch of pages, not all
    # twelve.
    assert 0 < peak["cache"] < 12
    assert _found_elsewhere(pg_layer, Title="Renamed") == sorted(paths)


def test_reindex_index_in_one_transaction_lets_the_objects_read_go(
    pg_layer, monkeypatch
):
    """ZCatalog's API (one transaction): the pending changes stay until the
    commit, the objects read are garbage-collected as it goes."""
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 12)
    jar = portal._p_jar
    jar._cache.cache_size = 5

    def cached_while_reindexing(every: int) -> list[int]:
        monkeypatch.setattr(maintenance, "DEFAULT_BATCH_SIZE", every)
        cached = []
        hooks = Hooks(
            on_report=lambda current: cached.append(jar._cache.cache_non_ghost_count)
        )
        transaction.abort()
        jar.cacheMinimize()
        portal.portal_catalog.reindexIndex("Title", None, pghandler=hooks)
        assert len(current_pending().patches) >= 12
        return cached

    kept = cached_while_reindexing(10**6)
    collected = cached_while_reindexing(3)
    transaction.commit()
    # Every third object the cache is back to its size: not what all the
    # objects read so far hold.
    assert len(kept) == len(collected) > 12
    assert all(k > 5 for k in kept[4:]), kept
    # Reported before each object is read: the 4th, 7th... come after a
    # collection.
    assert [c for c in collected[3::3] if c > 5] == [], collected
    assert collected[-1] < kept[-1] / 2, (collected, kept)
    assert _found_elsewhere(pg_layer, Title="Renamed") == sorted(paths)


def test_a_batched_reindex_reads_a_conflicting_batch_again(pg_layer):
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 6)

    def edit(site):
        site.p3.title = "Edited meanwhile"  # only the reindex catalogs it

    hooks, done = _during_the_batch_of(
        portal, "p3", lambda: _in_other_thread(_with_site, pg_layer["pgdb"], edit)
    )
    maintenance.reindex_index(
        portal.portal_catalog, "Title", pghandler=hooks, paths=paths, batch_size=6
    )
    assert done
    conflicts = [c[1] for c in hooks.calls if c[0] == "info" and "conflicted" in c[1]]
    assert conflicts == [
        "batch 1 conflicted (ReadConflictError): writing its 6 objects again (1/4)"
    ]
    assert _found_elsewhere(pg_layer, Title="meanwhile") == ["/plone/p3"]
    assert len(_found_elsewhere(pg_layer, Title="Renamed")) == 5


def test_a_conflicting_first_batch_keeps_what_the_caller_changed_before(pg_layer):
    """An upgrade step's batches come after the steps before it in the
    same transaction: a batch aborted after a conflict must not take their
    changes with it."""
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 6)
    portal.manage_changeProperties(title="Changed by an earlier step")

    def edit(site):
        site.p3.title = "Edited meanwhile"

    hooks, done = _during_the_batch_of(
        portal, "p3", lambda: _in_other_thread(_with_site, pg_layer["pgdb"], edit)
    )
    maintenance.reindex_index(
        portal.portal_catalog, "Title", pghandler=hooks, paths=paths, batch_size=6
    )
    transaction.commit()
    assert done
    assert any("conflicted" in c[1] for c in hooks.calls if c[0] == "info")

    def site_title(site):
        return site.title

    assert _in_other_thread(_with_site, pg_layer["pgdb"], site_title) == (
        "Changed by an earlier step"
    )
    assert _found_elsewhere(pg_layer, Title="meanwhile") == ["/plone/p3"]


def test_a_batched_reindex_leaves_no_row_of_an_object_removed_meanwhile(pg_layer):
    portal = pg_layer["portal"]
    paths = _retitled_behind_the_catalog(portal, 6)
    hooks, done = _during_the_batch_of(
        portal,
        "p3",
        lambda: _in_other_thread(_with_site, pg_layer["pgdb"], _remove_without_storing),
    )
    count = maintenance.reindex_index(
        portal.portal_catalog, "Title", pghandler=hooks, paths=paths, batch_size=6
    )
    transaction.commit()
    assert done
    assert count == 5
    stored = _stored_titles(pg_layer)
    assert "/plone/p3" not in stored and "/plone/p4" in stored
    assert "/plone/p3" not in _found_elsewhere(pg_layer, Title="Renamed")


@pytest.mark.parametrize("batch_size", [None, 3])
def test_refresh_with_clear_drops_the_rows_of_gone_and_failing_objects(
    pg_layer, monkeypatch, batch_size
):
    """ZCatalog's ``refreshCatalog(clear=1)``: what is gone or fails to
    catalog has no row after it.  In batches, without clearing first."""
    portal = pg_layer["portal"]
    _retitled_behind_the_catalog(portal, 8)
    portal._delObject("p1", suppress_events=True)  # its row stays behind
    transaction.commit()
    catalog = portal.portal_catalog
    tool_class = type(aq_base(catalog))
    catalog_object = tool_class.catalog_object

    def failing_for_p2(self, obj, uid=None, *args, **kw):
        if uid == "/plone/p2":
            raise ValueError("an indexer that fails")
        return catalog_object(self, obj, uid, *args, **kw)

    monkeypatch.setattr(tool_class, "catalog_object", failing_for_p2)
    before = len(catalog)
    counts = []
    hooks = Hooks(
        on_info=lambda text: counts.append(
            len(_found_elsewhere(pg_layer, path="/plone"))
        )
    )
    done = maintenance.refresh_catalog(
        catalog, clear=1, pghandler=hooks, batch_size=batch_size
    )
    transaction.commit()
    stored = _stored_titles(pg_layer)
    assert "/plone/p1" not in stored and "/plone/p2" not in stored
    assert stored["/plone/p7"] == "Renamed 7"  # metadata too
    assert len(stored) == before - 2
    if batch_size:
        assert done == before
        assert len(counts) == before // 3
        # Never empty: each batch replaced rows; the rows of p1 and p2
        # went with the batch that found them gone or failing.
        assert all(count >= before - 2 for count in counts), counts
    else:
        assert done == before - 1  # p2 failed
        assert counts == []


# -- entry points -----------------------------------------------------------------


def test_manage_catalog_rebuild_rebuilds_in_batches_and_redirects(pg_layer):
    portal = pg_layer["portal"]
    _pages(portal, 3)
    portal._delObject("p0", suppress_events=True)
    transaction.commit()

    class Response:
        location = None

        def redirect(self, location):
            self.location = location

    response = Response()
    portal.portal_catalog.manage_catalogRebuild(response, "http://x/pc")
    assert response.location.startswith("http://x/pc/manage_catalogAdvanced?")
    assert "/plone/p0" not in _stored_titles(pg_layer)  # committed
