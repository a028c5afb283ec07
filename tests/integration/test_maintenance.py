"""Maintenance API: refreshCatalog, reindexIndex, clearFindAndRebuild, the
ZMI buttons and progress reporting, with ZCatalog's semantics."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.maintenance import ProgressLogHandler
from zExceptions import BadRequest

import logging
import pytest
import transaction


class Recorder:
    """An IProgressHandler that remembers every call."""

    def __init__(self):
        self.calls = []

    def init(self, ident, max):
        self.calls.append(("init", max))

    def info(self, text):
        self.calls.append(("info", text))

    def report(self, current, *args, **kw):
        self.calls.append(("report", current))

    def finish(self):
        self.calls.append(("finish",))


class Response:
    def __init__(self):
        self.location = None

    def redirect(self, location):
        self.location = location


def _pages(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for i in (1, 2, 3):
        api.content.create(
            container=portal,
            type="Document",
            id=f"p{i}",
            title=f"Old {i}",
            subject=("a",),
        )
    transaction.commit()
    return portal.portal_catalog


def _change_behind_the_catalog(portal):
    """New title and subject on p1, stored without reindexing."""
    page = portal.p1
    page.title = "Lighthouse"
    page.setSubject(("b",))
    transaction.commit()


def _find(**query) -> list[str]:
    return sorted(brain.getId for brain in api.content.find(**query))


def _paths(catalog) -> list[str]:
    paths = [b.getPath() for b in catalog.unrestrictedSearchResults(path="/plone")]
    return sorted(paths)


def test_reindex_index_updates_that_index_only(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    catalog.reindexIndex("Title")
    transaction.commit()
    assert _find(Title="Lighthouse") == ["p1"]
    assert _find(Title="Old 1") == []
    # Subject index and metadata are as they were.
    assert _find(Subject="b") == []
    assert _find(Subject="a") == ["p1", "p2", "p3"]
    brain = api.content.find(id="p1")[0]
    assert brain.Title == "Old 1" and brain.Subject == ("a",)


def test_reindex_index_accepts_a_list_of_names(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    catalog.reindexIndex(["Title", "Subject"])
    transaction.commit()
    assert _find(Title="Lighthouse", Subject="b") == ["p1"]


def test_reindex_index_of_an_unknown_name_raises_key_error_as_zcatalog(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    with pytest.raises(KeyError, match="no_such_index"):
        catalog.reindexIndex("no_such_index")


def test_reindex_index_of_an_unknown_name_raises_in_zcatalog_too(zcatalog_layer):
    portal = zcatalog_layer["portal"]
    catalog = _pages(portal)
    with pytest.raises(KeyError):
        catalog.reindexIndex("no_such_index", None)


def test_refresh_catalog_fixes_everything(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    before = _paths(catalog)
    catalog.refreshCatalog()
    transaction.commit()
    assert _find(Title="Lighthouse", Subject="b") == ["p1"]
    assert api.content.find(id="p1")[0].Title == "Lighthouse"
    assert len(before) >= 4 and _paths(catalog) == before


def test_refresh_catalog_drops_rows_of_objects_deleted_behind_its_back(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    portal._delObject("p2", suppress_events=True)
    transaction.commit()
    assert _find(id="p2") == ["p2"]  # still cataloged
    catalog.refreshCatalog()
    transaction.commit()
    assert _find(id="p2") == []
    assert _find(Subject="a") == ["p1", "p3"]


def test_refresh_catalog_with_clear_catalogs_the_same_objects(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    portal._delObject("p3", suppress_events=True)
    transaction.commit()
    before = _paths(catalog)
    catalog.refreshCatalog(clear=1)
    transaction.commit()
    assert "/plone/p3" in before
    assert _paths(catalog) == [p for p in before if p != "/plone/p3"]
    assert _find(Title="Lighthouse") == ["p1"]


def test_progress_handler_gets_init_report_finish_with_counts(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    total = len(catalog)
    recorder = Recorder()
    catalog.reindexIndex("Title", pghandler=recorder)
    assert recorder.calls == [
        ("init", total),
        *[("report", i) for i in range(1, total + 1)],
        ("finish",),
    ]
    recorder = Recorder()
    catalog.refreshCatalog(pghandler=recorder)
    # ZCatalog's refreshCatalog reports 0 .. n-1.
    assert recorder.calls == [
        ("init", total),
        *[("report", i) for i in range(total)],
        ("finish",),
    ]


def test_clear_find_and_rebuild_reports_and_recatalogs(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    before = _paths(catalog)
    recorder = Recorder()
    catalog.clearFindAndRebuild(pghandler=recorder)
    transaction.commit()
    reports = [c for c in recorder.calls if c[0] == "report"]
    assert recorder.calls[0] == ("init", len(before))
    assert recorder.calls[-1] == ("finish",)
    assert reports == [("report", i) for i in range(1, len(reports) + 1)]
    assert len(reports) == len(_paths(catalog))
    assert _find(Title="Lighthouse", Subject="b") == ["p1"]


def test_clear_find_and_rebuild_logs_rate_and_eta(pg_layer, caplog):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    with caplog.at_level(logging.INFO, logger="plone_pgcatalog.maintenance"):
        catalog.clearFindAndRebuild(pghandler=ProgressLogHandler(steps=2))
    transaction.commit()
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "plone_pgcatalog.maintenance"
    ]
    assert any("objects/s" in line and "ETA" in line for line in lines), lines
    assert _find(Subject="a") == ["p1", "p2", "p3"]


def test_log_handler_computes_rate_and_eta():
    records = []

    class Log:
        def info(self, fmt, *args):
            records.append(fmt % args)

    now = [100.0]
    handler = ProgressLogHandler(steps=10, log=Log(), clock=lambda: now[0])
    handler.init("rebuild", 40)
    now[0] = 105.0
    handler.report(5)  # not a multiple of steps: silent
    handler.report(10)
    now[0] = 120.0
    handler.finish()
    assert records == [
        "rebuild: started (40 objects to go)",
        "rebuild: 10/40 (25.0%), 2.0 objects/s, ETA 0:00:15",
        "rebuild: done in 0:00:20",
    ]


def test_manage_reindex_index_redirects_and_needs_ids(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    with pytest.raises(BadRequest):
        catalog.manage_reindexIndex(ids=[])
    response = Response()
    catalog.manage_reindexIndex(
        ids=["Title"], REQUEST={"x": 1}, RESPONSE=response, URL1="http://x/pc"
    )
    transaction.commit()
    assert response.location.startswith("http://x/pc/manage_catalogIndexes?")
    assert _find(Title="Lighthouse") == ["p1"]
    assert _find(Subject="b") == []


def test_manage_catalog_reindex_refreshes_and_redirects(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    _change_behind_the_catalog(portal)
    response = Response()
    catalog.manage_catalogReindex(None, response, "http://x/pc")
    transaction.commit()
    assert response.location.startswith("http://x/pc/manage_catalogAdvanced?")
    assert _find(Title="Lighthouse", Subject="b") == ["p1"]


def test_manage_catalog_clear_redirects(pg_layer):
    portal = pg_layer["portal"]
    catalog = _pages(portal)
    response = Response()
    catalog.manage_catalogClear({"x": 1}, response, "http://x/pc")
    transaction.commit()
    assert response.location.startswith("http://x/pc/manage_catalogAdvanced?")
    assert _paths(catalog) == []


def _refused_without_the_authenticator(browser, url: str) -> None:
    """A GET of ``url``, and a POST without plone.protect's authenticator,
    are refused."""
    from zExceptions import Forbidden

    with pytest.raises(Forbidden):
        browser.open(url)
    with pytest.raises(Forbidden):
        browser.post(url, "")


@pytest.mark.parametrize(
    "button, message, page",
    [
        ("manage_catalogRebuild", "Catalog Rebuilt", "manage_catalogAdvanced"),
        ("manage_catalogReindex", "Catalog Updated", "manage_catalogAdvanced"),
        ("manage_catalogClear", "Catalog Cleared", "manage_catalogAdvanced"),
        (
            "manage_reindexIndex?ids:list=Title",
            "Reindexing Performed",
            "manage_catalogIndexes",
        ),
    ],
)
def test_a_zmi_button_leads_to_a_page_that_shows_its_message(
    pg_layer, button, message, page
):
    """Through the publisher, as a form posts it (with plone.protect's
    authenticator): the redirect lands on a page of the tool that exists
    and shows what was done; a GET, or a POST without the authenticator,
    is refused (the buttons change only the pending store, which
    plone.protect's automatic check does not see)."""
    from plone.app.testing import SITE_OWNER_NAME
    from plone.app.testing import SITE_OWNER_PASSWORD
    from tests.integration.test_real_consumers import browser_for

    _pages(pg_layer["portal"])
    transaction.commit()
    url = f"http://nohost/plone/portal_catalog/{button}"
    with browser_for(pg_layer, SITE_OWNER_NAME, SITE_OWNER_PASSWORD) as browser:
        _refused_without_the_authenticator(browser, url)
        browser.open("http://nohost/plone/portal_catalog/manage_catalogAdvanced")
        token = browser.getControl(name="_authenticator", index=0).value
        browser.post(url, f"_authenticator={token}")
        assert browser.headers["status"].startswith("200")
        assert browser.url.startswith(f"http://nohost/plone/portal_catalog/{page}?")
        assert message in browser.contents


def test_refresh_called_by_url_needs_a_post_with_the_authenticator(pg_layer):
    """ZCatalog's ``refreshCatalog``, published as Plone's is, called
    through a URL: a link a Manager follows (a GET) or a form of another
    site (no authenticator) is refused; plone.protect does not see the
    pending changes it makes."""
    from plone.app.testing import SITE_OWNER_NAME
    from plone.app.testing import SITE_OWNER_PASSWORD
    from tests.integration.test_real_consumers import browser_for

    _pages(pg_layer["portal"])
    transaction.commit()
    url = "http://nohost/plone/portal_catalog/refreshCatalog"
    with browser_for(pg_layer, SITE_OWNER_NAME, SITE_OWNER_PASSWORD) as browser:
        _refused_without_the_authenticator(browser, url)


@pytest.mark.parametrize(
    "call",
    [
        "clearIndex?name=Subject",
        "reindexIndex?name=Subject",
        "clearFindAndRebuild",
        "rebuild",
        "catalog_object",
    ],
)
def test_maintenance_methods_plone_does_not_publish_are_not_published(pg_layer, call):
    """Not even to a Manager's POST with the authenticator: as Plone's,
    they are for code; the ZMI's buttons (``manage_*``) run them."""
    from plone.app.testing import SITE_OWNER_NAME
    from plone.app.testing import SITE_OWNER_PASSWORD
    from tests.integration.test_real_consumers import browser_for
    from zExceptions import NotFound

    _pages(pg_layer["portal"])
    transaction.commit()
    url = f"http://nohost/plone/portal_catalog/{call}"
    with browser_for(pg_layer, SITE_OWNER_NAME, SITE_OWNER_PASSWORD) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogAdvanced")
        token = browser.getControl(name="_authenticator", index=0).value
        with pytest.raises(NotFound):
            browser.post(url, f"_authenticator={token}")
    transaction.begin()
    assert len(pg_layer["portal"].portal_catalog(portal_type="Document")) > 0


def test_clear_index_by_a_form_with_the_authenticator(pg_layer):
    from plone.app.testing import SITE_OWNER_NAME
    from plone.app.testing import SITE_OWNER_PASSWORD
    from tests.integration.test_real_consumers import browser_for

    portal = pg_layer["portal"]
    _pages(portal)
    transaction.commit()
    catalog = portal.portal_catalog
    assert len(catalog.unrestrictedSearchResults(portal_type="Document")) > 0
    with browser_for(pg_layer, SITE_OWNER_NAME, SITE_OWNER_PASSWORD) as browser:
        browser.open("http://nohost/plone/portal_catalog/manage_catalogAdvanced")
        token = browser.getControl(name="_authenticator", index=0).value
        browser.post(
            "http://nohost/plone/portal_catalog/manage_clearIndex",
            f"ids:list=portal_type&_authenticator={token}",
        )
    transaction.begin()
    assert len(catalog.unrestrictedSearchResults(portal_type="Document")) == 0


def test_search_and_the_index_objects_writes_are_not_published():
    """Without docstrings, as Plone's ``search``: ZPublisher publishes no
    method without one (a URL to them is refused: "empty or missing
    docstring")."""
    from plone_pgcatalog.indexes import DataIndexView
    from plone_pgcatalog.tool import PGCatalogTool

    for method in (
        PGCatalogTool.search,
        DataIndexView.clear,
        DataIndexView.index_object,
        DataIndexView.unindex_object,
    ):
        assert not method.__doc__, method
