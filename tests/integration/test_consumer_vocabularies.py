"""The catalog through plone.app.vocabularies' Catalog vocabulary.

The related-items widget and folder contents search through it
(``@@getVocabulary?name=plone.app.vocabularies.Catalog``): criteria of
plone.app.querystring, a SearchableText typed into the widget among them.
Its ``brains`` catch ZCTextIndex's ``ParseError`` (a search string without
a word to search: ``*``, ``?``, ``-*``) and search again without the text,
listing every item of the path; so must they here.  Probes run in the
ZCatalog site and in the plone_pgcatalog site (``test_real_consumers``).
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import compare
from tests.integration.test_real_consumers import observe_both
from tests.integration.test_real_consumers import oracle
from zope.component import getUtility
from zope.schema.interfaces import IVocabularyFactory

import pytest
import transaction

OPERATION = "plone.app.querystring.operation."


def _vocabulary(text: str):
    def probe(layer) -> list[str]:
        factory = getUtility(IVocabularyFactory, "plone.app.vocabularies.Catalog")
        query = {
            "criteria": [
                {"i": "SearchableText", "o": OPERATION + "string.contains", "v": text},
                {"i": "path", "o": OPERATION + "string.path", "v": "/docs"},
            ],
            "sort_on": "sortable_title",
        }
        return [term.value.getPath() for term in factory(layer["portal"], query)]

    return probe


#: Search strings as the widget sends them: without a word, and with one.
TEXTS = ("*", "?", "-*", "NOT", "lighthouse", "lighthouse*")
PROBES = {f"Catalog vocabulary {text!r}": _vocabulary(text) for text in TEXTS}


@pytest.fixture(scope="module")
def observed():
    return observe_both(PROBES)


@pytest.mark.parametrize("name", list(PROBES))
def test_catalog_vocabulary_as_with_zcatalog(observed, name):
    compare(observed, name)


def test_a_string_without_words_lists_every_item_of_the_path(observed):
    """The premise: ZCatalog's ParseError makes the vocabulary list the
    whole path, more than a word finds."""
    everything = oracle(observed, "Catalog vocabulary '*'")
    assert len(everything) > len(oracle(observed, "Catalog vocabulary 'lighthouse*'"))
    assert everything == oracle(observed, "Catalog vocabulary 'NOT'")


def test_the_search_page_shows_nothing_for_a_string_without_words(pg_layer):
    """Plone's ``@@search`` catches the ParseError of its results, as with
    ZCatalog; the item-type counts of this catalog's page do too (before,
    the counts would have raised where the results did not)."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="d", title="Lighthouse")
    transaction.commit()
    with browser_for(pg_layer) as browser:
        browser.open("http://nohost/plone/@@search?SearchableText=lighthouse")
        results = _search_results(browser.contents)
        assert 'href="http://nohost/plone/d"' in results
        assert 'data-counts="{&quot;Document&quot;: 1}"' in results
        # Plone's page makes "!!!*" of it (``munge_search_term``).
        browser.open("http://nohost/plone/@@search?SearchableText=!!!")
        assert browser.headers["status"].startswith("200")
        results = _search_results(browser.contents)
        assert "No results were found." in results
        assert 'data-counts="{}"' in results


def _search_results(page: str) -> str:
    return page[page.index('id="search-results"') :]
