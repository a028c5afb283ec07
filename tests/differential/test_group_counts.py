"""Differential: ``len()`` of searches counted from the counts per group
(``columns.GROUPED``: a type, a state, who may see), ZCatalog as the
oracle.

The same pages, folders, news items and states in both sites; each query
names only the grouped indexes (the catalog adds the security terms),
windowed or not, so that the pgcatalog site counts its matches from
``pgcatalog_counts`` (checked: the statements name it).  Their length,
``actual_result_count`` and items must be ZCatalog's, as a Manager
before a change and after a transition, a deletion and a sharing change
(each committed), and as Anonymous, who sees less: not the published
items out of their effective range, which the pgcatalog site takes away
from its groups' counts.
"""

from __future__ import annotations

from Acquisition import aq_base
from DateTime import DateTime
from functools import partial
from plone import api
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.query import RESIDUE_SHARE
from plone_pgcatalog.store import columns
from tests.conftest import collect_in
from tests.integration.test_group_counts import _branch_run
from types import SimpleNamespace

import psycopg
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
    "a state, a page of 2": {"review_state": "published", "b_size": 2, "b_start": 1},
    "a type none has": {"portal_type": "Event"},
}


#: The residue's test of the rows without a range (``registry``'s
#: ``DateRangeTranslator.residue``), of the range column ``%s``.
_WITHOUT = "= 'empty' OR \"%s\" IS NULL"


def _in_creation_order(catalog) -> None:
    """Number ZCatalog's new records from 1 up.  An unsorted result is in
    record order, and ZCatalog numbers a new record after the last one it
    made, from a random base taken anew whenever the number reaches a
    multiple of 4,000 (``Catalog.updateMetadata``): about one run in a
    hundred, a window of a few dozen items would hold other rows than
    zoid order's (the pgcatalog site's, where zoids follow creation).
    Nothing to do in the pgcatalog site."""
    records = getattr(aq_base(catalog), "_catalog", None)
    if records is not None:
        records._v_nextid = 1


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
    _in_creation_order(catalog)
    folder = api.content.create(container=portal, type="Folder", id="f")
    for number in range(8):
        page = api.content.create(
            container=folder if number % 2 else portal,
            type="News Item" if number % 3 == 0 else "Document",
            id=f"p{number}",
        )
        if number % 2:
            api.content.transition(obj=page, transition="publish")
    # Enough published items in effect that the few out of it are at most
    # ``query.RESIDUE_SHARE``'s share of their groups: taken away, not
    # counted by the fallback.
    for number in range(24):
        page = api.content.create(container=portal, type="Document", id=f"q{number}")
        api.content.transition(obj=page, transition="publish")
    # Published items Anonymous does not see: not yet in effect, expired,
    # and with a range in which no moment lies (``effectiveRange``: the
    # rows out of it, found by its B-trees, taken away).
    now = DateTime()
    dates = {"p5": (now + 30, None), "p7": (None, now - 1), "p3": (now + 9, now + 5)}
    for page_id, (effective, expires) in dates.items():
        page = folder[page_id]
        page.effective_date, page.expiration_date = effective, expires
        page.reindexObject()
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
    # The pgcatalog site counted from the groups in each of the five steps
    # all but the ``not`` query, whose translation reads the table;
    # Anonymous's less the rows out of the effective range.
    grouped = [s for s in searches if columns.COUNTS_TABLE in s.statement]
    assert len(grouped) == 5 * (len(QUERIES) - 1)
    less = [s.statement for s in grouped if "LIMIT g.grouped" in s.statement]
    assert len(less) == len(QUERIES) - 1
    # After the security terms: a row without a range would stay.
    assert not any(_WITHOUT % "effectiveRange" in statement for statement in less)
    # The premise: the results are not all empty, and Anonymous does not
    # see some published items.
    assert expected["made"]["a type"][0] > 0
    assert expected["as Anonymous"]["states from"] != expected["shared"]["states from"]
    published = expected["shared"]["a state"][0]
    seen = expected["as Anonymous"]["a state"][0]
    assert 0 < seen < published
    # ... and the rows it does not see are few enough to be taken away.
    assert published - seen <= published // RESIDUE_SHARE


#: A DateRangeIndex added to a site with content (an add-on's): the objects
#: cataloged before have no range in it, which ZCatalog finds only where
#: another condition comes first (it then narrows a given result); named so
#: that it comes first in the others.
ADDED = "activeRange"


def _added_range(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    for number in range(3):
        api.content.create(container=portal, type="Document", id=f"before{number}")
    transaction.commit()
    extra = SimpleNamespace(since_field="effective", until_field="expires")
    catalog.addIndex(ADDED, "DateRangeIndex", extra)
    transaction.commit()
    now = DateTime()
    for number, effective in enumerate([None, now - 1, now + 3]):
        page = api.content.create(
            container=portal, type="Document", id=f"after{number}"
        )
        page.effective_date = effective
        page.reindexObject()
    transaction.commit()
    queries = {
        "the range first": (catalog.unrestrictedSearchResults, {}),
        "the range after another": (
            catalog.unrestrictedSearchResults,
            {"Creator": TEST_USER_ID},
        ),
        "secured": (catalog.searchResults, {}),
    }
    found = {}
    for name, (search, more) in queries.items():
        query = {ADDED: now, "portal_type": "Document", "b_size": 1, **more}
        brains = search(**query)
        found[name] = (len(brains), brains.actual_result_count)
    return found


def test_a_range_index_without_the_rows_made_before_it(searches):
    expected = collect_in("zcatalog", _added_range)
    got = collect_in("pg", _added_range)
    assert got == expected
    # Counted from the groups where the range comes first (a condition on
    # ``Creator`` counts the rows), less the rows out of the range and
    # those without one (where it comes after the security terms, rows
    # without a range stay: ``test_lengths_counted_by_groups_are_zcatalogs``).
    grouped = [s for s in searches if columns.COUNTS_TABLE in s.statement]
    assert [_WITHOUT % ADDED in s.statement for s in grouped] == [True, True]
    # The premise: the rows made before are found where they stay.
    assert expected["the range first"][1] < expected["the range after another"][1]


#: Windows in zoid order of the grouped indexes alone: counted from the
#: groups, their count chooses how the window is read
#: (``query.SearchSQL._by_the_count``).
WINDOWS = {
    "a type of many, page 1": {"portal_type": "Document", "b_size": 4},
    "a type of many, page 3": {"portal_type": "Document", "b_size": 4, "b_start": 8},
    "a state of many": {"review_state": "published", "b_size": 3, "b_start": 2},
    "a type of few": {"portal_type": "Folder", "b_size": 2, "b_start": 1},
    "two types of few, page 2": {
        "portal_type": ["Folder", "News Item"],
        "b_size": 4,
        "b_start": 4,
    },
    # Sorted on a date and counted apart (``_from_the_edge``): its order
    # is ZCatalog's too.
    "sorted, a type of many": {
        "portal_type": "Document",
        "sort_on": "modified",
        "sort_order": "reverse",
        "b_size": 4,
        "b_start": 4,
    },
    "sorted, a type of few": {
        "portal_type": "Folder",
        "sort_on": "modified",
        "b_size": 2,
    },
}


def _windows(catalog, searches, dsn) -> dict:
    """Each window's length, count and matches; on the pgcatalog side
    (``dsn``), the branch its statement ran."""
    found = {}
    for name, query in WINDOWS.items():
        del searches[:]
        brains = catalog.searchResults(**query)
        paths = [brain.getPath() for brain in brains]
        found[name] = (
            len(brains),
            brains.actual_result_count,
            paths if "sort_on" in query else sorted(paths),
        )
        if dsn is not None:
            [search, *_] = searches
            found[name] += (_branch_run(dsn, search.statement, search.params),)
    return found


def _modified(obj, days: int) -> None:
    obj.setModificationDate(DateTime("2024/01/01 12:00 UTC") + days)
    obj.reindexObject(idxs=["modified"])


def _walked(layer, searches, dsn=None) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    _in_creation_order(catalog)
    for number in range(30):
        page = api.content.create(container=portal, type="Document", id=f"d{number}")
        if number % 3:
            api.content.transition(obj=page, transition="publish")
    for number in range(3):
        api.content.create(container=portal, type="Folder", id=f"f{number}")
        api.content.create(container=portal, type="News Item", id=f"n{number}")
    # Modified on days in another order than their creation's, one each;
    # the news items among the pages' days, the folders after them.
    for number in range(30):
        _modified(portal[f"d{number}"], number * 7 % 30)
    for number in range(3):
        _modified(portal[f"n{number}"], 10 * number + 5.5)
        _modified(portal[f"f{number}"], 30 + 2 * number % 3)
    transaction.commit()
    if dsn is not None:
        # The table's rows known (``reltuples``), as on any site autovacuum
        # has analysed: before, the matches are read whatever their count.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE pgcatalog_objects")
    steps = {"made": _windows(catalog, searches, dsn)}
    for number in range(0, 12, 3):
        api.content.transition(obj=portal[f"d{number}"], transition="publish")
    api.content.delete(
        objects=[portal["d1"], portal["d5"], portal["f1"]], check_linkintegrity=False
    )
    transaction.commit()
    steps["changed"] = _windows(catalog, searches, dsn)
    return steps


def test_windows_walked_or_read_by_their_count_are_zcatalogs(searches):
    """A window of many matches walks the primary key, one of few reads
    them by their indexes (on an analysed table): both give ZCatalog's
    length, count and matches, before and after a change."""
    expected = collect_in("zcatalog", partial(_walked, searches=searches))
    got = collect_in(
        "pg",
        lambda layer: _walked(layer, searches, dsn=layer["pgcatalog_dsn"]),
    )
    branches = {
        step: {name: outcome[3] for name, outcome in outcomes.items()}
        for step, outcomes in got.items()
    }
    trimmed = {
        step: {name: outcome[:3] for name, outcome in outcomes.items()}
        for step, outcomes in got.items()
    }
    assert trimmed == expected
    # The count chose: the windows of many matches walked, those of few
    # read them, in both steps.
    walked = {name for name in WINDOWS if "many" in name}
    for step, chosen in branches.items():
        assert {name for name, branch in chosen.items() if branch == "walk"} == walked
        assert set(chosen.values()) == {"walk", "few"}, step
    # The premise: no window is empty, nor holds every match.
    for outcomes in expected.values():
        assert all(0 < length for length, _, _ in outcomes.values())
