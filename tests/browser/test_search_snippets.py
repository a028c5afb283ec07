"""Snippets on Plone's classic search page (issue 18): each result of a
search for words shows the passage of its text where they matched, the
words marked, instead of its description."""

from __future__ import annotations

from playwright.sync_api import expect
from tests.browser.test_search_page import planned
from tests.browser.test_search_page import RESULT_TITLES
from tests.browser.test_search_page import search_for
from tests.browser.test_search_page import searched

import re


def test_each_result_shows_where_the_word_matched(
    admin_page, zope_instance, screenshot
):
    page = admin_page
    search_for(page, zope_instance.site_url, "lighthouse")
    results = page.locator("#search-results .searchResults > li")
    expect(results.first.locator(".pgcatalog-snippet")).to_be_visible()
    shown = min(len(planned("lighthouse")), 10)
    assert results.count() == shown
    assert page.locator(".pgcatalog-snippet").count() == shown
    # The description gives way to the snippet.
    assert page.locator("#search-results .croppedDescription").count() == 0
    for snippet in page.locator(".pgcatalog-snippet").all():
        marked = [text.lower() for text in snippet.locator("mark").all_inner_texts()]
        assert marked and all(re.fullmatch(r"lighthouses?", m) for m in marked)
    screenshot(page, "snippets-lighthouse")

    # Another search, replaced in the page: the snippets follow it.
    box = page.locator("#searchform input[name='SearchableText']")
    box.fill("handbook")
    searched(page, lambda: box.press("Enter"))
    titles = page.locator(RESULT_TITLES)
    assert titles.count() == min(len(planned("handbook")), 10)
    marks = page.locator(".pgcatalog-snippet mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} <= {"handbook", "handbooks"}
    screenshot(page, "snippets-handbook")
