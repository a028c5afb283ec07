"""Each scenario's statement planned for its values against a plan kept
blind to them (PostgreSQL's generic plan), on a database a benchmark kept.

A command, never part of the test suite (issue 15)::

    .venv/bin/python benchmarks/plan_modes.py --dsn DSN --results FILE.json
        [--rounds 60] [--plans] [--value VALUE]

``FILE.json`` is the result of ``run.py --keep-databases`` or of
``scale_probe.py --keep-database``: the statements and values of its
EXPLAIN section (the last size of a scale probe); ``DSN`` the kept
database.  Each statement runs with its own values and, where it has value
lists other than the user's security terms (a portal type, a state, a
keyword), with each of those replaced by ``--value`` (by default one no row
has; a value few rows have, such as ``Folder`` in a grown catalog, is the
other hard case): a plan made blind to the values must be good for all.

Two connections, planned as the catalog's reads are (page cost 1.1, no JIT,
no parallel workers): one runs the statement unprepared in
``plan_cache_mode`` ``auto`` (a new plan for each run, made for its values),
the other prepared in ``force_generic_plan`` (one plan, kept).  Printed:
the medians of ``--rounds`` alternating round trips in ms, and their
ratio; with ``--plans``, the nodes of both plans from EXPLAIN ANALYZE.
Compare ratios within one run: the absolute times move with the machine.
"""

from __future__ import annotations

from psycopg import sql

import argparse
import ast
import json
import psycopg
import statistics
import sys
import time

#: Values of the security terms (``allowedRolesAndUsers``): kept as they are.
ROLES = {"Anonymous", "Authenticated", "Manager"}
#: The value of ``--value`` by default: one no row has.
ABSENT = "no-such-value"


def connect(dsn: str, mode: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET random_page_cost = 1.1")
    conn.execute("SET jit = off")
    conn.execute("SET max_parallel_workers_per_gather = 0")
    conn.execute(sql.SQL("SET plan_cache_mode = {}").format(sql.SQL(mode)))
    return conn


def statements(results: dict) -> list[dict]:
    """The EXPLAIN section's statements: of a ``run.py`` result, or of the
    last size of a ``scale_probe.py`` one."""
    if "steps" in results:
        return results["steps"][-1]["query"]["explain"]
    return results["backends"]["pgcatalog"]["query"]["explain"]


def variants(params: list, other: str):
    """``(label, values)``: the statement's own values, and (where it has
    any) its value lists other than the security terms replaced by
    ``[other]``."""
    yield "own", params
    replaced = [
        (
            [other]
            if isinstance(value, list)
            and value
            and all(isinstance(item, str) for item in value)
            and not set(value) & ROLES
            else value
        )
        for value in params
    ]
    if replaced != params:
        yield "other", replaced


def timed(conn: psycopg.Connection, statement: str, params, prepare: bool) -> float:
    started = time.perf_counter()
    conn.execute(statement, params, prepare=prepare).fetchall()
    return (time.perf_counter() - started) * 1000


def plan_nodes(dsn: str, mode: str, statement: str, params) -> str:
    """The nodes of the plan ``mode`` gives ``statement``, run once."""
    with connect(dsn, mode) as conn:
        conn.execute(statement, params, prepare=True).fetchall()
        [[name]] = conn.execute("SELECT name FROM pg_prepared_statements").fetchall()
        arguments = sql.SQL(", ").join(sql.Literal(value) for value in params)
        [[explained]] = conn.execute(
            sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE {}({})").format(
                sql.Identifier(name), arguments
            )
        ).fetchall()
    nodes = []

    def walk(node: dict) -> None:
        index = node.get("Index Name")
        nodes.append(node["Node Type"] + (f" {index}" if index else ""))
        for child in node.get("Plans", []):
            walk(child)

    walk(explained[0]["Plan"])
    return f"{explained[0]['Execution Time']:.3f} ms: " + " > ".join(nodes)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/plan_modes.py")
    parser.add_argument("--dsn", required=True, help="the kept benchmark database")
    parser.add_argument("--results", required=True, help="the run's .json result")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--plans", action="store_true", help="print both plans")
    parser.add_argument(
        "--value",
        default=ABSENT,
        help="what the value lists become in a second run (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    with open(args.results) as file:
        entries = statements(json.load(file))
    print(f"other values: {args.value!r}")
    print(f"{'scenario':18} {'values':7} {'for values':>10} {'kept':>8} {'ratio':>6}")
    for entry in entries:
        params = [ast.literal_eval(value) for value in entry["params"]]
        for label, values in variants(params, args.value):
            with connect(args.dsn, "auto") as custom, connect(
                args.dsn, "force_generic_plan"
            ) as generic:
                for _ in range(5):  # warm: caches, the prepared statement
                    timed(custom, entry["sql"], values, False)
                    timed(generic, entry["sql"], values, True)
                times = {False: [], True: []}
                for _ in range(args.rounds):
                    times[False].append(timed(custom, entry["sql"], values, False))
                    times[True].append(timed(generic, entry["sql"], values, True))
            planned, kept = (statistics.median(times[kind]) for kind in (False, True))
            print(
                f"{entry['scenario']:18} {label:7} {planned:10.2f} {kept:8.2f}"
                f" {kept / planned:6.2f}"
            )
            if args.plans:
                for mode in ("force_custom_plan", "force_generic_plan"):
                    nodes = plan_nodes(args.dsn, mode, entry["sql"], values)
                    print(f"    {mode}: {nodes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
