"""Memory and time of reading SearchableText again, against ZCatalog.

A command, never part of the test suite::

    .venv/bin/python benchmarks/reindex_memory.py \\
        --dsn postgresql://postgres@127.0.0.1:5432/postgres [--docs 2000]
        [--output benchmarks/results/reindex-memory]

For each backend (RelStorage + ZCatalog, zodb-pgjsonb + plone_pgcatalog),
in a process of its own on a fresh database, as ``run.py`` starts them (a
real Zope on a ``zope.conf``): a Plone site and ``--docs`` pages of about
4 KB of text each (``BODY_WORDS`` words), stored without events and then
cataloged by ``clearFindAndRebuild``.  Then, each variant twice (once
timed, once under ``tracemalloc`` for the peak of Python's memory, which
slows it), from a minimized ZODB cache, and committed:

- ``reindexIndex``: ``portal_catalog.reindexIndex("SearchableText",
  None, pghandler=ZLogHandler(1000))``, ZCatalog's API as upgrade steps
  call it, in one transaction;
- ``batched`` (plone_pgcatalog only): ``maintenance.reindex_index(...,
  batch_size=1000)``, what ``pgcatalog reindex``, the Reindex job and the
  upgrade steps run: a commit every 1,000 objects.

And a sorted page of the pages, searched before ``reindexIndex`` and in
its transaction before its commit, as a later upgrade step would: this
catalog lays the transaction's pending changes over the stored rows
(read-your-writes), a partial reindex only where the search reads it.

Results: ``OUTPUT.json`` and ``OUTPUT.md`` (seconds, objects a second and
peak MB per variant and backend, ratios to ZCatalog).  Compare ratios
within a run.  The databases are dropped at the end.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = Path(__file__).parent
#: Words of a page's text (about 4 KB with the words of ``content.FILLER``).
BODY_WORDS = 600
#: Objects per transaction of the batched variant.
BATCH_SIZE = 1000
#: Searches timed before a reindex and while it waits for its commit.
SEARCHES = 20
VARIANTS = ("reindexIndex", "batched")


def log(message: str) -> None:
    print(f"[reindex_memory {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- in the backend's process ---------------------------------------------------


def _create_pages(session, docs: int) -> int:
    """``docs`` pages in a folder, then ``clearFindAndRebuild``: the number
    of objects cataloged."""
    from plone.app.textfield.value import RichTextValue
    from plone.dexterity.utils import createContent

    import content
    import random
    import transaction

    rng = random.Random(content.SEED)
    with session.request() as (site, conn):
        site.invokeFactory("Folder", "pages", title="Pages")
        folder = site.pages
        for number in range(docs):
            words = " ".join(rng.choices(content.FILLER, k=BODY_WORDS))
            page = createContent(
                "Document",
                id=f"page-{number:05d}",
                title=f"Page {number}",
                text=RichTextValue(f"<p>{words}</p>", "text/html", "text/x-html-safe"),
            )
            folder._setObject(page.id, page, suppress_events=True)
            if number % 200 == 199:
                transaction.commit()
                conn.cacheMinimize()
        transaction.commit()
    with session.request() as (site, conn):
        site.portal_catalog.clearFindAndRebuild()
        transaction.commit()
    with session.request() as (site, conn):
        catalog = site.portal_catalog
        # Every page has its words: one of them finds most pages.
        found = len(catalog(SearchableText=content.FILLER[0], path="/plone/pages"))
        if found < docs // 2:
            raise RuntimeError(f"{found} of {docs} pages found by their text")
        return len(catalog)


def _reindex(site, variant: str) -> None:
    from Products.ZCatalog.ProgressHandler import ZLogHandler

    catalog = site.portal_catalog
    if variant == "reindexIndex":
        catalog.reindexIndex("SearchableText", None, pghandler=ZLogHandler(1000))
    else:
        from plone_pgcatalog import maintenance

        maintenance.reindex_index(catalog, "SearchableText", batch_size=BATCH_SIZE)


def _search_ms(site) -> float:
    """Median ms of a sorted page of the pages (``len()`` and 20 paths), as
    a later upgrade step or a view would search."""
    import statistics

    catalog = site.portal_catalog
    times = []
    for _ in range(SEARCHES):
        started = time.perf_counter()
        found = catalog(portal_type="Document", sort_on="sortable_title", b_size=20)
        len(found)
        [brain.getPath() for brain in found[:20]]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _measure(session, variant: str, traced: bool) -> dict:
    """One run of ``variant`` and its commit: ``seconds``, and the median
    ms of a search before it and while its changes wait for the commit
    (``search_ms``, ``search_pending_ms``: one transaction only); or
    (``traced``) ``peak_mb``, the peak that ``tracemalloc`` saw."""
    import tracemalloc
    import transaction

    with session.request() as (site, conn):
        conn.cacheMinimize()
        result = {}
        if traced:
            tracemalloc.start()
        elif variant == "reindexIndex":
            result["search_ms"] = _search_ms(site)
        started = time.perf_counter()
        _reindex(site, variant)
        if not traced and variant == "reindexIndex":
            paused = time.perf_counter()
            result["search_pending_ms"] = _search_ms(site)
            started += time.perf_counter() - paused
        transaction.commit()
        if not traced:
            return {**result, "seconds": time.perf_counter() - started}
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"peak_mb": peak / 2**20}


def worker(args) -> int:
    import backends
    import logging
    import warnings
    import worker as bench_worker

    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.WARNING)
    backend = backends.backend(args.worker)
    zope_conf = backends.write_instance(backend, args.instance.resolve(), args.dsn)
    session = bench_worker.Session(zope_conf)
    try:
        bench_worker.create_site(session, backend)
        objects = _create_pages(session, args.docs)
        log(f"{backend.name}: {objects} objects cataloged")
        result = {"objects": objects, "variants": {}}
        variants = VARIANTS if backend.is_pgcatalog else VARIANTS[:1]
        for variant in variants:
            found = _measure(session, variant, traced=False)
            found.update(_measure(session, variant, traced=True))
            found["objects_per_s"] = objects / found["seconds"]
            log(f"{backend.name} {variant}: {found}")
            result["variants"][variant] = found
    finally:
        session.close()
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


# -- the orchestrator -------------------------------------------------------------


def _run_backend(backend: str, args, workdir: Path) -> dict:
    import run

    name = f"pgcatalog_bench_reindex_{backend}_{os.getpid()}"
    dsn = run.create_database(args.dsn, name)
    out = workdir / f"{backend}.json"
    try:
        options = {
            "--worker": backend,
            "--dsn": dsn,
            "--docs": args.docs,
            "--instance": workdir / f"instance-{backend}",
            "--out": out,
        }
        subprocess.run(
            [sys.executable, __file__]
            + [str(part) for option in options.items() for part in option],
            env={**os.environ, "PGCATALOG_RESULT_CACHE": "off"},
            check=True,
            timeout=1800 + 2 * args.docs,
        )
    finally:
        run.drop_database(args.dsn, name)
    return json.loads(out.read_text(encoding="utf-8"))


def report(results: dict) -> str:
    zcatalog = results["backends"]["zcatalog"]["variants"]["reindexIndex"]
    pgcatalog = results["backends"]["pgcatalog"]
    lines = [
        f"# Reading SearchableText again: {results['docs']:,} pages",
        "",
        f"- Run {results['started']}; {pgcatalog['objects']:,} objects cataloged"
        f" (ZCatalog: {results['backends']['zcatalog']['objects']:,}); pages of"
        f" {BODY_WORDS} words; ZODB cache-size as ``run.py``.",
        f"- Machine: {results['machine']}.",
        "- Peak: the most memory Python's allocator held during the variant and"
        " its commit (``tracemalloc``, a run of its own); times without it.",
        "- The texts did not change: ZCatalog's text index then changes none of"
        " its BTrees, and holds nothing until the commit; this catalog holds each"
        " object's words and text (for snippets) until the commit that writes"
        " them.",
        "",
        "| Variant | Seconds | Objects/s | Peak MB | Ratio of time | Ratio of peak |",
        "|---|---:|---:|---:|---:|---:|",
        f"| ZCatalog ``reindexIndex`` | {zcatalog['seconds']:.1f}"
        f" | {zcatalog['objects_per_s']:.0f} | {zcatalog['peak_mb']:.1f} | 1.00"
        " | 1.00 |",
    ]
    for variant, label in (
        ("reindexIndex", "pgcatalog ``reindexIndex`` (one transaction)"),
        ("batched", f"pgcatalog batched (a commit every {BATCH_SIZE:,})"),
    ):
        found = pgcatalog["variants"][variant]
        lines.append(
            f"| {label} | {found['seconds']:.1f} | {found['objects_per_s']:.0f}"
            f" | {found['peak_mb']:.1f}"
            f" | {found['seconds'] / zcatalog['seconds']:.2f}"
            f" | {found['peak_mb'] / zcatalog['peak_mb']:.2f} |"
        )
    found = pgcatalog["variants"]["reindexIndex"]
    lines += [
        "",
        "A sorted page of the pages (``portal_type``, ``sort_on=sortable_title``,"
        " 20 paths), median ms of"
        f" {SEARCHES}, before ``reindexIndex`` and in its transaction, before its"
        " commit (a later upgrade step's search):",
        "",
        "| Search | ZCatalog | pgcatalog | Ratio |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (
        ("search_ms", "nothing pending"),
        ("search_pending_ms", "SearchableText of every page reindexed, pending"),
    ):
        lines.append(
            f"| {label} | {zcatalog[key]:.2f} | {found[key]:.2f}"
            f" | {found[key] / zcatalog[key]:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/reindex_memory.py")
    parser.add_argument("--dsn", required=True, help="a server's maintenance DSN")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--worker", choices=("zcatalog", "pgcatalog"))
    parser.add_argument("--instance", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.docs < 1:
        parser.error("--docs must be at least 1")
    if args.worker:
        return worker(args)
    import platform
    import shutil

    results = {
        "docs": args.docs,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": f"{platform.processor() or platform.machine()},"
        f" {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "backends": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-reindex-"))
    try:
        for backend in ("zcatalog", "pgcatalog"):
            log(f"{backend} ...")
            results["backends"][backend] = _run_backend(backend, args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    text = report(results)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".json").write_text(
            json.dumps(results, indent=1), encoding="utf-8"
        )
        args.output.with_suffix(".md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
