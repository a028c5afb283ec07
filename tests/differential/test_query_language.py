"""Differential: the whole ZCatalog query language, ZCatalog as the oracle.

The content of ``content.py`` is built once in a stock ZCatalog site and once
in a plone_pgcatalog site; every query of ``queries.py`` runs in both as three
users (the Manager, ``member1`` with local roles, Anonymous) inside one
module-scoped fixture, and one test per query and user compares the recorded
outcomes.  Then, in each site, content is changed without committing and the
read-your-writes queries run.

Must not import plone_pgcatalog's internals: both sites are driven only
through ``portal_catalog`` as Plone calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from tests.conftest import run_in
from tests.differential.content import become
from tests.differential.content import build_content
from tests.differential.content import change_without_commit
from tests.differential.content import ITEMS
from tests.differential.queries import QUERIES
from tests.differential.queries import STEMMING_QUERIES
from tests.differential.queries import UNCOMMITTED_QUERIES
from tests.differential.queries import UNIQUE_VALUES_INDEXES

import copy
import pytest
import traceback
import transaction

USERS = ("manager", "member", "anonymous")


@dataclass(frozen=True)
class Outcome:
    """What one query gave: paths and counts, or the exception's classes."""

    paths: tuple[str, ...] = ()
    length: int = 0
    total: int = 0
    error: tuple[str, ...] = ()  # class names of the exception's MRO
    message: str = ""

    def __str__(self) -> str:
        if self.error:
            return f"raised {self.error[0]}: {self.message}"
        return f"{self.length} of {self.total}: {list(self.paths)[:20]}"


def _run(catalog, query: dict, call: str) -> Outcome:
    # A copy per run: a catalog that changed the dict must not change the
    # query the other site gets.
    query = copy.deepcopy(query)
    try:
        results = catalog(query) if call == "dict" else catalog(**query)
        paths = tuple(brain.getPath() for brain in results)
        return Outcome(paths, len(results), results.actual_result_count)
    except Exception as exc:  # the outcome to compare, not a test failure
        return Outcome(
            error=tuple(cls.__name__ for cls in type(exc).__mro__),
            message=str(exc)[:300],
        )


#: Interfaces named after the site's schema cache key, a time stamp that
#: differs between the two sites: not a difference of the catalogs.
SITE_SPECIFIC_INTERFACES = "'plone.dexterity.schema.generated."


def _unique_values(catalog, name: str) -> dict:
    """What the catalog and the index object say the values of ``name`` are."""
    calls = {
        "uniqueValuesFor": lambda: catalog.uniqueValuesFor(name),
        "uniqueValues": lambda: catalog.Indexes[name].uniqueValues(),
        "withLengths": lambda: catalog.Indexes[name].uniqueValues(withLengths=True),
    }
    answers = {}
    for call, function in calls.items():
        try:
            answers[call] = sorted(
                value
                for value in map(repr, function())
                if not value.lstrip("(").startswith(SITE_SPECIFIC_INTERFACES)
            )
        except Exception as exc:  # the outcome to compare
            answers[call] = f"raised {type(exc).__name__}: {exc}"
    return answers


def _run_uncommitted(portal, catalog) -> dict:
    """The read-your-writes queries, after ``change_without_commit``.

    When changing the content fails (Plone queries the catalog while it
    deletes or moves), that failure is every query's outcome, so that the
    other queries of the module are still compared.
    """
    try:
        change_without_commit(portal)
    except Exception as exc:  # the outcome to compare
        failed = Outcome(
            error=tuple(cls.__name__ for cls in type(exc).__mro__),
            message="changing the content failed: " + str(exc)[:300],
        )
        return {
            (case.name, user): failed for case in UNCOMMITTED_QUERIES for user in USERS
        }
    records = {}
    for user in USERS:
        become(portal, user)
        for case in UNCOMMITTED_QUERIES:
            records[(case.name, user)] = _run(catalog, case.query, case.call)
    return records


def _record(layer) -> dict:
    """Build the content in ``layer``'s site, run every query, record it all."""
    runner = run_in(layer)
    try:
        portal = next(runner)["portal"]
        build_content(portal)
        catalog = portal.portal_catalog
        records: dict = {}
        for user in USERS:
            become(portal, user)
            records[("visible", user)] = _run(catalog, {}, "kw")
            for case in QUERIES:
                records[(case.name, user)] = _run(catalog, case.query, case.call)
            for case in STEMMING_QUERIES:
                records[(case.name, user)] = _run(catalog, case.query, "kw")
        become(portal, "manager")
        for name in UNIQUE_VALUES_INDEXES:
            records[("unique", name)] = _unique_values(catalog, name)
        records.update(_run_uncommitted(portal, catalog))
        transaction.abort()
        return records
    finally:
        runner.close()


def _record_or_fail(layer) -> dict:
    try:
        return _record(layer)
    except Exception:
        # One short report instead of a long traceback under every test.
        pytest.fail(
            f"building or querying the site of {layer.__name__} failed:\n"
            + traceback.format_exc(limit=-6),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def outcomes():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
    from plone_pgcatalog.testing import ZCATALOG_FUNCTIONAL_TESTING

    return (
        _record_or_fail(ZCATALOG_FUNCTIONAL_TESTING),
        _record_or_fail(PGCATALOG_FUNCTIONAL_TESTING),
    )


def _difference(expected: Outcome, actual: Outcome) -> str:
    """A short account of how two results differ, for assertion messages."""
    only_zcatalog = sorted(set(expected.paths) - set(actual.paths))
    only_pg = sorted(set(actual.paths) - set(expected.paths))
    lines = [
        f"ZCatalog: {expected.length} of {expected.total}; "
        f"pgcatalog: {actual.length} of {actual.total}",
        f"only ZCatalog ({len(only_zcatalog)}): {only_zcatalog[:10]}",
        f"only pgcatalog ({len(only_pg)}): {only_pg[:10]}",
    ]
    if not only_zcatalog and not only_pg:
        lines.append(f"ZCatalog order: {list(expected.paths)[:20]}")
        lines.append(f"pgcatalog order: {list(actual.paths)[:20]}")
    return "\n".join(lines)


def _compare(expected: Outcome, actual: Outcome, mode: str) -> None:
    if mode == "raises":
        assert expected.error, f"the case expects ZCatalog to raise; it gave {expected}"
        assert actual.error, f"ZCatalog {expected}; pgcatalog returned {actual}"
        return
    if expected.error:
        assert actual.error, f"ZCatalog {expected}; pgcatalog returned {actual}"
        assert (
            expected.error[0] in actual.error
        ), f"ZCatalog {expected}; pgcatalog {actual}"
        return
    assert not actual.error, f"pgcatalog {actual}; ZCatalog gave {expected}"
    same_counts = (actual.length, actual.total) == (expected.length, expected.total)
    assert same_counts, _difference(expected, actual)
    if mode == "ordered":
        assert list(actual.paths) == list(expected.paths), _difference(expected, actual)
    elif mode == "set":
        assert sorted(actual.paths) == sorted(expected.paths), _difference(
            expected, actual
        )
    else:
        assert mode == "count", mode


def _params(cases) -> list:
    return [
        pytest.param(case, user, id=f"{case.name}@{user}")
        for case in cases
        for user in USERS
    ]


def test_the_content_is_large_enough():
    assert len(ITEMS) >= 200
    assert len({item.path for item in ITEMS}) == len(ITEMS)


def test_both_sites_hold_the_same_content(outcomes):
    zcatalog, pg = outcomes
    expected = zcatalog[("visible", "manager")]
    assert len(expected.paths) > len(ITEMS)  # the items and the site root
    _compare(expected, pg[("visible", "manager")], "set")


@pytest.mark.parametrize("case,user", _params(QUERIES))
def test_query_gives_what_zcatalog_gives(outcomes, case, user):
    zcatalog, pg = outcomes
    expected = zcatalog[(case.name, user)]
    if case.mode == "refused":
        assert not expected.error, expected
        assert "CatalogError" in pg[(case.name, user)].error, pg[(case.name, user)]
        return
    if case.mode == "tolerated":
        assert expected.error and "ParseError" in expected.error[0], expected
        _compare(zcatalog[(case.like, user)], pg[(case.name, user)], "set")
        return
    if case.mode == "some":
        actual = pg[(case.name, user)]
        _compare(expected, actual, "count")
        matches = set(zcatalog[(case.like, user)].paths)
        assert actual.paths and set(actual.paths) <= matches, (actual, matches)
        return
    if case.counts_dropped:
        actual = pg[(case.name, user)]
        assert expected.total > expected.length, "no longer a counting quirk"
        assert actual.total == actual.length, actual
        expected = Outcome(expected.paths, expected.length, expected.length)
        _compare(expected, actual, case.mode)
        return
    if user == "manager" and not expected.error:
        # The oracle must find something, or the case proves little.
        assert (
            bool(expected.paths) != case.empty
        ), f"ZCatalog: {expected} (empty={case.empty})"
    _compare(expected, pg[(case.name, user)], case.mode)


@pytest.mark.parametrize("case,user", _params(STEMMING_QUERIES))
def test_stemming_finds_more_never_less(outcomes, case, user):
    zcatalog, pg = outcomes
    expected, actual = zcatalog[(case.name, user)], pg[(case.name, user)]
    assert not expected.error and not actual.error, (expected, actual)
    extra = {"/plone/" + path for path in case.extra}
    # Only stemming finds them: ZCatalog, which does not stem, must not.
    assert not extra & set(expected.paths), expected
    visible = set(zcatalog[("visible", user)].paths)
    if user == "manager":
        assert extra <= visible
    missing = set(expected.paths) - set(actual.paths)
    assert not missing, f"pgcatalog lost what ZCatalog finds: {sorted(missing)}"
    unfound = (extra & visible) - set(actual.paths)
    assert not unfound, f"stemming did not find {sorted(unfound)}; got {actual}"


@pytest.mark.parametrize("case,user", _params(UNCOMMITTED_QUERIES))
def test_uncommitted_changes_are_seen(outcomes, case, user):
    zcatalog, pg = outcomes
    expected = zcatalog[(case.name, user)]
    if user == "manager" and not expected.error:
        assert bool(expected.paths) != case.empty, f"ZCatalog: {expected}"
    _compare(expected, pg[(case.name, user)], case.mode)


@pytest.mark.parametrize("name", UNIQUE_VALUES_INDEXES)
def test_unique_values_are_zcatalogs(outcomes, name):
    zcatalog, pg = outcomes
    expected, actual = zcatalog[("unique", name)], pg[("unique", name)]
    for call in expected:
        zc_values, pg_values = expected[call], actual[call]
        if isinstance(zc_values, str) or isinstance(pg_values, str):
            assert pg_values == zc_values, call
            continue
        assert pg_values == zc_values, (
            f"{call}: only ZCatalog {sorted(set(zc_values) - set(pg_values))[:10]}; "
            f"only pgcatalog {sorted(set(pg_values) - set(zc_values))[:10]}"
        )
