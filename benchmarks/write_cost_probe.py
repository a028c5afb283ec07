"""What a catalog-only change of many rows costs PostgreSQL, and where:
on a database a benchmark kept (issue 15: the sharing change's target).

A command, never part of the test suite::

    .venv/bin/python benchmarks/write_cost_probe.py --dsn DSN
        [--rows 1000] [--rounds 9] [--each-index]

The change is a sharing change's: one more term in ``allowedRolesAndUsers``
of ``--rows`` cataloged rows (the first by path below the parent of the
folder with most children: the benchmark's big folder, whose sharing
change ``run.py`` times).  Each variant runs in a transaction rolled back at
its end (nothing is kept, DDL included; the table is vacuumed after
each), alternating, and the median of ``--rounds`` is printed in ms, with
the share of a row:

- ``as built``: the list and its number written in their columns,
  ``idx`` untouched, as the commit writes a patch of lists stored once
  (``columns.once_patch``, since 2026-12-01);
- ``through idx``: ``idx`` merged for that key, as the commit's patch
  statement (``store.processor._PATCH_ROWS``) merges each key it writes
  otherwise, with the key named as the commit names it
  (``columns.PATCHED_KEYS``): the trigger derives that key's columns and
  takes the list out of ``idx`` again (how the commit wrote a sharing
  change before);
- ``keys not named``: the same without the key named: the trigger derives
  the columns of the keys whose value the statement changes (schema 14;
  in schemas 11-13 every column);
- ``without the trigger``: the same ``idx`` merge, the typed columns left;
- ``without SQL indexes``: as built, every index of the table dropped but
  its key;
- ``typed columns set, idx untouched``: the two typed columns of the index
  (its list and the list's number) set by array functions, without the
  check that the column gives the value back, the indexes as built;
- ``through idx, compressed with lz4`` (where the server has lz4): through
  ``idx``, the values written anew (``COMPRESSED``) compressed with lz4 instead of
  PostgreSQL's default ``pglz``;
- with ``--each-index``, ``without NAME`` for each SQL index of the table
  but its key: as built, that one index dropped (what the index costs the
  change: a non-HOT update writes each row's new version in every index,
  a GIN index one entry per element of the row's value).

Since schema 14 the list is stored once, in its column only
(``columns.stored_once``): the change reads it there where ``idx`` has
none, and the trigger takes it out of ``idx`` again.

Compare rows within one run: the absolute times move with the machine.
"""

from __future__ import annotations

from plone_pgcatalog.store.columns import once_patch
from plone_pgcatalog.store.columns import PATCHED_KEYS
from plone_pgcatalog.store.columns import registered
from plone_pgcatalog.store.columns import set_column
from plone_pgcatalog.store.columns import TRIGGER
from plone_pgcatalog.store.schema import TABLE
from psycopg import sql
from psycopg.types.json import Jsonb

import argparse
import json
import psycopg
import statistics
import sys
import time

INDEX = "allowedRolesAndUsers"

# The list where it is stored: in ``idx``, or in its column only
# (``columns.stored_once``, schema 14).
_MERGE_IDX = sql.SQL(
    "UPDATE {table} SET idx = idx || jsonb_build_object({key},"
    " COALESCE(idx -> {key}, to_jsonb({column})) || to_jsonb(%s::text))"
    " WHERE zoid = ANY(%s::bigint[])"
).format(
    table=sql.Identifier(TABLE), key=sql.Literal(INDEX), column=sql.Identifier(INDEX)
)

_SET_TYPED = sql.SQL(
    "UPDATE {table} SET {column} = array_append({column}, %s::text),"
    " {number} = -1 WHERE zoid = ANY(%s::bigint[])"
).format(
    table=sql.Identifier(TABLE),
    column=sql.Identifier(INDEX),
    number=sql.Identifier(set_column(INDEX)),
)


def _rows(conn: psycopg.Connection, count: int) -> list[int]:
    """The zoids of ``count`` rows below the parent of the folder with
    most children."""
    (parent,) = conn.execute(
        "SELECT parent_path FROM pgcatalog_objects GROUP BY parent_path"
        " ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    above = parent.rsplit("/", 1)[0]
    found = conn.execute(
        "SELECT zoid FROM pgcatalog_objects WHERE path LIKE %s ORDER BY path LIMIT %s",
        (above + "/%", count),
    ).fetchall()
    return [zoid for (zoid,) in found]


def _with_term(cur: psycopg.Cursor, zoids: list[int], term: str) -> tuple:
    """The parameters of ``once_patch`` that add ``term`` to the lists of
    ``zoids``, as a commit sends them (each row's new value), read before
    the change is timed."""
    cur.execute(
        sql.SQL(
            "SELECT zoid, COALESCE(idx -> {key}, to_jsonb({column}))"
            " FROM {table} WHERE zoid = ANY(%s::bigint[])"
        ).format(
            table=sql.Identifier(TABLE),
            key=sql.Literal(INDEX),
            column=sql.Identifier(INDEX),
        ),
        (zoids,),
    )
    found = cur.fetchall()
    return (
        [zoid for zoid, _ in found],
        [Jsonb({INDEX: sorted([*(terms or []), term])}) for _, terms in found],
    )


def _secondary_indexes(conn: psycopg.Connection) -> list[str]:
    found = conn.execute(
        "SELECT c.relname FROM pg_index AS i JOIN pg_class AS c"
        " ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass"
        " AND NOT i.indisprimary",
        (TABLE,),
    ).fetchall()
    return [name for (name,) in found]


def _variants(
    conn: psycopg.Connection, each_index: bool = False
) -> list[tuple[str, list, sql.Composed]]:
    """``(label, DDL run first, the change)`` of each variant."""
    no_trigger = sql.SQL("ALTER TABLE {} DISABLE TRIGGER {}").format(
        sql.Identifier(TABLE), sql.Identifier(TRIGGER)
    )
    drops = [
        sql.SQL("DROP INDEX {}").format(sql.Identifier(name))
        for name in _secondary_indexes(conn)
    ]
    named = sql.SQL("SELECT set_config({}, {}, true)").format(
        sql.Literal(PATCHED_KEYS), sql.Literal(json.dumps([INDEX]))
    )
    with conn.cursor() as cur:
        built = once_patch([INDEX], registered(cur))
    if built is None:
        raise SystemExit(f"{INDEX} and its number are not typed columns ready here")
    variants = [
        ("as built", [], built),
        ("through idx", [named], _MERGE_IDX),
        ("keys not named", [], _MERGE_IDX),
        ("without the trigger", [no_trigger], _MERGE_IDX),
        ("without SQL indexes", [*drops], built),
        ("typed columns set, idx untouched", [no_trigger], _SET_TYPED),
    ]
    if _has_lz4(conn):
        lz4 = [
            sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET COMPRESSION lz4").format(
                sql.Identifier(TABLE), sql.Identifier(column)
            )
            for column in COMPRESSED
        ]
        variants.append(("through idx, compressed with lz4", [named, *lz4], _MERGE_IDX))
    if each_index:
        variants += [
            (f"without {name}", [drop], built)
            for name, drop in zip(_secondary_indexes(conn), drops)
        ]
    return variants


#: The columns whose values a change writes anew, compressed where the row
#: is larger than PostgreSQL's threshold (``pglz`` unless the column says
#: otherwise): ``idx`` and the typed columns of lists.
COMPRESSED = ("idx", INDEX)


def _has_lz4(conn: psycopg.Connection) -> bool:
    """Whether the server can compress values with lz4 (built with it)."""
    (found,) = conn.execute(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
        " WHERE name = 'default_toast_compression'"
    ).fetchone()
    return bool(found)


def _vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(TABLE)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/write_cost_probe.py")
    parser.add_argument("--dsn", required=True, help="a database a benchmark kept")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--each-index",
        action="store_true",
        help="also the change without each SQL index of the table, one at a time",
    )
    args = parser.parse_args(argv)
    with psycopg.connect(args.dsn) as conn:
        zoids = _rows(conn, args.rows)
        if not zoids:
            parser.error("the database has no cataloged rows below a folder")
        variants = _variants(conn, args.each_index)
        conn.rollback()
        times: dict[str, list[float]] = {label: [] for label, _, _ in variants}
        for round_ in range(args.rounds):
            for label, ddl, change in variants:
                with conn.transaction(force_rollback=True), conn.cursor() as cur:
                    for statement in ddl:
                        cur.execute(statement)
                    term = f"user:probe-{round_}"
                    params = (
                        (term, zoids)
                        if change is _MERGE_IDX or change is _SET_TYPED
                        else _with_term(cur, zoids, term)
                    )
                    started = time.perf_counter()
                    cur.execute(change, params)
                    times[label].append((time.perf_counter() - started) * 1000)
                # The rolled-back versions of the rows: gone before the
                # next variant, which would else write beside them (and
                # leave the kept database bloated: its searches slow).
                _vacuum(args.dsn)
    print(
        f"{len(zoids)} rows, one more term in {INDEX}; medians of"
        f" {args.rounds} rounds (ms)"
    )
    width = max(36, *(len(label) for label in times))
    print(f"{'variant':{width}s} {'all rows':>9s} {'a row':>8s}")
    for label, measured in times.items():
        median = statistics.median(measured)
        print(f"{label:{width}s} {median:9.2f} {median / len(zoids):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
