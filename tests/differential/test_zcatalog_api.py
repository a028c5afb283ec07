"""Differential: the rest of ZCatalog's API gives what ZCatalog gives.

``portal_catalog.search`` (Plone's programmatic search, with its security
terms and ZCatalog's raw form for ``mergeResults``), ``resolve_path`` and
``resolve_url``, ``clearIndex`` and the ZMI's ``manage_*`` methods of
ZCatalog, the query report's methods, and the data API of ``_catalog``
(``_catalog[rid]``, ``searchResults``, ``search``, ``uids``, ``paths``,
``catalogObject`` ...), which add-ons and ZCatalog's own helpers call.

The same small site is built in a stock ZCatalog site and in a
plone_pgcatalog site; each call of ``CALLS`` runs in both, as the Manager
and as Anonymous, and its outcome (paths, counts, values, or the class of
the exception) must be the same.  Record ids differ between the catalogs:
outcomes name objects by path.
"""

from __future__ import annotations

from DateTime import DateTime
from plone import api
from plone.app.testing import logout
from Products.ZCatalog.Catalog import mergeResults
from tests.conftest import collect_in
from tests.differential.pages import build_pages

import pytest
import transaction

PAGE = "/plone/folder/page-04"


def build_content(portal) -> None:
    build_pages(
        portal,
        12,
        lambda number: f"{chr(ord('a') + (number * 5) % 12)} page {number}",
        lambda number: "glacier report" if number % 3 == 0 else "meadow",
    )
    # Fixed creation dates: the ``created`` histogram compares dates, and
    # a build that crossed a minute in one catalog and not in the other
    # made the two differ (CI, 2026-12-01).
    for number, brain in enumerate(
        api.portal.get_tool("portal_catalog").unrestrictedSearchResults(sort_on="path")
    ):
        item = brain._unrestrictedGetObject()
        item.creation_date = DateTime(f"2024/03/0{1 + number % 3} 10:00 UTC")
        item.reindexObject(idxs=["created"])
    transaction.commit()


def _paths(results) -> list[str]:
    return [brain.getPath() for brain in results]


def _merged(raw, reverse=False) -> list[str]:
    """The paths of one catalog's raw results as ``mergeResults`` sorts them."""
    return _paths(mergeResults([raw], True, reverse))


def _outcome(call, catalog, portal):
    try:
        return call(catalog, portal)
    except Exception as exc:  # the outcome to compare, not a test failure
        return ("raised", type(exc).__name__)


# -- portal_catalog.search ------------------------------------------------------


def _search(query, *args):
    def call(catalog, portal):
        results = catalog.search(dict(query), *args)
        return sorted(_paths(results)), len(results), results.actual_result_count

    return call


def _search_ordered(query, *args):
    def call(catalog, portal):
        results = catalog.search(dict(query), *args)
        return _paths(results), len(results), results.actual_result_count

    return call


def _search_limited_unsorted(catalog, portal):
    # Which objects ZCatalog keeps is its record ids' order: the counts only.
    results = catalog.search({"portal_type": "Document"}, None, 0, 3)
    return len(results), results.actual_result_count


def _search_writes_the_query(catalog, portal):
    query = {"portal_type": "Document"}
    catalog.search(query)
    return sorted(query)


def _search_raw_sorted(catalog, portal):
    raw = catalog.search({"portal_type": "Document"}, "sortable_title", 0, None, 0)
    # In no particular order: ``mergeResults`` sorts them.
    return sorted(key for key, _, _ in raw), _merged(raw)


def _search_raw_sorted_reverse(catalog, portal):
    raw = catalog.search({"portal_type": "Document"}, "getId", 1, None, 0)
    return sorted(key for key, _, _ in raw), _merged(raw, reverse=True)


def _search_raw_words(catalog, portal):
    raw = catalog.search({"SearchableText": "glacier"}, None, 0, None, 0)
    return sorted(_merged(raw)), [entry[1][0] for entry in raw]


def _search_raw_unsorted(catalog, portal):
    return sorted(_paths(catalog.search({"Subject": "alpha"}, merge=0)))


# -- resolving paths, the ZMI's methods, the query report ------------------------


def _resolve_path(catalog, portal):
    found = catalog.resolve_path(PAGE)
    return "/".join(found.getPhysicalPath()), catalog.resolve_path("/plone/nowhere")


def _resolve_url(catalog, portal):
    request = portal.REQUEST
    found = catalog.resolve_url("plone/folder/page-04", request)
    missing = catalog.resolve_url("plone/nowhere", request)
    return "/".join(found.getPhysicalPath()), missing, catalog.resolve_url(PAGE, None)


def _clear_index(catalog, portal):
    catalog.clearIndex("Subject")
    cleared = _paths(catalog(Subject="alpha"))
    others = sorted(_paths(catalog(portal_type="Document", review_state="published")))
    catalog.reindexIndex("Subject", portal.REQUEST)
    again = sorted(_paths(catalog(Subject="alpha")))
    transaction.abort()
    return cleared, others, again


def _clear_unknown_index(catalog, portal):
    catalog.clearIndex("no_such_index")


def _manage_clear_index(catalog, portal):
    response = portal.REQUEST.RESPONSE
    catalog.manage_clearIndex(
        ["Subject", "Description"], portal.REQUEST, response, "http://nohost/x"
    )
    outcome = (
        _paths(catalog(Subject="alpha")),
        _paths(catalog(Description="meadow")),
        response.getHeader("Location"),
    )
    transaction.abort()
    return outcome


def _manage_clear_no_index(catalog, portal):
    catalog.manage_clearIndex([])


def _manage_uncatalog_and_catalog(catalog, portal):
    response = portal.REQUEST.RESPONSE
    catalog.manage_uncatalogObject(
        portal.REQUEST, response, "http://nohost/x", urls=PAGE
    )
    gone = sorted(_paths(catalog(path={"query": "/plone/folder", "depth": 1})))
    left = response.getHeader("Location")
    page = portal.unrestrictedTraverse(PAGE)
    page.title = "Retitled"  # not reindexed: only the form catalogs it
    catalog.manage_catalogObject(
        portal.REQUEST, response, "http://nohost/x", urls=[PAGE, "/plone/nowhere"]
    )
    back = [b.Title for b in catalog(path={"query": PAGE, "depth": 0})]
    outcome = gone, left, back, response.getHeader("Location")
    transaction.abort()
    return outcome


def _query_report(catalog, portal):
    catalog.manage_editCatalogReport(0)
    catalog.manage_resetCatalogReport()
    catalog(portal_type="Document", sort_on="sortable_title")
    entries = catalog.getCatalogReport()
    shapes = [
        (sorted(entry), sorted(entry["last"]), entry["counter"] >= 1)
        for entry in entries
    ]
    catalog.manage_resetCatalogReport()
    catalog.manage_editCatalogReport("0.1")
    return bool(entries), shapes[:1], catalog.getCatalogReport()


def _query_report_bad_time(catalog, portal):
    catalog.manage_editCatalogReport("soon")


# -- _catalog ---------------------------------------------------------------------


def _catalog_items(catalog, portal):
    inner = catalog._catalog
    rid = catalog.getrid(PAGE)
    by_rid = inner[rid]
    scored = inner[(50, 3, rid)]
    return (
        len(inner),
        len(inner) == len(catalog),
        by_rid.getPath(),
        by_rid.Title,
        (scored.data_record_score_, scored.data_record_normalized_score_),
    )


def _catalog_item_missing(catalog, portal):
    return catalog._catalog[987654321]


def _catalog_search_results(catalog, portal):
    inner = catalog._catalog
    return (
        sorted(_paths(inner.searchResults({"portal_type": "Document"}))),
        _paths(inner(review_state="private", sort_on="sortable_title")),
        _paths(inner({"sort_on": "getId", "sort_order": "reverse", "sort_limit": 4})),
    )


def _catalog_search_results_raw(catalog, portal):
    raw = catalog._catalog.searchResults(
        {"portal_type": "Document", "sort_on": "sortable_title"}, _merge=False
    )
    return _merged(raw)


def _catalog_search(catalog, portal):
    inner = catalog._catalog
    title = inner.getIndex("sortable_title")
    return (
        _paths(inner.search({"portal_type": "Document"}, title, True, 3)),
        _paths(
            inner.search(
                {"review_state": "published"},
                [inner.getIndex("portal_type"), title],
                [False, True],
            )
        ),
        sorted(_paths(inner.search({"Subject": "beta"}))),
    )


def _catalog_uids_and_paths(catalog, portal):
    inner = catalog._catalog
    rid = catalog.getrid(PAGE)
    uids, paths = inner.uids, inner.paths
    return (
        inner.hasuid(PAGE) == rid,
        inner.hasuid("/plone/nowhere"),
        list(uids.keys()),
        uids[PAGE] == rid,
        PAGE in uids,
        "/plone/nowhere" in uids,
        uids.get("/plone/nowhere", "none"),
        len(uids),
        paths[rid],
        rid in paths,
        paths.get(987654321),
        sorted(paths.values()),
        [paths[r] for r in paths.keys()] == [p for _, p in paths.items()],
        sorted(uids.values()) == sorted(paths.keys()),
    )


def _catalog_uid_missing(catalog, portal):
    return catalog._catalog.uids["/plone/nowhere"]


def _catalog_data(catalog, portal):
    inner = catalog._catalog
    rid = catalog.getrid(PAGE)
    return (
        inner.getMetadataForRID(rid)["Title"],
        inner.getIndexDataForRID(rid)["portal_type"],
        inner.uniqueValuesFor("Subject"),
    )


def _catalog_writes(catalog, portal):
    inner = catalog._catalog
    page = portal.unrestrictedTraverse(PAGE)
    inner.uncatalogObject(PAGE)
    gone = catalog.getrid(PAGE)
    page.title = "Again"
    # The object as it is: no indexer gives it ``allowedRolesAndUsers``, so
    # searches (the tool's) do not find it; unrestricted ones do.
    inner.catalogObject(page, PAGE)
    found = [b.Title for b in catalog(path={"query": PAGE, "depth": 0})]
    unrestricted = [
        b.Title for b in catalog.unrestrictedSearchResults(path=PAGE, Title="again")
    ]
    data = catalog.getIndexDataForUID(PAGE)
    indexed = sorted(
        name for name, value in data.items() if value not in ((), None, "")
    )
    inner.clear()
    emptied = len(catalog(portal_type="Document"))
    transaction.abort()
    return gone, found, unrestricted, indexed, emptied


def _remove_index(catalog, portal):
    catalog._removeIndex("no_such_index")  # no error: Plone's "safe removal"
    catalog._removeIndex("Subject")
    outcome = "Subject" in catalog.indexes(), len(catalog(Subject="alpha"))
    transaction.abort()
    return outcome


# -- the index objects' data methods ------------------------------------------------


def _index_clear(catalog, portal):
    catalog._catalog.getIndex("Subject").clear()
    outcome = _paths(catalog(Subject="alpha")), len(catalog(portal_type="Document"))
    transaction.abort()
    return outcome


def _index_object(catalog, portal):
    index = catalog._catalog.getIndex("Subject")
    page = portal.unrestrictedTraverse(PAGE)
    page.subject = ("delta",)  # not reindexed: only index_object reads it
    indexed = index.index_object(catalog.getrid(PAGE), page)
    found = _paths(catalog(Subject="delta"))
    title_kept = [b.Title for b in catalog(Subject="delta")]
    index.unindex_object(catalog.getrid(PAGE))
    index.unindex_object(987654321)  # no such row: nothing
    gone = _paths(catalog(Subject="delta"))
    transaction.abort()
    return bool(indexed), found, title_kept, gone


def _index_histogram(catalog, portal):
    return [
        catalog._catalog.getIndex(name).histogram()
        for name in ("Subject", "portal_type", "is_folderish", "created")
    ]


def _index_counter(catalog, portal):
    index = catalog._catalog.getIndex("Subject")
    before = index.getCounter()
    page = portal.unrestrictedTraverse(PAGE)
    page.subject = ("epsilon",)
    page.reindexObject()
    transaction.commit()
    return index.getCounter() != before


CALLS = {
    "search": _search({"portal_type": "Document"}),
    "search sorted": _search_ordered({"portal_type": "Document"}, "sortable_title"),
    "search reverse": _search_ordered({"portal_type": "Document"}, "getId", 1),
    "search limit": _search_ordered(
        {"portal_type": "Document"}, "sortable_title", 0, 4
    ),
    "search batch": _search_ordered(
        {"portal_type": "Document", "b_start": 2, "b_size": 3}, "sortable_title"
    ),
    "search ignores sort keys": _search(
        {"portal_type": "Document", "sort_on": "getId", "sort_limit": 2}
    ),
    "search ignores hyphened sort keys": _search(
        {"portal_type": "Document", "sort-on": "getId", "sort-limit": 2}
    ),
    "search words": _search({"SearchableText": "glacier"}),
    "search path": _search({"path": "/plone/folder"}),
    "search unknown sort index": _search({"portal_type": "Document"}, "nope"),
    "search limit unsorted": _search_limited_unsorted,
    "search writes the query": _search_writes_the_query,
    "search raw sorted": _search_raw_sorted,
    "search raw reverse": _search_raw_sorted_reverse,
    "search raw words": _search_raw_words,
    "search raw unsorted": _search_raw_unsorted,
    "resolve_path": _resolve_path,
    "resolve_url": _resolve_url,
    "clearIndex": _clear_index,
    "clearIndex unknown": _clear_unknown_index,
    "manage_clearIndex": _manage_clear_index,
    "manage_clearIndex none": _manage_clear_no_index,
    "manage_uncatalogObject, manage_catalogObject": _manage_uncatalog_and_catalog,
    "query report": _query_report,
    "query report bad time": _query_report_bad_time,
    "_catalog[rid]": _catalog_items,
    "_catalog[missing]": _catalog_item_missing,
    "_catalog.searchResults": _catalog_search_results,
    "_catalog.searchResults raw": _catalog_search_results_raw,
    "_catalog.search": _catalog_search,
    "_catalog.uids, paths": _catalog_uids_and_paths,
    "_catalog.uids[missing]": _catalog_uid_missing,
    "_catalog data": _catalog_data,
    "_catalog writes": _catalog_writes,
    "_removeIndex": _remove_index,
    "index clear": _index_clear,
    "index_object, unindex_object": _index_object,
    "index histogram": _index_histogram,
    # Last: it commits a change.
    "index getCounter": _index_counter,
}

#: Calls whose outcome is the same for every user (no security terms).
ANONYMOUS = [name for name in CALLS if name.startswith("search")]


def _run_calls(layer, as_anonymous: bool) -> dict:
    portal = layer["portal"]
    build_content(portal)
    catalog = api.portal.get_tool("portal_catalog")
    if as_anonymous:
        logout()
        names = ANONYMOUS
    else:
        names = list(CALLS)
    return {name: _outcome(CALLS[name], catalog, portal) for name in names}


@pytest.fixture(scope="module")
def manager_outcomes():
    return (
        collect_in("zcatalog", lambda layer: _run_calls(layer, False)),
        collect_in("pg", lambda layer: _run_calls(layer, False)),
    )


@pytest.fixture(scope="module")
def anonymous_outcomes():
    return (
        collect_in("zcatalog", lambda layer: _run_calls(layer, True)),
        collect_in("pg", lambda layer: _run_calls(layer, True)),
    )


@pytest.mark.parametrize("name", list(CALLS))
def test_as_manager(manager_outcomes, name):
    zcatalog, pg = manager_outcomes
    assert pg[name] == zcatalog[name]


@pytest.mark.parametrize("name", ANONYMOUS)
def test_as_anonymous(anonymous_outcomes, name):
    zcatalog, pg = anonymous_outcomes
    assert pg[name] == zcatalog[name]


#: The calls meant to raise (in ZCatalog too).
RAISING = {
    "search unknown sort index",
    "clearIndex unknown",
    "manage_clearIndex none",
    "query report bad time",
    "_catalog[missing]",
    "_catalog.uids[missing]",
}


def test_zcatalog_raised_only_where_meant_to(manager_outcomes, anonymous_outcomes):
    """Two equal exceptions would prove nothing about the call itself."""
    for outcomes in (manager_outcomes[0], anonymous_outcomes[0]):
        raised = {
            name
            for name, outcome in outcomes.items()
            if isinstance(outcome, tuple) and outcome[:1] == ("raised",)
        }
        assert raised == RAISING & set(outcomes), raised


def test_the_outcomes_are_not_empty(manager_outcomes, anonymous_outcomes):
    """The calls found something: equal empty outcomes would prove nothing."""
    zcatalog, _ = manager_outcomes
    assert zcatalog["search"][1] == 12
    ids = [path.rsplit("/", 1)[1] for path in zcatalog["search reverse"][0]]
    assert ids == sorted(ids, reverse=True)
    assert zcatalog["_catalog.uids, paths"][7] >= 13
    assert zcatalog["clearIndex"][0] == [] and zcatalog["clearIndex"][2]
    anonymous, _ = anonymous_outcomes
    assert anonymous["search"][1] == 6
