"""One benchmark process: one backend, one phase.  Started by run.py.

Usage::

    python benchmarks/worker.py PHASE --backend NAME --dsn DSN --docs N
                                --instance DIR --out FILE.json
                                [--warmup 5] [--iterations 50]

Phases, each in a fresh process on the same database:

``create``  write zope.conf, start Zope on it, create the Plone site and
            the documents (one commit per document, timed);
``query``   the read scenarios (scenarios.py), peak RSS, ZODB loads, and
            on pgcatalog the EXPLAIN of each scenario's SQL;
``write``   the write scenarios (writes.py).

Zope is started like a real instance (``make_wsgi_app`` on a zope.conf:
site.zcml, z3c.autoinclude, the storage from ZConfig), never through a
test layer.  Prints progress on stderr; writes its results to ``--out``.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import argparse
import backends
import content
import json
import logging
import os
import resource
import sys
import time
import warnings

# plone.app.discussion is a test dependency of this project, and Plone
# loads its ZCML wherever it can import it: hidden from the worker (a
# stock Plone 6.2 site) unless ``run.py --discussion``.
if os.environ.get("PGCATALOG_BENCH_DISCUSSION", "off") != "on":
    sys.modules["plone.app.discussion"] = None
    # Its entry point for plone.autoinclude, which Zope's start-up follows.
    os.environ["AUTOINCLUDE_ALLOW_MODULE_NOT_FOUND_ERROR"] = "plone.app.discussion"

PHASES = ("create", "query", "write")


def progress(message: str) -> None:
    print(
        f"[worker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True
    )


def rss_kb(field: str = "VmRSS") -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@contextmanager
def measured(profiler=None):
    """Time the block (``perf_counter_ns``), under ``profiler`` when one is
    given (enabled for the block only); yields a list that holds the ms
    taken once the block ends (``profile_query.py``, ``profile_writes.py``)."""
    taken: list[float] = []
    if profiler is not None:
        profiler.enable()
    started = time.perf_counter_ns()
    try:
        yield taken
    finally:
        taken.append((time.perf_counter_ns() - started) / 1e6)
        if profiler is not None:
            profiler.disable()


class CollectionTimes:
    """Python's garbage collections while it is entered: how many of each
    generation, and the ms they took (``gc.callbacks``).  cProfile charges
    a collection to the function that allocated when it began: a full one
    (generation 2) in a Zope process took 150 ms of a 365 ms sharing
    change, and the profile showed it as a merge of local roles.  So the
    timings say what collections cost within them."""

    def __init__(self):
        self.counts = [0, 0, 0]
        self.ms = 0.0
        self._began = 0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter_ns()
        else:
            self.counts[info["generation"]] += 1
            self.ms += (time.perf_counter_ns() - self._began) / 1e6

    def __enter__(self):
        import gc

        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc) -> None:
        import gc

        gc.callbacks.remove(self._callback)

    def __str__(self) -> str:
        young, middle, full = self.counts
        return (
            f"garbage collections: {young} / {middle} / {full} of generations"
            f" 0 / 1 / 2, {self.ms:.1f} ms"
        )


def warm_then_time(timed, label: str, unit: str) -> None:
    """Run ``timed()`` (a list of ms) once to warm the caches and prepared
    statements, then again, and print the second run's median and minimum
    as ``label`` over its number of ``unit``, and the garbage collections
    within it (``CollectionTimes``)."""
    import statistics

    timed()
    with CollectionTimes() as collections:
        times = timed()
    print(
        f"{label}: median {statistics.median(times):.3f} ms, "
        f"min {min(times):.3f} ms over {len(times)} {unit}; {collections}"
    )


def print_profile(profiler, top: int, callers: str | None = None) -> None:
    """cProfile's statistics of ``profiler``: the ``top`` functions by own
    time and by cumulative time, and who called those matching ``callers``
    (a regular expression) if given."""
    import pstats

    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    if callers:
        stats.print_callers(callers)


class Session:
    """A started Zope and "requests" on it: a connection from the pool, a
    request, the site as the current site, and a user."""

    def __init__(self, zope_conf: Path):
        from Zope2.Startup.run import make_wsgi_app

        import Zope2

        make_wsgi_app({}, str(zope_conf))
        self.db = Zope2.DB

    @contextmanager
    def request(self, *, anonymous: bool = False, site: bool = True):
        from AccessControl.SecurityManagement import newSecurityManager
        from AccessControl.SecurityManagement import noSecurityManager
        from Testing.makerequest import makerequest
        from zope.component.hooks import setSite
        from zope.globalrequest import setRequest

        import transaction

        # As Zope's publisher does (``transaction_pubevents``): the
        # request's transaction begins before anything is read, so the
        # first thing that asks for it (``transaction.get()``: the catalog's
        # pending changes) finds it instead of creating it in the timed
        # part.
        transaction.begin()
        conn = self.db.open()
        app = makerequest(conn.root()["Application"])
        request = app.REQUEST
        request["PARENTS"] = [app]
        setRequest(request)
        try:
            if not anonymous:
                user = app.acl_users.getUserById(backends.ADMIN_USER)
                newSecurityManager(request, user.__of__(app.acl_users))
            if site:
                portal = app[backends.SITE_ID]
                setSite(portal)
                yield portal, conn
            else:
                yield app, conn
        finally:
            transaction.abort()
            noSecurityManager()
            setSite(None)
            setRequest(None)
            request.close()
            conn.close()

    def close(self) -> None:
        self.db.close()


def create_site(session: Session, backend: backends.Backend) -> float:
    """Admin user, Plone site, reader member, sections: seconds taken."""
    from Acquisition import aq_base
    from Products.CMFPlone.factory import addPloneSite

    import transaction

    started = time.perf_counter()
    with session.request(anonymous=True, site=False) as (app, conn):
        users = app.acl_users
        if users.getUserById(backends.ADMIN_USER) is None:
            users._doAddUser(backends.ADMIN_USER, "admin-bench", ["Manager"], [])
        transaction.commit()
    with session.request(site=False) as (app, conn):
        if backends.SITE_ID in app.objectIds():
            raise RuntimeError("the database is not fresh: the site exists")
        site = addPloneSite(
            app,
            backends.SITE_ID,
            title="Benchmark site",
            extension_ids=backend.profiles,
            default_language="en",
        )
        site.portal_workflow.setDefaultChain("simple_publication_workflow")
        site.acl_users.source_users.addUser(
            backends.READER_USER, backends.READER_USER, "reader-bench-pw"
        )
        transaction.commit()
    with session.request() as (site, conn):
        catalog = aq_base(site.portal_catalog)
        expected = "PGCatalogTool" if backend.is_pgcatalog else "CatalogTool"
        if type(catalog).__name__ != expected:
            raise RuntimeError(f"portal_catalog is {type(catalog)!r}, not {expected}")
        content.create_sections(site)
    return time.perf_counter() - started


def phase_create(session, backend, args) -> dict:
    site_seconds = create_site(session, backend)
    progress(f"site created in {site_seconds:.1f} s")
    specs = content.doc_specs(args.docs)
    with session.request() as (site, conn):
        timings = content.create_documents(site, specs, progress)
        content.check_documents(site, specs)
    return {"site_seconds": site_seconds, "create_ms": timings}


def phase_query(session, backend, args) -> dict:
    import scenarios

    rss_start = rss_kb()
    with session.request() as (site, conn):
        cataloged = len(site.portal_catalog)
    measurements = scenarios.all_measurements(
        session, args.warmup, args.iterations, progress
    )
    result = {
        "cataloged": cataloged,
        "queries": [m.summary() for m in measurements],
        "rss_start_kb": rss_start,
        # ru_maxrss is in KiB on Linux.
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    if backend.is_pgcatalog:
        result["explain"] = scenarios.explain_all(session, args.dsn)
    return result


def phase_write(session, backend, args) -> dict:
    import writes

    specs = content.doc_specs(args.docs)
    result = {}
    result["modify_ms"] = writes.modify_documents(session, specs)
    progress("modifications done")
    result["transition_ms"] = writes.transition_documents(session, specs)
    progress("transitions done")
    result["big_folder"] = writes.create_big_folder(session, args.big_folder)
    progress(f"big folder created: {result['big_folder']}")
    result["rename_ms"] = writes.rename_big_folder(session)
    progress(f"renames: {result['rename_ms']}")
    result["sharing_ms"] = writes.share_big_folder(session, backends.READER_USER)
    progress(f"sharing: {result['sharing_ms']}")
    writes.check_sharing(session, backends.READER_USER, args.big_folder)
    result["rebuild"] = writes.rebuild_catalog(session)
    progress(f"rebuild: {result['rebuild']}")
    return result


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version

    found = {}
    for name in (
        "Products.CMFPlone",
        "Zope",
        "ZODB",
        "Products.ZCatalog",
        "RelStorage",
        "psycopg2",
        "zodb-pgjsonb",
        "psycopg",
        "plone_pgcatalog",
    ):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/worker.py")
    parser.add_argument("phase", choices=PHASES)
    parser.add_argument("--backend", required=True, choices=sorted(backends.BACKENDS))
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--instance", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--big-folder", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.docs < 1:
        parser.error("--docs must be at least 1")
    if args.warmup < 0 or args.iterations < 1:
        parser.error("--warmup must be >= 0 and --iterations >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s [%(name)s] %(message)s"
    )
    backend = backends.backend(args.backend)
    zope_conf = backends.write_instance(backend, args.instance.resolve(), args.dsn)
    started = time.perf_counter()
    session = Session(zope_conf)
    progress(f"{backend.name}: Zope started in {time.perf_counter() - started:.1f} s")
    try:
        phase = {"create": phase_create, "query": phase_query, "write": phase_write}
        result = phase[args.phase](session, backend, args)
    finally:
        session.close()
    result.update(
        backend=backend.name, phase=args.phase, docs=args.docs, versions=versions()
    )
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
