"""Profile one read scenario on an instance a benchmark run kept.

Usage (after ``run.py --keep-databases``, which prints where the worker
logs and instances are)::

    .venv/bin/python benchmarks/profile_query.py --instance DIR/instance-pgcatalog \
        [--scenario simple] [--mode ids] [--iterations 200] [--top 30] [--explain DSN]
        [--through-end]

Runs the scenario like the ``query`` phase does (one "request" per
iteration), reports the median time, then the same iterations under
cProfile, sorted by own time.  Where the time of a query goes (Python,
round trips, PostgreSQL) is what the levers of the speed work are chosen
by; this script is how to look.

``--through-end`` times the end of the request too (the transaction's
abort) with the scenario's result still in use, as a page's view and
template hold theirs until the request ends: what a result does when its
transaction ends is then in the figure (the ``query`` phase lets the
result go before it).
"""

from __future__ import annotations

from pathlib import Path

import argparse
import cProfile
import scenarios
import sys
import transaction
import worker


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/profile_query.py")
    parser.add_argument("--instance", type=Path, required=True)
    names = [scenario.name for scenario in scenarios.SCENARIOS] + [
        "page",
        "unique",
        "uid_lookups",
    ]
    parser.add_argument("--scenario", default="simple", choices=names)
    parser.add_argument("--mode", default="ids", choices=scenarios.MODES)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--explain",
        metavar="DSN",
        help="also print EXPLAIN (ANALYZE, BUFFERS) of the scenario's SQL, "
        "run on this database",
    )
    parser.add_argument(
        "--through-end",
        action="store_true",
        help="time the request's end too, with the result still in use",
    )
    args = parser.parse_args(argv)
    if args.through_end and args.scenario in ("page", "unique", "uid_lookups"):
        parser.error("--through-end: give a scenario of one search")
    zope_conf = args.instance / "etc" / "zope.conf"
    if not zope_conf.exists():
        parser.error(f"no {zope_conf}: give an instance directory of a kept run")

    session = worker.Session(zope_conf)
    anonymous = args.scenario == "page"
    if args.scenario == "page":
        action = scenarios.page_queries
    elif args.scenario == "unique":
        action = scenarios.unique_subjects
    elif args.scenario == "uid_lookups":
        action = scenarios.uid_lookups
    else:
        scenario = next(s for s in scenarios.SCENARIOS if s.name == args.scenario)
        anonymous = scenario.anonymous

        def action(catalog, site_path):
            results = catalog.searchResults(scenario.query(site_path))
            in_use.append(results)  # until the request's end
            return scenarios.read_results(results, scenario.start, args.mode)

    in_use: list = []

    def timed(profiler=None) -> list[float]:
        times = []
        for _ in range(args.iterations):
            with session.request(anonymous=anonymous) as (site, _conn):
                catalog = site.portal_catalog
                site_path = "/".join(site.getPhysicalPath())
                with worker.measured(profiler) as taken:
                    action(catalog, site_path)
                    if args.through_end:
                        transaction.abort()
                times += taken
                in_use.clear()
        return times

    worker.warm_then_time(timed, f"{args.scenario} ({args.mode})", "iterations")
    if args.explain:
        for plan in scenarios.explain_all(session, args.explain, only=args.scenario):
            print(f"\n{plan['sql']}\n{plan['params']}\n{plan['explain']}\n")
    if not args.top:
        return 0
    profiler = cProfile.Profile()
    timed(profiler)
    worker.print_profile(profiler, args.top)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
