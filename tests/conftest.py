"""pytest glue for plone.testing layers.

A layer and its bases are set up once per test session, in base-first
order, and torn down at its end; per test, ``testSetUp`` and
``testTearDown`` run on the whole chain, as zope.testrunner does.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

_ACTIVE: list = []


def _chain(layer, seen=None) -> list:
    """``layer`` and its bases, bases first, each once."""
    seen = [] if seen is None else seen
    for base in layer.__bases__:
        _chain(base, seen)
    if layer not in seen:
        seen.append(layer)
    return seen


def _set_up(layer) -> list:
    chain = _chain(layer)
    # A layer marked ``exclusive`` stacks a resource of its base (the
    # discussion fixtures: the database snapshot, the DemoStorage), which
    # every layer on that base then sees (plone.testing's resources): torn
    # down, with the layers set up after it, before a test whose chain
    # does not have it.
    for position, item in enumerate(_ACTIVE):
        if getattr(item, "exclusive", False) and item not in chain:
            while len(_ACTIVE) > position:
                _ACTIVE.pop().tearDown()
            break
    for item in chain:
        if item not in _ACTIVE:
            item.setUp()
            _ACTIVE.append(item)
    return chain


#: Tests that take minutes each (a walk of 500 steps, the soak's Zope
#: instances, the processes of the demo and of the command, the browser
#: tests' Zope), run first: in several processes, none is then left running
#: one of them alone at the end.
FIRST = (
    "tests/integration/test_soak.py",
    "tests/differential/test_random_walk.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_demo_instance.py",
    "tests/browser/",
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        for position, prefix in enumerate(FIRST):
            if item.nodeid.startswith(prefix):
                return position
        return len(FIRST)

    items.sort(key=rank)  # stable: each file's tests stay in their order


def pytest_xdist_make_scheduler(config, log):
    """In several processes (``pytest -n``, pytest-xdist), a file's tests run
    in one, so that what its fixtures of module scope build (a site's
    content, a catalog of 10,000 rows) is built once, and the browser tests
    all in one, which serves their Zope instance (a fixture of their
    package).  Files go to the processes in the order of the collection
    (``FIRST`` first), not by their number of tests."""
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/browser/"):
                return "tests/browser"
            return super()._split_scope(nodeid)

    return Scheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def _layers_torn_down_at_exit():
    yield
    while _ACTIVE:
        _ACTIVE.pop().tearDown()


def run_in(layer):
    """Generator for fixtures: run one test in ``layer``."""
    chain = _set_up(layer)
    for item in chain:
        item.testSetUp()
    try:
        yield layer
    finally:
        for item in reversed(chain):
            item.testTearDown()


def committed_site(build):
    """The PostgreSQL site's database after ``build(layer)`` (run in a test
    of the layer) and a commit, as a ``testing.DatabaseSnapshot`` that
    tests start from (``run_from``).  For a fixture of module scope:
    content that many tests read is built once, not for each test (150
    documents took about 10 s a test)."""
    from plone_pgcatalog.testing import DatabaseSnapshot

    import transaction

    layer = _pg_layer()
    runner = run_in(layer)
    try:
        build(next(runner))
        transaction.commit()
    finally:
        runner.close()
    snapshot = DatabaseSnapshot(layer["pgcatalog_dsn"])
    snapshot.take()
    return snapshot


def run_from(snapshot):
    """Generator for fixtures: run one test in the PostgreSQL layer with its
    database restored to ``snapshot`` (``committed_site``) instead of the
    bare site.  The test's connection is opened after the restore, as for
    every test: it has loaded nothing of the content."""
    layer = _pg_layer()
    _set_up(layer)
    # Stacked over the bare site's snapshot for this test only.
    layer["pgcatalog_snapshot"] = snapshot
    try:
        yield from run_in(layer)
    finally:
        del layer["pgcatalog_snapshot"]


def _pg_layer():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING

    return PGCATALOG_FUNCTIONAL_TESTING


def _zc_layer():
    from plone_pgcatalog.testing import ZCATALOG_FUNCTIONAL_TESTING

    return ZCATALOG_FUNCTIONAL_TESTING


@pytest.fixture
def pg_layer():
    """The Plone site on zodb-pgjsonb with plone_pgcatalog, per test."""
    yield from run_in(_pg_layer())


@pytest.fixture
def zcatalog_layer():
    """The same site with stock ZCatalog (the oracle), per test."""
    yield from run_in(_zc_layer())


@pytest.fixture
def no_group_counts(pg_layer):
    """``drop(portal)``: the site's counts per group as before profile 21
    (or where another site shares the database): no triggers, none kept, so
    that its searches count their rows.  The triggers come back after the
    test (tests share the database's DDL; each restores rows only)."""
    from plone_pgcatalog.store import columns

    import psycopg

    dsn = pg_layer["pgcatalog_dsn"]

    def drop(portal) -> None:
        with psycopg.connect(dsn) as conn:
            for statement in columns.counts_triggers_dropped():
                conn.execute(statement)
            conn.execute("DELETE FROM pgcatalog_counts")
        portal._p_jar.sync()

    yield drop
    with psycopg.connect(dsn, autocommit=True) as conn:
        columns.rebuild_trigger(conn)


class Searched(NamedTuple):
    """One search statement as PostgreSQL ran it (``searches``)."""

    statement: str
    params: tuple
    rows: int
    #: prepared, its plan kept (``SearchSQL.plan_kept``)
    kept: bool = False


@pytest.fixture
def searches(monkeypatch) -> list[Searched]:
    """Every search statement run from now on, whether alone
    (``store.search``) or with the savepoint of its transaction's first
    read (``connection.search_first``)."""
    return record_searches(monkeypatch)


@pytest.fixture
def metadata_loads(monkeypatch) -> list[list[int]]:
    """The record ids of each load of brains' metadata from now on
    (``store.search.load_metadata``: brains read past the rows whose
    metadata came with their search), in order."""
    from plone_pgcatalog.store import search

    loads: list[list[int]] = []
    load = search.load_metadata

    def recording(conn, zoids):
        loads.append(list(zoids))
        return load(conn, zoids)

    monkeypatch.setattr(search, "load_metadata", recording)
    return loads


@pytest.fixture
def preludes(monkeypatch) -> list[str | None]:
    """The site path of each first read's prelude sent on its own from
    now on (``connection._savepoint_and_columns``: the savepoint and the
    ready columns, in a round trip without a search), in order."""
    from plone_pgcatalog.store import connection

    sent: list[str | None] = []
    prelude = connection._savepoint_and_columns

    def recording(conn, site):
        sent.append(site)
        return prelude(conn, site)

    monkeypatch.setattr(connection, "_savepoint_and_columns", recording)
    return sent


def record_searches(monkeypatch) -> list[Searched]:
    """``searches``, for a fixture of a wider scope (its own monkeypatch)."""
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import search

    seen: list[Searched] = []
    alone = search._execute
    first = connection.search_first

    def recording_alone(conn, statement, params, keep_plan=False):
        rows = alone(conn, statement, params, keep_plan)
        seen.append(Searched(statement.as_string(conn), params, len(rows), keep_plan))
        return rows

    def recording_first(context, statement, params, keep_plan=False):
        rows = first(context, statement, params, keep_plan)
        if rows is not None:
            seen.append(
                Searched(statement.as_string(None), params, len(rows), keep_plan)
            )
        return rows

    monkeypatch.setattr(search, "_execute", recording_alone)
    monkeypatch.setattr(connection, "search_first", recording_first)
    return seen


def collect_in(layer_name: str, collect):
    """``collect(layer)`` run inside the ``pg`` or ``zcatalog`` test layer
    (or their variants with plone.app.discussion).

    For differential tests: build content and record results in one site,
    then in the other, and compare what the two calls return.
    """
    from plone_pgcatalog import testing

    layer = {
        "pg": testing.PGCATALOG_FUNCTIONAL_TESTING,
        "zcatalog": testing.ZCATALOG_FUNCTIONAL_TESTING,
        "pg discussion": testing.PGCATALOG_DISCUSSION_TESTING,
        "zcatalog discussion": testing.ZCATALOG_DISCUSSION_TESTING,
    }[layer_name]
    runner = run_in(layer)
    try:
        return collect(next(runner))
    finally:
        runner.close()
