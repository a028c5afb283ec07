"""What a ZODB write of an object that is not cataloged pays for the catalog.

A command, never part of the test suite (issue 15).  In a new database it
makes two copies of zodb-pgjsonb's ``object_state`` as a site has it
(``--rows`` objects, one in ``--cataloged-every`` cataloged, with the states
and index values of a real Plone page), one per layout:

``schema 4``
    the catalog's columns on ``object_state`` and its partial indexes
    ``WHERE idx IS NOT NULL`` (the six of ``BASE_DDL`` and one set per
    catalog index of a Plone site, as schema 4 made them);
``schema 5``
    ``object_state`` as zodb-pgjsonb alone makes it (the catalog's rows are
    in a table of their own).

Then it times zodb-pgjsonb's write of an object's new state (its ``INSERT
... ON CONFLICT (zoid) DO UPDATE``, one statement per object, in
transactions of ``--per-commit`` objects) for objects that are not
cataloged, alternating between the layouts, and prints the medians::

    .venv/bin/python benchmarks/object_state_probe.py \\
        --dsn postgresql://postgres@127.0.0.1/postgres

The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import psycopg
import statistics
import sys
import time

#: zodb-pgjsonb 1.19's table (``zodb_pgjsonb.schema``), without the foreign
#: key on ``transaction_log`` (no transaction log here).
OBJECT_STATE = """
CREATE TABLE {table} (
    zoid bigint PRIMARY KEY, tid bigint NOT NULL, class_mod text NOT NULL,
    class_name text NOT NULL, state jsonb, state_size integer NOT NULL,
    refs bigint[] NOT NULL DEFAULT '{{}}'
);
CREATE INDEX ON {table} (tid, zoid);
CREATE INDEX ON {table} (class_mod, class_name);
CREATE INDEX ON {table} USING gin (refs);
"""

#: The catalog indexes of a Plone 6.2 site and their meta_types.
PLONE_INDEXES = {
    "Creator": "FieldIndex",
    "Date": "DateIndex",
    "Description": "ZCTextIndex",
    "Subject": "KeywordIndex",
    "Title": "ZCTextIndex",
    "Type": "FieldIndex",
    "UID": "UUIDIndex",
    "allowedRolesAndUsers": "KeywordIndex",
    "created": "DateIndex",
    "effective": "DateIndex",
    "end": "DateRecurringIndex",
    "exclude_from_nav": "FieldIndex",
    "expires": "DateIndex",
    "getId": "FieldIndex",
    "getObjPositionInParent": "GopipIndex",
    "getRawRelatedItems": "KeywordIndex",
    "id": "FieldIndex",
    "in_reply_to": "FieldIndex",
    "is_default_page": "BooleanIndex",
    "is_folderish": "BooleanIndex",
    "modified": "DateIndex",
    "object_provides": "KeywordIndex",
    "portal_type": "FieldIndex",
    "review_state": "FieldIndex",
    "sortable_title": "FieldIndex",
    "start": "DateRecurringIndex",
    "sync_uid": "FieldIndex",
    "total_comments": "FieldIndex",
}

STATE = (
    '{"title": "A page", "description": "What it is about", "text": {"@type":'
    ' "RichTextValue", "raw": "' + "Words of the page. " * 40 + '"},'
    ' "creators": ["admin"], "subject": ["one", "two"]}'
)
IDX = (
    '{"portal_type": "Document", "review_state": "published", "Subject":'
    ' ["one", "two"], "allowedRolesAndUsers": ["Anonymous"], "object_provides":'
    ' ["plone.dexterity.interfaces.IDexterityContent",'
    ' "plone.app.contenttypes.interfaces.IDocument"], "sortable_title": "a page",'
    ' "modified": 1000, "created": 1000, "effective": 1000, "id": "page"}'
)

WRITE = (
    "INSERT INTO {table} (zoid, tid, class_mod, class_name, state, state_size)"
    " VALUES (%s, %s, 'plone.app.contenttypes.content', 'Document', %s::jsonb, %s)"
    " ON CONFLICT (zoid) DO UPDATE SET tid = excluded.tid, state = excluded.state,"
    " state_size = excluded.state_size"
)


def build(conn, table: str, rows: int, every: int, legacy: bool) -> None:
    from plone_pgcatalog.store import schema

    conn.execute(OBJECT_STATE.format(table=table))
    conn.execute(
        f"INSERT INTO {table} (zoid, tid, class_mod, class_name, state, state_size)"
        " SELECT g, 1, 'plone.app.contenttypes.content', 'Document', %s::jsonb, %s"
        " FROM generate_series(1, %s) AS g",
        (STATE, len(STATE), rows),
    )
    if not legacy:
        return
    columns = (
        'path text COLLATE "C", parent_path text COLLATE "C", path_depth integer,'
        " idx jsonb, meta json, searchable_text tsvector"
    )
    conn.execute(
        f"ALTER TABLE {table} "
        + ", ".join(f"ADD COLUMN {column}" for column in columns.split(", "))
    )
    conn.execute(
        f"UPDATE {table} SET path = '/plone/p' || zoid, parent_path = '/plone',"
        ' path_depth = 2, idx = %s::jsonb, meta = \'{"Title": "A page"}\','
        " searchable_text = to_tsvector('simple', 'words of the page')"
        " WHERE zoid %% %s = 0",
        (IDX, every),
    )
    base = [
        "(path)",
        "(parent_path)",
        "USING gin (idx jsonb_path_ops)",
        "USING gin (searchable_text)",
        "(path_depth, path)",
        "USING gin (string_to_array(path, '/'))",
    ]
    for number, definition in enumerate(base):
        conn.execute(
            f"CREATE INDEX {table}_base_{number} ON {table} {definition}"
            " WHERE idx IS NOT NULL"
        )
    for name, meta_type in PLONE_INDEXES.items():
        ddl = schema.expression_ddl(name, meta_type, legacy=True)
        if ddl:
            ddl = ddl.replace('"object_state"', table)
            ddl = ddl.replace('"pgcatalog_', f'"{table}_')
            conn.execute(ddl)
    conn.execute(f"ALTER TABLE {table} ALTER COLUMN idx SET STORAGE MAIN")


def writes(conn, table: str, zoids: list[int], per_commit: int, tid: int) -> float:
    """Seconds per object written."""
    statement = WRITE.format(table=table)
    started = time.perf_counter()
    for start in range(0, len(zoids), per_commit):
        with conn.transaction():
            for zoid in zoids[start : start + per_commit]:
                conn.execute(statement, (zoid, tid, STATE, len(STATE)), prepare=True)
    return (time.perf_counter() - started) / len(zoids)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/object_state_probe.py")
    parser.add_argument("--dsn", default=os.environ.get("PGCATALOG_BENCH_DSN"))
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--cataloged-every", type=int, default=30)
    parser.add_argument("--writes", type=int, default=2_000)
    parser.add_argument("--per-commit", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    if not args.dsn:
        parser.error("--dsn (or $PGCATALOG_BENCH_DSN) is required")
    name = f"pgcatalog_object_state_probe_{os.getpid()}"
    with psycopg.connect(args.dsn, autocommit=True) as server:
        server.execute(f"CREATE DATABASE {name}")
    dsn = psycopg.conninfo.make_conninfo(args.dsn, dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            build(conn, "layout4", args.rows, args.cataloged_every, legacy=True)
            build(conn, "layout5", args.rows, args.cataloged_every, legacy=False)
            conn.execute("VACUUM ANALYZE")
            indexes = {
                table: conn.execute(
                    "SELECT count(*) FROM pg_indexes WHERE tablename = %s", (table,)
                ).fetchone()[0]
                for table in ("layout4", "layout5")
            }
            others = [z for z in range(1, args.rows + 1) if z % args.cataloged_every][
                : args.writes
            ]
            times = {"layout4": [], "layout5": []}
            for round_ in range(args.rounds):
                for table in ("layout4", "layout5"):
                    times[table].append(
                        writes(conn, table, others, args.per_commit, round_ + 2)
                    )
        four = statistics.median(times["layout4"]) * 1e6
        five = statistics.median(times["layout5"]) * 1e6
        print(
            f"object_state with {args.rows:,} objects, one in {args.cataloged_every}"
            f" cataloged; {args.writes:,} writes of objects that are not cataloged,"
            f" {args.per_commit} a commit, median of {args.rounds} rounds:"
        )
        print(f"  schema 4 ({indexes['layout4']} indexes): {four:.1f} us a write")
        print(f"  schema 5 ({indexes['layout5']} indexes): {five:.1f} us a write")
        print(f"  schema 5 / schema 4: {five / four:.2f}")
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as server:
            server.execute(f"DROP DATABASE IF EXISTS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
