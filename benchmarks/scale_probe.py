"""Scale probe: every query scenario's median and plan as the catalog grows.

A command, never part of the test suite (issue 15).  It builds one
plone_pgcatalog benchmark site of ``--docs`` documents as ``run.py`` does
(the ``create`` phase: a real Zope), then, for each of ``--sizes``, grows
the catalog by SQL to that many rows and runs the ``query`` phase again
(``worker.py query``: the scenarios of ``scenarios.py``, timed, with the
EXPLAIN (ANALYZE, BUFFERS) of each one's SQL)::

    .venv/bin/python benchmarks/scale_probe.py \\
        --dsn postgresql://postgres@127.0.0.1/postgres \\
        --sizes 10000,100000,1000000 [--docs 500] [--iterations 20]
        [--output benchmarks/results/scale] [--keep-database]
        [--database pgcatalog_bench_scale_NNNN]

How the catalog grows (``GROW``): copies of the site's cataloged rows, each
under its own folder ``/plone/copy-NNNNN`` (so every scenario's site
subtree holds them), with new zoids and UIDs, dates moved back by a day
per copy, and, for 39 rows in 40, values of their own (one of 40 portal
types, 20 workflow states, 1,000 keywords, titles): a query that names a
value matches a few percent of the catalog at most, as on a large site,
and the scenarios that match the original values match about one copy in
40.  Each copied row gets a row in ``object_state`` too (the catalog table's
foreign key needs one), with an empty state: nothing in the ZODB refers to
them (garbage a pack would remove), and no scenario loads an object.

The query phases also run ``scenarios.PROBE_SCENARIOS``: queries on values
only the copies have (``len()`` of about 10% of the catalog; one copy's
subtree, a result of a few hundred rows at every size).

Results: ``OUTPUT.json`` (every number) and ``OUTPUT.md`` (a table of
medians per size, then each size's plans).  The database is dropped at the
end unless ``--keep-database``; ``--database`` measures again on one kept
(the code of this work tree on the same rows: 25 minutes of growing
1,000,000 rows saved).
"""

from __future__ import annotations

from pathlib import Path
from plone_pgcatalog.store import columns

import argparse
import json
import os
import psycopg
import run
import scenarios
import shutil
import sys
import tempfile
import time

HERE = Path(__file__).parent

#: Copies of the site's rows, ``%(first)s`` to ``%(last)s``, in one
#: statement: the object rows first (``objects``), then the catalog rows.
#: ``WHOLE_IDX``: each row's ``idx`` with its lists stored once
#: (``columns.whole_idx``, ``grow_statement``), from which the trigger
#: derives the copies' columns.
GROW = """
WITH source AS (
    SELECT c.zoid, c.path, c.parent_path, c.path_depth, WHOLE_IDX AS idx, c.meta,
           c.searchable_text, row_number() OVER (ORDER BY c.zoid) AS r
    FROM pgcatalog_objects AS c
    WHERE (c.path = %(site)s OR c.path LIKE %(below)s)
      AND c.path NOT LIKE %(copies)s
), copies AS (
    SELECT source.*, n,
           %(site)s || '/copy-' || lpad(n::text, 5, '0') AS root,
           (n * 2654435761 + r * 40503) %% 1000003 AS h,
           n * 1440 AS date_shift,
           nextval('zoid_seq') AS new_zoid
    FROM source CROSS JOIN generate_series(%(first)s::integer, %(last)s::integer) AS n
), varied AS (
    SELECT copies.*, h %% 40 = 0 AS keep, h %% 40 AS t FROM copies
), objects AS (
    INSERT INTO object_state (zoid, tid, class_mod, class_name, state,
                              state_size, refs)
    SELECT new_zoid, %(tid)s::bigint, 'plone_pgcatalog.probe', 'Copy', '{}'::jsonb, 2,
           '{}'::bigint[]
    FROM varied
)
INSERT INTO pgcatalog_objects (zoid, path, parent_path, path_depth, idx, meta,
                               searchable_text)
SELECT new_zoid,
       root || substr(path, length(%(site)s) + 1),
       CASE WHEN path = %(site)s THEN %(site)s
            ELSE root || substr(parent_path, length(%(site)s) + 1) END,
       path_depth + 1,
       idx || jsonb_strip_nulls(jsonb_build_object(
           'UID', md5(n || (idx ->> 'UID')),
           'portal_type', CASE WHEN NOT keep THEN 'type-' || t END,
           'review_state', CASE WHEN NOT keep AND idx ? 'review_state'
               THEN 'state-' || (h / 40 %% 20) END,
           'Subject', CASE WHEN NOT keep AND (idx ? 'Subject' OR h %% 3 = 0)
               THEN jsonb_build_array('kw-' || lpad((h %% 500)::text, 3, '0'),
                                      'kw-' || (500 + h / 500 %% 500)) END,
           'sortable_title', CASE WHEN NOT keep
               THEN 'copy ' || (h %% 997) || ' ' || (idx ->> 'sortable_title') END,
           'created', CASE WHEN idx ? 'created'
               THEN to_jsonb((idx -> 'created')::bigint - date_shift) END,
           'modified', CASE WHEN idx ? 'modified'
               THEN to_jsonb((idx -> 'modified')::bigint - date_shift) END,
           'effective', CASE WHEN idx ? 'effective'
               THEN to_jsonb((idx -> 'effective')::bigint - date_shift) END
       )),
       meta,
       CASE WHEN keep THEN searchable_text ELSE setweight(to_tsvector('simple',
           'lorem' || (h %% 4999) || ' ipsum' || (h %% 4993)), 'A') END
FROM varied
"""


def log(message: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/scale_probe.py",
        description="Query scenarios of plone_pgcatalog as its catalog grows.",
    )
    parser.add_argument("--dsn", default=os.environ.get("PGCATALOG_BENCH_DSN"))
    parser.add_argument("--docs", type=int, default=500, help="default: 500")
    parser.add_argument(
        "--sizes",
        default="10000,100000",
        help="catalog rows to grow to, ascending (default: 10000,100000)",
    )
    parser.add_argument("--warmup", type=int, default=3, help="default: 3")
    parser.add_argument("--iterations", type=int, default=20, help="default: 20")
    parser.add_argument(
        "--output", type=Path, default=HERE / "results" / "scale", help="path prefix"
    )
    parser.add_argument("--keep-database", action="store_true")
    parser.add_argument(
        "--database",
        metavar="NAME",
        help="measure on this database of --dsn's server, one an earlier run"
        " kept (--keep-database), grown further where it is below a size,"
        " instead of a new one; it is kept: a change of the code measured on"
        " the same rows without building them again",
    )
    args = parser.parse_args(argv)
    if args.database and not args.dsn:
        parser.error("--database: give --dsn, the server that holds it")
    try:
        sizes = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: comma-separated numbers, not {args.sizes!r}")
    if sizes != sorted(sizes) or not all(1 <= size <= 10_000_000 for size in sizes):
        parser.error("--sizes: ascending, each between 1 and 10,000,000")
    if not 1 <= args.docs <= run.MAX_DOCS:
        parser.error(f"--docs must be between 1 and {run.MAX_DOCS}")
    args.sizes = sizes
    # What run.run_phase reads of run.py's arguments: run.py's defaults (a
    # stock Plone site, the result cache off).
    args.big_folder, args.result_cache, args.discussion = 1000, False, False
    return args


def rows(dsn: str, site: str) -> tuple[int, int]:
    """Catalog rows of the site, and of the site without the copies."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE path NOT LIKE %s)"
            " FROM pgcatalog_objects WHERE path = %s OR path LIKE %s",
            (site + "/copy-%", site, site + "/%"),
        ).fetchone()


def grow_statement(conn: psycopg.Connection) -> str:
    """``GROW`` with the ``idx`` of the typed columns ready in ``conn``'s
    database."""
    with conn.cursor() as cur:
        ready = {n: k for n, (k, ok) in columns.registered(cur).items() if ok}
    whole = columns.whole_idx(psycopg.sql.SQL("c"), ready).as_string(conn)
    return GROW.replace("WHOLE_IDX", whole)


def grow(dsn: str, site: str, target: int) -> int:
    """Copies of the site's own rows until the catalog has ``target`` rows
    (or the first copy that passes it)."""
    total, own = rows(dsn, site)
    with psycopg.connect(dsn, autocommit=True) as conn:
        copied = conn.execute(
            "SELECT count(DISTINCT split_part(path, '/', 3)) FROM pgcatalog_objects"
            " WHERE path LIKE %s",
            (site + "/copy-%",),
        ).fetchone()[0]
        tid = conn.execute("SELECT max(tid) FROM transaction_log").fetchone()[0]
        statement = grow_statement(conn)
        per_statement = max(1, 100_000 // own)
        while total < target:
            wanted = -(-(target - total) // own)
            count = min(wanted, per_statement)
            started = time.monotonic()
            conn.execute(
                statement,
                {
                    "site": site,
                    "below": site + "/%",
                    "copies": site + "/copy-%",
                    "first": copied + 1,
                    "last": copied + count,
                    "tid": tid,
                },
            )
            copied += count
            total += count * own
            log(
                f"{total:,} rows ({count} copies in {time.monotonic() - started:.0f} s)"
            )
        started = time.monotonic()
        conn.execute("VACUUM (ANALYZE) pgcatalog_objects")
        conn.execute("ANALYZE object_state")
        log(f"VACUUM (ANALYZE) in {time.monotonic() - started:.0f} s")
    return total


def markdown(results: dict) -> str:
    sizes = [step["rows"] for step in results["steps"]]
    lines = [
        "# plone_pgcatalog scale probe",
        "",
        f"- Run {results['started']}, {results['seconds'] / 60:.1f} min;"
        f" {results['warmup']} warm-up + {results['iterations']} timed iterations"
        " per query, times in ms (median); result cache off.",
        f"- Site of {results['docs']} documents grown by SQL"
        " (``benchmarks/scale_probe.py``); PostgreSQL "
        f"{results['server']}.",
        "",
        "| Scenario | Mode | "
        + " | ".join(f"{size:,} rows: results, median" for size in sizes)
        + " |",
        "|---|---|" + "---:|" * len(sizes),
    ]
    first = results["steps"][0]["query"]["queries"]
    for number, query in enumerate(first):
        cells = []
        for step in results["steps"]:
            measured = step["query"]["queries"][number]
            cells.append(f"{measured['result_len']:,}, {measured['median_ms']:.2f}")
        lines.append(
            f"| {query['title']} ({query['user']}) | {query['mode']} | "
            + " | ".join(cells)
            + " |"
        )
    for step in results["steps"]:
        lines += ["", f"## Plans at {step['rows']:,} rows", ""]
        for explained in step["query"]["explain"]:
            lines += [
                f"### {explained['scenario']}",
                "",
                *(
                    ["The plan kept, blind to the values.", ""]
                    if explained.get("kept")
                    else []
                ),
                "```",
                explained["explain"],
                "```",
                "",
            ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    # The query phases (worker processes) also run the probe's own queries.
    os.environ[scenarios.PROBE] = "1"
    workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-scale-"))
    workdir.chmod(0o755)
    server_dsn, server = args.dsn, None
    if not server_dsn:
        server, server_dsn = run.start_embedded(workdir / "pgdata")
    name = args.database or run.database_name("scale")
    started = time.monotonic()
    results = {
        "docs": args.docs,
        "warmup": args.warmup,
        "iterations": args.iterations,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "steps": [],
    }
    try:
        if args.database:
            dsn = psycopg.conninfo.make_conninfo(server_dsn, dbname=name)
        else:
            dsn = run.create_database(server_dsn, name)
        with psycopg.connect(dsn) as conn:
            results["server"] = conn.execute("SHOW server_version").fetchone()[0]
        if not args.database:
            run.run_phase("create", "pgcatalog", dsn, args, workdir)
        site = "/Plone"
        with psycopg.connect(dsn) as conn:
            site = conn.execute(
                "SELECT path FROM pgcatalog_objects WHERE path_depth = 1 LIMIT 1"
            ).fetchone()[0]
        for size in args.sizes:
            total = grow(dsn, site, size)
            query = run.run_phase("query", "pgcatalog", dsn, args, workdir)
            results["steps"].append({"rows": total, "query": query})
            log(f"{total:,} rows measured")
    finally:
        if not (args.keep_database or args.database):
            run.drop_database(server_dsn, name)
        else:
            log(f"database kept: {name} on {server_dsn}")
        if server is not None:
            server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    results["seconds"] = time.monotonic() - started
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(
        json.dumps(results, indent=1), encoding="utf-8"
    )
    args.output.with_suffix(".md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
