"""Facet counts on Plone's classic search page (issue 18): beside each
item type of "Filter the results", the number of results of that type,
whichever types are ticked, following a search changed in the page."""

from __future__ import annotations

from playwright.sync_api import expect
from tests.browser.test_search_page import planned
from tests.browser.test_search_page import search_for
from tests.browser.test_search_page import searched


def _counts(page) -> dict[str, int]:
    badges = page.locator(".search-type-options .pgcatalog-count")
    return {
        badge.get_attribute("data-type"): int(badge.inner_text())
        for badge in badges.all()
    }


def _expected(word: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in planned(word):
        counts[item.portal_type] = counts.get(item.portal_type, 0) + 1
    return counts


def test_the_filter_shows_counts_per_type(admin_page, zope_instance, screenshot):
    page = admin_page
    search_for(page, zope_instance.site_url, "lighthouse")
    page.locator("#search-filter-toggle").click()
    expect(page.locator(".search-type-options .pgcatalog-count").first).to_be_visible()
    expected = _expected("lighthouse")
    shown = _counts(page)
    assert {t: n for t, n in shown.items() if n} == expected
    screenshot(page, "counts-lighthouse")

    # Ticking one type narrows the results, not the counts of the others.
    options = page.locator(".search-type-options")
    searched(page, lambda: page.locator("#pt_toggle").uncheck())
    searched(page, lambda: options.get_by_label("Page", exact=True).check())
    assert _counts(page) == shown

    # Another word: the counts follow the results the page replaced.
    box = page.locator("#searchform input[name='SearchableText']")
    box.fill("handbook")
    searched(page, lambda: box.press("Enter"))
    page.locator("#search-filter-toggle").click()
    expect(page.locator(".pgcatalog-count[data-type='Folder']")).to_have_text(
        str(_expected("handbook").get("Folder", 0))
    )
    assert {t: n for t, n in _counts(page).items() if n} == _expected("handbook")
    screenshot(page, "counts-handbook")
