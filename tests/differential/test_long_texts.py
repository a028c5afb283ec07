"""Differential: a page with the text of a long document, ZCatalog as the
oracle.

A ``tsvector`` holds about 1 MB: the commit of a page whose text gave a
longer one failed ("string is too long for tsvector"), so a site could
not take the text of a book's PDF or a pasted log.  The words are now
indexed as written as far as the vector allows, then each later word
once (``fulltext.within_vector``): every word of a text with a usual
vocabulary is found, phrases of its first part too.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.textfield.value import RichTextValue
from tests.conftest import collect_in

import pytest
import random
import string
import transaction


def _book() -> tuple[str, list[str]]:
    """About 2 MB of words from a vocabulary of 20,000, used as words of
    a language are (a few often, most rarely); the vocabulary."""
    chance = random.Random(7)
    vocabulary = [
        "".join(
            chance.choice(string.ascii_lowercase) for _ in range(chance.randint(4, 12))
        )
        for _ in range(20_000)
    ]
    used = [
        vocabulary[min(int(chance.paretovariate(1.0)) - 1, len(vocabulary) - 1)]
        for _ in range(200_000)
    ]
    text = " ".join(["opening sentence here", *used, *vocabulary, "closing word"])
    return text, vocabulary


TEXT, VOCABULARY = _book()

#: (name, SearchableText)
QUERIES = [
    ("the first words", "opening"),
    ("a phrase of the beginning", '"opening sentence here"'),
    ("the last word", "closing"),
    ("a word of the middle", VOCABULARY[10_000]),
    ("a rare word", VOCABULARY[19_999]),
    ("two words", f"{VOCABULARY[5]} AND {VOCABULARY[19_000]}"),
    ("a word of the short page", "shortpage"),
]


def _run(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    with api.env.adopt_roles(["Manager"]):
        book = api.content.create(container=portal, type="Document", id="book")
        book.text = RichTextValue(f"<p>{TEXT}</p>", "text/html", "text/x-html-safe")
        book.reindexObject()
        api.content.create(
            container=portal, type="Document", id="short", title="shortpage closing"
        )
    transaction.commit()
    return {
        name: sorted(b.getId for b in catalog(SearchableText=text))
        for name, text in QUERIES
    }


@pytest.fixture(scope="module")
def outcomes():
    return collect_in("zcatalog", _run), collect_in("pg", _run)


@pytest.mark.parametrize("name", [name for name, _ in QUERIES])
def test_as_zcatalog(outcomes, name):
    zcatalog, pgcatalog = outcomes
    assert zcatalog[name], "the test's own premise: ZCatalog finds some"
    assert pgcatalog[name] == zcatalog[name]


def test_a_text_of_more_different_words_than_a_vector_holds(pg_layer, caplog):
    """300,000 different words (a log, a table of codes): more than one
    ``tsvector`` holds.  The page is saved; its words are indexed as far as
    the vector allows (the first part as written: phrases there are
    found); the rest is logged as not indexed.  ZCatalog would index them
    all (README, "Where results differ from ZCatalog")."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    chance = random.Random(11)
    many = [
        "".join(chance.choice(string.ascii_lowercase) for _ in range(10))
        for _ in range(300_000)
    ]
    with api.env.adopt_roles(["Manager"]):
        page = api.content.create(container=portal, type="Document", id="codes")
        text = " ".join(["opening sentence here", *many])
        page.text = RichTextValue(f"<p>{text}</p>", "text/html", "text/x-html-safe")
        page.reindexObject()
    with caplog.at_level("WARNING", logger="plone_pgcatalog.fulltext"):
        transaction.commit()
    catalog = portal.portal_catalog
    for found in ("opening", '"opening sentence here"', many[1000], many[10_000]):
        assert [b.getId for b in catalog(SearchableText=found)] == ["codes"], found
    assert catalog(SearchableText=many[-1]).actual_result_count == 0
    assert "are not indexed" in caplog.text
