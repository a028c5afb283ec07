"""Schema 4 -> 5, online: the catalog's rows move from ``object_state`` to
the catalog's own table.

Owns ``upgrade``, which the GenericSetup step ``upgrades.to_5`` runs after
its commit, on a connection of its own (``store.ddl.SchemaChange``):

1. **Prepare** (short transactions): create the table beside,
   ``schema.BUILD_TABLE``, with every SQL index the catalog's indexes need
   (under names of their own: those of schema 4 are taken), and triggers on
   ``object_state`` that mirror into it every change of the catalog
   columns of schema 4 (this version's writes through the view, and those
   of processes still running an older version).
2. **Copy** the rows in batches of ``batch`` in ``zoid`` order, each batch
   in its own transaction under zodb-pgjsonb's commit lock, so that no
   commit changes a row between the batch's read and its write; a row the
   mirror has written already is newer and stays (``ON CONFLICT DO
   NOTHING``).  Writers wait at most one batch; readers never.  Progress
   goes to the log and to ``progress``.  Then ``ANALYZE``.
3. **Switch**, in one short transaction under the commit lock and an
   exclusive lock on ``object_state`` (``lock_timeout`` bounds the wait for
   it; a try again prepares again and switches, the copy done), not while
   another session holds a snapshot older than the copy's last batch (it
   would read the new table without the rows copied since; sessions of
   other database users count only where ``pg_stat_activity`` shows their
   ``backend_xmin``): drop the view, the triggers and what schema 4 kept
   on ``object_state`` (indexes, statistics, columns: dropping a column
   rewrites nothing), rename the table and its indexes, record version 5.

Names ``object_state``'s catalog columns: this is what it migrates.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from plone_pgcatalog.store import schema
from psycopg import sql

import hashlib
import logging
import psycopg
import re

logger = logging.getLogger(__name__)

#: Rows copied per transaction: writers wait for one batch at most.
BATCH = 2000

_BUILD = schema.BUILD_TABLE
_BASE_PREFIX = "pgcatalog_b_"


def _build_name(final: str) -> str:
    """The name a catalog index's SQL object has on the build table."""
    return "pgcatalog_b" + hashlib.sha1(final.encode()).hexdigest()[:24]


_MIRROR = f"""\
CREATE OR REPLACE FUNCTION pgcatalog_mirror() RETURNS trigger
LANGUAGE plpgsql AS $fn$ BEGIN
    IF NEW.idx IS NULL THEN
        DELETE FROM {_BUILD} WHERE zoid = NEW.zoid;
    ELSE
        INSERT INTO {_BUILD} (zoid, path, parent_path, path_depth, idx, meta,
            searchable_text)
        VALUES (NEW.zoid, NEW.path, NEW.parent_path, NEW.path_depth, NEW.idx,
            NEW.meta::json, NEW.searchable_text)
        ON CONFLICT (zoid) DO UPDATE SET path = EXCLUDED.path,
            parent_path = EXCLUDED.parent_path,
            path_depth = EXCLUDED.path_depth, idx = EXCLUDED.idx,
            meta = EXCLUDED.meta, searchable_text = EXCLUDED.searchable_text;
    END IF;
    RETURN NULL;
END $fn$;
CREATE OR REPLACE TRIGGER pgcatalog_mirror_insert
    AFTER INSERT ON object_state FOR EACH ROW WHEN (NEW.idx IS NOT NULL)
    EXECUTE FUNCTION pgcatalog_mirror();
CREATE OR REPLACE TRIGGER pgcatalog_mirror_update
    AFTER UPDATE OF path, parent_path, path_depth, idx, meta, searchable_text
    ON object_state FOR EACH ROW
    WHEN (NEW.idx IS NOT NULL OR OLD.idx IS NOT NULL)
    EXECUTE FUNCTION pgcatalog_mirror();
"""

# ``FOR KEY SHARE``: a pack deleting one of the rows meanwhile waits for
# the batch (and then takes the copy along, by the foreign key), or the
# batch waits for it and skips the row; without it the insert of a row
# deleted after the batch read it failed its foreign key.
_COPY = sql.SQL(
    "WITH batch AS (SELECT zoid, path, parent_path, path_depth, idx,"
    " meta::json AS meta, searchable_text FROM object_state"
    " WHERE idx IS NOT NULL AND zoid > %s ORDER BY zoid LIMIT %s FOR KEY SHARE),"
    " copied AS (INSERT INTO {} SELECT * FROM batch ON CONFLICT (zoid) DO NOTHING)"
    " SELECT count(*), max(zoid), txid_current() FROM batch"
).format(sql.Identifier(_BUILD))

# The copy is complete (the mirror keeps it so): the transaction id of its
# last batch, for the switch (``_OLDER_SNAPSHOTS``) and for a try again.
_COPIED = "upgrade5_copied"
_READ_COPIED = sql.SQL("SELECT value FROM pgcatalog_state WHERE key = %s")
_WRITE_COPIED = sql.SQL(
    "INSERT INTO pgcatalog_state (key, value) VALUES (%s, %s)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

# Other sessions whose snapshot may be older than the last batch of the
# copy: after the switch they would read the new table without the rows
# copied since (zodb-pgjsonb's read snapshots hold no lock on the catalog
# until they read it, so the switch's lock does not wait for them).
_OLDER_SNAPSHOTS = sql.SQL(
    "SELECT pid, application_name, state, xact_start FROM pg_stat_activity"
    " WHERE datname = current_database()"
    " AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL"
    " AND age(backend_xmin) >= age((%s::bigint %% 4294967296)::text::xid)"
    " ORDER BY xact_start"
)

# Schema 4's SQL indexes on ``object_state``: those of every site's catalog.
_LEGACY_INDEXES = sql.SQL(
    "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index AS i"
    " JOIN pg_class AS c ON c.oid = i.indexrelid"
    " WHERE i.indrelid = 'object_state'::regclass AND starts_with(c.relname, %s)"
)

_TO_COPY = sql.SQL(
    "SELECT reltuples::bigint FROM pg_class WHERE oid = 'object_state'::regclass"
)
# The schema's own: a lock timeout per transaction, zodb-pgjsonb's commit lock.
_SET_LOCK_TIMEOUT = schema._SET_LOCK_TIMEOUT
_COMMIT_LOCK = schema._COMMIT_LOCK
_VERSION = sql.SQL("SELECT value FROM pgcatalog_state WHERE key = 'schema_version'")


def pending(conn: psycopg.Connection) -> bool:
    """Whether the database still has the layout of schema 4 (the view)."""
    with conn.cursor() as cur:
        return schema._relkind(cur, schema.TABLE) == "v"


def _renames(indexes: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{name on the build table: final name}`` of every SQL index."""
    renames = {
        _BASE_PREFIX + name: schema.NAME_PREFIX + name for name in schema.TABLE_INDEXES
    }
    for index_name, meta_type in indexes:
        for final in schema._index_object_names(index_name, meta_type):
            renames[_build_name(final)] = final
    return renames


def _legacy_indexes(cur: psycopg.Cursor) -> dict[str, str]:
    """``{name: definition}`` of schema 4's catalog indexes on ``object_state``,
    but for those of ``BASE_DDL`` (``TABLE_DDL`` makes them anew)."""
    base = {schema.NAME_PREFIX + name for name in schema.TABLE_INDEXES}
    return {
        name: definition
        for name, definition in cur.execute(_LEGACY_INDEXES, (schema.NAME_PREFIX,))
        if name not in base
    }


def _on_the_build_table(name: str, definition: str) -> str:
    """A schema-4 index's definition, on the build table, without the
    predicate ``idx IS NOT NULL`` that only the shared table needed."""
    definition = re.sub(
        r"^CREATE INDEX \S+ ON \S+ ",
        f"CREATE INDEX IF NOT EXISTS {_build_name(name)} ON {_BUILD} ",
        definition,
    )
    return definition.replace(" WHERE (idx IS NOT NULL)", "").replace(
        "(idx IS NOT NULL) AND ", ""
    )


def prepare(conn: psycopg.Connection, indexes, lock_timeout: str) -> None:
    """Step 1: the build table, its indexes and the mirror (idempotent).

    The indexes are those the catalog indexes ``indexes`` need, and every
    other of schema 4 on ``object_state`` (those of the other sites of the
    database), as they are there.
    """
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(schema.TABLE_DDL.format(table=_BUILD, prefix=_BASE_PREFIX))
        for index_name, meta_type in indexes:
            statements = schema.expression_ddl(
                index_name, meta_type, legacy=False, table=_BUILD, name=_build_name
            )
            if statements:
                cur.execute(statements)
        for name, definition in _legacy_indexes(cur).items():
            cur.execute(_on_the_build_table(name, definition))
        cur.execute(_MIRROR)


def copy(
    conn: psycopg.Connection,
    lock_timeout: str,
    batch: int = BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Step 2: copy every cataloged row of ``object_state``; how many.

    ``progress(copied, estimate)``: ``estimate`` is PostgreSQL's estimate
    of the rows of ``object_state``, cataloged or not (an upper bound
    that costs no count).  Records that the copy is complete, with the
    transaction id of its last batch (``_COPIED``)."""
    with conn.cursor() as cur:
        estimate = cur.execute(_TO_COPY).fetchone()[0]
    copied, last, xid = 0, -1, None
    while True:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
            cur.execute(_COMMIT_LOCK)
            count, highest, xid = cur.execute(_COPY, (last, batch)).fetchone()
            if not count:
                cur.execute(_WRITE_COPIED, (_COPIED, xid))
        if not count:
            break
        copied += count
        last = highest
        logger.info("plone_pgcatalog 5: %d rows copied (zoid %d)", copied, last)
        if progress is not None:
            progress(copied, max(estimate, copied))
    with conn.cursor() as cur:
        cur.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(_BUILD)))
    return copied


class OlderSnapshots(psycopg.OperationalError):
    """Sessions whose snapshots may not see the whole copy are still open:
    the switch waits (``store.ddl.SchemaChange`` tries again later)."""


def _sessions(rows) -> str:
    """Which sessions (``pg_stat_activity``): for the operator to find
    them, without their queries (whose text may hold values)."""
    return "; ".join(
        f"pid {pid} ({application or 'no application name'}, {state},"
        f" transaction since {'?' if started is None else started.isoformat(' ')})"
        for pid, application, state, started in rows
    )


def switch(conn: psycopg.Connection, indexes, lock_timeout: str) -> None:
    """Step 3: the build table becomes the catalog's table.

    Not while another session holds a snapshot taken before the copy's
    last batch (a request under way): ``OlderSnapshots``.
    """
    renames = _renames(indexes)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(_COMMIT_LOCK)
        cur.execute("LOCK TABLE object_state IN ACCESS EXCLUSIVE MODE")
        (last_batch,) = cur.execute(_READ_COPIED, (_COPIED,)).fetchone()
        older = cur.execute(_OLDER_SNAPSHOTS, (last_batch,)).fetchall()
        if older:
            raise OlderSnapshots(
                f"{len(older)} sessions hold snapshots older than the copy's end:"
                f" {_sessions(older)}"
            )
        for name in _legacy_indexes(cur):
            renames[_build_name(name)] = name
        schema.drop_legacy(cur)
        cur.execute(
            sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                sql.Identifier(_BUILD), sql.Identifier(schema.TABLE)
            )
        )
        # Its primary and foreign keys by the names a new install gives
        # them (the primary key's index is renamed with its constraint).
        built_constraints = cur.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s)"
            " AND starts_with(conname, %s)",
            (schema.TABLE, _BUILD + "_"),
        ).fetchall()
        for (built,) in built_constraints:
            cur.execute(
                sql.SQL("ALTER TABLE {} RENAME CONSTRAINT {} TO {}").format(
                    sql.Identifier(schema.TABLE),
                    sql.Identifier(built),
                    sql.Identifier(schema.TABLE + built[len(_BUILD) :]),
                )
            )
        present = dict(
            cur.execute(
                "SELECT c.relname, 'INDEX' FROM pg_index AS i JOIN pg_class AS c"
                " ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(%s)"
                " UNION SELECT stxname, 'STATISTICS' FROM pg_statistic_ext"
                " WHERE stxrelid = to_regclass(%s)",
                (schema.TABLE, schema.TABLE),
            ).fetchall()
        )
        for built, final in sorted(renames.items()):
            kind = present.get(built)
            if kind is None:
                continue
            cur.execute(
                sql.SQL("ALTER {} {} RENAME TO {}").format(
                    sql.SQL(kind), sql.Identifier(built), sql.Identifier(final)
                )
            )
        cur.execute(
            "UPDATE pgcatalog_state SET value = %s WHERE key = 'schema_version'",
            (schema.SCHEMA_VERSION,),
        )
        cur.execute("DELETE FROM pgcatalog_state WHERE key = %s", (_COPIED,))


def upgrade(
    conn: psycopg.Connection,
    indexes: list[tuple[str, str]],
    lock_timeout: str,
    batch: int = BATCH,
    progress: Callable[[int, int], None] | None = None,
) -> bool:
    """Bring a schema-4 database to schema 5 (the three steps above);
    whether it had anything to do.  ``indexes`` are the catalog indexes'
    names and meta_types, whose SQL indexes the table gets.  ``conn`` is in
    autocommit mode.  Each step can be run again: a try after a lock
    timeout continues where the last one stopped."""
    if not pending(conn):
        return False
    prepare(conn, indexes, lock_timeout)
    if _copy_complete(conn):
        logger.info("plone_pgcatalog 5: the copy is complete, switching")
    else:
        copied = copy(conn, lock_timeout, batch, progress)
        logger.info("plone_pgcatalog 5: %d rows copied", copied)
    switch(conn, indexes, lock_timeout)
    logger.info("plone_pgcatalog 5: the catalog's own table is in use")
    return True


def _copy_complete(conn: psycopg.Connection) -> bool:
    """Whether an earlier try copied every row (the mirror has kept the
    table current since)."""
    with conn.cursor() as cur:
        return cur.execute(_READ_COPIED, (_COPIED,)).fetchone() is not None
