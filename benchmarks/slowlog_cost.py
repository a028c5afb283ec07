"""What the slow-query log adds to a search (issue 17).

Usage::

    .venv/bin/python benchmarks/slowlog_cost.py [--searches 1000000]

Every search reads the clock when it starts and calls
``slowlog.observe`` when its rows are there (``results.search_results``).
When the search is not slow, that is all the log costs: this measures
exactly that code, in a loop, against the same loop without it, and prints
the difference per search (median of 7 rounds).  For comparison it also
times a slow search's recording (``SlowQueryLog.record``: the SQL text,
the report's lock, one log line to a handler that discards it).

Pure Python, no database: the timings of a search's SQL (milliseconds)
would bury a difference of a microsecond in their noise.
"""

from __future__ import annotations

from plone_pgcatalog import slowlog
from psycopg import sql

import argparse
import logging
import statistics
import time


class _Catalog:
    slow_query_ms = slowlog.DEFAULT_THRESHOLD_MS


def _describe():
    return ("{'portal_type': 'Document'}", sql.SQL("SELECT 1"), (), 0)


def _round(searches: int, observed: bool) -> float:
    catalog = _Catalog()
    observe = slowlog.observe
    clock = time.perf_counter
    started = clock()
    if observed:
        for _ in range(searches):
            observe(catalog, clock(), _describe)
    else:
        for _ in range(searches):
            pass
    return (time.perf_counter() - started) / searches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rounds = 7
    with_log = statistics.median(_round(args.searches, True) for _ in range(rounds))
    without = statistics.median(_round(args.searches, False) for _ in range(rounds))

    logger = logging.getLogger("plone_pgcatalog.slowlog")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    log = slowlog.SlowQueryLog()
    statement = sql.SQL("SELECT zoid FROM pgcatalog_objects WHERE {} = ANY(%s)").format(
        sql.Identifier("portal_type")
    )
    slow = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(10_000):
            log.record(150.0, "{'portal_type': 'Document'}", statement, (["x"],), 3)
        slow.append((time.perf_counter() - started) / 10_000)

    added = (with_log - without) * 1e6
    print(f"searches per round: {args.searches:,}, rounds: {rounds}")
    print(f"a search that is not slow: +{added:.2f} µs (clock and observe)")
    print(f"recording a slow search: {statistics.median(slow) * 1e6:.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
