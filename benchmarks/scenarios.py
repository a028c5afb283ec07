"""The read scenarios and how they are timed.

Owns: the catalog queries of the benchmark (the same on both backends),
what is done with their results (``ids``: ``len()`` and ``getPath()`` of the
window; ``metadata``: the same plus ``Title`` and ``review_state``), and
the timing loop: every iteration is one "request" (a connection from the
pool, a new transaction, a request object, the user), and only the search
and the reading of the results are timed.

Also: ZODB objects each scenario loads (``Connection.getTransferCounts``)
warm and with a cold connection cache, and, on the pgcatalog backend, the
SQL each scenario runs, for EXPLAIN.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field

import os
import statistics
import time

#: Brains read per query (a listing page).
WINDOW = 20


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    #: the query, given the site's physical path
    query: Callable[[str], dict]
    anonymous: bool = False
    #: which brains are read: ``results[start:start + WINDOW]``
    start: int = 0
    sort_limit: int | None = None


def _complex(site: str) -> dict:
    return {
        "portal_type": "Document",
        "review_state": "published",
        "Subject": {"query": ["quantum", "copper"], "operator": "or"},
        "sort_on": "modified",
        "sort_order": "reverse",
        "sort_limit": WINDOW,
    }


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "simple",
        "Simple field match (portal_type=Document)",
        lambda site: {"portal_type": "Document"},
    ),
    Scenario(
        "complex",
        "Multi-index: type + state + Subject, sort on modified, limit 20",
        _complex,
    ),
    Scenario(
        "fulltext",
        "Full text (SearchableText='glacier')",
        lambda site: {"SearchableText": "glacier"},
    ),
    Scenario(
        "navigation",
        "Navigation: path depth=1, sort on getObjPositionInParent",
        lambda site: {
            "path": {"query": f"{site}/section-03", "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
    ),
    Scenario(
        "security",
        "Security filtered: review_state=published as Anonymous",
        lambda site: {"review_state": "published"},
        anonymous=True,
    ),
    Scenario(
        "date_paged",
        "Sort on effective (reverse), page 2 (b_start=20, b_size=20)",
        lambda site: {
            "portal_type": "Document",
            "sort_on": "effective",
            "sort_order": "reverse",
            "b_start": WINDOW,
            "b_size": WINDOW,
        },
        # The result holds the window only (ZCatalog's too: a sequence of
        # ``b_size`` brains, ``actual_result_count`` all matches): page 2
        # is ``results[0:20]``.  (Read from 20 on, it was no brain at all.)
        start=0,
    ),
)

#: Set (to anything) by ``scale_probe.py``: the query phase also runs
#: ``PROBE_SCENARIOS``.
PROBE = "PGCATALOG_BENCH_PROBE"

#: Queries for the catalog ``scale_probe.py`` grows, whose values only its
#: copies have (on a site of ``run.py``, no result): each answers one
#: target of issue 15 at 1,000,000 rows.
PROBE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "probe_large_len",
        "len() of about 10% of the catalog (portal_type = 4 of the copies' types)",
        # Each of the copies' 39 types is on 1 row in 40 of them: 4 types
        # are about 100,000 rows at 1,000,000.
        lambda site: {"portal_type": ["type-1", "type-2", "type-3", "type-4"]},
    ),
    Scenario(
        "probe_subtree",
        "A section's latest: one copy's subtree, sort on modified, limit 20",
        # One copy of the site: the same few hundred matches at every size
        # of the catalog (a search whose result is under 1,000 rows).
        lambda site: {
            "path": f"{site}/copy-00007",
            "sort_on": "modified",
            "sort_order": "reverse",
            "sort_limit": WINDOW,
        },
    ),
    Scenario(
        "probe_type_state",
        "A type in a state: the latest 20 published Documents, sort on effective",
        # A news listing: the original values, on one copy in 40 (about
        # 17,000 rows at 1,000,000), counted from one covering index.
        lambda site: {
            "portal_type": "Document",
            "review_state": "published",
            "sort_on": "effective",
            "sort_order": "reverse",
            "sort_limit": WINDOW,
        },
    ),
)


def all_scenarios() -> tuple[Scenario, ...]:
    """``SCENARIOS``, and ``PROBE_SCENARIOS`` in a scale probe (``PROBE``)."""
    if os.environ.get(PROBE):
        return SCENARIOS + PROBE_SCENARIOS
    return SCENARIOS


MODES = ("ids", "metadata")


def read_results(results, start: int, mode: str) -> int:
    """What a listing does with a result: its length and the window."""
    total = len(results)
    for brain in results[start : start + WINDOW]:
        brain.getPath()
        if mode == "metadata":
            brain.Title
            brain.review_state
    return total


def run_scenario(catalog, scenario: Scenario, site_path: str, mode: str) -> int:
    results = catalog.searchResults(scenario.query(site_path))
    return read_results(results, scenario.start, mode)


def page_queries(catalog, site_path: str) -> int:
    """A page's worth of queries on one request, as Anonymous: the
    navigation, a folder listing, a "recent items" portlet."""
    total = 0
    nav = catalog.searchResults(
        {
            "path": {"query": site_path, "depth": 1},
            "sort_on": "getObjPositionInParent",
        }
    )
    total += read_results(nav, 0, "metadata")
    listing = catalog.searchResults(
        {
            "path": {"query": f"{site_path}/section-05", "depth": 1},
            "sort_on": "getObjPositionInParent",
            "b_start": 0,
            "b_size": WINDOW,
        }
    )
    total += read_results(listing, 0, "metadata")
    portlet = catalog.searchResults(
        {
            "portal_type": "Document",
            "sort_on": "modified",
            "sort_order": "reverse",
            "sort_limit": 5,
        }
    )
    for brain in portlet[:5]:
        brain.getURL()
        brain.Title
        brain.modified
    return total + len(portlet)


def unique_subjects(catalog, site_path: str) -> int:
    return len(catalog.uniqueValuesFor("Subject"))


#: ``{site path: UIDs}`` that ``uid_lookups`` resolves, found once per
#: process (in its first, untimed warm-up request).
_UIDS: dict[str, list[str]] = {}


def uid_lookups(catalog, site_path: str) -> int:
    """A page's links resolved by UID, as plone.app.uuid does for rich
    text's ``resolveuid`` links and relations: the path of each of
    ``WINDOW`` objects (the UID index, ``uuidToPhysicalPath``) and its
    brain (``uuidToCatalogBrain``, a search)."""
    from plone.app.uuid.utils import uuidToCatalogBrain
    from plone.app.uuid.utils import uuidToPhysicalPath

    uids = _UIDS.get(site_path)
    if uids is None:
        found = catalog.searchResults(
            portal_type="Document", sort_on="id", sort_limit=WINDOW
        )
        uids = _UIDS[site_path] = [brain.UID for brain in found[:WINDOW]]
    resolved = 0
    for uid in uids:
        path = uuidToPhysicalPath(uid)
        brain = uuidToCatalogBrain(uid)
        resolved += path is not None and brain.getPath() == path
    return resolved


@dataclass
class Measurement:
    name: str
    title: str
    mode: str
    anonymous: bool
    times_ms: list[float] = field(default_factory=list)
    loads: list[int] = field(default_factory=list)
    cold_loads: int | None = None
    result_len: int | None = None

    def summary(self) -> dict:
        ordered = sorted(self.times_ms)
        return {
            "name": self.name,
            "title": self.title,
            "mode": self.mode,
            "user": "Anonymous" if self.anonymous else "Manager",
            "iterations": len(ordered),
            "median_ms": statistics.median(ordered),
            "p95_ms": percentile(ordered, 95),
            "min_ms": ordered[0],
            "max_ms": ordered[-1],
            "loads_median": statistics.median(self.loads) if self.loads else None,
            "cold_loads": self.cold_loads,
            "result_len": self.result_len,
        }


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not ordered:
        raise ValueError("no values")
    rank = max(1, min(len(ordered), round(pct / 100.0 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def measure(
    session,
    name: str,
    title: str,
    mode: str,
    anonymous: bool,
    action: Callable[[object, str], int],
    warmup: int,
    iterations: int,
) -> Measurement:
    """Warm up, then time ``action(catalog, site_path)`` once per request."""
    result = Measurement(name, title, mode, anonymous)
    for number in range(warmup + iterations):
        with session.request(anonymous=anonymous) as (site, conn):
            catalog = site.portal_catalog
            site_path = "/".join(site.getPhysicalPath())
            conn.getTransferCounts(clear=True)
            started = time.perf_counter_ns()
            length = action(catalog, site_path)
            elapsed = (time.perf_counter_ns() - started) / 1e6
            loads, _ = conn.getTransferCounts(clear=True)
        if number >= warmup:
            result.times_ms.append(elapsed)
            result.loads.append(loads)
        result.result_len = length
    # Cold: every object of the connection cache is a ghost, except the
    # site and its catalog (loaded before counting): what the query itself
    # makes the ZODB load.
    with session.request(anonymous=anonymous) as (site, conn):
        conn.cacheMinimize()
        catalog = site.portal_catalog
        catalog._p_activate()
        site_path = "/".join(site.getPhysicalPath())
        conn.getTransferCounts(clear=True)
        action(catalog, site_path)
        result.cold_loads = conn.getTransferCounts(clear=True)[0]
    return result


def all_measurements(session, warmup: int, iterations: int, progress=None):
    measurements = []
    for scenario in all_scenarios():
        for mode in MODES:

            def action(catalog, site_path, scenario=scenario, mode=mode):
                return run_scenario(catalog, scenario, site_path, mode)

            measurements.append(
                measure(
                    session,
                    scenario.name,
                    scenario.title,
                    mode,
                    scenario.anonymous,
                    action,
                    warmup,
                    iterations,
                )
            )
            if progress:
                summary = measurements[-1].summary()
                progress(
                    f"{scenario.name}/{mode}: median {summary['median_ms']:.2f} ms"
                )
    measurements.append(
        measure(
            session,
            "page",
            "A page: navigation + folder listing + recent-items portlet",
            "metadata",
            True,
            page_queries,
            warmup,
            iterations,
        )
    )
    measurements.append(
        measure(
            session,
            "uid_lookups",
            f"{WINDOW} links resolved by UID (path and brain, plone.app.uuid)",
            "ids",
            False,
            uid_lookups,
            warmup,
            iterations,
        )
    )
    measurements.append(
        measure(
            session,
            "unique_subjects",
            "uniqueValuesFor('Subject')",
            "ids",
            False,
            unique_subjects,
            warmup,
            iterations,
        )
    )
    return measurements


# --- EXPLAIN (pgcatalog only) --------------------------------------------------


@contextmanager
def captured_sql():
    """Record the statements of searches: the first of a transaction, sent
    with its savepoint (``connection.search_first``), and the others
    (``store.search._execute``: the first rows of a result, a window, the
    rest of a result); ``(statement, params, keep_plan)`` each."""
    from plone_pgcatalog import snapshots
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import search

    captured: list[tuple] = []
    original = search._execute, connection.search_first

    def recording(conn, statement, params, keep_plan=False):
        captured.append((statement, params, keep_plan))
        return original[0](conn, statement, params, keep_plan)

    def recording_first(context, statement, params, keep_plan=False):
        captured.append((statement, params, keep_plan))
        return original[1](context, statement, params, keep_plan)

    search._execute, connection.search_first = recording, recording_first
    cache_enabled, snapshots.results.enabled = snapshots.results.enabled, False
    try:
        yield captured
    finally:
        search._execute, connection.search_first = original
        snapshots.results.enabled = cache_enabled


def explain_all(session, dsn: str, only: str | None = None) -> list[dict]:
    """Each scenario's SQL (or scenario ``only``'s) and ``EXPLAIN (ANALYZE,
    BUFFERS)`` of it, planned with the settings of the catalog's reads
    (``connection.read_settings``: without them the plans shown were not
    the plans that ran, at 1,000,000 rows a GIN bitmap of every row the
    catalog's ``random_page_cost`` keeps out)."""
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import reports
    from psycopg import sql

    import psycopg

    plans = []
    actions = [
        (s.name, s.anonymous, lambda c, p, s=s: run_scenario(c, s, p, "ids"))
        for s in all_scenarios()
    ]
    actions.append(("page", True, page_queries))
    actions.append(("uid_lookups", False, uid_lookups))
    if only is not None:
        actions = [action for action in actions if action[0] == only]
    with psycopg.connect(dsn, autocommit=True) as pg:
        for name, anonymous, action in actions:
            with captured_sql() as captured:
                with session.request(anonymous=anonymous) as (site, conn):
                    action(site.portal_catalog, "/".join(site.getPhysicalPath()))
            for number, (statement, params, kept) in enumerate(captured):
                text = statement.as_string(pg)
                settings = connection.read_settings()
                if kept:
                    # Run with the plan PostgreSQL keeps, blind to the values.
                    lines = reports.explain_generic(
                        pg, statement, params, f"bench_{number}", settings
                    )
                else:
                    with pg.transaction():
                        if settings is not None:
                            pg.execute(*settings)
                        rows = pg.execute(
                            sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + statement, params
                        ).fetchall()
                    lines = [row[0] for row in rows]
                plans.append(
                    {
                        "scenario": name,
                        "sql": text,
                        "params": [repr(p) for p in params],
                        "kept": bool(kept),
                        "explain": "\n".join(lines),
                    }
                )
    return plans
