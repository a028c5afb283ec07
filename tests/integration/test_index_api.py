"""The index objects and the index data API add-ons read, against ZCatalog.

``portal_catalog.Indexes[name]``, ``_catalog.indexes[name]``,
``_catalog.getIndex(name)`` and ``getIndexObjects()`` give objects whose
data methods (``uniqueValues``, ``numObjects``, ``indexSize``, ``len``,
``getEntryForObject``, ``_index``, ``_unindex``, ``_apply_index``) answer
from PostgreSQL; ``uniqueValuesFor``, ``getIndexDataForUID``,
``getMetadataForUID``, ``searchAll`` and ``getAllBrains`` are the tool's.

The same content (fixed dates and UIDs) is built in the stock ZCatalog site
and in the plone_pgcatalog site; every probe gives plain data (paths instead
of record ids) and must give the same in both.  Probes through the real
consumers: plone.app.vocabularies' Keywords vocabulary (``_index``, and
``_apply_index`` for a section), plone.app.uuid (``_index.get``),
Products.CMFPlone's search view (``getIndex('portal_type').uniqueValues``),
plone.app.dexterity and plone.restapi type counts (``withLengths``),
plone.restapi's query parsers (adapters of the index classes).
"""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
from DateTime import DateTime
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in

import pytest
import pytz
import re
import transaction

VIENNA = pytz.timezone("Europe/Vienna")

#: (container, type, id, title, subjects, published)
CONTENT = [
    ("", "Folder", "folder", "Folder", ("alpha",), True),
    ("folder", "Document", "page-a", "Harbour lights", ("alpha", "beta"), True),
    ("folder", "Document", "page-b", "Café Küste", ("beta", "Küste"), False),
    ("", "Document", "page-c", "Lighthouse keeper", ("gamma",), True),
    ("", "Document", "page-d", "No keywords", (), False),
    ("", "News Item", "news", "Harbour news", ("alpha", "gamma"), True),
]

#: Indexes added for the test: a FieldIndex holding DateTime values and one
#: holding datetime values (stored as microseconds in PostgreSQL).
EXTRA_INDEXES = {
    "modified_field": {"indexed_attrs": "modified"},
    "start_field": {"indexed_attrs": "start"},
}

#: ZCTextIndex words come from ZCatalog's lexicon (its own splitter and
#: normalizer): their number and form are not compared.
TEXT_INDEXES = ("SearchableText", "Title", "Description")


def uid_of(path: str) -> str:
    return "uid" + path.replace("/", "-").replace("_", "-")


def fix_dates(portal) -> None:
    """Give every cataloged object fixed dates and UID, in both sites."""
    catalog = api.portal.get_tool("portal_catalog")
    names = list(catalog.indexes())
    objects = [portal] + [
        portal.unrestrictedTraverse(path)
        for path in sorted("/".join(obj.getPhysicalPath()) for obj in _content(portal))
    ]
    from plone.uuid.interfaces import IMutableUUID

    for position, obj in enumerate(objects):
        path = "/".join(obj.getPhysicalPath())
        IMutableUUID(obj).set(uid_of(path))
        obj.creation_date = DateTime("2020/01/01 08:00:00 GMT+1") + position
        obj.setModificationDate(DateTime("2022/03/01 08:00:00 GMT+1") + position / 3.0)
        if position % 2:
            obj.setEffectiveDate(DateTime("2021/01/01 09:00:00 GMT+1") + position)
        if position == 3:
            obj.setExpirationDate(DateTime("2031/01/01 09:00:00 GMT+1"))
        # A reindex naming every index keeps the modification date.
        obj.reindexObject(idxs=names)


def _content(portal):
    for container, _, id, *_ in CONTENT:
        parent = portal.unrestrictedTraverse(container) if container else portal
        yield parent[id]
    yield portal["event"]


def build_content(portal) -> None:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    for name, extra in EXTRA_INDEXES.items():
        catalog.addIndex(name, "FieldIndex", extra)
    for container, type_, id, title, subjects, published in CONTENT:
        parent = portal.unrestrictedTraverse(container) if container else portal
        obj = api.content.create(
            container=parent, type=type_, id=id, title=title, subject=subjects
        )
        if published:
            api.content.transition(obj=obj, transition="publish")
    start = VIENNA.localize(datetime(2030, 3, 2, 10, 0))
    api.content.create(
        container=portal,
        type="Event",
        id="event",
        title="Weekly",
        start=start,
        end=start + timedelta(hours=1),
        recurrence="RRULE:FREQ=WEEKLY;COUNT=3",
        timezone="Europe/Vienna",
    )
    fix_dates(portal)
    transaction.commit()


# -- probes: plain data, the same in both sites ----------------------------------


def _outcome(call):
    """The value of ``call()``, or the name of the exception it raises."""
    try:
        return call()
    except Exception as exc:  # the exception type is part of the answer
        return f"raises {type(exc).__name__}"


def _plain(value):
    """Keyword lists in a fixed order (ZCatalog keeps them as a set)."""
    if isinstance(value, list):
        return sorted(value, key=repr)
    return value


def index_probes(catalog) -> dict:
    probes = {}
    for name in sorted(catalog.indexes()):
        index = catalog.Indexes[name]
        probes[name] = {
            "meta_type": index.meta_type,
            "query names": _outcome(lambda: tuple(index.getIndexQueryNames())),
            "source names": _outcome(lambda: tuple(index.getIndexSourceNames())),
            "numObjects": _outcome(lambda: index.numObjects()),
            "indexSize": _outcome(lambda: index.indexSize()),
            "len": _outcome(lambda: len(index)),
            "uniqueValuesFor": _outcome(lambda: catalog.uniqueValuesFor(name)),
            "uniqueValues": _outcome(lambda: list(index.uniqueValues())),
            "withLengths": _outcome(lambda: list(index.uniqueValues(withLengths=True))),
            "other name": _outcome(lambda: list(index.uniqueValues(name="nothing"))),
        }
        if index.meta_type == "BooleanIndex":
            # Which value BooleanIndex gives first depends on its history.
            for key in ("uniqueValues", "withLengths", "uniqueValuesFor"):
                probes[name][key] = set(probes[name][key])
        if name in TEXT_INDEXES:
            # The number of objects is compared (``indexSize``: those
            # whose attributes gave a string, words or none), not of words.
            del probes[name]["numObjects"]
    return probes


def entry_probes(catalog) -> dict:
    probes = {}
    for path in ("/plone/folder/page-a", "/plone/page-d", "/plone/event", "/plone"):
        rid = catalog.getrid(path)
        data = catalog.getIndexDataForUID(path)
        probes[path] = {
            "index data": {
                name: _plain(value)
                for name, value in data.items()
                if name not in TEXT_INDEXES
            },
            "entries": {
                name: _plain(catalog._catalog.getIndex(name).getEntryForObject(rid))
                for name in catalog.indexes()
                if name not in TEXT_INDEXES
            },
            # Of text indexes, whether the object is indexed, and with words
            # (an empty Description: ``[]``; none at all: None).
            "text entries": {
                name: _words_or_not(
                    catalog._catalog.getIndex(name).getEntryForObject(rid)
                )
                for name in TEXT_INDEXES
            },
            "missing entry": catalog.Indexes["Subject"].getEntryForObject(
                -12345, "nothing"
            ),
            "metadata": _plain_metadata(catalog.getMetadataForUID(path)),
        }
    return probes


def _words_or_not(entry):
    return entry if not entry else "words"


def _plain_metadata(metadata: dict) -> dict:
    # The id of a brain's data record differs between the two catalogs.
    return {
        name: value for name, value in metadata.items() if name != "data_record_id_"
    }


def mapping_probes(catalog) -> dict:
    subject = catalog._catalog.getIndex("Subject")
    state = catalog._catalog.indexes["review_state"]
    uid = catalog.Indexes["UID"]
    return {
        "Subject _index keys": list(subject._index.keys()),
        "Subject _index alpha": sorted(
            map(catalog.getpath, subject._index.get("alpha"))
        ),
        "Subject _index missing": subject._index.get("no such keyword", "none"),
        "Subject _index items": [
            (key, sorted(map(catalog.getpath, rids)))
            for key, rids in subject._index.items()
        ],
        "review_state _unindex": sorted(
            (catalog.getpath(rid), value) for rid, value in state._unindex.items()
        ),
        "review_state len(_unindex)": len(state._unindex),
        "UID _index": catalog.getpath(uid._index.get(uid_of("/plone/page-c"))),
        "UID _index missing": uid._index.get("no-such-uid"),
        "Subject documentToKeyMap": sorted(
            (catalog.getpath(rid), sorted(value))
            for rid, value in subject.documentToKeyMap().items()
        ),
    }


def search_probes(catalog) -> dict:
    everything = catalog.searchAll()
    return {
        "searchAll": sorted(brain.getPath() for brain in everything),
        "searchAll len": len(everything),
        "getAllBrains": sorted(brain.getPath() for brain in catalog.getAllBrains()),
        "_apply_index path": sorted(
            map(
                catalog.getpath,
                catalog._catalog.indexes["path"]._apply_index(
                    {"path": {"query": "/plone/folder", "depth": -1}}
                )[0],
            )
        ),
        "_apply_index other key": catalog._catalog.indexes["Subject"]._apply_index(
            {"portal_type": "Document"}
        ),
    }


def error_probes(catalog) -> dict:
    return {
        "uniqueValuesFor": _outcome(lambda: catalog.uniqueValuesFor("no_such_index")),
        "Indexes[]": _outcome(lambda: catalog.Indexes["no_such_index"]),
        "getIndex": _outcome(lambda: catalog._catalog.getIndex("no_such_index")),
        "indexes[]": _outcome(lambda: catalog._catalog.indexes["no_such_index"]),
        "indexes.get": catalog._catalog.indexes.get("no_such_index"),
        "getIndexDataForUID": _outcome(
            lambda: catalog.getIndexDataForUID("/plone/nope")
        ),
        "getMetadataForUID": _outcome(lambda: catalog.getMetadataForUID("/plone/nope")),
        "text uniqueValues": _outcome(
            lambda: catalog.uniqueValuesFor("SearchableText")
        ),
        "gopip uniqueValues": _outcome(
            lambda: catalog.uniqueValuesFor("getObjPositionInParent")
        ),
    }


def consumer_probes(layer, catalog) -> dict:
    from plone.app.dexterity.browser.types import TypeStatsAdapter
    from plone.app.uuid.utils import uuidToCatalogBrain
    from plone.app.uuid.utils import uuidToPhysicalPath
    from plone.registry.interfaces import IRegistry
    from zope.component import getUtility
    from zope.schema.interfaces import IVocabularyFactory

    portal, request = layer["portal"], layer["request"]
    keywords = getUtility(IVocabularyFactory, "plone.app.vocabularies.Keywords")

    def terms(vocabulary):
        return [(term.value, term.token, term.title) for term in vocabulary]

    def resolved(uid):
        # A link resolved as plone.app.uuid does it: the path, then the
        # brain (``results._uid_read`` answers the second from the first).
        path, brain = uuidToPhysicalPath(uid), uuidToCatalogBrain(uid)
        if brain is None:
            return path, None
        shown = ("getPath", "Title", "portal_type", "review_state", "UID")
        return path, [brain.getPath(), *(getattr(brain, name) for name in shown[1:])]

    probes = {
        "Keywords": terms(keywords(portal)),
        "uuidToCatalogBrain": resolved(uid_of("/plone/folder/page-a")),
        "uuidToCatalogBrain unknown": resolved("0123456789abcdef0123456789abcdef"),
        "Keywords filtered": terms(keywords(portal, query="a")),
        "uuidToPhysicalPath": uuidToPhysicalPath(uid_of("/plone/folder/page-b")),
        "search view types_list": api.content.get_view(
            "search", portal, request
        ).types_list(),
        "Document count": TypeStatsAdapter(portal.portal_types["Document"]).item_count,
        # ``not`` on the security terms, tested by the numbers of their
        # lists (``test_numbered_lists``); not-only and with others.
        "allowedRolesAndUsers not": sorted(
            brain.getPath()
            for brain in portal.portal_catalog.unrestrictedSearchResults(
                allowedRolesAndUsers={"not": ["Anonymous"]}
            )
        ),
        "allowedRolesAndUsers query and not": sorted(
            brain.getPath()
            for brain in portal.portal_catalog.unrestrictedSearchResults(
                allowedRolesAndUsers={"query": ["Manager"], "not": ["Anonymous"]}
            )
        ),
    }
    # Keywords of the navigation root's section: _apply_index of path and
    # Subject, intersected with BTrees' intersection.
    getUtility(IRegistry)["plone.subjects_of_navigation_root"] = True
    probes["Keywords of section"] = terms(keywords(portal["folder"]))
    return probes


def _site_neutral(value):
    """Dexterity's generated schema names carry a key of their site."""
    if isinstance(value, str):
        return GENERATED.sub("generated.SITE_", value)
    if isinstance(value, (list, tuple)):
        return type(value)(_site_neutral(item) for item in value)
    if isinstance(value, set):
        return {_site_neutral(item) for item in value}
    if isinstance(value, dict):
        return {key: _site_neutral(item) for key, item in value.items()}
    return value


GENERATED = re.compile(r"generated\.plone_[0-9_]+?_0_")


def collect(layer) -> dict:
    build_content(layer["portal"])
    catalog = api.portal.get_tool("portal_catalog")
    return _site_neutral(
        {
            "indexes": index_probes(catalog),
            "entries": entry_probes(catalog),
            "mappings": mapping_probes(catalog),
            "searches": search_probes(catalog),
            "errors": error_probes(catalog),
            "consumers": consumer_probes(layer, catalog),
            "index objects": [
                (index.getId(), index.meta_type) for index in catalog.getIndexObjects()
            ],
        }
    )


def results_in(layer_name: str) -> dict:
    return collect_in(layer_name, collect)


@pytest.fixture(scope="module")
def results():
    return results_in("zcatalog"), results_in("pg")


# -- differential tests ------------------------------------------------------------


def test_same_indexes(results):
    expected, actual = results
    assert sorted(actual["indexes"]) == sorted(expected["indexes"])
    assert sorted(actual["index objects"]) == sorted(expected["index objects"])


@pytest.mark.parametrize(
    "probe",
    [
        "meta_type",
        "query names",
        "source names",
        "numObjects",
        "indexSize",
        "len",
        "uniqueValuesFor",
        "uniqueValues",
        "withLengths",
        "other name",
    ],
)
def test_index_answers_as_zcatalog(results, probe):
    expected, actual = results
    differences = {
        name: _difference(answers.get(probe), actual["indexes"][name].get(probe))
        for name, answers in expected["indexes"].items()
        if answers.get(probe) != actual["indexes"][name].get(probe)
        and (name, probe) not in ZCATALOG_FAILS
    }
    assert differences == {}


#: What ZCatalog cannot answer: ExtendedPathIndex.uniqueValues(withLengths=True)
#: fails on its terminator key None (PathIndex._search(None)).
ZCATALOG_FAILS = {("path", "withLengths")}


def test_path_elements_with_lengths_where_zcatalog_fails(results):
    expected, actual = results
    path = actual["indexes"]["path"]
    assert expected["indexes"]["path"]["withLengths"] == "raises TypeError"
    assert [value for value, _ in path["withLengths"]] == path["uniqueValues"]
    assert path["uniqueValues"] == expected["indexes"]["path"]["uniqueValues"]
    lengths = dict(path["withLengths"])
    assert lengths[None] == lengths["plone"] == path["numObjects"]
    assert lengths["folder"] == 3  # the folder and its two pages


def _difference(expected, actual):
    """What one side has and the other has not (whole values otherwise)."""
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return {
            "missing": [item for item in expected if item not in actual],
            "extra": [item for item in actual if item not in expected],
            "orders differ": list(expected) != list(actual),
        }
    return expected, actual


def test_subject_and_portal_type_unique_values(results):
    expected, actual = results
    subject = actual["indexes"]["Subject"]
    assert subject["uniqueValuesFor"] == ("Küste", "alpha", "beta", "gamma")
    assert subject["withLengths"] == [
        ("Küste", 1),
        ("alpha", 3),
        ("beta", 2),
        ("gamma", 2),
    ]
    assert subject == expected["indexes"]["Subject"]
    assert actual["indexes"]["portal_type"]["uniqueValuesFor"] == (
        "Document",
        "Event",
        "Folder",
        "News Item",
        "Plone Site",
    )


def test_date_index_unique_values_are_minutes(results):
    expected, actual = results
    created = actual["indexes"]["created"]
    assert all(type(value) is int for value in created["uniqueValues"])
    assert created["uniqueValues"] == expected["indexes"]["created"]["uniqueValues"]
    assert created["withLengths"] == expected["indexes"]["created"]["withLengths"]


def test_field_index_of_datetimes_gives_datetimes(results):
    expected, actual = results
    values = actual["indexes"]["modified_field"]["uniqueValues"]
    assert values and all(isinstance(value, DateTime) for value in values)
    assert values == expected["indexes"]["modified_field"]["uniqueValues"]
    starts = actual["indexes"]["start_field"]["uniqueValues"]
    assert len(starts) == 1 and isinstance(starts[0], datetime)
    assert starts == expected["indexes"]["start_field"]["uniqueValues"]


def test_recurring_dates_unique_values(results):
    expected, actual = results
    start = actual["indexes"]["start"]
    assert len(start["uniqueValues"]) == 3  # three weekly occurrences
    assert start == expected["indexes"]["start"]


@pytest.mark.parametrize(
    "path", ["/plone/folder/page-a", "/plone/page-d", "/plone/event", "/plone"]
)
def test_entries_and_index_data_for_uid(results, path):
    expected, actual = results
    expected, actual = expected["entries"][path], actual["entries"][path]
    differences = {
        (part, name): (value, actual[part].get(name, "absent"))
        for part in ("index data", "entries", "text entries", "metadata")
        for name, value in expected[part].items()
        if actual[part].get(name, "absent") != value
    }
    assert differences == {}
    assert actual["missing entry"] == expected["missing entry"] == "nothing"


@pytest.mark.parametrize("probe", ["mappings", "searches", "errors"])
def test_mappings_searches_and_errors(results, probe):
    expected, actual = results
    assert actual[probe] == expected[probe]


def test_unknown_index_raises_keyerror_as_zcatalog(results):
    _, actual = results
    assert actual["errors"]["uniqueValuesFor"] == "raises KeyError"
    assert actual["errors"]["Indexes[]"] == "raises KeyError"
    assert actual["errors"]["getIndexDataForUID"] == "raises KeyError"


@pytest.mark.parametrize(
    "probe",
    [
        "Keywords",
        "Keywords filtered",
        "Keywords of section",
        "uuidToPhysicalPath",
        "uuidToCatalogBrain",
        "uuidToCatalogBrain unknown",
        "search view types_list",
        "Document count",
        "allowedRolesAndUsers not",
        "allowedRolesAndUsers query and not",
    ],
)
def test_consumers_get_what_zcatalog_gives(results, probe):
    expected, actual = results
    assert actual["consumers"][probe] == expected["consumers"][probe]


def test_keywords_vocabulary_terms(results):
    _, actual = results
    values = [value for value, _, _ in actual["consumers"]["Keywords"]]
    assert values == ["Küste", "alpha", "beta", "gamma"]
    section = [value for value, _, _ in actual["consumers"]["Keywords of section"]]
    assert section == values


# -- plone_pgcatalog only ------------------------------------------------------------


def test_index_views_carry_the_definitions_interfaces(pg_layer):
    from Products.PluginIndexes.interfaces import IPluggableIndex
    from Products.PluginIndexes.KeywordIndex.KeywordIndex import KeywordIndex
    from zope.interface import implementedBy
    from zope.interface import providedBy

    catalog = api.portal.get_tool("portal_catalog")
    view = catalog.Indexes["Subject"]
    assert IPluggableIndex.providedBy(view)
    assert implementedBy(KeywordIndex) in providedBy(view).__sro__
    assert view.meta_type == "KeywordIndex"
    assert view.getIndexQueryNames() == ("Subject",)
    assert isinstance(view.getDefinition().aq_base, KeywordIndex)


def test_restapi_query_parsers_adapt_the_views(pg_layer):
    from plone.restapi.interfaces import IIndexQueryParser
    from zope.component import getMultiAdapter
    from zope.component import queryMultiAdapter

    portal, request = pg_layer["portal"], pg_layer["request"]
    catalog = api.portal.get_tool("portal_catalog")
    for name in catalog.indexes():
        view = catalog._catalog.indexes[name]
        definition = catalog._catalog.indexes.definition(name)
        expected = queryMultiAdapter((definition, portal, request), IIndexQueryParser)
        actual = queryMultiAdapter((view, portal, request), IIndexQueryParser)
        assert type(actual) is type(expected), name
    parser = getMultiAdapter(
        (catalog._catalog.indexes["is_folderish"], portal, request), IIndexQueryParser
    )
    assert type(parser).__name__ == "BooleanIndexQueryParser"


def test_setting_an_attribute_sets_it_on_the_definition(pg_layer):
    catalog = api.portal.get_tool("portal_catalog")
    view = catalog._catalog.getIndex("Subject")
    view.indexed_attrs = ["Subject", "keywords"]
    definition = catalog._catalog.indexes.definition("Subject")
    assert definition.indexed_attrs == ["Subject", "keywords"]
    assert catalog.Indexes["Subject"].getIndexSourceNames() == ["Subject", "keywords"]
    transaction.abort()


@pytest.mark.parametrize(
    "index,name",
    [
        ("Subject", "insertForwardIndexEntry"),
        ("Subject", "unindex_objectKeywords"),
        ("portal_type", "removeForwardIndexEntry"),
        ("path", "insertEntry"),
        ("path", "search"),
        ("SearchableText", "query"),
        ("effectiveRange", "histogram"),
    ],
)
def test_zcatalogs_own_steps_on_its_btrees_are_not_answered_empty(
    pg_layer, index, name
):
    """The definition's BTrees are empty: what works on them would give
    an empty answer or write into the ZODB without a word (or, for a name
    the view lacked, acquisition would find the catalog's method)."""
    from plone_pgcatalog.errors import PGCatalogError

    catalog = api.portal.get_tool("portal_catalog")
    view = catalog._catalog.getIndex(index)
    with pytest.raises(PGCatalogError, match=f"{name} works on ZCatalog's BTrees"):
        getattr(view, name)("x", 1)


@pytest.mark.parametrize(
    "use",
    [
        lambda inner: inner.uids.keys(),
        lambda inner: inner.uids["/plone"],
        lambda inner: "/plone" in inner.uids,
        lambda inner: len(inner.paths),
        lambda inner: inner.paths.get(1),
        lambda inner: len(inner),
    ],
    ids=["uids.keys", "uids[]", "in uids", "len(paths)", "paths.get", "len"],
)
def test_catalog_data_without_its_tool_says_how_to_reach_it(pg_layer, use):
    """``_catalog`` holds no data: reached without its tool (``aq_base``),
    its data API names the way in.  ``uids`` and ``paths`` gave a bare
    ``ComputedAttribute`` there, with no ``keys``."""
    from Acquisition import aq_base
    from plone_pgcatalog.errors import PGCatalogError

    catalog = api.portal.get_tool("portal_catalog")
    rid = catalog.getrid("/plone")
    assert catalog._catalog.uids["/plone"] == rid
    assert catalog._catalog.paths[rid] == "/plone"
    with pytest.raises(PGCatalogError, match=r"reach it through its catalog"):
        use(aq_base(catalog._catalog))


def test_index_object_needs_the_objects_record_id(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    page = api.content.create(container=portal, type="Document", id="p", subject=["a"])
    other = api.content.create(container=portal, type="Document", id="o")
    transaction.commit()
    index = catalog._catalog.getIndex("Subject")
    with pytest.raises(ValueError, match="is not the one of the object at /plone/p"):
        index.index_object(catalog.getrid("/plone/o"), page)
    with pytest.raises(ValueError, match="'7': an int is needed"):
        index.index_object("7", page)
    page.subject = ("b",)
    assert index.index_object(catalog.getrid("/plone/p"), page) == 1
    assert [b.getPath() for b in catalog(Subject="b")] == ["/plone/p"]
    # Nothing went into the definition's own (ZODB) BTrees.
    definition = catalog._catalog.indexes.definition("Subject")
    assert len(definition._unindex) == 0 and len(definition._index) == 0
    assert other is not None
    transaction.abort()


def test_definitions_stay_a_persistent_mapping(pg_layer):
    from Persistence import PersistentMapping
    from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex

    catalog = api.portal.get_tool("portal_catalog")
    catalog._catalog._p_activate()
    stored = catalog._catalog.__dict__["indexes"]
    assert isinstance(stored, PersistentMapping)
    assert isinstance(stored["portal_type"], FieldIndex)
    assert "portal_type" in catalog._catalog.indexes
    definitions = catalog._catalog.indexes.definitions()
    assert isinstance(definitions["portal_type"].aq_base, FieldIndex)


def test_unique_values_see_this_transactions_changes(pg_layer):
    from Products.CMFCore.indexing import processQueue

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    api.content.create(container=portal, type="Document", id="fresh", subject=["fresh"])
    processQueue()
    assert catalog.uniqueValuesFor("Subject") == ("fresh",)
    assert catalog.Indexes["portal_type"]._index.get("Document") is not None
    assert catalog.getIndexDataForUID("/plone/fresh")["Subject"] == ["fresh"]
    transaction.abort()
    assert catalog.uniqueValuesFor("Subject") == ()


def test_text_entries_are_the_words_in_order(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(
        container=portal, type="Document", id="text", title="Lighthouse keeper"
    )
    transaction.commit()
    catalog = api.portal.get_tool("portal_catalog")
    rid = catalog.getrid("/plone/text")
    words = catalog.Indexes["SearchableText"].getEntryForObject(rid)
    assert words[:3] == ["text", "lighthouse", "keeper"]
    assert catalog.Indexes["Title"].getEntryForObject(rid) == ["lighthouse", "keeper"]
    assert catalog.Indexes["Title"].indexSize() >= 1


def _statements(monkeypatch) -> list:
    from plone_pgcatalog import indexes

    seen = []
    fetch = indexes._Rows.fetch

    def recording(self, statement, params, keep_plan=False, json=True):
        seen.append((statement, list(params)))
        return fetch(self, statement, params, keep_plan, json)

    monkeypatch.setattr(indexes._Rows, "fetch", recording)
    return seen


def _paths_read(monkeypatch) -> list:
    """The record ids whose path ``getpath`` reads by a statement of its
    own (``search.path_of``), in order."""
    from plone_pgcatalog.store import search

    read = []
    path_of = search.path_of

    def recording(conn, zoid, site_path):
        read.append(zoid)
        return path_of(conn, zoid, site_path)

    monkeypatch.setattr(search, "path_of", recording)
    return read


def _plan(statement, params) -> str:
    from plone_pgcatalog.store import connection
    from psycopg.rows import tuple_row

    catalog = api.portal.get_tool("portal_catalog")
    conn = connection.read_connection(catalog)
    with conn.transaction():
        with conn.cursor(row_factory=tuple_row) as cursor:
            # Whether an index can serve the query, whatever the table size.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(b"EXPLAIN " + statement.as_bytes(conn), params)
            return "\n".join(row[0] for row in cursor.fetchall())


def test_unique_values_of_a_field_index_use_its_btree(pg_layer, monkeypatch):
    from plone_pgcatalog.store.columns import covering_index_name
    from plone_pgcatalog.store.schema import sql_index_name

    catalog = api.portal.get_tool("portal_catalog")
    seen = _statements(monkeypatch)
    assert "Plone Site" in catalog.uniqueValuesFor("portal_type")
    statement, params = seen[-1]
    plan = _plan(statement, params)
    # Its typed column's B-tree, or the covering one (``columns.cover``),
    # keyed on the column too.
    assert (
        sql_index_name("portal_type", "c") in plan
        or covering_index_name("portal_type") in plan
    ), plan
    assert "Seq Scan" not in plan


def test_index_lookups_bind_their_values(pg_layer, monkeypatch):
    from plone_pgcatalog.store import connection

    catalog = api.portal.get_tool("portal_catalog")
    conn = connection.read_connection(catalog)
    seen = _statements(monkeypatch)
    catalog.Indexes["Subject"]._index.get("it's; DROP TABLE object_state")
    catalog.Indexes["UID"]._index.get("x' OR '1'='1")
    for statement, params in seen[-2:]:
        text = statement.as_string(conn)
        assert "DROP" not in text and "'1'='1" not in text
        assert any("DROP" in str(p) or "'1'='1" in str(p) for p in params)
    # Looked up on the typed column (its name, not a value).
    statement, params = seen[-1]
    assert '"UID" = %s AND (' in statement.as_string(conn)


@pytest.mark.parametrize(
    "name,value,condition",
    [
        # One object: the site's path a test no index answers, so that the
        # plan kept for every UID is the B-tree's (``UUIDIndexView``).
        (
            "UID",
            None,
            '"UID" = %s AND ((path = %s OR (path >= %s AND path < %s)))' " IS TRUE",
        ),
        ("portal_type", "Document", '"portal_type" = ANY(%s::text[])'),
        ("Subject", "x", '"Subject" && %s::text[]'),
    ],
)
def test_index_lookups_read_the_typed_columns(
    pg_layer, monkeypatch, name, value, condition
):
    """``_index.get(value)`` (plone.app.uuid's lookup of a path by UID) on
    the typed column, with a search's condition: by ``idx``, which no SQL
    index holds once the column is ready, it read every row of the site
    (32 ms at 10,220 rows).  Which index serves them on a test site's few
    rows is a toss-up of the statistics (the primary key's walk, at
    times): ``test_explain`` proves the plans on a large catalog."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal, type="Document", id="page", subject=["x"]
    )
    transaction.commit()
    catalog = api.portal.get_tool("portal_catalog")
    seen = _statements(monkeypatch)
    if value is None:
        value = api.content.get_uuid(page)
    found = catalog.Indexes[name]._index.get(value)
    rid = catalog.getrid("/".join(page.getPhysicalPath()))
    assert found == rid if name == "UID" else rid in found
    statement, params = seen[-1]
    assert f" {condition} ORDER BY zoid" in statement.as_string(None)


def test_lookups_by_uid_are_kept_per_committed_state(pg_layer, monkeypatch, preludes):
    """plone.app.uuid's path of a UID (the UID index object, then
    ``getpath``), which a page asks for each of its links on every view:
    read once per committed state (``snapshots.lookups``), read again
    after a commit (a rename: the new path), and not kept while the
    transaction has pending changes.  A request whose lookups are all kept
    sends nothing, not even its first read's savepoint."""
    from plone.app.uuid.utils import uuidToPhysicalPath
    from plone_pgcatalog import snapshots

    # On whatever ``PGCATALOG_RESULT_CACHE`` says.
    monkeypatch.setattr(snapshots.lookups, "enabled", True)
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(container=portal, type="Document", id="page")
    transaction.commit()
    uid = api.content.get_uuid(page)
    seen = _statements(monkeypatch)
    paths_read = _paths_read(monkeypatch)
    preludes.clear()
    for request in range(3):
        transaction.begin()
        assert uuidToPhysicalPath(uid) == "/plone/page"
        transaction.abort()
    # The path came with the UID's record id (``snapshots.remember_paths``),
    # and is kept with it.
    assert len(seen) == 1 and len(paths_read) == 0
    assert preludes == ["/plone"]
    # A new committed state: read again, the path where it is now.
    api.content.rename(obj=page, new_id="renamed")
    transaction.commit()
    for request in range(2):
        transaction.begin()
        assert uuidToPhysicalPath(uid) == "/plone/renamed"
        transaction.abort()
    assert len(seen) == 2 and len(paths_read) == 0
    # Pending changes: read from the rows as the transaction sees them.
    transaction.begin()
    api.content.create(container=portal, type="Document", id="other")
    assert uuidToPhysicalPath(uid) == "/plone/renamed"
    assert len(seen) == 3 and len(paths_read) == 1
    transaction.abort()


def test_a_uids_path_comes_with_its_record_id(pg_layer, monkeypatch):
    """plone.app.uuid's ``uuidToPhysicalPath``, caches off: the UID
    lookup reads the path with the record id and ``getpath`` asks nothing
    more (``snapshots.remember_paths``), in this transaction only; with the
    folder renamed in the transaction, the path where the page is now."""
    from plone.app.uuid.utils import uuidToPhysicalPath
    from plone_pgcatalog import snapshots

    monkeypatch.setattr(snapshots.lookups, "enabled", False)
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="folder")
    page = api.content.create(container=folder, type="Document", id="page")
    other = api.content.create(container=portal, type="Document", id="other")
    transaction.commit()
    uid, other_uid = api.content.get_uuid(page), api.content.get_uuid(other)
    seen = _statements(monkeypatch)
    paths_read = _paths_read(monkeypatch)
    catalog = api.portal.get_tool("portal_catalog")
    for request in range(2):
        transaction.begin()
        assert uuidToPhysicalPath(uid) == "/plone/folder/page"
        assert uuidToPhysicalPath(uid) == "/plone/folder/page"
        transaction.abort()
    # One lookup a call (the caches are off), no path read on its own.
    assert len(seen) == 4 and paths_read == []
    # A record id whose UID was not looked up: its path is read.
    transaction.begin()
    other_rid = catalog.getrid("/plone/other")
    assert catalog.getpath(other_rid) == "/plone/other"
    assert paths_read == [other_rid]
    transaction.abort()
    # Read before the rename, asked after it: where the page is now.
    transaction.begin()
    assert uuidToPhysicalPath(uid) == "/plone/folder/page"
    api.content.rename(obj=portal["folder"], new_id="moved")
    assert uuidToPhysicalPath(uid) == "/plone/moved/page"
    assert uuidToPhysicalPath(other_uid) == "/plone/other"
    transaction.abort()


def _searches(monkeypatch) -> list:
    """The queries ``searchResults`` translated and sent, in order."""
    from plone_pgcatalog import results

    sent = []
    searched = results._search

    def recording(catalog, query, *args):
        sent.append(dict(query))
        return searched(catalog, query, *args)

    monkeypatch.setattr(results, "_search", recording)
    return sent


def _brain(brain) -> tuple:
    return brain.getPath(), brain.Title, brain.review_state, brain.UID


@pytest.mark.parametrize("kept", [False, True], ids=["caches off", "lookups kept"])
def test_a_uids_brain_comes_with_its_path(pg_layer, monkeypatch, metadata_loads, kept):
    """plone.app.uuid's ``uuidToCatalogBrain`` after ``uuidToPhysicalPath``:
    the UID lookup read the rows with their paths (or found them kept per
    committed state, ``snapshots.lookups``), so the search for the brain
    sends nothing (``results._uid_read``) and gives the brain the
    search gives; in this transaction only, not once it has pending
    changes, and not while another index answers the key ``UID``."""
    from plone.app.uuid.utils import uuidToCatalogBrain
    from plone.app.uuid.utils import uuidToPhysicalPath
    from plone_pgcatalog import snapshots
    from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex

    monkeypatch.setattr(snapshots.lookups, "enabled", kept)
    monkeypatch.setattr(snapshots.results, "enabled", False)
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="folder")
    page = api.content.create(container=folder, type="Document", id="page")
    page.title = "Harbour lights"
    page.reindexObject()
    other = api.content.create(container=portal, type="Document", id="other")
    transaction.commit()
    uid, other_uid = api.content.get_uuid(page), api.content.get_uuid(other)
    catalog = api.portal.get_tool("portal_catalog")
    transaction.begin()
    searched = _brain(catalog.unrestrictedSearchResults(UID=uid)[0])
    assert searched == ("/plone/folder/page", "Harbour lights", "private", uid)
    transaction.abort()
    sent = _searches(monkeypatch)
    looked_up = _statements(monkeypatch)
    loads = metadata_loads
    transaction.begin()
    assert uuidToPhysicalPath(uid) == "/plone/folder/page"
    brain = uuidToCatalogBrain(uid)
    # The metadata is loaded when it is read (in the same snapshot).
    assert brain.getPath() == "/plone/folder/page" and loads == []
    assert _brain(brain) == searched and len(loads) == 1
    # Unknown: no brain, nothing sent either.
    assert uuidToPhysicalPath("0123456789abcdef0123456789abcdef") is None
    assert uuidToCatalogBrain("0123456789abcdef0123456789abcdef") is None
    assert sent == [] and len(looked_up) == 2
    # A UID not looked up, or the UID with another criterion: searched.
    assert uuidToCatalogBrain(other_uid).getPath() == "/plone/other"
    found = catalog.unrestrictedSearchResults(UID=uid, portal_type="Folder")
    assert len(found) == 0
    assert sent == [{"UID": other_uid}, {"UID": uid, "portal_type": "Folder"}]
    transaction.abort()
    # The next transaction: the brain alone is searched; after the path,
    # it is not, the lookup read again, or found kept.
    transaction.begin()
    assert _brain(uuidToCatalogBrain(uid)) == searched
    assert len(sent) == 3
    assert uuidToPhysicalPath(uid) == "/plone/folder/page"
    assert _brain(uuidToCatalogBrain(uid)) == searched
    assert len(sent) == 3 and len(looked_up) == (2 if kept else 3)
    transaction.abort()
    # Read before a change in the transaction, searched after it: the
    # search sees the change.
    transaction.begin()
    assert uuidToPhysicalPath(uid) == "/plone/folder/page"
    page.title = "Lighthouse"
    page.reindexObject()
    brain = uuidToCatalogBrain(uid)
    assert _brain(brain) == ("/plone/folder/page", "Lighthouse", "private", uid)
    assert len(sent) == 4
    transaction.abort()

    # Another index that answers the key ``UID`` too (ZCatalog sends a key
    # to every index whose query names hold it): searched, and nothing
    # found, as that index holds no such value.  Changed in the stored
    # mapping, not committed.
    class Alias(FieldIndex):
        def getIndexQueryNames(self):
            return (self.id, "UID")

    transaction.begin()
    assert uuidToPhysicalPath(uid) == "/plone/folder/page"
    catalog._catalog.__dict__["indexes"]["uid_alias"] = Alias("uid_alias")
    assert uuidToCatalogBrain(uid) is None
    assert len(sent) == 5
    transaction.abort()
    assert "uid_alias" not in catalog.indexes()


def test_genericsetup_exports_and_imports_catalog_xml_through_the_views(pg_layer):
    from Products.GenericSetup.interfaces import IBody
    from Products.GenericSetup.testing import DummySetupEnviron
    from zope.component import getMultiAdapter

    catalog = api.portal.get_tool("portal_catalog")
    environ = DummySetupEnviron()
    environ._should_purge = False
    adapter = getMultiAdapter((catalog, environ), IBody)
    body = adapter.body
    assert b'<index name="Subject" meta_type="KeywordIndex">' in body
    assert b'<indexed_attr value="Subject"/>' in body
    assert b'since_field="effective" until_field="expires"' in body
    # Importing changes the definitions, which the views show.  (Only this
    # index: GenericSetup has no importer for DateRecurringIndex, in stock
    # Plone either.)
    changed = (
        b'<?xml version="1.0"?>\n<object name="portal_catalog">\n'
        b' <index name="Subject" meta_type="KeywordIndex">\n'
        b'  <indexed_attr value="keywords"/>\n </index>\n</object>\n'
    )
    adapter.body = changed
    definition = catalog._catalog.indexes.definition("Subject")
    assert definition.indexed_attrs == ["keywords"]
    assert catalog.Indexes["Subject"].getIndexSourceNames() == ["keywords"]
    transaction.abort()


def test_unique_values_are_shared_by_the_readers_of_one_state_never_stale(
    pg_layer, monkeypatch
):
    """``uniqueValuesFor`` reads every row of the index: its answer is kept
    for the readers of the same committed state, and only for them."""
    from plone_pgcatalog import indexes
    from Products.CMFCore.indexing import processQueue
    from tests.integration.test_transactions import _in_other_thread

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    api.content.create(container=portal, type="Document", id="a", subject=["alpha"])
    transaction.commit()
    reads = []
    original = indexes._Rows.fetch
    monkeypatch.setattr(
        indexes._Rows,
        "fetch",
        lambda rows, *args, **kw: reads.append(args) or original(rows, *args, **kw),
    )
    assert catalog.uniqueValuesFor("Subject") == ("alpha",)
    transaction.begin()  # another request on the same committed state
    assert catalog.uniqueValuesFor("Subject") == ("alpha",)
    assert len(reads) == 1
    # Another writer commits: the next request reads the new state.
    _in_other_thread(
        pg_layer["pgdb"],
        lambda p: api.content.create(
            container=p, type="Document", id="b", subject=["beta"]
        ),
    )
    transaction.begin()
    assert catalog.uniqueValuesFor("Subject") == ("alpha", "beta")
    assert len(reads) == 2
    # This transaction's own changes are seen, and not kept for others.
    api.content.create(container=portal, type="Document", id="c", subject=["gamma"])
    processQueue()
    assert catalog.uniqueValuesFor("Subject") == ("alpha", "beta", "gamma")
    transaction.abort()
    assert catalog.uniqueValuesFor("Subject") == ("alpha", "beta")


def test_kept_unique_values_follow_this_transactions_index_definitions(pg_layer):
    """``uniqueValuesFor``'s kept answer is keyed by the index's name and
    type as this transaction has them: an index removed, or replaced by one
    of another type, and not yet committed, is not answered from it.

    The definitions are changed in the stored mapping itself: ``delIndex``
    and ``addIndex`` also queue their SQL, which runs whether or not the
    transaction commits, and would change the database other tests use."""
    from Products.PluginIndexes.BooleanIndex.BooleanIndex import BooleanIndex

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    api.content.create(
        container=portal, type="Document", id="a", subject=["alpha", "beta"]
    )
    transaction.commit()
    assert catalog.uniqueValuesFor("Subject") == ("alpha", "beta")
    definitions = catalog._catalog.__dict__["indexes"]
    del definitions["Subject"]
    with pytest.raises(KeyError):
        catalog.uniqueValuesFor("Subject")
    # A BooleanIndex of the same name: both truth values.
    definitions["Subject"] = BooleanIndex("Subject")
    as_boolean = catalog.uniqueValuesFor("Subject")
    assert sorted(as_boolean) == [False, True]
    assert as_boolean == tuple(catalog._catalog.getIndex("Subject").uniqueValues())
    transaction.abort()
    assert catalog.uniqueValuesFor("Subject") == ("alpha", "beta")
