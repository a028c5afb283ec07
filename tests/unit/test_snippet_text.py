"""Snippets' pure parts (issue 18): the words a search marks, the text
kept, the HTML of a passage."""

from __future__ import annotations

from plone_pgcatalog.fulltext import Highlight
from plone_pgcatalog.fulltext import highlight
from plone_pgcatalog.fulltext import IndexedText
from plone_pgcatalog.fulltext import MARK_END
from plone_pgcatalog.fulltext import MARK_START
from plone_pgcatalog.fulltext import mark_unspaced
from plone_pgcatalog.fulltext import MAX_SOURCE
from plone_pgcatalog.fulltext import snippet_html
from plone_pgcatalog.fulltext import source_text

import pytest


def test_the_words_a_match_holds_are_marked_not_the_negated_ones():
    assert highlight("harbour -zope NOT plone (ship OR boat)") == Highlight(
        "boat | harbour | ship", ("boat", "harbour", "ship")
    )


def test_phrases_mark_their_words_and_prefixes_stay_prefixes():
    assert highlight('"old harbour" harb*') == Highlight(
        "harb:* | harbour | old", ("harb", "harbour", "old")
    )


def test_words_are_marked_folded_and_as_typed():
    # A text without a stemmer that folds it keeps "Küste" as written.
    assert highlight("Küste") == Highlight("kuste | küste", ("kuste", "küste"))
    assert highlight("Kü*") == Highlight("ku:* | kü:*", ("ku", "kü"))


@pytest.mark.parametrize("query", ["", "-zope", "NOT", "()", "  "])
def test_nothing_to_mark(query):
    assert highlight(query) is None


def test_operators_never_reach_the_tsquery_as_syntax():
    found = highlight("a:* | b & !c <-> d' OR 'e")
    # "!" is no operator of the search language: "c" is a word.  "a:*" is
    # the word "a", as Plone's lexicon reads it: its "*" follows no word
    # character.
    assert set(found.query.split(" | ")) == {"a", "b", "c", "d", "e"}


def test_the_kept_text_has_no_nul_or_marks_and_a_bound():
    assert source_text(f"a\x00b{MARK_START}c{MARK_END}d") == "a b c d"
    assert len(source_text("x" * (MAX_SOURCE + 10))) == MAX_SOURCE


def test_indexed_text_carries_its_source():
    text = IndexedText("old harbour", "The Old Harbour!")
    assert text == "old harbour" and text.source == "The Old Harbour!"


def test_a_passage_as_html():
    marked = f"1 < 2 & the {MARK_START}harbour{MARK_END} <b>"
    assert snippet_html(marked, True, True) == (
        "1 &lt; 2 &amp; the <mark>harbour</mark> &lt;b&gt;"
    )
    assert snippet_html("x", False, False) == "… x …"


def _marks(passage: str, query: str) -> str | None:
    found = highlight(query)
    marked = mark_unspaced(passage, found.words, found.prefixes)
    return marked and marked.replace(MARK_START, "[").replace(MARK_END, "]")


@pytest.mark.parametrize(
    "passage, query, marked",
    [
        # No word of those scripts matches: ts_headline's passage stays.
        ("Plone and Zope", "plone 日本", None),
        ("日本のPlone", "plone 日本", "[日本]の[Plone]"),
        # A prefix marks the whole word, an exact word only itself.
        ("日本 Plones Plone", "plone* 日本", "[日本] [Plones] [Plone]"),
        ("日本 Plones Plone", "plone 日本", "[日本] Plones [Plone]"),
        # Any case, as typed with accents or folded; a word of its own only.
        ("日本 KÖLN koln Kolner", "Köln 日本", "[日本] [KÖLN] [koln] Kolner"),
        ("東京 Москва москвы", "москва 東京", "[東京] [Москва] москвы"),
    ],
)
def test_words_of_other_scripts_are_marked_beside_japanese(passage, query, marked):
    assert _marks(passage, query) == marked
