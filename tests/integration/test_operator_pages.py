"""The operators' side (issue 17): the slow-query log, the figures of the
ZMI tabs and the control panel (``overview``), background jobs (``jobs``),
the ZMI tabs and the control panel through Zope's publisher.

The browser tier (``tests/browser``) drives the same pages in Chromium on
a served instance; here each behaviour is checked alone.
"""

from __future__ import annotations

from Acquisition import aq_base
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import jobs
from plone_pgcatalog import overview
from plone_pgcatalog import slowlog
from plone_pgcatalog.store import schema
from plone_pgcatalog.upgrades import PROFILE_VERSION
from tests.integration.test_real_consumers import browser_for
from zExceptions import BadRequest
from zExceptions import Forbidden

import logging
import pytest
import re
import transaction


def _database(portal):
    from plone_pgcatalog.store.connection import ddl_connection

    return ddl_connection(portal.portal_catalog)


def _content(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Folder", id="news", title="News")
    for i in range(3):
        api.content.create(
            container=portal.news,
            type="News Item",
            id=f"n{i}",
            title=f"Harbour {i}",
            subject=("sea", f"s{i}"),
        )
    api.content.create(container=portal, type="Document", id="d", title="Lighthouse")
    transaction.commit()
    return portal.portal_catalog


@pytest.fixture(autouse=True)
def _empty_report():
    slowlog.LOG.clear()
    yield
    slowlog.LOG.clear()


# -- slow-query log ---------------------------------------------------------------


def test_a_search_slower_than_the_threshold_is_logged_once_and_kept(pg_layer, caplog):
    catalog = _content(pg_layer["portal"])
    catalog.slow_query_ms = 0  # every search is slow
    with caplog.at_level(logging.WARNING, logger="plone_pgcatalog.slowlog"):
        found = catalog(portal_type="News Item", sort_on="sortable_title")
        assert len(found) == 3
    lines = [r.getMessage() for r in caplog.records if "slow search" in r.message]
    assert len(lines) == 1
    assert "'portal_type': 'News Item'" in lines[0] and "SELECT" in lines[0]
    assert "3 rows" in lines[0]
    [shape] = slowlog.LOG.shapes()
    assert shape.count == 1 and shape.rows == 3
    assert "allowedRolesAndUsers" not in shape.query  # the user's groups stay out

    catalog(portal_type="Document", sort_on="sortable_title")  # same shape
    [shape] = slowlog.LOG.shapes()
    assert shape.count == 2 and shape.rows == 1
    assert shape.max_ms >= shape.mean_ms > 0


def test_each_site_reports_and_clears_its_own_slow_searches(pg_layer):
    """Several sites in one Zope process share the log; a site's report
    (the ZMI tab, the control panel, ZCatalog's ``getCatalogReport``)
    shows its own searches only: their values are its users'."""
    from plone_pgcatalog.testing import add_second_site
    from zope.component.hooks import setSite

    portal = pg_layer["portal"]
    catalog = _content(portal)
    second = add_second_site(pg_layer["app"])
    transaction.commit()
    catalog.slow_query_ms = second.portal_catalog.slow_query_ms = 0
    second.portal_catalog(SearchableText="secret words of the second site")
    setSite(portal)
    catalog(portal_type="News Item")
    [ours] = overview.query_report(catalog).shapes
    assert "News Item" in ours.query
    assert [e["query"] for e in catalog.getCatalogReport()] == [ours.query]
    with pytest.raises(KeyError):
        theirs = slowlog.LOG.shapes("/second")[0]
        overview.explain(catalog, theirs.key)
    catalog.manage_resetCatalogReport()
    assert catalog.getCatalogReport() == []
    [theirs] = second.portal_catalog.getCatalogReport()
    assert "secret words" in theirs["query"]


def test_fast_searches_and_a_log_turned_off_keep_nothing(pg_layer):
    catalog = _content(pg_layer["portal"])
    assert catalog.slow_query_ms == slowlog.DEFAULT_THRESHOLD_MS == 100
    catalog.slow_query_ms = 60_000  # no search of a loaded CI machine is slower
    catalog(portal_type="News Item")
    assert slowlog.LOG.shapes() == []
    catalog.slow_query_ms = -1
    catalog(portal_type="News Item")
    assert slowlog.LOG.shapes() == []


def test_explain_runs_the_last_slow_run_with_its_values(pg_layer):
    catalog = _content(pg_layer["portal"])
    catalog.slow_query_ms = 0
    catalog(Subject="sea")
    [shape] = slowlog.LOG.shapes()
    found, plan = overview.explain(catalog, shape.key)
    assert found is shape
    text = "\n".join(plan)
    assert "actual time=" in text and "Buffers" in text
    assert "Execution Time" in text
    with pytest.raises(KeyError):
        overview.explain(catalog, "nosuchshape")


def test_explain_shows_the_plan_a_kept_search_ran(pg_layer):
    """A folder's listing keeps its plan (``SearchSQL.plan_kept``), made
    blind to the values: its explanation is of that plan (the folder a
    parameter, ``$n``), not one made for the values, and leaves no
    prepared statement or setting behind; so is a type's search, which
    its count keeps to one plan.  A search planned for its values is
    explained with them."""
    from plone_pgcatalog.store import connection
    from psycopg.rows import tuple_row

    catalog = _content(pg_layer["portal"])
    catalog.slow_query_ms = 0
    found = catalog(
        path={"query": "/plone/news", "depth": 1}, sort_on="getObjPositionInParent"
    )
    assert len(found) == 3
    [shape] = slowlog.LOG.shapes()
    assert shape.kept
    _, plan = overview.explain(catalog, shape.key)
    text = "\n".join(plan)
    assert re.search(r"parent_path = \$\d+", text), text
    assert "actual time=" in text and "'/plone/news'" not in text
    with connection.read_connection(catalog).cursor(row_factory=tuple_row) as cursor:
        names = [
            name
            for (name,) in cursor.execute("SELECT name FROM pg_prepared_statements")
            if name.startswith("pgcatalog_explained")
        ]
        assert names == []
        assert cursor.execute("SHOW plan_cache_mode").fetchone() == ("auto",)
    # A type's search counted from the groups keeps one plan too
    # (``SearchSQL.by_the_count``): explained blind to the type.
    slowlog.LOG.clear()
    catalog(portal_type="News Item")
    [shape] = slowlog.LOG.shapes()
    assert shape.kept
    _, plan = overview.explain(catalog, shape.key)
    text = "\n".join(plan)
    assert "News Item" not in text
    assert re.search(r"portal_type = ANY \(\$\d+\)", text), text
    # Sorted on a title, it is planned for its values.
    slowlog.LOG.clear()
    catalog(portal_type="News Item", sort_on="sortable_title")
    [shape] = slowlog.LOG.shapes()
    assert not shape.kept
    _, plan = overview.explain(catalog, shape.key)
    assert "News Item" in "\n".join(plan)  # its value, in its plan


# -- figures --------------------------------------------------------------------------


def test_catalog_page_lists_a_subtree_in_path_order(pg_layer):
    catalog = _content(pg_layer["portal"])
    page = overview.catalog_page(catalog, "news", start=0, size=2)
    assert page.total == 4
    assert [e.path for e in page.entries] == ["/plone/news", "/plone/news/n0"]
    assert page.entries[1].portal_type == "News Item"
    rest = overview.catalog_page(catalog, "/plone/news", start=2, size=2)
    assert [e.path for e in rest.entries] == ["/plone/news/n1", "/plone/news/n2"]
    assert overview.catalog_page(catalog).total == len(catalog.searchAll())
    with pytest.raises(ValueError, match="not in the site"):
        overview.catalog_page(catalog, "/elsewhere")


def test_index_figures_count_objects_and_distinct_values(pg_layer):
    catalog = _content(pg_layer["portal"])
    figures = {f.name: f for f in overview.index_figures(catalog)}
    assert set(figures) == set(catalog.indexes())
    rows = len(catalog.searchAll())
    portal_type = figures["portal_type"]
    assert portal_type.objects == rows
    assert portal_type.distinct == len({b.portal_type for b in catalog.searchAll()})
    assert portal_type.column == "text"
    assert portal_type.sql_indexes and portal_type.sql_size > 0
    subject = figures["Subject"]
    assert (subject.objects, subject.distinct) == (3, 4)  # sea, s0, s1, s2
    assert figures["SearchableText"].distinct is None
    assert figures["SearchableText"].objects == rows
    assert [i.name for i in figures["SearchableText"].sql_indexes] == [
        "pgcatalog_searchable_text"
    ]
    path = figures["path"]
    assert path.objects == path.distinct == rows
    assert {i.name for i in path.sql_indexes} >= {
        "pgcatalog_path",
        "pgcatalog_parent_path",
    }
    assert (figures["Title"].objects, figures["Title"].distinct) == (rows, None)


def test_database_figures(pg_layer):
    catalog = _content(pg_layer["portal"])
    db = overview.database(catalog)
    assert db.schema_version == db.code_version == schema.SCHEMA_VERSION
    assert db.upgrades == []
    assert db.rows == len(catalog.searchAll())
    assert "pgcatalog_objects" in {r.name for r in db.relations if r.kind == "r"}
    assert db.table_size > 0
    assert db.server_version.split(".")[0].isdigit()
    pg_layer["portal"].portal_setup.setLastVersionForProfile(overview.PROFILE, "7")
    assert overview.database(catalog).upgrades == [
        "7 -> 8: The PostgreSQL catalog's control panel in Site Setup",
        "8 -> 9: Short texts in the catalog's rows (rows written again in batches)",
        "9 -> 10: Covering indexes of portal_type and review_state"
        " (index-only counts)",
        "10 -> 11: Covering indexes with the sort keys of listings"
        " (index-only counts of sorted pages)",
        "11 -> 12: Numbered role lists (the covering indexes test a number,"
        " not a list)",
        "12 -> 13: The trigger derives the changed typed columns only"
        " (faster sharing changes)",
        "13 -> 14: Covering indexes of a type and a state"
        " (index-only counts of both)",
        "14 -> 15: Keyword lists stored once, in their typed columns"
        " (a smaller table)",
        "15 -> 16: A lighter trigger (faster partial reindexes and sharing" " changes)",
        "16 -> 17: Long strings in typed columns (a page with a long tag can be"
        " saved)",
        "17 -> 18: Long strings in a FieldIndex without a typed column (a page"
        " with a long value can be saved)",
        "18 -> 19: Full text of other scripts as Plone's lexicon reads it"
        " (Japanese, Chinese, Korean, Thai, Cyrillic...)",
        "19 -> 20: Texts without a word indexed as ZCTextIndex indexes them"
        " (an empty Description)",
        "20 -> 21: Counts kept per type, state and who may see (a count of"
        " their matches without reading them)",
        "21 -> 22: Counts of what Anonymous sees kept too (an SQL index of the"
        " effective range)",
        "22 -> 23: The counts per group indexed (a type's count and a commit's"
        " merge read their groups only)",
    ]


def test_query_report_says_when_pg_stat_statements_is_missing(pg_layer):
    catalog = _content(pg_layer["portal"])
    with _database(pg_layer["portal"]) as conn:
        conn.execute("DROP EXTENSION IF EXISTS pg_stat_statements")
    transaction.begin()
    report = overview.query_report(catalog)
    assert report.statements is None
    assert "pg_stat_statements is not installed" in report.statements_note


def test_query_report_reads_pg_stat_statements_where_installed(pg_layer):
    """With the extension created: its figures when the server preloads
    the library, else a note saying what is missing (CI runs both: the
    embedded server and PostgreSQL 15 have it, neither preloads it unless
    configured to)."""
    portal = pg_layer["portal"]
    catalog = _content(portal)
    with _database(portal) as conn:
        existed = conn.execute(
            "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'"
        ).fetchone()
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        preloaded = (
            "pg_stat_statements"
            in conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        )
    try:
        transaction.begin()
        catalog(portal_type="News Item")
        report = overview.query_report(catalog)
        if preloaded:
            assert report.statements, report.statements_note
            assert all("pgcatalog_objects" in s.query for s in report.statements)
        else:
            assert report.statements is None
            assert "pg_stat_statements cannot be read" in report.statements_note
            assert "shared_preload_libraries" in report.statements_note
        assert len(catalog(portal_type="News Item")) == 3  # the snapshot lives
    finally:
        transaction.abort()
        if not existed:
            with _database(portal) as conn:
                conn.execute("DROP EXTENSION pg_stat_statements")


# -- background jobs ----------------------------------------------------------------


def test_a_verify_job_reports_progress_and_its_result(pg_layer):
    catalog = _content(pg_layer["portal"])
    job = jobs.wait(jobs.start(catalog, "Verify", jobs.verify, "admin"))
    assert job.state == "done", job.error
    assert "is in order" in job.result
    status = job.status()
    assert status["total"] == status["current"] == len(catalog.searchAll())
    assert status["percent"] == 100 and status["user"] == "admin"
    assert jobs.get(job.id) is job
    assert job in jobs.jobs("/plone")


def test_a_rebuild_job_commits_and_notes_the_time(pg_layer):
    portal = pg_layer["portal"]
    catalog = _content(portal)
    portal.d.title = "Changed behind the catalog"
    transaction.commit()
    with _database(portal) as conn:
        conn.execute("DELETE FROM pgcatalog_state WHERE key LIKE 'last_rebuild:%'")
    transaction.begin()
    assert overview.database(catalog).last_rebuild is None
    job = jobs.wait(jobs.start(catalog, "Rebuild", jobs.rebuild))
    assert job.state == "done", job.error
    assert job.result.startswith(f"{len(catalog.searchAll())} objects cataloged")
    transaction.begin()
    assert [b.getPath() for b in catalog(Title="Changed")] == ["/plone/d"]
    assert overview.database(catalog).last_rebuild is not None


def _batch_notes(portal, like: str) -> list[str]:
    with _database(portal) as conn:
        found = conn.execute(
            "SELECT description FROM transaction_log WHERE description LIKE %s"
            " ORDER BY tid",
            (like,),
        ).fetchall()
    return [note for (note,) in found]


def test_update_and_reindex_jobs_commit_in_batches(pg_layer, monkeypatch):
    portal = pg_layer["portal"]
    catalog = _content(portal)
    portal.d.title = "Changed behind the catalog"
    portal.news.n1.subject = ("land",)
    portal.news._delObject("n2", suppress_events=True)  # its row stays behind
    transaction.commit()
    monkeypatch.setattr(jobs, "BATCH_SIZE", 2)
    count = len(catalog)
    job = jobs.wait(jobs.start(catalog, "Update", jobs.update))
    assert job.state == "done", job.error
    assert job.result.startswith(f"{count} objects cataloged again or dropped in ")
    assert "batch 1 committed (2 objects)" in job.lines
    assert len(_batch_notes(portal, "plone_pgcatalog refresh /plone: batch %")) == (
        count // 2
    )
    transaction.begin()
    assert [b.getPath() for b in catalog(Title="Changed")] == ["/plone/d"]
    assert len(catalog) == count - 1  # n2's row went
    portal.news.n0.subject = ("land",)
    transaction.commit()
    job = jobs.wait(jobs.start(catalog, "Reindex", jobs.reindex(["Subject"])))
    assert job.state == "done", job.error
    assert job.result.startswith(f"Subject reindexed: {count - 1} objects in ")
    assert len(_batch_notes(portal, "plone_pgcatalog reindex Subject /plone: %")) == (
        (count - 1) // 2
    )
    transaction.begin()
    assert sorted(b.getId for b in catalog(Subject="land")) == ["n0", "n1"]


def test_the_update_job_drops_the_row_of_an_object_that_fails_to_catalog(
    pg_layer, monkeypatch
):
    """As ZCatalog's "Update Catalog" (``refreshCatalog(clear=1)``), which
    empties the catalog first: an object whose cataloging raises ends
    without a row, logged; the others are cataloged again."""
    portal = pg_layer["portal"]
    catalog = _content(portal)
    portal.news.n1.title = "Changed behind the catalog"
    transaction.commit()
    tool_class = type(aq_base(catalog))
    catalog_object = tool_class.catalog_object

    def failing_for_d(self, obj, uid=None, *args, **kw):
        if uid == "/plone/d":
            raise ValueError("an indexer that fails")
        return catalog_object(self, obj, uid, *args, **kw)

    monkeypatch.setattr(tool_class, "catalog_object", failing_for_d)
    monkeypatch.setattr(jobs, "BATCH_SIZE", 2)
    count = len(catalog)
    job = jobs.wait(jobs.start(catalog, "Update", jobs.update))
    assert job.state == "done", job.error
    assert job.result.startswith(f"{count} objects cataloged again or dropped in ")
    transaction.begin()
    paths = {b.getPath() for b in catalog.searchAll()}
    assert "/plone/d" not in paths
    assert len(paths) == count - 1
    assert [b.getPath() for b in catalog(Title="Changed")] == ["/plone/news/n1"]


def test_a_repair_job_fixes_what_verify_finds(pg_layer):
    portal = pg_layer["portal"]
    catalog = _content(portal)
    portal.d.title = "Changed behind the catalog"
    transaction.commit()
    job = jobs.wait(jobs.start(catalog, "Repair", jobs.repair))
    assert job.state == "done", job.error
    assert "1 stale" in job.result
    assert job.result.splitlines()[-1].startswith("catalog of /plone is in order")
    assert "repaired; verified again" in job.result
    transaction.begin()
    assert [b.getPath() for b in catalog(Title="Changed")] == ["/plone/d"]


def test_a_failed_job_changes_nothing(pg_layer):
    catalog = _content(pg_layer["portal"])

    def half(tool, progress):
        tool.pending_changes().uncatalog_subtree(tool.site_path())
        raise RuntimeError("broken halfway")

    job = jobs.wait(jobs.start(catalog, "Half", half))
    assert job.state == "failed"
    assert job.error == "RuntimeError: broken halfway"
    transaction.begin()
    assert len(catalog(portal_type="News Item")) == 3


def test_one_job_at_a_time_per_site(pg_layer):
    import threading

    catalog = _content(pg_layer["portal"])
    release = threading.Event()
    first = jobs.start(catalog, "Slow", lambda tool, progress: release.wait(30))
    try:
        with pytest.raises(jobs.JobRunning, match="'Slow'.*still running"):
            jobs.start(catalog, "Verify", jobs.verify)
    finally:
        release.set()
        jobs.wait(first)
    assert jobs.wait(jobs.start(catalog, "Verify", jobs.verify)).state == "done"


def test_clear_and_reindex_index_jobs(pg_layer):
    catalog = _content(pg_layer["portal"])
    job = jobs.wait(jobs.start(catalog, "Clear", jobs.clear(["Subject"])))
    assert job.state == "done", job.error
    transaction.begin()
    assert len(catalog(Subject="sea")) == 0
    assert len(catalog(portal_type="News Item")) == 3  # other indexes stay
    job = jobs.wait(jobs.start(catalog, "Reindex", jobs.reindex(["Subject"])))
    assert job.state == "done", job.error
    transaction.begin()
    assert len(catalog(Subject="sea")) == 3


# -- the ZMI tabs through the publisher -------------------------------------------


def _zmi(layer):
    return browser_for(layer, SITE_OWNER_NAME, SITE_OWNER_PASSWORD)


TABS = {
    "manage_catalogView": ["/plone/news/n0", "objects"],
    "manage_catalogIndexes": ["portal_type", "pgcatalog_c_portal_type"],
    "manage_catalogSchema": ["getObjSize", "Add metadata column"],
    "manage_catalogAdvanced": ["Clear and rebuild", "Verify and repair"],
    "manage_catalogReport": ["No slow searches yet", "pg_stat_statements"],
    "manage_catalogDatabase": ["Schema version", "pgcatalog_objects"],
}


def _active_tab(browser) -> str:
    """The label of the tab the page's tab bar shows as the current one."""
    found = re.search(r'class="nav-link active"[^>]*>([^<]+)<', browser.contents)
    return found.group(1) if found else ""


@pytest.mark.parametrize("tab", sorted(TABS))
def test_each_zmi_tab_shows_its_figures(pg_layer, tab):
    catalog = _content(pg_layer["portal"])
    catalog.slow_query_ms = 60_000  # "No slow searches yet", on any machine
    transaction.commit()
    with _zmi(pg_layer) as browser:
        browser.open(f"http://nohost/plone/portal_catalog/{tab}")
        assert browser.headers["status"].startswith("200")
        for text in TABS[tab]:
            assert text in browser.contents, text
        # ZCatalog's tab names, in the tab bar of every page.
        for label in ("Catalog", "Indexes", "Metadata", "Advanced", "Query Report"):
            assert f">{label}<" in browser.contents


def test_the_catalog_tab_opens_an_entry(pg_layer):
    _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open(
            "http://nohost/plone/portal_catalog/manage_catalogView?within=news"
        )
        browser.getLink("/plone/news/n1").click()
        assert "Catalog record at" in browser.contents
        assert _active_tab(browser) == "Catalog"
        assert "Harbour 1" in browser.contents  # metadata: Title
        assert "s1" in browser.contents  # index values: Subject


def test_the_indexes_tab_adds_and_deletes_an_index(pg_layer):
    catalog = _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogIndexes")
        form = browser.getForm(id="add-index")
        form.getControl(name="name").value = "probe_field"
        form.getControl(name="type").value = ["FieldIndex"]
        form.getControl(name="indexed_attrs").value = "Title"
        form.submit()
        assert "Index probe_field added" in browser.contents
        assert "probe_field" in catalog.indexes()
        form = browser.getForm(id="indexes")
        form.getControl(name="ids:list").getControl(value="probe_field").selected = True
        form.submit(name="reindex")
        assert "manage_catalogJob" in browser.url
        job = jobs.jobs("/plone")[0]
        assert jobs.wait(job).state == "done", job.error
        transaction.begin()
        assert [b.getPath() for b in catalog(probe_field="Lighthouse")] == ["/plone/d"]

        browser.open("http://nohost/plone/portal_catalog/manage_catalogIndexes")
        form = browser.getForm(id="indexes")
        form.getControl(name="ids:list").getControl(value="probe_field").selected = True
        form.submit(name="delete")
        assert "Deleted probe_field" in browser.contents
    transaction.begin()
    assert "probe_field" not in catalog.indexes()


def test_the_advanced_tab_starts_a_job_whose_page_shows_the_result(pg_layer):
    _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogAdvanced")
        browser.getForm(id="operation-verify").submit()
        assert "manage_catalogJob?id=" in browser.url
        job = jobs.wait(jobs.jobs("/plone")[0])
        browser.open(browser.url)
        assert "is in order" in browser.contents
        browser.open(f"http://nohost/plone/portal_catalog/manage_jobStatus?id={job.id}")
        assert '"state": "done"' in browser.contents


def test_changes_need_a_post_with_the_authenticator(pg_layer):
    catalog = _content(pg_layer["portal"])
    before = len(jobs.jobs())
    with _zmi(pg_layer) as browser:
        with pytest.raises(Forbidden):
            browser.open(
                "http://nohost/plone/portal_catalog/manage_startOperation"
                "?operation=rebuild"
            )
        with pytest.raises(Forbidden):
            browser.post(
                "http://nohost/plone/portal_catalog/manage_addColumnForm",
                "name=probe",
            )
    assert "probe" not in catalog.schema()
    assert len(jobs.jobs()) == before


def test_the_query_report_sets_the_threshold_and_explains(pg_layer):
    catalog = _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogReport")
        form = browser.getForm(id="threshold")
        form.getControl(name="slow_query_ms").value = "0"
        form.submit(label="Set")
        assert "Threshold set to 0 ms" in browser.contents
        transaction.begin()
        assert catalog.slow_query_ms == 0
        catalog(Subject="sea")
        browser.open("http://nohost/plone/portal_catalog/manage_catalogReport")
        assert "&#x27;Subject&#x27;: &#x27;sea&#x27;" in browser.contents or (
            "'Subject': 'sea'" in browser.contents
        )
        shape = next(s for s in slowlog.LOG.shapes() if "sea" in s.query)
        browser.open(
            "http://nohost/plone/portal_catalog/manage_catalogExplain"
            f"?key={shape.key}"
        )
        assert "Execution Time" in browser.contents
        assert "pgcatalog_objects" in browser.contents  # the SQL
        assert _active_tab(browser) == "Query Report"


def test_a_bad_threshold_is_refused_by_name(pg_layer):
    catalog = _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogReport")
        form = browser.getForm(id="threshold")
        form.getControl(name="slow_query_ms").value = "-5"
        with pytest.raises(BadRequest, match="slow query threshold -5"):
            form.submit(label="Set")
    transaction.begin()
    assert catalog.slow_query_ms == 100


# -- the control panel ------------------------------------------------------------


def test_the_control_panel_is_in_site_setup(pg_layer):
    portal = pg_layer["portal"]
    configlets = {
        action.getId(): action for action in portal.portal_controlpanel.listActions()
    }
    assert "plone_pgcatalog" in configlets
    assert configlets["plone_pgcatalog"].getCategory() == "plone-advanced"
    assert configlets["plone_pgcatalog"].permissions == ("Manage portal",)


def test_the_upgrade_to_8_adds_the_configlet(pg_layer):
    portal = pg_layer["portal"]
    portal.portal_controlpanel.unregisterConfiglet("plone_pgcatalog")
    setup = portal.portal_setup
    setup.setLastVersionForProfile(overview.PROFILE, "7")
    setup.upgradeProfile(overview.PROFILE)
    ids = [a.getId() for a in portal.portal_controlpanel.listActions()]
    assert "plone_pgcatalog" in ids
    assert setup.getLastVersionForProfile(overview.PROFILE) == (str(PROFILE_VERSION),)


def test_the_control_panel_shows_health_and_runs_a_verify(pg_layer):
    _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/@@pgcatalog-controlpanel")
        assert "The catalog is up to date." in browser.contents
        assert "Cataloged objects" in browser.contents
        browser.getForm(id="action-verify").submit()
        assert "@@pgcatalog-controlpanel?job=" in browser.url
        jobs.wait(jobs.jobs("/plone")[0])
        browser.open(browser.url)
        assert "is in order" in browser.contents


def test_the_control_panel_needs_manage_portal(pg_layer):
    portal = pg_layer["portal"]
    _content(portal)
    setRoles(portal, TEST_USER_ID, ["Member"])
    transaction.commit()
    with browser_for(pg_layer) as browser:
        browser.handleErrors = True
        browser.open("http://nohost/plone/@@pgcatalog-controlpanel")
        # Plone answers with its login form ("insufficient privileges").
        assert "insufficient-privileges" in browser.url
        assert "pgcatalog-health" not in browser.contents


def test_the_control_panel_refuses_a_bad_threshold_by_name(pg_layer):
    catalog = _content(pg_layer["portal"])
    with _zmi(pg_layer) as browser:
        browser.open("http://nohost/plone/@@pgcatalog-controlpanel")
        form = browser.getForm(id="threshold-form")
        form.getControl(name="slow_query_ms").value = "-2"
        form.submit()
        assert "slow query threshold &#x27;-2&#x27;" in browser.contents or (
            "slow query threshold '-2'" in browser.contents
        )
        form = browser.getForm(id="threshold-form")
        form.getControl(name="slow_query_ms").value = "250"
        form.submit()
        assert "Slow query threshold set to 250 ms." in browser.contents
    transaction.begin()
    assert catalog.slow_query_ms == 250


def test_verify_ignores_the_name_of_a_generated_schema(pg_layer):
    """plone.dexterity names a type's generated schema after its FTI's
    modification time: rows cataloged before a change of the FTI hold an
    older name, which is no difference; another interface is."""
    from plone_pgcatalog import health
    from plone_pgcatalog.extraction import indexable

    portal = pg_layer["portal"]
    catalog = _content(portal)
    generated = "plone.dexterity.schema.generated."
    with _database(portal) as conn:
        # The list is stored once, in its column (``columns.stored_once``).
        conn.execute(
            "UPDATE pgcatalog_objects SET object_provides = ARRAY("
            "SELECT CASE WHEN v LIKE %s THEN %s ELSE v END"
            " FROM unnest(object_provides) AS v) WHERE path = '/plone/d'",
            (generated + "%", generated + "plone_5_1700000000_2_0_Document"),
        )
        [stored] = conn.execute(
            "SELECT to_jsonb(object_provides) FROM pgcatalog_objects"
            " WHERE path = '/plone/d' AND NOT idx ? 'object_provides'"
        ).fetchone()
    assert generated + "plone_5_1700000000_2_0_Document" in stored
    # What the object gives now has another name: without the rule, stale.
    assert generated + "plone_5_1700000000_2_0_Document" not in (
        indexable(portal.d, catalog).object_provides
    )
    transaction.begin()
    assert health.verify(catalog).problems == 0
    with _database(portal) as conn:
        conn.execute(
            "UPDATE pgcatalog_objects SET object_provides = array_remove("
            "object_provides, 'plone.app.contenttypes.interfaces.IDocument')"
            " WHERE path = '/plone/d'"
        )
    transaction.begin()
    assert health.verify(catalog).stale == [("/plone/d", ["object_provides"])]
