"""Differential: facet counts are what ZCatalog gives when each facet's
query is run separately and counted (issue 18).

For every base query, user and facet: the count of a value is
``len(catalog(base query without the facet's own key, facet=value))`` on
the stock ZCatalog site (``uniqueValuesFor`` lists the values), and what
``facet_counts`` returns on the plone_pgcatalog site, with the same
content.  Values without results are left out on both sides.  A path
facet's folder counts what ``path={"query": folder, "depth": -1}`` finds
(the folders: every cataloged path cut at the depth); a date range what
ZCatalog's range query finds.
"""

from __future__ import annotations

from tests.conftest import run_in
from tests.differential.content import become
from tests.differential.content import build_content
from tests.differential.content import SUBJECTS

import pytest
import transaction

USERS = ("manager", "member", "anonymous")
FACETS = ("portal_type", "review_state", "Subject", "is_folderish", "Creator")
#: Path facets: (name, root, depth).
PATH_FACETS = (
    ("path", "/plone", 1),
    ("below en", "/plone/en", 1),
    ("deep", "/plone", 3),
)
#: Date facets: (name, index, ranges).
DATE_FACETS = (
    (
        "created",
        "created",
        {
            "first day": {"min": "2020/01/01", "max": "2020/01/01 23:59 GMT+1"},
            "to the 4th": {"max": "2020/01/04 08:00 GMT+1"},
            "from the 3rd": {"min": "2020/01/03 08:00 GMT+1"},
            "2019": {"min": "2019/01/01", "max": "2019/12/31"},
        },
    ),
    (
        "effective",
        "effective",
        {"until 2030": {"max": "2030/01/01"}, "from 2030": {"min": "2030/01/01"}},
    ),
)
ALL_FACETS = (
    *FACETS,
    *({"index": "path", "name": n, "root": r, "depth": d} for n, r, d in PATH_FACETS),
    *({"index": i, "name": n, "ranges": r} for n, i, r in DATE_FACETS),
)
NAMES = (
    *FACETS,
    *(name for name, _, _ in PATH_FACETS),
    *(name for name, _, _ in DATE_FACETS),
)
BASE_QUERIES = {
    "everything": {},
    "pages and news": {"portal_type": ["Document", "News Item"]},
    "one subject": {"Subject": SUBJECTS[0]},
    "published documents": {"review_state": "published", "portal_type": "Document"},
    "folders, sorted, a batch": {
        "portal_type": "Folder",
        "sort_on": "sortable_title",
        "b_size": 3,
    },
    "subtree": {"path": "/plone/en"},
    "created early": {
        "created": {"query": "2020/01/15 08:00 GMT+1", "range": "max"},
        "path": "/plone/en",
    },
    "words": {"SearchableText": "coast OR Küste"},
}


def _rest(query: dict, index: str) -> dict:
    return {
        key: value
        for key, value in query.items()
        if key != index and key not in ("sort_on", "b_size")
    }


def _counted(catalog, rest: dict, index: str, values: dict) -> dict:
    """``{value: count}`` of the non-empty ``values`` (``{value: query}``)."""
    found = {}
    for value, criterion in values.items():
        count = len(catalog(**{**rest, index: criterion}))
        if count:
            found[value] = count
    return found


def _folders(catalog, root: str, depth: int) -> list[str]:
    """Every cataloged path below ``root`` cut ``depth`` levels below it."""
    size = len(root.split("/")) + depth
    return sorted(
        {
            "/".join(path.split("/")[:size])
            for path in catalog._catalog.uids
            if path.startswith(root + "/") and len(path.split("/")) >= size
        }
    )


def _oracle(catalog, query: dict) -> dict:
    """Each facet's counts, one query per value (the proposed endpoint's
    way on ZCatalog)."""
    counts = {}
    for facet in FACETS:
        counts[facet] = _counted(
            catalog,
            _rest(query, facet),
            facet,
            {value: value for value in catalog.uniqueValuesFor(facet)},
        )
    for name, root, depth in PATH_FACETS:
        counts[name] = _counted(
            catalog,
            _rest(query, "path"),
            "path",
            {
                folder: {"query": folder, "depth": -1}
                for folder in _folders(catalog, root, depth)
            },
        )
    for name, index, ranges in DATE_FACETS:
        counts[name] = _counted(
            catalog,
            _rest(query, index),
            index,
            {
                label: (
                    {"query": (bounds["min"], bounds["max"]), "range": "min:max"}
                    if len(bounds) == 2
                    else {
                        "query": next(iter(bounds.values())),
                        "range": next(iter(bounds)),
                    }
                )
                for label, bounds in ranges.items()
            },
        )
    return counts


def _record(layer, pgcatalog: bool) -> dict:
    runner = run_in(layer)
    try:
        portal = next(runner)["portal"]
        build_content(portal)
        catalog = portal.portal_catalog
        records = {}
        for user in USERS:
            become(portal, user)
            for name, query in BASE_QUERIES.items():
                if pgcatalog:
                    records[(name, user)] = {
                        facet: dict(values)
                        for facet, values in catalog.facet_counts(
                            query, facets=ALL_FACETS
                        ).items()
                    }
                else:
                    records[(name, user)] = _oracle(catalog, query)
        transaction.abort()
        return records
    finally:
        runner.close()


@pytest.fixture(scope="module")
def counts():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
    from plone_pgcatalog.testing import ZCATALOG_FUNCTIONAL_TESTING

    return (
        _record(ZCATALOG_FUNCTIONAL_TESTING, False),
        _record(PGCATALOG_FUNCTIONAL_TESTING, True),
    )


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("name", sorted(BASE_QUERIES))
def test_facet_counts_are_zcatalogs(counts, name, user):
    zcatalog, pg = counts
    expected, actual = zcatalog[(name, user)], pg[(name, user)]
    assert all(expected[facet] for facet in FACETS[:2]), "a query that counts nothing"
    for facet in NAMES:
        assert actual[facet] == expected[facet], facet


@pytest.mark.parametrize("facet", NAMES[len(FACETS) :])
def test_the_path_and_date_facets_are_not_vacuous(counts, facet):
    zcatalog, _ = counts
    assert sum(1 for found in zcatalog.values() if found[facet]) > len(USERS), facet
