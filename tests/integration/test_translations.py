"""Translations kept per process (``plone_pgcatalog.translations``).

A query asked again on the same index definitions is not translated again;
anything the translation reads that changes gives another key: the
definitions committed (an index added, an index's state changed), the
values and their types, the ready typed columns, a translator that does not
say its translations may be kept.  A search with this transaction's
pending changes never takes a kept translation.
"""

from __future__ import annotations

from DateTime import DateTime
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.textfield.value import RichTextValue
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.registry import TRANSLATORS
from plone_pgcatalog.store import connection
from plone_pgcatalog.translations import BUDGET
from plone_pgcatalog.translations import freeze
from plone_pgcatalog.translations import translations
from zope.component import getGlobalSiteManager

import pytest
import transaction


@pytest.fixture
def site(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(3):
        api.content.create(container=portal, type="Document", id=f"d{number}")
    api.content.create(container=portal, type="Folder", id="f")
    transaction.commit()
    translations.clear()
    return portal


def _key(query: dict, columns=None):
    """The key as searches make it: with the committed state read, so that
    the states of the definitions found in it are used again
    (``_states_in``)."""
    catalog = api.portal.get_tool("portal_catalog")
    return translations.key(
        query,
        catalog.getIndexDefinitions(),
        catalog.site_path(),
        QueryContext(columns=columns or {}),
        connection.snapshot_id(catalog),
    )


def _ids(query: dict) -> list[str]:
    catalog = api.portal.get_tool("portal_catalog")
    return sorted(brain.getId for brain in catalog.unrestrictedSearchResults(**query))


def test_a_search_asked_again_is_translated_once(site):
    first = _ids({"portal_type": "Document"})
    transaction.commit()  # a new request
    assert _ids({"portal_type": "Document"}) == first == ["d0", "d1", "d2"]
    assert (translations.misses, translations.hits) == (1, 1)
    assert _ids({"portal_type": "Folder"}) == ["f"]
    assert (translations.misses, translations.hits) == (2, 1)


def test_a_kept_translation_composes_its_statement_once(site, monkeypatch):
    # Composing a statement and rendering it for psycopg was the largest
    # part of a search's Python; a kept translation keeps its statement as
    # text, the same text the connection renders.
    from plone_pgcatalog.store import search
    from plone_pgcatalog.store.connection import read_connection

    composed = []
    compose = search._search_statement

    def counting(plan, metadata):
        composed.append(metadata)
        return compose(plan, metadata)

    monkeypatch.setattr(search, "_search_statement", counting)
    for _ in range(3):
        assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2"]
        transaction.commit()  # a new request
    assert composed == [True]
    (plan,) = translations._kept.values()
    statement, params = search.search_statement(plan)
    catalog = api.portal.get_tool("portal_catalog")
    fresh, fresh_params = compose(plan, True)
    assert statement.as_string(None) == fresh.as_string(read_connection(catalog))
    assert params == fresh_params


def test_anonymous_searches_of_one_minute_share_a_translation(site):
    def at(moment: str):
        return _key({"portal_type": "Document", "effectiveRange": DateTime(moment)})

    assert at("2030/01/01 10:00:05 UTC") == at("2030/01/01 10:00:50 UTC")
    assert at("2030/01/01 10:00:50 UTC") != at("2030/01/01 10:01:01 UTC")


@pytest.mark.parametrize("index", ["created", "start"])  # DateIndex, recurring
def test_date_queries_of_one_minute_share_a_translation(site, index):
    def since(moment: str):
        return _key({index: {"query": [DateTime(moment)], "range": "min"}})

    assert since("2030/01/01 10:00:05 UTC") == since("2030/01/01 10:00:50 UTC")
    assert since("2030/01/01 10:00:50 UTC") != since("2030/01/01 10:01:01 UTC")
    # A value that is not a date is kept by its exact value (and fails).
    assert since("2030/01/01 10:00:05 UTC") != _key(
        {index: {"query": ["2030/01/01 10:00:05 UTC"], "range": "min"}}
    )


def test_dates_in_other_indexes_are_kept_by_their_exact_value(site):
    def field(moment: str):
        return _key({"getId": DateTime(moment)})

    assert field("2030/01/01 10:00:05 UTC") != field("2030/01/01 10:00:50 UTC")


def test_values_of_other_types_are_other_keys(site):
    assert _key({"is_folderish": True}) != _key({"is_folderish": 1})
    assert _key({"getId": ["d0", "d1"]}) != _key({"getId": ("d0", "d1")})
    assert _key({"getId": "d0"}) == _key({"getId": "d0"})
    assert freeze({"query": [1, "a"]}) == (
        dict,
        (((str, "query"), (list, ((int, 1), (str, "a")))),),
    )


def test_values_no_key_can_stand_for_are_translated_every_time(site):
    assert _key({"getId": {"d0"}}) is None
    assert _key({"getId": object()}) is None
    assert _ids({"getId": "d0"}) == ["d0"]


def test_a_query_larger_than_a_key_may_hold_is_translated_every_time(site):
    uids = [f"{number:032x}" for number in range(BUDGET)]
    assert _key({"UID": uids[: BUDGET // 2]}) is not None
    assert _key({"UID": uids}) is None
    assert _key({"SearchableText": "word " * (BUDGET * 20)}) is None
    assert _ids({"UID": uids, "portal_type": "Document"}) == []


def test_ready_columns_are_part_of_the_key(site):
    assert _key({"portal_type": "Document"}) != _key(
        {"portal_type": "Document"}, columns={"portal_type": "text"}
    )


def test_an_index_added_and_committed_changes_the_translation(site):
    catalog = api.portal.get_tool("portal_catalog")
    query = {"portal_type": "Document", "pgc_colour": "red"}
    # No such index yet: ZCatalog ignores the key.
    assert _ids(query) == ["d0", "d1", "d2"]
    before = _key(query)
    catalog.addIndex("pgc_colour", "FieldIndex")
    # Not committed: the definitions are this transaction's, nothing kept.
    assert _key(query) is None
    site["d1"].pgc_colour = "red"
    site["d1"].reindexObject()
    transaction.commit()
    assert _key(query) not in (None, before)
    assert _ids(query) == ["d1"]


def test_an_index_definition_changed_and_committed_gives_a_new_key(site):
    catalog = api.portal.get_tool("portal_catalog")
    before = _key({"portal_type": "Document"})
    definition = catalog._catalog.indexes.definition("portal_type")
    definition.indexed_attrs = ["portal_type"]
    assert _key({"portal_type": "Document"}) is None
    transaction.commit()
    after = _key({"portal_type": "Document"})
    assert after is not None and after != before
    assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2"]


def test_an_index_changed_before_a_savepoint_has_no_key(site):
    """A savepoint marks the objects it stores aside unchanged, with their
    committed serial: the index is still this transaction's."""
    catalog = api.portal.get_tool("portal_catalog")
    query = {"created": {"query": DateTime("2030/01/01 10:30 UTC"), "range": "min"}}
    committed = _key(query)
    catalog._catalog.indexes.definition("created").precision = 60
    transaction.savepoint()
    assert _key(query) is None
    transaction.abort()
    assert _key(query) == committed


def test_keys_made_on_another_connection_leave_nothing_of_it(site):
    """What is worked out once per state of the definitions holds no index
    object of the connection that worked it out: that connection may be
    closed, or another thread's."""
    query = {"created": {"query": DateTime("2030/01/01 10:30 UTC"), "range": "min"}}
    other = site._p_jar.db().open()
    try:
        catalog = other.root()["Application"]["plone"]["portal_catalog"]
        elsewhere = translations.key(
            query, catalog.getIndexDefinitions(), "/plone", QueryContext()
        )
    finally:
        other.cacheMinimize()
        other.close()
    assert elsewhere is not None
    assert _key(query) == elsewhere


def test_pending_changes_never_take_a_kept_translation(site):
    assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2"]
    transaction.commit()
    api.content.create(container=site, type="Document", id="d3")
    # Read-your-writes: the same query, with the pending row laid over.
    assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2", "d3"]
    transaction.abort()
    assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2"]


class _AddOnTranslator(type(TRANSLATORS["FieldIndex"])):
    """An add-on's translator for FieldIndex (our own, re-registered)."""


@pytest.mark.parametrize("cacheable", [False, True])
def test_an_add_on_translator_is_kept_only_when_it_says_so(site, cacheable):
    translator = _AddOnTranslator()
    translator.translation_cacheable = cacheable
    registry = getGlobalSiteManager()
    registry.registerUtility(translator, IIndexTranslator, name="FieldIndex")
    try:
        key = _key({"portal_type": "Document"})
        assert (key is not None) is cacheable
        # Indexes of other types are kept whatever it says.
        assert _key({"Subject": "x"}) is not None
        assert _ids({"portal_type": "Document"}) == ["d0", "d1", "d2"]
    finally:
        registry.unregisterUtility(translator, IIndexTranslator, name="FieldIndex")
    # Ours again: kept, under another key than the add-on's.
    ours = _key({"portal_type": "Document"})
    assert ours is not None and ours != key


def test_sort_indexes_translators_are_in_the_key(site):
    translator = _AddOnTranslator()
    translator.translation_cacheable = False
    registry = getGlobalSiteManager()
    query = {"portal_type": "Document", "sort_on": "getId"}
    before = _key(query)
    registry.registerUtility(translator, IIndexTranslator, name="FieldIndex")
    try:
        assert _key({"Subject": "x", "sort_on": "getId"}) is None
        assert _key({"Subject": "x", "sort-on": "getId"}) is None
        assert _key({"Subject": "x", "sort_on": "Subject"}) is not None
    finally:
        registry.unregisterUtility(translator, IIndexTranslator, name="FieldIndex")
    assert _key(query) == before


def test_the_definitions_states_are_read_once_per_committed_state(site, monkeypatch):
    """``_states_in``: one loop over the definitions per committed state of
    the database, while this transaction changed nothing; any object it
    changed, a savepoint or a commit, and they are read again."""
    from plone_pgcatalog import translations as module

    loops = []
    real = module._committed_states

    def counted(indexes):
        loops.append(1)
        return real(indexes)

    monkeypatch.setattr(module, "_committed_states", counted)
    catalog = api.portal.get_tool("portal_catalog")
    query = {"portal_type": "Document"}
    first = _key(query)
    assert connection.snapshot_id(catalog) is not None
    assert _key(query) == first and _key({"Title": "x"}) is not None
    assert len(loops) == 1
    site["d1"].title = "changed"  # any object: the definitions may be too
    assert _key(query) == first
    assert len(loops) == 2
    transaction.savepoint()
    assert _key(query) == first
    assert len(loops) == 3
    transaction.commit()  # a new committed state
    assert _key(query) == first
    assert _key(query) == first
    assert len(loops) == 4
    assert _ids(query) == ["d0", "d1", "d2"]


def test_only_text_queries_read_the_language_settings(site, monkeypatch):
    """The text configurations (Plone's languages, from the registry) are
    read for a query that names a text index only
    (``results.query_text_configs``): they were a tenth of a search whose
    result is kept.  A full-text query still matches the languages'
    stems."""
    from plone_pgcatalog import results

    read = []
    site_languages = results.site_languages

    def counted(catalog=None):
        read.append(catalog)
        return site_languages(catalog)

    monkeypatch.setattr(results, "site_languages", counted)
    catalog = api.portal.get_tool("portal_catalog")
    assert len(catalog(portal_type="Document", sort_on="id")) == 3
    assert len(catalog(path={"query": "/plone/f", "depth": 0})) == 1
    assert read == []
    catalog(SearchableText="d1")
    catalog(Title="d1", portal_type="Document")
    assert len(read) == 2
    page = site["d0"]
    page.text = RichTextValue("The houses by the lake", "text/plain", "text/html")
    page.reindexObject()
    transaction.commit()
    # An English stem: matched through the site's language.
    assert api.portal.get_registry_record("plone.default_language") == "en"
    assert [b.getId for b in catalog(SearchableText="house")] == ["d0"]
