"""Snippets on Plone's classic search page (issue 18): each result of a
search for words shows the passage of its text where they matched, the
words marked, instead of its description."""

from __future__ import annotations

from collections.abc import Iterator
from playwright.sync_api import expect
from tests.browser.test_search_page import planned
from tests.browser.test_search_page import RESULT_TITLES
from tests.browser.test_search_page import search_for
from tests.browser.test_search_page import searched
from tests.browser.test_search_page import shown_titles

import pytest
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


#: A page in Japanese (a trip to Hakodate's morning market): "朝市" (the
#: morning market) once, in its second paragraph, with more than a
#: snippet's lead before it and more than its width after it; "蟹" (crab)
#: once, starting a run of characters after a comma.
JAPANESE_ID = "hakodate"
JAPANESE_TITLE = "港町の一日"
JAPANESE_TEXT = (
    "<p>函館は北海道の南にある港町で、坂道と古い洋館の多い町として知られて"
    "います。明治時代から外国との貿易で栄え、教会や領事館の建物が今も大切に"
    "残されています。春には桜が咲き、夏には山の上から見る夜景が美しく、冬に"
    "は雪に覆われた静かな通りを歩くことができます。</p>"
    "<p>旅の二日目は朝早く起きて、駅のすぐ近くにある朝市に出かけました。新鮮"
    "なイカやホタテ、ウニを売る店がずらりと並び、蟹を焼く香りが通りいっぱい"
    "に漂っていました。店の人が元気な声で客を呼び、観光客も地元の人も楽しそ"
    "うに買い物をしていました。</p>"
    "<p>昼は市場の食堂で海鮮丼を食べ、午後は路面電車に乗って元町の教会を見に"
    "行きました。夕方には函館山に登り、港の灯りが少しずつともっていく様子を"
    "眺めました。次に来るときは、ぜひ冬の函館も見てみたいと思います。</p>"
)


@pytest.fixture(scope="module")
def japanese_page(admin_restapi) -> Iterator[str]:
    """The page of ``JAPANESE_TEXT`` at the site root (private), its
    title; deleted afterwards."""
    body = {
        "@type": "Document",
        "id": JAPANESE_ID,
        "title": JAPANESE_TITLE,
        "text": {"data": JAPANESE_TEXT, "content-type": "text/html"},
    }
    status, answer = admin_restapi("POST", "", body)
    assert status == 201, answer
    try:
        yield JAPANESE_TITLE
    finally:
        admin_restapi("DELETE", JAPANESE_ID)


def test_japanese_matches_are_marked_in_their_passage(
    admin_page, zope_instance, screenshot, japanese_page
):
    """PostgreSQL's parser reads a run of Japanese as one word: the
    matches are marked by ``fulltext.mark_unspaced``, in the passage of
    the text around them."""
    page = admin_page
    search_for(page, zope_instance.site_url, "朝市")
    snippet = page.locator("#search-results .pgcatalog-snippet")
    expect(snippet).to_have_count(1)
    assert shown_titles(page) == [japanese_page]
    assert snippet.locator("mark").all_inner_texts() == ["朝市"]
    html = snippet.inner_html()
    assert "駅のすぐ近くにある<mark>朝市</mark>に出かけました。新鮮" in html
    # The passage is cut at both ends: the match is far from either.
    assert html.startswith("… ") and html.endswith(" …")
    assert "函館は北海道" not in html and "思います" not in html
    screenshot(page, "japanese-word")

    # One character is a prefix (Plone's lexicon holds the text in pairs
    # of characters): only the character is marked, not the run it
    # starts, which ts_headline would mark whole.
    box = page.locator("#searchform input[name='SearchableText']")
    box.fill("蟹")
    searched(page, lambda: box.press("Enter"))
    assert shown_titles(page) == [japanese_page]
    assert snippet.locator("mark").all_inner_texts() == ["蟹"]
    assert "ずらりと並び、<mark>蟹</mark>を焼く香りが" in snippet.inner_html()
    screenshot(page, "japanese-character")
