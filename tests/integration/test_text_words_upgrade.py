"""The upgrades that read text indexes again, on a real site.

To profile 19: rows written with the words of schema 17 and before (every
word through ``baseNormalize``: "日本" as "ri ben") get the words Plone's
lexicon makes (``fulltext``); only the objects whose words change are
read again.  To profile 20: objects whose text has no word, which earlier
versions did not index, are indexed with no words, as ZCTextIndex
indexes them."""

from __future__ import annotations

from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import fulltext
from plone_pgcatalog import maintenance
from plone_pgcatalog import upgrades
from plone_pgcatalog.store import schema
from tests.differential.pages import add_documents
from tests.integration.test_typed_columns import _query
from tests.integration.test_typed_columns import _query_commit
from tests.integration.test_upgrades import _upgrade_from

import json
import transaction

PAGES = {
    "ja": ("東京タワー", "は日本の電波塔"),
    # Its metadata as ``json.dumps`` writes it (``processor.dumps``' other
    # way): the title's characters as ``\u`` escapes.
    "ja-escaped": ("日本", "ASCII only"),
    "ru": ("Привет", "Москва"),
    "de": ("Grüße aus Köln", "Straße"),
    "en": ("Plain words", "only ASCII"),
}


def _ids(catalog, **query) -> list[str]:
    return sorted(brain.getId for brain in catalog(**query))


def test_18_to_19_reads_the_words_of_other_scripts_again(pg_layer, monkeypatch):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    # Written as schema 17 wrote them.
    monkeypatch.setattr(fulltext, "words", upgrades._words_before_18)
    add_documents(
        portal,
        {
            page_id: {"title": title, "description": description}
            for page_id, (title, description) in PAGES.items()
        },
    )
    transaction.commit()
    monkeypatch.undo()
    dsn = pg_layer["pgcatalog_dsn"]
    ((meta,),) = _query(
        dsn, "SELECT meta::text FROM pgcatalog_objects WHERE path = '/plone/ja-escaped'"
    )
    _query_commit(
        dsn,
        "UPDATE pgcatalog_objects SET meta = %s::json WHERE path = '/plone/ja-escaped'",
        (json.dumps(json.loads(meta)),),
    )
    catalog = portal.portal_catalog
    assert _ids(catalog, SearchableText="日本") == []
    assert _ids(catalog, Title="日本") == []
    assert _ids(catalog, Title="privet") == ["ru"]
    # Only the objects whose words change: not the German page.
    assert upgrades._texts_folded_otherwise(catalog) == [
        "/plone/ja",
        "/plone/ja-escaped",
        "/plone/ru",
    ]

    # Three objects, batches of two: one batch commits on its own (memory
    # stays flat on a large site), the last object with the step.
    monkeypatch.setattr(maintenance, "DEFAULT_BATCH_SIZE", 2)
    _upgrade_from(portal, "18")
    assert _query(
        dsn,
        "SELECT count(*) FROM transaction_log WHERE description LIKE %s",
        ("plone_pgcatalog reindex %/plone: batch %",),
    ) == [(1,)]
    assert _ids(catalog, SearchableText="日本") == ["ja", "ja-escaped"]
    assert _ids(catalog, Description="日本") == ["ja"]
    assert _ids(catalog, Title="タワー") == ["ja"]
    assert _ids(catalog, Title="日本") == ["ja-escaped"]
    assert _ids(catalog, Title="privet") == []
    assert _ids(catalog, Title="Привет") == ["ru"]
    assert _ids(catalog, SearchableText="strasse") == ["de"]
    assert _query(
        pg_layer["pgcatalog_dsn"],
        "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'",
    ) == [(schema.SCHEMA_VERSION,)]


def test_19_to_20_indexes_texts_without_a_word(pg_layer, monkeypatch):
    """Rows written before profile 20 hold no value of a text index whose
    attribute gave a string without a word (an empty Description): Verify
    listed them as stale, and the index views answered as if the object
    were not indexed.  The step reads those objects' text indexes again."""
    from plone import api
    from plone_pgcatalog import health
    from plone_pgcatalog import registry
    from plone_pgcatalog.interfaces import MISSING

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    extract = registry.TextTranslator.extract

    def as_before_20(self, index, obj):
        value = extract(self, index, obj)
        return MISSING if value is not MISSING and not value else value

    monkeypatch.setattr(registry.TextTranslator, "extract", as_before_20)
    add_documents(
        portal,
        {
            "empty": {"title": "Empty", "description": ""},
            "worded": {"title": "Worded", "description": "Some words"},
        },
    )
    transaction.commit()
    monkeypatch.undo()
    catalog = portal.portal_catalog
    description = catalog._catalog.getIndex("Description")
    (empty,) = catalog(getId="empty")
    assert description.getEntryForObject(empty.getRID()) is None
    assert ("/plone/empty", ["Description"]) in health.verify(catalog).stale
    # Not the site, cataloged again with them (its items were added): a
    # text index that gives nothing keeps its words, as in ZCTextIndex.
    assert upgrades._without_a_text(catalog, ["Description", "SearchableText"]) == [
        "/plone/empty",
    ]

    _upgrade_from(portal, "19")
    assert health.verify(catalog).stale == []
    assert description.getEntryForObject(empty.getRID()) == []
    assert upgrades._without_a_text(catalog, ["Description", "SearchableText"]) == []
    assert [b.getId for b in api.content.find(Description="words")] == ["worded"]
