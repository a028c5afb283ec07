"""Plone's classic search page (``@@search``) on the PostgreSQL catalog.

What a visitor sees and does in a real browser: a search from the form,
the type filter, the three sort orders, batches of ten, and anonymous
visitors seeing published items only.  The page updates its results by
JavaScript (``pat-search``: a fetch of the page with ``ajax_load=1``, whose
``#search-results`` replaces the shown one); ``searched`` waits for that.

Expected results come from the plan of the demo's sample content
(``demo.content.sample_items``), not from the catalog under test.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from playwright.sync_api import expect
from playwright.sync_api import Page
from plone_pgcatalog.demo.content import sample_items
from plone_pgcatalog.demo.content import SampleItem

import pytest
import re

#: Type titles of the filter, by portal_type.
TYPE_TITLES = {
    "Document": "Page",
    "Event": "Event",
    "Folder": "Folder",
    "News Item": "News Item",
}
RESULT_TITLES = "#search-results .result-title a"
RESULT_COUNT = "#search-results-number"


def _mentions(item: SampleItem, word: str) -> bool:
    """Whether ``item`` holds ``word`` in a field of its SearchableText (id,
    title, description, text, tags), or its plural, which the catalog's
    English stemming also finds."""
    text = " ".join(
        (item.id, item.title, item.description, item.text or "", *item.subjects)
    )
    return re.search(rf"\b{re.escape(word)}s?\b", text, re.IGNORECASE) is not None


def planned(word: str, *, published: bool | None = None) -> list[SampleItem]:
    """The sample items holding ``word``; only the (un)published ones if
    ``published`` is given."""
    return [
        item
        for item in sample_items()
        if _mentions(item, word) and (published is None or item.publish == published)
    ]


def titles(items: list[SampleItem]) -> set[str]:
    return {item.title for item in items}


def shown_titles(page: Page) -> list[str]:
    return [title.strip() for title in page.locator(RESULT_TITLES).all_inner_texts()]


def shown_count(page: Page) -> int:
    return int(page.locator(RESULT_COUNT).inner_text())


def searched(page: Page, action: Callable[[], None]) -> None:
    """Run ``action`` and wait until the search page has replaced its
    results with the answer of the search it started."""
    # The replacement is a new element: without this mark.
    page.locator("#search-results").evaluate(
        "element => element.setAttribute('data-test-stale', '')"
    )
    with page.expect_response(lambda answer: "ajax_load=1" in answer.url) as answer:
        action()
    assert answer.value.ok, f"{answer.value.status} from {answer.value.url}"
    page.wait_for_selector("#search-results:not([data-test-stale])")


def search_for(page: Page, site_url: str, word: str) -> None:
    page.goto(f"{site_url}/@@search?SearchableText={word}")
    expect(page.locator("#search-term")).to_contain_text(word)


def test_a_search_from_the_form_lists_the_items_holding_the_word(
    admin_page, zope_instance, screenshot
):
    expected = planned("lighthouse")
    # Private items are among them: a Manager must see those too.
    assert {item.publish for item in expected} == {True, False}
    page = admin_page
    page.goto(f"{zope_instance.site_url}/@@search")
    screenshot(page, "empty")
    box = page.locator("#searchform input[name='SearchableText']")
    box.fill("lighthouse")
    searched(page, lambda: box.press("Enter"))
    screenshot(page, "lighthouse")

    assert set(shown_titles(page)) == titles(expected)
    assert shown_count(page) == len(expected)
    expect(page.locator("#search-term")).to_contain_text("lighthouse")
    assert "SearchableText=lighthouse" in page.url  # the address follows


def test_anonymous_visitors_find_only_published_items(page, zope_instance, screenshot):
    published = planned("lighthouse", published=True)
    private = planned("lighthouse", published=False)
    assert published and private
    search_for(page, zope_instance.site_url, "lighthouse")
    screenshot(page, "lighthouse-anonymous")

    shown = shown_titles(page)
    assert set(shown) == titles(published)
    assert shown_count(page) == len(published)
    assert not set(shown) & titles(private)
    assert page.locator("#search-results a.state-private").count() == 0


def test_the_type_filter_narrows_the_results(admin_page, zope_instance, screenshot):
    expected = planned("lighthouse")
    page = admin_page
    search_for(page, zope_instance.site_url, "lighthouse")
    page.locator("#search-filter-toggle").click()
    options = page.locator(".search-type-options")
    expect(options).to_be_visible()
    labels = options.locator("li:not(:first-child) label").all_inner_texts()
    # The types that have content (the catalog's unique values of
    # portal_type), in the order of their titles.
    assert [label.strip() for label in labels] == sorted(
        {TYPE_TITLES[item.portal_type] for item in sample_items()}
    )
    screenshot(page, "filter-open")

    searched(page, lambda: page.locator("#pt_toggle").uncheck())
    searched(page, lambda: options.get_by_label("Page", exact=True).check())
    screenshot(page, "pages-only")
    pages = [item for item in expected if item.portal_type == "Document"]
    assert 0 < len(pages) < len(expected)
    assert set(shown_titles(page)) == titles(pages)
    assert shown_count(page) == len(pages)
    assert "portal_type%3Alist=Document" in page.url

    searched(page, lambda: options.get_by_label("News Item", exact=True).check())
    screenshot(page, "pages-and-news")
    both = [item for item in expected if item.portal_type in ("Document", "News Item")]
    assert len(pages) < len(both) < len(expected)
    assert set(shown_titles(page)) == titles(both)
    assert shown_count(page) == len(both)


#: Pages of their own for the date sort, in the order they are created:
#: (id, title, publishing date or None for a private page): a date order
#: the test controls, apart from the sample's.
ALMANACS = (
    ("almanac-of-tides", "Almanac of tides", "2024-03-01T09:00:00+00:00"),
    ("winter-almanac", "Winter almanac", "2024-05-01T09:00:00+00:00"),
    ("garden-almanac", "Garden almanac", "2024-04-01T09:00:00+00:00"),
    ("draft-almanac", "Draft almanac", None),
)
ALMANAC_FOLDER = "library"


@pytest.fixture(scope="module")
def almanacs(admin_restapi) -> Iterator[list[str]]:
    """The pages of ``ALMANACS`` (a word no sample item holds), newest
    ``Date`` first: the private one (its last modification, now), then
    the published ones by publishing date.  Deleted afterwards."""
    assert planned("almanac") == []
    created = []
    try:
        for id_, title, effective in ALMANACS:
            body = {
                "@type": "Document",
                "id": id_,
                "title": title,
                "description": f"{title}: dates and tables for the year.",
            }
            if effective is not None:
                body["effective"] = effective
            status, answer = admin_restapi("POST", ALMANAC_FOLDER, body)
            assert status == 201, answer
            created.append(id_)
            if effective is not None:
                status, answer = admin_restapi(
                    "POST", f"{ALMANAC_FOLDER}/{id_}/@workflow/publish", {}
                )
                assert status == 200, answer
        private = [title for _, title, effective in ALMANACS if effective is None]
        published = sorted(
            (entry for entry in ALMANACS if entry[2] is not None),
            key=lambda entry: entry[2],
            reverse=True,
        )
        yield private + [title for _, title, _ in published]
    finally:
        for id_ in created:
            admin_restapi("DELETE", f"{ALMANAC_FOLDER}/{id_}")


def test_sort_alphabetically_by_date_and_by_relevance(
    admin_page, zope_instance, screenshot, almanacs
):
    page = admin_page
    search_for(page, zope_instance.site_url, "almanac")
    screenshot(page, "relevance")
    by_relevance = shown_titles(page)
    assert set(by_relevance) == set(almanacs)
    sorting = page.locator("#sorting-options")
    expect(sorting.locator("a.active")).to_have_attribute("data-sort", "relevance")

    def sort(key: str) -> None:
        page.get_by_role("button", name="Sort by").click()
        searched(page, lambda: sorting.locator(f"a[data-sort='{key}']").click())
        expect(sorting.locator("a.active")).to_have_attribute("data-sort", key)

    sort("sortable_title")
    screenshot(page, "alphabetically")
    alphabetical = sorted(almanacs, key=str.casefold)
    assert alphabetical != by_relevance  # else this could not fail
    assert shown_titles(page) == alphabetical
    assert "sort_on=sortable_title" in page.url

    sort("Date")
    screenshot(page, "newest-first")
    assert almanacs not in (by_relevance, alphabetical)
    assert shown_titles(page) == almanacs
    assert "sort_on=Date&sort_order=reverse" in page.url

    sort("relevance")
    screenshot(page, "relevance-again")
    assert shown_titles(page) == by_relevance


def test_results_come_in_batches_of_ten(admin_page, zope_instance, screenshot):
    expected = planned("handbook")
    assert 20 < len(expected) <= 30  # three batches
    page = admin_page
    search_for(page, zope_instance.site_url, "handbook")
    screenshot(page, "batch-1")
    assert shown_count(page) == len(expected)
    batches = [shown_titles(page)]
    results = page.locator("ol.searchResults")
    assert results.get_attribute("start") == "1"

    for number in (2, 3):
        link = page.locator(f"#search-results .pagination a:text-is('{number}')")
        searched(page, link.click)
        screenshot(page, f"batch-{number}")
        expect(page.locator(".pagination .active")).to_have_text(str(number))
        assert results.get_attribute("start") == str(10 * (number - 1) + 1)
        assert f"b_start%3Aint={10 * (number - 1)}" in page.url
        assert shown_count(page) == len(expected)
        batches.append(shown_titles(page))

    assert [len(batch) for batch in batches] == [10, 10, len(expected) - 20]
    every = [title for batch in batches for title in batch]
    assert len(set(every)) == len(every)  # no item in two batches
    assert set(every) == titles(expected)
