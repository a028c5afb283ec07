"""Facet counts at 10,000 documents (issue 18): SQL against the proposal's
Python method on ZCatalog.

Usage::

    .venv/bin/python benchmarks/facet_bench.py [--docs 10000] [--dsn DSN]
        [--iterations 30] [--output benchmarks/results/facets-10000]

Builds the benchmark's site (``content.py``: Documents in 10 sections,
published 70 %, 0-4 subjects of 15, effective dates over two years) on
both backends, each in a fresh database and its own process (Zope starts
once per process), the documents committed 250 at a time (the facet
counts do not depend on how they were written; ``run.py`` times one
commit per document).  Then, as ``admin`` with the security terms as
``searchResults`` adds them, for a query that matches half the documents
(``effective`` up to the middle of the two years) and the facets
``portal_type``, ``review_state`` and ``Subject``:

``pgcatalog``
    ``portal_catalog.facet_counts``: all three in one SQL statement.
``zcatalog``
    the method of the proposed plone.restapi endpoint (pull request 1637),
    on stock ZCatalog: per facet, the query without the facet's own
    criterion, then the value of each result's record id in the index's
    ``_unindex``, counted in Python.

Both answers must be equal (the command fails otherwise).  Median and p95
of ``--iterations`` runs after 3 warm-up runs, the result cache off
(``PGCATALOG_RESULT_CACHE=off``).  The report goes to ``--output``.md/.json.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import backends
import collections
import content
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = Path(__file__).resolve().parent
FACETS = ("portal_type", "review_state", "Subject")
BATCH = 250


def _query(specs: list) -> dict:
    """Half the documents: effective up to the median effective date."""
    dates = sorted(content.effective_date(spec) for spec in specs)
    return {"effective": {"query": dates[len(dates) // 2], "range": "max"}}


def proposal_counts(catalog, query: dict) -> dict[str, dict]:
    """PR 1637's way on ZCatalog: per facet, the results without the
    facet's criterion, each result's value read from ``_unindex``."""
    counts = {}
    for facet in FACETS:
        rest = {key: value for key, value in query.items() if key != facet}
        index = catalog._catalog.getIndex(facet)
        found = collections.Counter()
        for brain in catalog.searchResults(**rest):
            value = index._unindex.get(brain.getRID())
            for one in value if isinstance(value, (list, tuple)) else (value,):
                if one is not None:
                    found[one] += 1
        counts[facet] = dict(found)
    return counts


def _timed(function, iterations: int) -> tuple[list[float], object]:
    for _ in range(3):
        answer = function()
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        answer = function()
        times.append((time.perf_counter() - started) * 1000)
    return times, answer


def worker(args) -> int:
    import transaction
    import worker as bench_worker

    backend = backends.backend(args.backend)
    zope_conf = backends.write_instance(backend, args.instance.resolve(), args.dsn)
    session = bench_worker.Session(zope_conf)
    try:
        bench_worker.create_site(session, backend)
        specs = content.doc_specs(args.docs)
        with session.request() as (site, conn):
            for number, spec in enumerate(specs, 1):
                content.create_document(site, spec, commit=False)
                if number % BATCH == 0 or number == len(specs):
                    transaction.commit()
                    bench_worker.progress(f"created {number}/{len(specs)}")
        import run

        run.vacuum_analyze(args.dsn)
        with session.request() as (site, conn):
            catalog = site.portal_catalog
            query = _query(specs)
            matches = len(catalog(**query))
            if backend.is_pgcatalog:
                times, counts = _timed(
                    lambda: catalog.facet_counts(query, facets=FACETS), args.iterations
                )
                method = "facet_counts (one SQL statement)"
            else:
                times, counts = _timed(
                    lambda: proposal_counts(catalog, query), args.iterations
                )
                method = "PR 1637's method (_unindex per result, in Python)"
    finally:
        session.close()
    result = {
        "backend": backend.name,
        "method": method,
        "matches": matches,
        "median_ms": statistics.median(times),
        "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))],
        "counts": {
            facet: {str(value): count for value, count in values.items()}
            for facet, values in counts.items()
        },
    }
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--dsn", default=os.environ.get("PGCATALOG_BENCH_DSN"))
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--backends",
        default="zcatalog,pgcatalog",
        help="the backends to run (a comparison needs both)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep each backend's database (on --dsn's server) to look at plans",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--instance", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    import run

    output = args.output or HERE / "results" / f"facets-{args.docs}"
    results = {}
    with tempfile.TemporaryDirectory(prefix="pgcatalog-facets-") as workdir:
        workdir = Path(workdir)
        server = None
        server_dsn = args.dsn
        if server_dsn is None:
            server, server_dsn = run.start_embedded(workdir / "pgdata")
        try:
            for name in args.backends.split(","):
                backends.backend(name)  # an unknown name fails here
                database = run.database_name(name)
                dsn = run.create_database(server_dsn, database)
                try:
                    out = workdir / f"{name}.json"
                    run.log(f"{name}: {args.docs} documents, then the counts ...")
                    subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--worker",
                            "--backend",
                            name,
                            "--dsn",
                            dsn,
                            "--docs",
                            str(args.docs),
                            "--iterations",
                            str(args.iterations),
                            "--instance",
                            str(workdir / f"instance-{name}"),
                            "--out",
                            str(out),
                        ],
                        env={**os.environ, "PGCATALOG_RESULT_CACHE": "off"},
                        check=True,
                    )
                    results[name] = json.loads(out.read_text(encoding="utf-8"))
                finally:
                    if args.keep and args.dsn is not None:
                        run.log(f"{name}: kept {dsn}")
                    else:
                        run.drop_database(server_dsn, database)
        finally:
            if server is not None:
                server.cleanup()
    if set(results) != {"zcatalog", "pgcatalog"}:
        print(json.dumps(results, indent=1))
        return 0
    zcatalog, pgcatalog = results["zcatalog"], results["pgcatalog"]
    if zcatalog["counts"] != pgcatalog["counts"]:
        raise SystemExit(
            f"the counts differ:\nZCatalog {zcatalog['counts']}\n"
            f"pgcatalog {pgcatalog['counts']}"
        )
    ratio = zcatalog["median_ms"] / pgcatalog["median_ms"]
    report = "\n".join(
        [
            f"# Facet counts, {args.docs} documents",
            "",
            f"Query: effective up to the median effective date, as admin:"
            f" {pgcatalog['matches']} matches (ZCatalog {zcatalog['matches']}).",
            f"Facets: {', '.join(FACETS)}; the answers are equal.",
            "",
            "| backend | method | median ms | p95 ms |",
            "|---|---|---|---|",
            *(
                f"| {r['backend']} | {r['method']} | {r['median_ms']:.2f}"
                f" | {r['p95_ms']:.2f} |"
                for r in (pgcatalog, zcatalog)
            ),
            "",
            f"pgcatalog is {ratio:.1f}x faster.",
            "",
        ]
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".md").write_text(report, encoding="utf-8")
    output.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
