"""Differential: a text index whose attribute gives no string when its
object is cataloged again, ZCatalog as the oracle.

ZCTextIndex's ``index_object`` takes the strings of the index's attributes
(None skipped, numbers dropped); with none, it returns without unindexing:
the object keeps the words it had, and is found by them, counted by
``indexSize``, and ``getEntryForObject`` gives them.  A new object without
a string has no entry.  Here a custom indexer of ``SearchableText``,
``Title`` and ``Description``, and an attribute read by a ZCTextIndex
added to the site, give a string, then None, a number, a string again, a
string without a word and None again; each step is compared with
ZCatalog's, cataloged in full (``reindexObject()``, ``catalog_object``)
or for the text indexes only (``reindexObject(idxs=...)``), before its
commit (pending rows) and after it, and in one transaction.
"""

from __future__ import annotations

from Acquisition import aq_base
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.indexer import indexer
from tests.conftest import collect_in
from tests.differential.searched import before_and_after_commit
from types import SimpleNamespace
from zope.interface import alsoProvides
from zope.interface import Interface

import pytest
import transaction

#: The site's own text index: reads the attribute ``probe`` as it is.
ADDED = "probe_text"
#: Plone's text indexes, read through the indexers below.
TEXT_INDEXES = ("SearchableText", "Title", "Description", ADDED)

#: (step, the value the attribute and the indexers give)
STEPS = [
    ("a string", "harbour lights"),
    ("None", None),
    ("a number", 7),
    ("a string again", "lighthouse keeper"),
    ("a string without a word", "  "),
    ("None after it", None),
]
WORDS = ("harbour", "lights", "lighthouse", "keeper")


class IProbed(Interface):
    """Content whose text indexes read ``probe`` (the indexers below)."""


@indexer(IProbed)
def _probe(obj):
    return getattr(aq_base(obj), "probe", None)


@indexer(IProbed)
def _searchable_probe(obj):
    """``probe``, a string in a sentence (snippets leave out a text's
    start that is its title)."""
    value = getattr(aq_base(obj), "probe", None)
    return f"the old port of {value}" if isinstance(value, str) else value


#: The indexers of Plone's text indexes.
INDEXERS = {
    "SearchableText": _searchable_probe,
    "Title": _probe,
    "Description": _probe,
}


def _uncaught(call):
    """``call()``, or the name of what it raised."""
    try:
        return call()
    except Exception as exc:  # the outcome to compare
        return type(exc).__name__


def _entry(catalog, name: str, rid):
    entry = catalog._catalog.getIndex(name).getEntryForObject(rid)
    return sorted(entry) if isinstance(entry, list) else entry


def _outcomes(catalog, path: str) -> dict:
    rid = catalog.getrid(path)
    return {
        "found": {
            name: {
                word: sorted(
                    b.getPath()
                    for b in catalog.unrestrictedSearchResults(**{name: word})
                )
                for word in WORDS
            }
            for name in TEXT_INDEXES
        },
        "entries": {
            name: None if rid is None else _entry(catalog, name, rid)
            for name in TEXT_INDEXES
        },
        "indexSize": {
            name: catalog._catalog.getIndex(name).indexSize() for name in TEXT_INDEXES
        },
        "uniqueValuesFor": {
            name: _uncaught(lambda: list(catalog.uniqueValuesFor(name)))
            for name in TEXT_INDEXES
        },
    }


def _snippet(catalog, word: str):
    """The snippet of the brain found by ``word`` (this catalog's), or
    None; ZCatalog's brains have none."""
    found = catalog(SearchableText=word)
    return getattr(found[0], "snippet", None) if len(found) else None


def _site(layer):
    """The site with ``ADDED`` and a page ``probed`` whose text indexes read
    its attribute ``probe``; the indexers registered (``_unregistered``)."""
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    registry = _registry(portal)
    for name, probe in INDEXERS.items():
        registry.registerAdapter(probe, name=name)
    catalog = api.portal.get_tool("portal_catalog")
    extra = SimpleNamespace(
        doc_attr="probe", lexicon_id="plone_lexicon", index_type="Okapi BM25 Rank"
    )
    catalog.addIndex(ADDED, "ZCTextIndex", extra)
    transaction.commit()
    page = api.content.create(container=portal, type="Document", id="probed")
    alsoProvides(page, IProbed)
    transaction.commit()
    return catalog, page


def _registry(portal):
    """The global registry the site's own is based on: the layers of the
    test sites stack theirs, and the current one may be another site's."""
    (registry,) = portal.getSiteManager().__bases__
    return registry


def _unregistered(portal) -> None:
    registry = _registry(portal)
    for name, probe in INDEXERS.items():
        registry.unregisterAdapter(probe, name=name)


#: How the page is cataloged again at each step.
WAYS = {
    "reindexObject()": lambda catalog, page: page.reindexObject(),
    "reindexObject(idxs)": lambda catalog, page: page.reindexObject(
        idxs=list(TEXT_INDEXES)
    ),
    "catalog_object": lambda catalog, page: catalog.catalog_object(
        page, "/".join(page.getPhysicalPath())
    ),
}


def _steps(way: str):
    def run(layer) -> dict:
        catalog, page = _site(layer)
        path = "/".join(page.getPhysicalPath())
        try:
            steps = {}
            for step, value in STEPS:
                page.probe = value
                WAYS[way](catalog, page)
                steps[step] = before_and_after_commit(lambda: _outcomes(catalog, path))
                steps[step]["snippet"] = _snippet(catalog, "harbour")
            return steps
        finally:
            _unregistered(layer["portal"])

    return run


@pytest.fixture(scope="module", params=list(WAYS))
def steps(request):
    return (
        request.param,
        collect_in("zcatalog", _steps(request.param)),
        collect_in("pg", _steps(request.param)),
    )


@pytest.mark.parametrize("step", [step for step, _ in STEPS])
def test_as_zcatalog(steps, step):
    way, zcatalog, pgcatalog = steps
    for when in ("pending", "committed"):
        assert pgcatalog[step][when] == zcatalog[step][when], (way, when)


def test_the_premise_words_kept_by_zcatalog(steps):
    """ZCatalog keeps the words where the attribute gives no string, and
    drops them for a string without a word."""
    _, zcatalog, _ = steps
    for name in TEXT_INDEXES:
        for step in ("None", "a number"):
            outcome = zcatalog[step]["committed"]
            assert outcome["found"][name]["harbour"] == ["/plone/probed"]
            assert {"harbour", "lights"} <= set(outcome["entries"][name])
        outcome = zcatalog["None after it"]["committed"]
        if name != "SearchableText":  # "the old port of  "
            assert outcome["entries"][name] == []
        assert outcome["found"][name]["lighthouse"] == []


def test_snippets_keep_the_text(steps):
    """The text snippets show stays with the words (``schema.TEXTS``)."""
    _, _, pgcatalog = steps
    snippet = pgcatalog["a string"]["snippet"]
    assert "the old port of <mark>harbour</mark> lights" in snippet
    assert pgcatalog["None"]["snippet"] == snippet
    assert pgcatalog["a number"]["snippet"] == snippet
    assert pgcatalog["a string again"]["snippet"] is None


def _in_one_transaction(layer) -> dict:
    """Every step in one transaction, the ways in turn: the pending row
    or patch of the step before gives the words kept."""
    catalog, page = _site(layer)
    path = "/".join(page.getPhysicalPath())
    ways = list(WAYS)
    try:
        steps = {}
        for number, (step, value) in enumerate(STEPS):
            for way in (ways[number % 3], ways[(number + 1) % 3]):
                page.probe = value
                WAYS[way](catalog, page)
                steps[f"{step}, {way}"] = _outcomes(catalog, path)
        transaction.commit()
        steps["committed"] = _outcomes(catalog, path)
        return steps
    finally:
        _unregistered(layer["portal"])


def test_in_one_transaction_as_zcatalog():
    expected = collect_in("zcatalog", _in_one_transaction)
    assert collect_in("pg", _in_one_transaction) == expected


def _indexed_with_words(page) -> None:
    """``page``'s probe attribute (the text indexes' source) given words,
    cataloged and committed."""
    page.probe = "harbour lights"
    page.reindexObject()
    transaction.commit()


def _new_records(layer) -> dict:
    """A page without a string cataloged anew: after its uncataloging was
    committed, and in the transaction that uncatalogs it (ZCatalog makes a
    new record, without words, either way)."""
    catalog, page = _site(layer)
    path = "/".join(page.getPhysicalPath())
    try:
        _indexed_with_words(page)
        outcomes = {}
        catalog.uncatalog_object(path)
        page.probe = None
        catalog.catalog_object(page, path)
        outcomes["in the same transaction"] = before_and_after_commit(
            lambda: _outcomes(catalog, path)
        )
        _indexed_with_words(page)
        catalog.uncatalog_object(path)
        transaction.commit()
        page.probe = 7
        catalog.catalog_object(page, path)
        outcomes["after a commit"] = before_and_after_commit(
            lambda: _outcomes(catalog, path)
        )
        return outcomes
    finally:
        _unregistered(layer["portal"])


def test_a_new_record_has_no_words_as_in_zcatalog():
    expected = collect_in("zcatalog", _new_records)
    for outcome in expected.values():
        assert outcome["committed"]["entries"]["Title"] is None
    assert collect_in("pg", _new_records) == expected


def _moved(layer) -> dict:
    """A page renamed when its attribute gives no string: ZCatalog
    uncatalogs the old path and catalogs the new one, a new record."""
    catalog, page = _site(layer)
    try:
        _indexed_with_words(page)
        page.probe = None
        api.content.rename(obj=page, new_id="renamed")
        return before_and_after_commit(lambda: _outcomes(catalog, "/plone/renamed"))
    finally:
        _unregistered(layer["portal"])


def test_a_renamed_object_as_zcatalog():
    expected = collect_in("zcatalog", _moved)
    assert collect_in("pg", _moved) == expected


#: Cataloging every object again: ZCatalog's ``refreshCatalog`` catalogs
#: each again (words kept), its ``clearFindAndRebuild`` and
#: ``refreshCatalog(clear=1)`` after clearing the catalog (none kept).
AGAIN = {
    "refreshCatalog()": lambda catalog: catalog.refreshCatalog(),
    "refreshCatalog(clear=1)": lambda catalog: catalog.refreshCatalog(clear=1),
    "clearFindAndRebuild()": lambda catalog: catalog.clearFindAndRebuild(),
}


def _again(layer) -> dict:
    catalog, page = _site(layer)
    path = "/".join(page.getPhysicalPath())
    outcomes = {}
    try:
        for name, again in AGAIN.items():
            _indexed_with_words(page)
            page.probe = None
            again(catalog)
            transaction.commit()
            outcomes[name] = _outcomes(catalog, path)
        return outcomes
    finally:
        _unregistered(layer["portal"])


def test_cataloging_everything_again_as_zcatalog():
    expected = collect_in("zcatalog", _again)
    assert expected["refreshCatalog()"]["entries"]["Title"] == ["harbour", "lights"]
    assert expected["clearFindAndRebuild()"]["entries"]["Title"] is None
    assert collect_in("pg", _again) == expected


def _verified(layer) -> list:
    from plone_pgcatalog import health

    catalog, page = _site(layer)
    try:
        _indexed_with_words(page)
        page.probe = None
        page.reindexObject()
        transaction.commit()
        return health.verify(catalog).stale
    finally:
        _unregistered(layer["portal"])


def test_verify_finds_kept_words_right():
    """Verify compares the stored rows with extraction: the words kept are
    what the row must hold, not a stale value to repair."""
    assert collect_in("pg", _verified) == []
