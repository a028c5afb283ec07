"""The catalog's PostgreSQL schema: columns and indexes on ``object_state``.

Owns: the DDL, all of it idempotent (``IF NOT EXISTS``), and its version.

- ``BASE_DDL`` adds the catalog columns and the indexes every catalog
  needs.  zodb-pgjsonb applies it (version-tagged by its text) before the
  first write transaction, when no read snapshot holds the table.
- ``index_ddl()`` gives the expression index that serves one catalog index;
  the tool applies it when an index is added.
- ``create_schema()`` puts back what is missing of it (an install after an
  uninstall), ``drop_schema()`` takes all of it away, in one transaction,
  once no catalog has rows left (the uninstall of the last one).  Both run
  on a connection they are given, their locks under a timeout.

``idx`` is read by every condition its SQL indexes do not answer exactly
(a filter on the heap row), several times per row.  Stored as PostgreSQL
stores a wide value by default (compressed with pglz, moved out of the
row into TOAST), each read cost about 20 microseconds a row.  So ``idx``
stays in the row (storage MAIN), compressed only when the row would not
fit otherwise (with lz4 where the server has it), and the table keeps
rows of up to 4 KB whole (``toast_tuple_target``): with the default of 2
KB, the wide ``idx`` pushed every other column of the row into TOAST
(``path``, and zodb-pgjsonb's ``class_mod`` and ``refs``), which ZODB loads
then paid for.  The object's ``state`` is moved out first, as before;
``path`` and ``parent_path`` stay in the row (MAIN) too.  ``meta`` is read
only for the brains a page shows.

``meta`` is ``json``, not ``jsonb``: it is only ever read whole, by brains,
and ``json`` is sent as it is stored, where ``jsonb`` is printed back to
text on every read (20 brains' metadata: 0.48 ms as ``jsonb``, 0.35 as
``json``, measured at 500 documents).  Nothing queries inside it.

Rows of objects that are not cataloged have NULL catalog columns; every
index is partial (``WHERE idx IS NOT NULL``), so the catalog's indexes
stay as small as the catalog.  Must not open connections.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from plone_pgcatalog.registry import get_translator
from psycopg import sql

import hashlib
import psycopg
import re

#: Bumped with every change of the DDL below or of the stored forms; the
#: GenericSetup profile version follows it (``upgrades.py``).
#: 2: path indexes for navtree and level queries; SearchableText weighted
#: (exact words A, stems B), which needs the rows rewritten.
#: 3: ``idx`` kept in the row (storage MAIN, rows of up to 4 KB kept whole,
#: lz4 where the server has it); rows are rewritten to take the new form.
#: 4: ``meta`` is ``json`` (``meta_to_json``, run by the upgrade step).
SCHEMA_VERSION = 4

BASE_DDL = f"""\
ALTER TABLE object_state
    ADD COLUMN IF NOT EXISTS path text COLLATE "C",
    ADD COLUMN IF NOT EXISTS parent_path text COLLATE "C",
    ADD COLUMN IF NOT EXISTS path_depth integer,
    ADD COLUMN IF NOT EXISTS idx jsonb,
    ADD COLUMN IF NOT EXISTS meta json,
    ADD COLUMN IF NOT EXISTS searchable_text tsvector;
CREATE INDEX IF NOT EXISTS pgcatalog_path
    ON object_state (path) WHERE idx IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_parent_path
    ON object_state (parent_path) WHERE idx IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_idx
    ON object_state USING gin (idx jsonb_path_ops) WHERE idx IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_searchable_text
    ON object_state USING gin (searchable_text) WHERE idx IS NOT NULL;
CREATE TABLE IF NOT EXISTS pgcatalog_state (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO pgcatalog_state (key, value) VALUES ('counter', 0),
    ('schema_version', {SCHEMA_VERSION})
    ON CONFLICT (key) DO NOTHING;
UPDATE pgcatalog_state SET value = {SCHEMA_VERSION}
    WHERE key = 'schema_version' AND value < {SCHEMA_VERSION};
CREATE INDEX IF NOT EXISTS pgcatalog_path_depth
    ON object_state (path_depth, path) WHERE idx IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_path_elements
    ON object_state USING gin (string_to_array(path, '/')) WHERE idx IS NOT NULL;
ALTER TABLE object_state SET (toast_tuple_target = 4080);
ALTER TABLE object_state ALTER COLUMN idx SET STORAGE MAIN,
    ALTER COLUMN path SET STORAGE MAIN,
    ALTER COLUMN parent_path SET STORAGE MAIN;
DO $pgcatalog$ BEGIN
    ALTER TABLE object_state ALTER COLUMN idx SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'plone_pgcatalog: idx stays compressed with pglz: %', SQLERRM;
END $pgcatalog$;
"""


def searchable_vector(text: sql.Composable, config: sql.Composable) -> sql.Composed:
    """The ``tsvector`` of ``SearchableText``, written and overlaid alike.

    ``text`` is the object's words, folded and separated by spaces;
    ``config`` the text search configuration of its language.  Exact words
    carry weight A, their stems (when the language has a stemmer) weight B,
    so a query can ask for either without one matching the other.
    """
    return sql.SQL(
        "(setweight(to_tsvector('simple'::regconfig, {text}), 'A')"
        " || CASE WHEN {config} = 'simple' THEN ''::tsvector"
        " ELSE setweight(to_tsvector(({config})::regconfig, {text}), 'B') END)"
    ).format(text=text, config=config)


BUMP_COUNTER = sql.SQL(
    "UPDATE pgcatalog_state SET value = value + 1 WHERE key = 'counter'"
)

READ_COUNTER = sql.SQL("SELECT value FROM pgcatalog_state WHERE key = 'counter'")


def sql_index_name(index_name: str, kind: str = "i") -> str:
    """A valid, unique PostgreSQL name for a catalog index's SQL objects.

    ``kind`` tells the objects of one catalog index apart: ``i`` its main
    index (the name tests and EXPLAIN output look for), other letters the
    helper indexes and ``s...`` the statistics objects.
    """
    safe = re.sub(r"[^a-z0-9_]", "_", index_name.lower())[:40]
    digest = hashlib.sha1(index_name.encode("utf-8")).hexdigest()[:8]
    return f"pgcatalog_{kind}_{safe}_{digest}"


def _index_expressions(index_name: str, meta_type: str) -> list[tuple]:
    """``(kind, method, expression, predicate)`` of each SQL index of one
    catalog index, as its type's translator declares them
    (``sql_indexes``); ``predicate`` narrows the partial index further.

    The translators write each expression as their queries do
    (``layout``), or PostgreSQL could not match the index to the query.
    An index type whose translator declares none gets none.
    """
    declared = getattr(get_translator(meta_type), "sql_indexes", None)
    return list(declared(index_name)) if declared is not None else []


def index_ddl(index_name: str, meta_type: str) -> sql.Composed | None:
    """The DDL serving one catalog index, or None if it needs none.

    A partial index over an expression gives the planner no statistics
    (PostgreSQL reads statistics of non-partial indexes only), so every
    indexed expression also gets a statistics object: without it, each
    condition on ``idx`` is estimated with a fixed default selectivity and
    the planner picks its plans blind.  ANALYZE (autovacuum) fills both.
    """
    expressions = _index_expressions(index_name, meta_type)
    if not expressions:
        return None
    statements = []
    for kind, method, expression, predicate in expressions:
        where = sql.SQL("idx IS NOT NULL")
        if predicate is not None:
            where += sql.SQL(" AND ") + predicate
        statements.append(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {name} ON object_state USING {method}"
                " (({expression})) WHERE {where}"
            ).format(
                name=sql.Identifier(sql_index_name(index_name, kind)),
                method=sql.SQL(method),
                expression=expression,
                where=where,
            )
        )
        statements.append(
            sql.SQL(
                "CREATE STATISTICS IF NOT EXISTS {name} ON ({expression})"
                " FROM object_state"
            ).format(
                name=sql.Identifier(sql_index_name(index_name, "s" + kind)),
                expression=expression,
            )
        )
    return sql.SQL("; ").join(statements)


def drop_index_ddl(index_name: str, meta_type: str) -> sql.Composed | None:
    """``DROP`` the SQL indexes and statistics ``index_ddl`` created."""
    expressions = _index_expressions(index_name, meta_type)
    if not expressions:
        return None
    statements = []
    for kind, _method, _expression, _predicate in expressions:
        statements.append(
            sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(sql_index_name(index_name, kind))
            )
        )
        statements.append(
            sql.SQL("DROP STATISTICS IF EXISTS {}").format(
                sql.Identifier(sql_index_name(index_name, "s" + kind))
            )
        )
    return sql.SQL("; ").join(statements)


# -- the whole schema, put back and taken away ----------------------------------

#: The columns ``BASE_DDL`` adds to ``object_state``, in its order (put
#: back, they come back in the same order).
COLUMNS = ("path", "parent_path", "path_depth", "idx", "meta", "searchable_text")

#: The start of the name of every SQL object of the catalog: its table and,
#: on ``object_state``, its indexes and statistics objects (``BASE_DDL``,
#: ``sql_index_name``).
NAME_PREFIX = "pgcatalog_"

STATE_TABLE = "pgcatalog_state"

#: zodb-pgjsonb remembers in this table the version of each deferred DDL
#: it applied, by source; ``PGCatalogTool._defer_ddl`` names its sources
#: ``plone_pgcatalog <label>``.  A schema taken away forgets them, or the
#: SQL index of a catalog index installed again would never be created.
#: The processor's record (``CatalogStateProcessor``: ``BASE_DDL``, queued
#: at start-up) stays, so that a restart leaves the schema away; an
#: install puts it back itself (``create_schema``).
SCHEMA_STATE_TABLE = "pgjsonb_schema_state"
DDL_SOURCE_PREFIX = "plone_pgcatalog "

_SET_LOCK_TIMEOUT = sql.SQL("SELECT set_config('lock_timeout', %s, true)")
# zodb-pgjsonb's commit lock (taken by every ``tpc_begin``): a commit under
# way in any process ends first, and the check after the locks sees its rows.
_COMMIT_LOCK = sql.SQL("SELECT pg_advisory_xact_lock(0)")
_TABLE_LOCK = sql.SQL("LOCK TABLE object_state IN ACCESS EXCLUSIVE MODE")
_EXISTS = sql.SQL("SELECT to_regclass(%s) IS NOT NULL")
_PRESENT_COLUMNS = sql.SQL(
    "SELECT attname FROM pg_attribute WHERE attrelid = 'object_state'::regclass"
    " AND attname = ANY(%s) AND attnum > 0 AND NOT attisdropped"
)
_A_CATALOG_ROW = sql.SQL("SELECT path FROM object_state WHERE idx IS NOT NULL LIMIT 1")
_OWN_INDEXES = sql.SQL(
    "SELECT n.nspname, c.relname FROM pg_index AS i"
    " JOIN pg_class AS c ON c.oid = i.indexrelid"
    " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
    " WHERE i.indrelid = 'object_state'::regclass AND starts_with(c.relname, %s)"
    " ORDER BY c.relname"
)
_OWN_STATISTICS = sql.SQL(
    "SELECT n.nspname, s.stxname FROM pg_statistic_ext AS s"
    " JOIN pg_namespace AS n ON n.oid = s.stxnamespace"
    " WHERE s.stxrelid = 'object_state'::regclass AND starts_with(s.stxname, %s)"
    " ORDER BY s.stxname"
)
_DROP_COLUMNS = sql.SQL(
    "ALTER TABLE object_state {}, RESET (toast_tuple_target)"
).format(
    sql.SQL(", ").join(
        sql.SQL("DROP COLUMN IF EXISTS {}").format(sql.Identifier(column))
        for column in COLUMNS
    )
)
_DROP_STATE_TABLE = sql.SQL("DROP TABLE IF EXISTS {}").format(
    sql.Identifier(STATE_TABLE)
)
_FORGET_VERSIONS = sql.SQL("DELETE FROM {} WHERE starts_with(source, %s)").format(
    sql.Identifier(SCHEMA_STATE_TABLE)
)


@dataclass(frozen=True)
class SchemaDrop:
    """What ``drop_schema`` did; ``kept`` says why it left everything."""

    kept: str | None = None
    columns: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    statistics: tuple[str, ...] = ()
    state_table: bool = False


def _exists(cur: psycopg.Cursor, relation: str) -> bool:
    return cur.execute(_EXISTS, (relation,)).fetchone()[0]


def _present_columns(cur: psycopg.Cursor) -> list[str]:
    return [row[0] for row in cur.execute(_PRESENT_COLUMNS, (list(COLUMNS),))]


def _own_objects(cur: psycopg.Cursor, query: sql.SQL) -> list[tuple[str, str]]:
    return [tuple(row) for row in cur.execute(query, (NAME_PREFIX,))]


def drop_schema(conn: psycopg.Connection, lock_timeout: str) -> SchemaDrop:
    """Take the catalog's schema off ``object_state``, unless a catalog
    still uses it.

    All of it or nothing, in one transaction: the columns (and with them
    their values in every row), each index and statistics object named
    ``pgcatalog_...`` on ``object_state``, the table ``pgcatalog_state``,
    ``toast_tuple_target``, and zodb-pgjsonb's record of the tool's DDL.
    A catalog uses the schema while any row has ``idx``: the check comes
    after the locks, so no commit adds such a row before the drop commits.
    ``lock_timeout`` bounds each wait for a lock (then
    ``psycopg.errors.LockNotAvailable``, and nothing has changed); while
    the drop waits, new readers of ``object_state`` wait behind it.

    ``conn`` is in autocommit mode: the transaction is this function's.
    """
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(_COMMIT_LOCK)
        cur.execute(_TABLE_LOCK)
        columns = _present_columns(cur)
        if "idx" in columns:
            row = cur.execute(_A_CATALOG_ROW).fetchone()
            if row is not None:
                return SchemaDrop(kept=f"a catalog still has rows ({row[0]} is one)")
        indexes = _own_objects(cur, _OWN_INDEXES)
        if indexes:
            cur.execute(
                sql.SQL("DROP INDEX {}").format(
                    sql.SQL(", ").join(sql.Identifier(*name) for name in indexes)
                )
            )
        statistics = _own_objects(cur, _OWN_STATISTICS)
        if statistics:
            cur.execute(
                sql.SQL("DROP STATISTICS {}").format(
                    sql.SQL(", ").join(sql.Identifier(*name) for name in statistics)
                )
            )
        cur.execute(_DROP_COLUMNS)
        state_table = _exists(cur, STATE_TABLE)
        cur.execute(_DROP_STATE_TABLE)
        if _exists(cur, SCHEMA_STATE_TABLE):
            cur.execute(_FORGET_VERSIONS, (DDL_SOURCE_PREFIX,))
    return SchemaDrop(
        columns=tuple(columns),
        indexes=tuple(name for _schema, name in indexes),
        statistics=tuple(name for _schema, name in statistics),
        state_table=state_table,
    )


def _index_object_names(index_name: str, meta_type: str) -> set[str]:
    """Names of the SQL indexes and statistics objects ``index_ddl`` makes."""
    return {
        sql_index_name(index_name, prefix + kind)
        for kind, *_rest in _index_expressions(index_name, meta_type)
        for prefix in ("", "s")
    }


def create_schema(
    conn: psycopg.Connection,
    lock_timeout: str,
    indexes: Iterable[tuple[str, str]] = (),
) -> list[str]:
    """Put back what is missing of the schema: ``BASE_DDL`` in one
    transaction, then the SQL indexes of ``indexes`` (catalog index names
    and meta_types), each in its own (an index is built under a lock that
    stops writers, not readers).  What it ran: "base", index names.

    Looks first, without locks: on a complete schema it runs nothing.
    ``lock_timeout`` bounds each wait for a lock, as in ``drop_schema``;
    what is done stays done, a try again does the rest.  ``conn`` is in
    autocommit mode.
    """
    with conn.cursor() as cur:
        base = len(_present_columns(cur)) == len(COLUMNS) and _exists(cur, STATE_TABLE)
        present = {name for _schema, name in _own_objects(cur, _OWN_INDEXES)}
        present |= {name for _schema, name in _own_objects(cur, _OWN_STATISTICS)}
    missing = [] if base else [("base", sql.SQL(BASE_DDL))]
    for name, meta_type in indexes:
        if not _index_object_names(name, meta_type) <= present:
            missing.append((name, index_ddl(name, meta_type)))
    for _name, statement in missing:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
            cur.execute(statement)
    return [name for name, _statement in missing]


# -- schema 3 → 4 ----------------------------------------------------------------

_META_TYPE = sql.SQL(
    "SELECT atttypid::regtype::text FROM pg_attribute"
    " WHERE attrelid = 'object_state'::regclass AND attname = 'meta'"
    " AND NOT attisdropped"
)
_META_TO_JSON = sql.SQL(
    "ALTER TABLE object_state ALTER COLUMN meta TYPE json USING meta::json"
)


def meta_type(conn: psycopg.Connection) -> str | None:
    """The type of the ``meta`` column (``json``; ``jsonb`` before schema 4)."""
    with conn.cursor() as cur:
        row = cur.execute(_META_TYPE).fetchone()
    return row[0] if row else None


def meta_to_json(conn: psycopg.Connection, lock_timeout: str) -> bool:
    """Make ``meta`` a ``json`` column where it still is ``jsonb`` (schema
    3 → 4); whether it changed anything.

    PostgreSQL rewrites ``object_state`` to change a column's type, under
    an exclusive lock held until the copy is done: the upgrade step runs
    this, a restart does not (``BASE_DDL`` only creates the column).
    Until it has run, the catalog writes and reads ``meta`` of either
    type (``json`` values are cast on assignment).  One transaction:
    ``lock_timeout`` bounds the wait for the lock, and then nothing has
    changed.  ``conn`` is in autocommit mode.
    """
    if meta_type(conn) != "jsonb":
        return False  # looked without a lock: nothing to wait for
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(_TABLE_LOCK)
        if meta_type(conn) != "jsonb":
            return False  # another process changed it meanwhile
        cur.execute(_META_TO_JSON)
    return True
