"""Differential: ``len()`` of searches counted from the counts per group
(``columns.GROUPED``: a type, a state, who may see), ZCatalog as the
oracle.

The same pages, folders, news items and states in both sites; each query
names only the grouped indexes (the catalog adds the security terms),
windowed or not, so that the pgcatalog site counts its matches from
``pgcatalog_counts`` (checked: the statements name it).  Their length,
``actual_result_count`` and items must be ZCatalog's, as a Manager
before a change and after a transition, a deletion and a sharing change
(each committed), and as Anonymous, who sees less.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.store import columns
from tests.conftest import collect_in

import transaction

#: Searches of the grouped indexes only.
QUERIES = {
    "a type": {"portal_type": "Document"},
    "two types": {"portal_type": ["Document", "News Item"]},
    "a state": {"review_state": "published"},
    "a type in a state": {"portal_type": "Document", "review_state": "private"},
    "not a type": {"portal_type": {"not": "Folder"}, "review_state": "private"},
    "states from": {"review_state": {"query": "private", "range": "min"}},
    "a type, a page of 3": {"portal_type": "Document", "b_size": 3, "b_start": 3},
    "a type none has": {"portal_type": "Event"},
}


def _outcomes(catalog) -> dict:
    found = {}
    for name, query in QUERIES.items():
        brains = catalog.searchResults(**query)
        found[name] = (
            len(brains),
            brains.actual_result_count,
            sorted(brain.getPath() for brain in brains),
        )
    return found


def _collect(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    folder = api.content.create(container=portal, type="Folder", id="f")
    for number in range(8):
        page = api.content.create(
            container=folder if number % 2 else portal,
            type="News Item" if number % 3 == 0 else "Document",
            id=f"p{number}",
        )
        if number % 2:
            api.content.transition(obj=page, transition="publish")
    transaction.commit()
    steps = {"made": _outcomes(catalog)}
    api.content.transition(obj=portal["p2"], transition="publish")
    transaction.commit()
    steps["published"] = _outcomes(catalog)
    api.content.delete(obj=portal["p4"], check_linkintegrity=False)
    transaction.commit()
    steps["deleted"] = _outcomes(catalog)
    folder.manage_setLocalRoles(TEST_USER_ID, ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    steps["shared"] = _outcomes(catalog)
    # Anonymous, who sees the published items only.
    logout()
    steps["as Anonymous"] = _outcomes(catalog)
    return steps


def test_lengths_counted_by_groups_are_zcatalogs(searches):
    expected = collect_in("zcatalog", _collect)
    got = collect_in("pg", _collect)
    assert got == expected
    # The pgcatalog site counted the Manager's from the groups, in each of
    # the four steps: all but the ``not`` query, whose translation reads
    # the table.  (Anonymous's searches carry the effective range and count
    # their rows.)
    grouped = [s for s in searches if columns.COUNTS_TABLE in s.statement]
    assert len(grouped) == 4 * (len(QUERIES) - 1)
    # The premise: the results are not all empty.
    assert expected["made"]["a type"][0] > 0
    assert expected["as Anonymous"]["states from"] != expected["shared"]["states from"]
