"""Differential: the statements of a large catalog give the same results.

In a catalog of ``query.COUNT_APART_ROWS`` rows or more, a window sorted on
indexes counts its matches apart (``SearchSQL.rows_query``) instead of in
the same pass.  The test sites are far smaller, so the query-language
suite runs only the small catalog's statements.  Here every query of that
suite (``queries.py``) runs in one site as its three users twice: with the
threshold as it is and at -1 rows.  The outcomes (paths in order, ``len``,
``actual_result_count``, errors) must be the same: that suite proves the
first ones are ZCatalog's.
"""

from __future__ import annotations

from tests.conftest import record_searches
from tests.conftest import run_in
from tests.differential.content import become
from tests.differential.content import build_content
from tests.differential.queries import QUERIES
from tests.differential.test_query_language import _run
from tests.differential.test_query_language import USERS

import pytest
import transaction


def _record(monkeypatch, searches) -> tuple[dict, dict, int]:
    from plone_pgcatalog import query
    from plone_pgcatalog import snapshots
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
        transaction.abort()
        return small, large, counted_apart
    finally:
        monkeypatch.undo()
        runner.close()


@pytest.fixture(scope="module")
def shapes():
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _record(monkeypatch, record_searches(monkeypatch))


def test_sorted_windows_were_counted_apart(shapes):
    _small, _large, counted_apart = shapes
    # queries.py has dozens of sorted windows, run as three users.
    assert counted_apart >= 30, counted_apart


@pytest.mark.parametrize("user", USERS)
def test_every_query_gives_the_same_in_a_large_catalog(shapes, user):
    small, large, _ = shapes
    differing = {
        case.name: (str(small[(case.name, user)]), str(large[(case.name, user)]))
        for case in QUERIES
        if small[(case.name, user)] != large[(case.name, user)]
    }
    assert not differing, differing
