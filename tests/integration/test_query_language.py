"""Query behaviour that needs a real site: read-your-writes, relevance,
stemming, several sites in one database."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.testing import add_second_site

import pytest
import transaction


def _paths(brains) -> list[str]:
    return [brain.getPath() for brain in brains]


def _page(container, id, title, text="", language="en"):
    page = api.content.create(container=container, type="Document", id=id, title=title)
    page.description = text
    page.setLanguage(language)
    page.reindexObject()
    return page


def test_a_search_sees_what_the_transaction_cataloged(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(portal, "fresh", "Uncommitted lighthouse")
    # Not committed: the row exists only in this transaction.
    brains = api.content.find(SearchableText="lighthouse")
    assert _paths(brains) == ["/plone/fresh"]
    assert brains[0].Title == "Uncommitted lighthouse"
    assert portal.portal_catalog.getpath(brains[0].getRID()) == "/plone/fresh"


def test_a_search_sees_renames_edits_and_deletions_before_commit(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    _page(folder, "a", "Alpha")
    _page(folder, "b", "Beta")
    transaction.commit()

    api.content.rename(obj=folder, new_id="g")
    folder = portal["g"]
    folder["b"].title = "Gamma"
    folder["b"].reindexObject()
    api.content.delete(obj=folder["a"])

    assert _paths(api.content.find(path="/plone/f")) == []
    assert _paths(api.content.find(path="/plone/g", sort_on="id")) == [
        "/plone/g/b",
        "/plone/g",
    ]
    assert [b.Title for b in api.content.find(Title="Gamma")] == ["Gamma"]
    assert len(api.content.find(Title="Beta")) == 0


def test_savepoint_rollback_is_seen_by_the_next_search(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    savepoint = transaction.savepoint()
    _page(portal, "tmp", "Temporary")
    assert len(api.content.find(id="tmp")) == 1
    savepoint.rollback()
    assert len(api.content.find(id="tmp")) == 0


def test_full_text_results_are_ordered_by_relevance_with_scores(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(portal, "once", "Harbour", "a lighthouse by the sea")
    _page(portal, "often", "Lighthouse", "lighthouse lighthouse lighthouse keeper")
    transaction.commit()
    brains = api.content.find(SearchableText="lighthouse")
    assert _paths(brains) == ["/plone/often", "/plone/once"]
    assert brains[0].data_record_score_ > brains[1].data_record_score_ > 0
    assert brains[0].data_record_normalized_score_ == 100
    assert 0 < brains[1].data_record_normalized_score_ < 100
    # Sorted on an index: that order, as in ZCatalog.
    sorted_brains = api.content.find(
        SearchableText="lighthouse", sort_on="sortable_title"
    )
    assert _paths(sorted_brains) == ["/plone/once", "/plone/often"]


def test_full_text_stems_by_the_items_language(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(portal, "en", "Lighthouses of the coast", language="en")
    _page(portal, "de", "Die Häuser am Hafen", language="de")
    transaction.commit()
    # Exact words always match; "lighthouse" finds "Lighthouses" by its stem.
    assert _paths(api.content.find(SearchableText="lighthouse")) == ["/plone/en"]
    assert _paths(api.content.find(SearchableText="Lighthouses")) == ["/plone/en"]
    # German stems are asked for when the query names the language.
    assert _paths(api.content.find(SearchableText="Haus", Language="de")) == [
        "/plone/de"
    ]
    # Prefixes and phrases keep working on exact words.
    assert _paths(api.content.find(SearchableText="hafe*")) == ["/plone/de"]
    assert _paths(api.content.find(SearchableText='"am hafen"')) == ["/plone/de"]
    assert _paths(api.content.find(SearchableText='"hafen am"')) == []


def test_stray_operators_around_words_are_dropped(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(portal, "the", "The sea")
    transaction.commit()
    assert _paths(api.content.find(SearchableText="the")) == ["/plone/the"]
    for text in ("sea AND", "OR sea", "sea)(", "(sea", "sea NOT"):
        result = api.content.find(SearchableText=text)
        assert _paths(result) == ["/plone/the"], text


@pytest.mark.parametrize("text", ["AND", "NOT", "(", '"', "*", "!!!*", "'; --", "-sea"])
def test_a_string_without_a_word_to_search_raises_parse_error(pg_layer, text):
    """As ZCTextIndex (``differential/queries.py`` compares the error with
    ZCatalog's); Plone's consumers catch ``ParseError``."""
    from Products.ZCTextIndex.ParseTree import ParseError

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _page(portal, "the", "The sea")
    transaction.commit()
    with pytest.raises(ParseError, match="has no word to search"):
        api.content.find(SearchableText=text)


def test_each_site_in_a_database_sees_only_its_own_content(pg_layer):
    from zope.component.hooks import setSite

    portal = pg_layer["portal"]
    second = add_second_site(pg_layer["app"])
    with api.env.adopt_roles(["Manager"]):
        api.content.create(container=second, type="Document", id="doc", title="Zweites")
    transaction.commit()
    setSite(portal)
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="doc", title="First")
    transaction.commit()

    assert _paths(
        portal.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/plone/doc"]
    assert _paths(
        second.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/second/doc"]
    everything = _paths(second.portal_catalog.unrestrictedSearchResults(path="/"))
    assert "/second/doc" in everything
    assert all(path.startswith("/second") for path in everything)
    assert len(second.portal_catalog) == len(everything)
