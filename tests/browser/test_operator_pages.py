"""The operators' pages in Chromium (issue 17): the ZMI tabs of
``portal_catalog`` and Site Setup's "PostgreSQL catalog" control panel, on
``make run``'s site served by a real Zope.

Each test leaves the site as it found it (the instance is shared by the
tier): the slow-query threshold is put back, an added index deleted.
Long operations run as background jobs; the tests wait for the page's own
progress display to say "done", as an operator would.
"""

from __future__ import annotations

from playwright.sync_api import expect
from playwright.sync_api import Page
from plone_pgcatalog.demo.content import sample_items

import re

#: A job of the demo's size ends in seconds; a slow machine gets a minute.
JOB_TIMEOUT = 120_000


def _catalog(instance) -> str:
    return f"{instance.site_url}/portal_catalog"


def _job_done(page: Page) -> None:
    expect(page.locator("#job-state")).to_have_text("done", timeout=JOB_TIMEOUT)
    expect(page.locator("#job-bar")).to_have_attribute(
        "style", re.compile(r"width: 100%")
    )


def _a_folder() -> str:
    return next(item.id for item in sample_items() if item.portal_type == "Folder")


def test_the_catalog_tab_lists_filters_and_opens_an_entry(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    page.goto(f"{_catalog(zope_instance)}/manage_catalogView")
    expect(page.locator("#catalog-entries tbody tr").first).to_be_visible()
    screenshot(page, "zmi-catalog")
    folder = _a_folder()
    page.fill("#within", folder)
    page.get_by_role("button", name="Filter").click()
    paths = page.locator("#catalog-entries tbody tr td:nth-child(2) a")
    expect(paths.first).to_have_text(f"/Plone/{folder}")
    for path in paths.all_text_contents():
        assert path == f"/Plone/{folder}" or path.startswith(f"/Plone/{folder}/")
    total = int(page.locator("#catalog-total strong").text_content())
    in_plan = [i for i in sample_items() if i.container == folder or i.id == folder]
    assert total == len(in_plan)
    paths.nth(1).click()
    expect(page.locator("h3")).to_contain_text("Catalog record at")
    expect(page.locator("#entry-metadata")).to_contain_text("Title")
    expect(page.locator("#entry-indexes")).to_contain_text("portal_type")
    screenshot(page, "zmi-catalog-entry")


def test_the_catalog_tab_updates_and_removes_entries(
    admin_page, zope_instance, screenshot
):
    """ZCatalog's Update and Remove buttons (``manage_catalogObject``,
    ``manage_uncatalogObject``): the object removed is put back at the end,
    through the same method, as a script would post it."""
    page = admin_page
    catalog = _catalog(zope_instance)
    listing = f"{catalog}/manage_catalogView?within={_a_folder()}"
    page.goto(listing)
    total = int(page.locator("#catalog-total strong").text_content())
    row = page.locator("#catalog-entries tbody tr").nth(1)
    path = row.locator("td:nth-child(2) a").text_content()
    row.locator("input[type=checkbox]").check()
    page.locator("#catalog-update").click()
    expect(page.locator("body")).to_contain_text("Object Cataloged")
    page.goto(listing)
    expect(page.locator("#catalog-total strong")).to_have_text(str(total))
    page.locator("#catalog-entries tbody tr").nth(1).locator("input").check()
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#catalog-remove").click()
    try:
        expect(page.locator("body")).to_contain_text("Object Uncataloged")
        page.goto(listing)
        expect(page.locator("#catalog-total strong")).to_have_text(str(total - 1))
        paths = page.locator("#catalog-entries tbody tr td:nth-child(2) a")
        assert path not in paths.all_text_contents()
        screenshot(page, "zmi-catalog-removed")
    finally:
        token = page.locator("input[name=_authenticator]").first.get_attribute("value")
        answer = page.request.post(
            f"{catalog}/manage_catalogObject",
            form={"urls": path, "_authenticator": token},
        )
        assert answer.ok
    page.goto(listing)
    expect(page.locator("#catalog-total strong")).to_have_text(str(total))
    assert path in paths.all_text_contents()


def test_the_indexes_tab_shows_figures_adds_reindexes_and_deletes(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    page.goto(f"{_catalog(zope_instance)}/manage_catalogIndexes")
    row = page.locator("#index-portal_type")
    expect(row).to_contain_text("FieldIndex")
    expect(row).to_contain_text("pgcatalog_c_portal_type")
    assert int(row.locator(".index-objects").text_content()) > len(sample_items())
    screenshot(page, "zmi-indexes")

    page.fill("#index-name", "browser_probe")
    page.select_option("#index-type", "FieldIndex")
    page.fill("input[name=indexed_attrs]", "Title")
    page.get_by_role("button", name="Add", exact=True).click()
    try:
        expect(page.locator("body")).to_contain_text("Index browser_probe added")
        probe = page.locator("#index-browser_probe")
        expect(probe.locator(".index-objects")).to_have_text("0")
        page.check("#check-browser_probe")
        page.get_by_role("button", name="Reindex").click()
        _job_done(page)
        expect(page.locator("#job-result")).to_contain_text("browser_probe reindexed")
        screenshot(page, "zmi-reindex-job")
        page.goto(f"{_catalog(zope_instance)}/manage_catalogIndexes")
        assert int(probe.locator(".index-objects").text_content()) > 0
    finally:
        # Deleted whatever happened: the instance serves the other tests.
        _delete_ticked(
            page,
            f"{_catalog(zope_instance)}/manage_catalogIndexes",
            "#check-browser_probe",
        )
    expect(page.locator("body")).to_contain_text("Deleted browser_probe")
    expect(page.locator("#index-browser_probe")).to_have_count(0)


def _delete_ticked(page: Page, url: str, checkbox: str) -> None:
    page.goto(url)
    if page.locator(checkbox).count():
        page.check(checkbox)
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Delete").click()


def test_the_metadata_tab_adds_and_deletes_a_column(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    page.goto(f"{_catalog(zope_instance)}/manage_catalogSchema")
    expect(page.locator("#columns")).to_contain_text("getObjSize")
    page.fill("#column-name", "browser_column")
    page.get_by_role("button", name="Add", exact=True).click()
    try:
        expect(page.locator("body")).to_contain_text("Column browser_column added")
        screenshot(page, "zmi-metadata")
    finally:
        _delete_ticked(
            page,
            f"{_catalog(zope_instance)}/manage_catalogSchema",
            "#column-browser_column",
        )
    expect(page.locator("body")).to_contain_text("Deleted browser_column")
    expect(page.locator("#column-browser_column")).to_have_count(0)


def test_the_advanced_tab_verifies_and_rebuilds_with_progress(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    page.goto(f"{_catalog(zope_instance)}/manage_catalogAdvanced")
    screenshot(page, "zmi-advanced")
    page.locator("#operation-verify input[type=submit]").click()
    # (the ZMI's script takes the query off the address bar)
    expect(page).to_have_url(re.compile(r"manage_catalogJob"))
    expect(page.locator("#job-title")).to_have_text("Verify")
    _job_done(page)
    expect(page.locator("#job-result")).to_contain_text("is in order")
    screenshot(page, "zmi-verify-job")

    page.goto(f"{_catalog(zope_instance)}/manage_catalogAdvanced")
    page.locator("#operation-rebuild input[type=submit]").click()
    _job_done(page)
    expect(page.locator("#job-result")).to_contain_text("objects cataloged")
    expect(page.locator("#job-lines")).to_contain_text("objects cataloged")
    page.goto(f"{_catalog(zope_instance)}/manage_catalogAdvanced")
    expect(page.locator("#jobs")).to_contain_text("Clear and rebuild")
    expect(page.locator("#jobs")).to_contain_text("Verify")


def test_the_query_report_logs_a_slow_search_and_shows_its_plan(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    report = f"{_catalog(zope_instance)}/manage_catalogReport"
    page.goto(report)
    page.get_by_role("button", name="Clear report").click()
    expect(page.locator("#no-slow-queries")).to_be_visible()
    page.fill("#slow_query_ms", "0")
    page.get_by_role("button", name="Set").click()
    expect(page.locator("body")).to_contain_text("Threshold set to 0 ms")
    try:
        page.goto(f"{zope_instance.site_url}/@@search?SearchableText=lighthouse")
        page.goto(report)
        rows = page.locator("#slow-queries tbody tr")
        expect(rows.first).to_be_visible()
        expect(page.locator("#slow-queries")).to_contain_text("lighthouse")
        screenshot(page, "zmi-query-report")
        page.locator("#slow-queries tr", has_text="lighthouse").locator(
            ".explain-link"
        ).first.click()
        expect(page.locator("#explain-sql")).to_contain_text("pgcatalog_objects")
        expect(page.locator("#explain-plan")).to_contain_text("Execution Time")
        expect(page.locator("#explain-plan")).to_contain_text("Buffers")
        screenshot(page, "zmi-explain")
    finally:
        page.goto(report)
        page.fill("#slow_query_ms", "100")
        page.get_by_role("button", name="Set").click()
        expect(page.locator("body")).to_contain_text("Threshold set to 100 ms")


def test_the_database_tab(admin_page, zope_instance, screenshot):
    page = admin_page
    page.goto(f"{_catalog(zope_instance)}/manage_catalogDatabase")
    expect(page.locator("#schema-version")).to_have_text(re.compile(r"^\d+$"))
    expect(page.locator("#upgrades")).to_contain_text("none")
    expect(page.locator("#database-tables")).to_contain_text("pgcatalog_objects")
    expect(page.locator("#database-sizes")).to_contain_text("pgcatalog_path")
    assert int(page.locator("#database-rows").text_content()) > len(sample_items())
    screenshot(page, "zmi-database")


def test_the_control_panel_from_site_setup(admin_page, zope_instance, screenshot):
    page = admin_page
    page.goto(f"{zope_instance.site_url}/@@overview-controlpanel")
    # The Site Setup overview's tile (the toolbar's menu has the same link).
    page.locator("a.btn[href$='@@pgcatalog-controlpanel']").click()
    expect(page).to_have_url(re.compile(r"@@pgcatalog-controlpanel$"))
    expect(page.locator("#pgcatalog-status")).to_have_text("The catalog is up to date.")
    rows = int(page.locator("#health-rows").text_content())
    assert rows > len(sample_items())
    screenshot(page, "control-panel")

    page.locator("#action-verify input[type=submit]").click()
    expect(page).to_have_url(re.compile(r"job=\d+"))
    _job_done(page)
    expect(page.locator("#job-result")).to_contain_text("is in order")
    screenshot(page, "control-panel-verify")

    page.goto(f"{zope_instance.site_url}/@@pgcatalog-controlpanel")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#action-rebuild input[type=submit]").click()
    _job_done(page)
    expect(page.locator("#job-result")).to_contain_text(f"{rows} objects cataloged")
    page.goto(f"{zope_instance.site_url}/@@pgcatalog-controlpanel")
    expect(page.locator("#health-last-rebuild")).not_to_have_text("never")
    expect(page.locator("#pgcatalog-jobs")).to_contain_text("Clear and rebuild")


def test_the_control_panel_sets_the_slow_query_threshold(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    page.goto(f"{zope_instance.site_url}/@@pgcatalog-controlpanel")
    page.fill("#slow_query_ms", "250")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#pgcatalog-message")).to_contain_text("250 ms")
    expect(page.locator("#health-slow")).to_contain_text("the threshold is 250 ms")
    screenshot(page, "control-panel-threshold")
    page.fill("#slow_query_ms", "100")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#health-slow")).to_contain_text("the threshold is 100 ms")
