"""Differential: the statements of a large catalog give the same results.

In a catalog of ``query.COUNT_APART_ROWS`` rows or more, a window sorted on
indexes counts its matches apart (``SearchSQL.rows_query``) instead of in
the same pass.  The test sites are far smaller, so the query-language
suite runs only the small catalog's statements.  Here every query of that
suite (``queries.py``) runs in one site as its three users twice: with the
threshold as it is and at -1 rows.  The outcomes (paths in order, ``len``,
``actual_result_count``, errors) must be the same: that suite proves the
first ones are ZCatalog's.  So must the read-your-writes queries, after
``change_without_commit`` (the windows then read the pending rows too),
and windows sorted on dates with those changes (``PENDING_WINDOWS``).
"""

from __future__ import annotations

from tests.conftest import record_searches
from tests.conftest import run_in
from tests.differential.content import become
from tests.differential.content import build_content
from tests.differential.content import change_without_commit
from tests.differential.queries import Case
from tests.differential.queries import QUERIES
from tests.differential.queries import UNCOMMITTED_QUERIES
from tests.differential.test_query_language import _run
from tests.differential.test_query_language import USERS

import pytest
import transaction

#: Windows sorted on a date with pending changes (the new page is the
#: latest): walked from the edge of their matches in a large catalog
#: (``SearchSQL.edge``).  Not in the query-language suite: the changes of
#: ``change_without_commit`` share a minute, and ZCatalog orders equal keys
#: otherwise than by zoid (its record ids).
PENDING_WINDOWS = [
    Case(
        "pending-latest-modified",
        {"sort_on": "modified", "sort_order": "descending", "b_size": 5},
        "ordered",
    ),
    Case(
        "pending-modified-page-2",
        {"sort_on": "modified", "b_start": 5, "b_size": 5},
        "ordered",
    ),
    Case(
        "pending-effective-page-2",
        {"sort_on": "effective", "sort_order": "reverse", "b_start": 3, "b_size": 3},
        "ordered",
    ),
]


def _record(monkeypatch, searches) -> tuple[dict, dict, int, int]:
    from plone_pgcatalog import query
    from plone_pgcatalog import snapshots
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING

    runner = run_in(PGCATALOG_FUNCTIONAL_TESTING)
    try:
        portal = next(runner)["portal"]
        build_content(portal)
        catalog = portal.portal_catalog
        small, large = {}, {}
        for user in USERS:
            become(portal, user)
            for case in QUERIES:
                small[(case.name, user)] = _run(catalog, case.query, case.call)
        searches.clear()
        original = query.COUNT_APART_ROWS
        # Every catalog is large (a table never analyzed estimates -1 rows).
        monkeypatch.setattr(query, "COUNT_APART_ROWS", -1)
        # Results are kept per committed state and query, whatever shape
        # their statement had.
        snapshots.results.clear()
        for user in USERS:
            become(portal, user)
            for case in QUERIES:
                large[(case.name, user)] = _run(catalog, case.query, case.call)
        # The sorted windows that counted apart: the shape under test.
        counted_apart = sum(
            1
            for searched in searches
            if "(SELECT count(*) FROM " in searched.statement
            and " ORDER BY zoid" not in searched.statement
        )
        # Those walked from the edge ran with their generic plan.
        forced = sum(1 for searched in searches if searched.kept == connection.FORCED)
        # With pending changes (read from the overlay): large, then small.
        become(portal, "manager")
        change_without_commit(portal)
        for threshold, outcomes in ((-1, large), (original, small)):
            monkeypatch.setattr(query, "COUNT_APART_ROWS", threshold)
            for user in USERS:
                become(portal, user)
                for case in UNCOMMITTED_QUERIES + PENDING_WINDOWS:
                    outcomes[(case.name, user)] = _run(catalog, case.query, case.call)
        transaction.abort()
        return small, large, counted_apart, forced
    finally:
        monkeypatch.undo()
        runner.close()


@pytest.fixture(scope="module")
def shapes():
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _record(monkeypatch, record_searches(monkeypatch))


def test_sorted_windows_were_counted_apart(shapes):
    _small, _large, counted_apart, forced = shapes
    # queries.py has dozens of sorted windows, run as three users.
    assert counted_apart >= 30, counted_apart
    # Those sorted on a date without a condition of their own, walked from
    # the edge of their matches, ran with the plan PostgreSQL was made to
    # keep (``SearchSQL.plan_forced``): two shapes, as three users.
    assert forced >= 6, forced


@pytest.mark.parametrize("user", USERS)
def test_every_query_gives_the_same_in_a_large_catalog(shapes, user):
    small, large, _, _ = shapes
    differing = {
        case.name: (str(small[(case.name, user)]), str(large[(case.name, user)]))
        for case in QUERIES + UNCOMMITTED_QUERIES + PENDING_WINDOWS
        if small[(case.name, user)] != large[(case.name, user)]
    }
    assert not differing, differing
