"""Measures what a different table layout would change for large results.

Input for issue 5's design question (one table or a catalog table of its
own), answered by schema 5 (the catalog's own table): it runs on a database
of schema 4 (``run.py --keep-databases`` of version 0.1), whose catalog
columns are on ``object_state``, and stays as the record of what decided it.  On a database that ``benchmarks/run.py --keep-databases`` left, it
builds two throw-away tables from the cataloged rows of ``object_state``
and times the same searches on the three layouts:

``object_state``
    as the catalog is today: the catalog columns on zodb-pgjsonb's table,
    partial indexes ``WHERE idx IS NOT NULL``.
``probe_catalog``
    the same columns and expression indexes in a table of their own: the
    catalog's rows only, dense (``idx`` kept in the row as on
    ``object_state``: storage MAIN, ``toast_tuple_target`` 4080).
``probe_plain``
    the conditions' values as plain columns (``portal_type``,
    ``review_state`` as text, ``allowedRolesAndUsers`` as ``text[]``) with
    B-tree and GIN indexes.
``object_state`` + typed columns (``typed``)
    the same plain columns added to ``object_state`` itself (NULL in rows
    that are not cataloged) with partial indexes ``WHERE idx IS NOT NULL``:
    what typed columns give without a table of their own.

Usage (``N``: the number in the kept database's name)::

    .venv/bin/python benchmarks/layout_probe.py \
        postgresql://user@host/pgcatalog_bench_pgcatalog_N

It drops and recreates its two tables, and adds its columns
(``probe_*``) to ``object_state`` for the time of the measurement; nothing
else is changed.  Never part of the test suite.
"""

from __future__ import annotations

import psycopg
import statistics
import sys
import time

ROLES = ["Manager", "Anonymous", "Authenticated", "user:admin"]
RUNS, WARMUP = 25, 5


def build_dense(conn) -> None:
    conn.execute("DROP TABLE IF EXISTS probe_catalog")
    conn.execute(
        "CREATE TABLE probe_catalog AS SELECT zoid, path, parent_path, path_depth,"
        " idx, meta, searchable_text FROM object_state WITH NO DATA"
    )
    conn.execute(
        "ALTER TABLE probe_catalog ALTER COLUMN idx SET STORAGE MAIN,"
        " ALTER COLUMN path SET STORAGE MAIN, SET (toast_tuple_target = 4080)"
    )
    conn.execute(
        "INSERT INTO probe_catalog SELECT zoid, path, parent_path, path_depth,"
        " idx, meta, searchable_text FROM object_state WHERE idx IS NOT NULL"
    )
    conn.execute("ALTER TABLE probe_catalog ADD PRIMARY KEY (zoid)")
    # The catalog's own index definitions, on the new table, without the
    # predicate that only the shared table needs.
    definitions = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'object_state'"
        " AND indexname LIKE 'pgcatalog_%'"
    ).fetchall()
    for (definition,) in definitions:
        definition = (
            definition.replace("ON public.object_state", "ON probe_catalog")
            .replace(" WHERE (idx IS NOT NULL)", "")
            .replace("(idx IS NOT NULL) AND ", "")
            .replace("CREATE INDEX pgcatalog_", "CREATE INDEX probe_")
        )
        conn.execute(definition)
    conn.execute("VACUUM ANALYZE probe_catalog")


def build_plain(conn) -> None:
    conn.execute("DROP TABLE IF EXISTS probe_plain")
    conn.execute(
        'CREATE TABLE probe_plain AS SELECT zoid, path COLLATE "C" AS path,'
        " idx ->> 'portal_type' AS portal_type,"
        " idx ->> 'review_state' AS review_state,"
        " ARRAY(SELECT jsonb_array_elements_text(idx -> 'allowedRolesAndUsers'))"
        " AS allowed FROM object_state WHERE idx IS NOT NULL"
    )
    conn.execute("ALTER TABLE probe_plain ADD PRIMARY KEY (zoid)")
    for column in ("path", "portal_type", "review_state"):
        conn.execute(f"CREATE INDEX ON probe_plain ({column})")
    conn.execute("CREATE INDEX ON probe_plain USING gin (allowed)")
    conn.execute("VACUUM ANALYZE probe_plain")


TYPED_COLUMNS = ("probe_portal_type", "probe_review_state", "probe_allowed")


def add_typed(conn) -> None:
    drop_typed(conn)
    conn.execute(
        "ALTER TABLE object_state ADD COLUMN probe_portal_type text,"
        " ADD COLUMN probe_review_state text, ADD COLUMN probe_allowed text[]"
    )
    conn.execute(
        "UPDATE object_state SET probe_portal_type = idx ->> 'portal_type',"
        " probe_review_state = idx ->> 'review_state',"
        " probe_allowed = ARRAY(SELECT jsonb_array_elements_text("
        "idx -> 'allowedRolesAndUsers')) WHERE idx IS NOT NULL"
    )
    for column in ("probe_portal_type", "probe_review_state"):
        conn.execute(
            f"CREATE INDEX probe_{column} ON object_state ({column})"
            " WHERE idx IS NOT NULL"
        )
    conn.execute(
        "CREATE INDEX probe_allowed_gin ON object_state USING gin (probe_allowed)"
        " WHERE idx IS NOT NULL"
    )
    conn.execute("VACUUM ANALYZE object_state")


def drop_typed(conn) -> None:
    conn.execute(
        "ALTER TABLE object_state "
        + ", ".join(f"DROP COLUMN IF EXISTS {column}" for column in TYPED_COLUMNS)
    )


def searches(site: str) -> dict[str, dict[str, tuple]]:
    """Each search, as each layout writes it: ``{name: {table: (sql, params)}}``."""
    subtree = (site, site + "/", site + "0")
    json_where = "(path = %s OR (path >= %s AND path < %s)) AND {nn}"
    json_where += " (idx -> 'allowedRolesAndUsers') ?| %s AND "
    plain_where = "(path = %s OR (path >= %s AND path < %s)) AND allowed && %s AND "
    window = (
        "SELECT zoid, path, count(*) OVER () FROM {t} WHERE {w} ORDER BY zoid LIMIT 100"
    )
    found = {}
    for name, json_cond, plain_cond, roles in (
        (
            "portal_type=Document: len() + first 100",
            "(idx -> 'portal_type') = '\"Document\"'::jsonb",
            "portal_type = 'Document'",
            ROLES,
        ),
        (
            "published, as Anonymous: len() + first 100",
            "(idx -> 'review_state') = '\"published\"'::jsonb",
            "review_state = 'published'",
            ["Anonymous"],
        ),
    ):
        found[name] = {
            table: (
                window.format(t=table, w=json_where.format(nn=nn) + json_cond),
                (*subtree, roles),
            )
            for table, nn in (
                ("object_state", "idx IS NOT NULL AND"),
                ("probe_catalog", ""),
            )
        }
        found[name]["probe_plain"] = (
            window.format(t="probe_plain", w=plain_where + plain_cond),
            (*subtree, roles),
        )
        typed_where = "idx IS NOT NULL AND " + plain_where.replace(
            "allowed", "probe_allowed"
        )
        found[name]["typed"] = (
            window.format(t="object_state", w=typed_where + "probe_" + plain_cond),
            (*subtree, roles),
        )
    found["count(*) of portal_type=Document"] = {
        "object_state": (
            "SELECT count(*) FROM object_state WHERE idx IS NOT NULL"
            " AND (idx -> 'portal_type') = '\"Document\"'::jsonb",
            (),
        ),
        "probe_catalog": (
            "SELECT count(*) FROM probe_catalog"
            " WHERE (idx -> 'portal_type') = '\"Document\"'::jsonb",
            (),
        ),
        "probe_plain": (
            "SELECT count(*) FROM probe_plain WHERE portal_type = 'Document'",
            (),
        ),
        "typed": (
            "SELECT count(*) FROM object_state WHERE idx IS NOT NULL"
            " AND probe_portal_type = 'Document'",
            (),
        ),
    }
    return found


def main(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        total, cataloged = conn.execute(
            "SELECT count(*), count(idx) FROM object_state"
        ).fetchone()
        print(f"object_state: {total} rows, {cataloged} cataloged")
        build_dense(conn)
        build_plain(conn)
        add_typed(conn)
        site = conn.execute(
            "SELECT path FROM object_state WHERE idx IS NOT NULL"
            " ORDER BY path_depth LIMIT 1"
        ).fetchone()[0]
        for name, layouts in searches(site).items():
            for table, (statement, params) in layouts.items():
                times = []
                for _ in range(RUNS):
                    started = time.perf_counter()
                    rows = conn.execute(statement, params).fetchall()
                    times.append((time.perf_counter() - started) * 1000)
                plan = conn.execute(
                    "EXPLAIN (ANALYZE, BUFFERS) " + statement, params
                ).fetchall()
                buffers = next(
                    (line.strip() for (line,) in plan if "Buffers" in line), ""
                )
                print(
                    f"{name:45} {table:14} median"
                    f" {statistics.median(times[WARMUP:]):7.2f} ms,"
                    f" matches {rows[0][-1] if rows else 0}, {buffers}"
                )
        drop_typed(conn)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
