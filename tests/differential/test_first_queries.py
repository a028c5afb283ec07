"""Differential: the skeleton's queries give what ZCatalog gives.

The same content is built in a stock ZCatalog site and in a plone_pgcatalog
site (both ``/plone``); every query's paths must be equal, in order where
the query sorts, as sets where ZCatalog's order is undefined.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from tests.conftest import collect_in
from tests.differential.pages import build_pages

import pytest

#: (name, query, ordered?)
QUERIES = [
    ("type", {"portal_type": "Document"}, False),
    ("types list", {"portal_type": ["Document", "Folder"]}, False),
    ("sorted title", {"portal_type": "Document", "sort_on": "sortable_title"}, True),
    (
        "sorted title reverse",
        {
            "portal_type": "Document",
            "sort_on": "sortable_title",
            "sort_order": "reverse",
        },
        True,
    ),
    (
        "sorted title descending, limit",
        {"sort_on": "sortable_title", "sort_order": "descending", "sort_limit": 5},
        True,
    ),
    (
        "batch",
        {
            "portal_type": "Document",
            "sort_on": "sortable_title",
            "b_start": 5,
            "b_size": 5,
        },
        True,
    ),
    ("private", {"review_state": "private"}, False),
    (
        "published sorted",
        {"review_state": "published", "sort_on": "sortable_title"},
        True,
    ),
    ("subject or", {"Subject": ["alpha", "gamma"]}, False),
    (
        "subject and",
        {"Subject": {"query": ["alpha", "beta"], "operator": "and"}},
        False,
    ),
    ("subtree", {"path": "/plone/folder"}, False),
    ("children", {"path": {"query": "/plone/folder", "depth": 1}}, False),
    (
        "children in order",
        {"path": {"query": "/plone", "depth": 1}, "sort_on": "getObjPositionInParent"},
        True,
    ),
    ("id", {"id": "page-07"}, False),
    ("unknown key ignored", {"portal_type": "Document", "no_such_index": 1}, False),
    ("created sorted", {"sort_on": "created", "portal_type": "Document"}, False),
]


def _title_letters(number: int) -> str:
    """Two letters whose order differs from the numbers' order."""
    return f"{chr(ord('a') + (number * 7) % 26)}{'Z' if number % 3 else 'b'}"


def build_content(portal) -> None:
    build_pages(portal, 20, lambda number: f"{_title_letters(number)} {number}")


def run_queries(layer, as_anonymous: bool) -> dict:
    portal = layer["portal"]
    build_content(portal)
    if as_anonymous:
        logout()
    results = {}
    catalog = api.portal.get_tool("portal_catalog")
    for name, query, _ in QUERIES:
        brains = catalog(**query)
        results[name] = (
            [brain.getPath() for brain in brains],
            brains.actual_result_count,
        )
    return results


def results_in(layer_name: str, as_anonymous: bool) -> dict:
    return collect_in(layer_name, lambda layer: run_queries(layer, as_anonymous))


@pytest.fixture(scope="module")
def manager_results():
    return results_in("zcatalog", False), results_in("pg", False)


@pytest.fixture(scope="module")
def anonymous_results():
    return results_in("zcatalog", True), results_in("pg", True)


def _compare(expected, actual, ordered):
    expected_paths, expected_count = expected
    actual_paths, actual_count = actual
    assert actual_count == expected_count
    if ordered:
        assert actual_paths == expected_paths
    else:
        assert sorted(actual_paths) == sorted(expected_paths)


@pytest.mark.parametrize("name,query,ordered", QUERIES, ids=[q[0] for q in QUERIES])
def test_as_manager(manager_results, name, query, ordered):
    zcatalog, pg = manager_results
    assert zcatalog[name][1] > 0 or name in ("unknown key ignored",)
    _compare(zcatalog[name], pg[name], ordered)


@pytest.mark.parametrize("name,query,ordered", QUERIES, ids=[q[0] for q in QUERIES])
def test_as_anonymous(anonymous_results, name, query, ordered):
    zcatalog, pg = anonymous_results
    _compare(zcatalog[name], pg[name], ordered)
