"""Profile one write scenario on an instance a benchmark run kept.

Usage (after ``run.py --keep-databases``, which prints where the worker
logs and instances are)::

    .venv/bin/python benchmarks/profile_writes.py --instance DIR/instance-pgcatalog \
        [--scenario modification] [--iterations 100] [--top 30] [--callers PATTERN]

The writes of ``writes.py``, one commit each, on the documents of the kept
site (its first ``--iterations`` by id, each written once a round):
``modification`` (title and description changed, ``reindexObject()``),
``transition`` (retract and publish again, in turn), ``sharing`` (a local
role given and taken away on the big folder, ``reindexObjectSecurity()``,
its 1,000 descendants), ``batch`` (a new folder and ``--iterations``
documents created in it, one commit for all, as the big folder is made:
each creation timed; the first and the last tenth's medians and the
commit are printed too, since a catalog whose work grows with what the
transaction has cataloged already shows it there).  Reports the median
time, then one more round under cProfile, sorted by own time and by
cumulative time: where a write's time goes (Plone, the storage, this
catalog's extraction and SQL) is what the write targets' levers are
chosen by.  Works on either backend's instance
(``instance-zcatalog`` too).  The writes stay in the kept database.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import cProfile
import statistics
import sys
import transaction
import worker
import writes

SCENARIOS = ("modification", "transition", "sharing", "batch")


def _documents(site, count: int) -> list[str]:
    """Paths of the site's first ``count`` published documents by id."""
    catalog = site.portal_catalog
    found = catalog.unrestrictedSearchResults(
        portal_type="Document",
        review_state="published",
        sort_on="id",
        sort_limit=count,
    )[:count]
    return [brain.getPath() for brain in found]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/profile_writes.py")
    parser.add_argument("--instance", type=Path, required=True)
    parser.add_argument("--scenario", default="modification", choices=SCENARIOS)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--callers",
        metavar="PATTERN",
        help="also print who called the functions matching PATTERN (pstats'"
        " print_callers: a regular expression, such as 'cursor.py.*execute')",
    )
    args = parser.parse_args(argv)
    zope_conf = args.instance / "etc" / "zope.conf"
    if not zope_conf.exists():
        parser.error(f"no {zope_conf}: give an instance directory of a kept run")
    session = worker.Session(zope_conf)
    with session.request() as (site, _conn):
        paths = _documents(site, args.iterations)
    if args.scenario in ("modification", "transition") and len(paths) < args.iterations:
        parser.error(f"the site has {len(paths)} published documents")
    rounds = iter(range(1_000_000))

    def write(site, path: str, number: int) -> None:
        from plone import api

        if args.scenario == "modification":
            doc = site.unrestrictedTraverse(path)
            doc.title = f"Edited {number}"
            doc.description = f"Edited in round {number}."
            doc.reindexObject()
        elif args.scenario == "transition":
            doc = site.unrestrictedTraverse(path)
            name = "retract" if number % 2 == 0 else "publish"
            api.content.transition(obj=doc, transition=name)
        else:
            big = site[writes.BIG_FOLDER]
            # Given where it is not, taken where it is: by the round's
            # number, every other timed run began with a change of nothing.
            if not big.get_local_roles_for_userid("profiled"):
                big.manage_setLocalRoles("profiled", ["Reader", "Editor"])
            else:
                big.manage_delLocalRoles(["profiled"])
            big.reindexObjectSecurity()

    def batch(profiler=None) -> list[float]:
        from plone import api

        number = next(rounds)
        times = []
        with session.request() as (site, _conn):
            free = number
            while f"profiled-batch-{free}" in site.objectIds():
                free += 1  # a kept site profiled before has some
            folder = api.content.create(
                container=site, type="Folder", id=f"profiled-batch-{free}"
            )
            for item in range(args.iterations):
                with worker.measured(profiler) as taken:
                    writes.create_item(folder, item, f"batch {number}", "a batch")
                times += taken
            with worker.measured(profiler) as committed:
                transaction.commit()
        tenth = max(len(times) // 10, 1)
        print(
            f"batch {number}: first tenth {statistics.median(times[:tenth]):.2f} ms,"
            f" last tenth {statistics.median(times[-tenth:]):.2f} ms a creation;"
            f" commit {committed[0]:.1f} ms"
        )
        return times

    def timed(profiler=None) -> list[float]:
        if args.scenario == "batch":
            return batch(profiler)
        number = next(rounds)
        times = []
        targets = paths if args.scenario != "sharing" else [None] * 4
        with session.request() as (site, _conn):
            for path in targets:
                with worker.measured(profiler) as taken:
                    write(site, path, number)
                    transaction.commit()
                times += taken
                if args.scenario == "sharing":
                    number = next(rounds)
        return times

    worker.warm_then_time(timed, args.scenario, "writes")
    if args.top:
        profiler = cProfile.Profile()
        timed(profiler)
        worker.print_profile(profiler, args.top, args.callers)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
