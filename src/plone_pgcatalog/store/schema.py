"""The catalog's PostgreSQL schema: its own table, ``pgcatalog_objects``.

Owns: the DDL, all of it idempotent (``IF NOT EXISTS``), and its version.

- ``BASE_DDL`` creates the table and the indexes every catalog needs,
  and the table of the texts snippets show (``TEXTS``).
  zodb-pgjsonb applies it (version-tagged by its text) before the first
  write transaction, when no read snapshot holds the table.
- ``index_ddl()`` gives the SQL indexes that serve one catalog index; the
  tool applies them when an index is added.
- ``create_schema()`` puts back what is missing of it (an install after an
  uninstall), ``drop_schema()`` takes all of it away, in one transaction,
  once no catalog has rows left (the uninstall of the last one).  Both run
  on a connection they are given, their locks under a timeout.

Schema 5: one row per cataloged object, keyed by the object's ``zoid``,
with a foreign key on zodb-pgjsonb's ``object_state`` (``ON DELETE
CASCADE``: pack, undo and removal leave no orphan row; ZODB writes of
objects that are not cataloged touch nothing of the catalog).  Every row
is a catalog row: PostgreSQL's statistics of its columns and index
expressions count cataloged objects only, and no index needs a predicate.
Several sites share the table, told apart by their paths.

Schemas 1-4 kept the same columns on ``object_state`` itself.  On such a
database ``BASE_DDL`` makes ``pgcatalog_objects`` a view over them, with
triggers that turn the catalog's inserts and deletes into updates of those
columns, so that this version reads and writes as before until the
upgrade step 4 -> 5 (``store.upgrade5``) has built the table beside and
switched to it.

Rows are narrow (schema 6): the hot indexes are typed columns
(``store.columns``) that searches test in the row, and the wide values go
out of line into the table's TOAST table, compressed (lz4 where the server
has it): ``idx`` (read by the conditions typed columns do not serve),
``meta`` (read only for the brains a page shows), ``searchable_text``
(read to rank full-text matches) and the longest typed values
(``object_provides``).  ``toast_tuple_target`` of 1,024 bytes: the
values are moved out, biggest first, until the row fits; a Plone page's
row is about 500 bytes without its ``tsvector`` (1 a page with ``idx`` in
the row, schemas 3-5).  A short text's ``tsvector`` (a title, a
description, a short page: up to about 500 bytes) stays in the row
(schema 8): a full-text search reads each match's ``tsvector`` twice (the
GIN index's recheck of the weighted query, then ``ts_rank``), and out of
line each read is a lookup in the TOAST table (10,000 documents, 1,357
matches: 13-20 ms with a target of 512, 4.2-6.2 with 1,024; the searches
that count 7,000-11,000 rows within the noise).  A longer text's goes out
of line, as before.  Set again by every application of ``BASE_DDL``:
rows written before take the form when they are next written (the
upgrade to 8 writes them all, ``columns.short_texts_in_row``).

``meta`` is ``json``, not ``jsonb``: it is only ever read whole, by brains,
and ``json`` is sent as it is stored, where ``jsonb`` is printed back to
text on every read (20 brains' metadata: 0.48 ms as ``jsonb``, 0.35 as
``json``, measured at 500 documents).  Nothing queries inside it.

Must not open connections.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.store import columns
from plone_pgcatalog.store.layout import sql_index_name
from plone_pgcatalog.store.layout import TOAST_TUPLE_TARGET
from psycopg import sql

import psycopg

#: Bumped with every change of the DDL below or of the stored forms; the
#: GenericSetup profile version follows it (``upgrades.py``).
#: 2: path indexes for navtree and level queries; SearchableText weighted
#: (exact words A, stems B), which needs the rows rewritten.
#: 3: ``idx`` kept in the row (storage MAIN, rows of up to 4 KB kept whole,
#: lz4 where the server has it); rows are rewritten to take the new form.
#: 4: ``meta`` is ``json`` (``meta_to_json``, run by the upgrade step).
#: 5: the catalog's own table, ``pgcatalog_objects`` (``store.upgrade5``).
#: 6: typed columns for the hot indexes (``store.columns``), added and
#: filled online by the upgrade step; their expression indexes go.
#: 7: the values of wide typed columns out of the row (schema 6 kept
#: ``object_provides`` in it on new sites): rows written again.
#: 8: ``toast_tuple_target`` 1,024: a short text's ``tsvector`` stays in
#: the row (``columns.short_texts_in_row`` writes the rows again).
#: 9: covering indexes of ``portal_type`` and ``review_state``
#: (``columns.cover``): counts of their matches read the index only.
#: 10: those covering indexes hold the date sort keys (``columns.SORTED``),
#: which get partial indexes of their untyped values: sorted windows'
#: counts read indexes only.
#: 11: the lists of ``allowedRolesAndUsers`` are numbered
#: (``columns.NUMBERED``), and the covering indexes hold the number of a
#: row's list instead of the list.
#: 12: the trigger derives only the columns of the keys an ``UPDATE``
#: names as changed (``columns.PATCHED_KEYS``).
#: 13: each covering index also holds the other ``columns.COVERED``
#: columns: a type and a state together are counted from one index.
#: 14: the lists of KeywordIndexes with a typed column are stored once, in
#: the column (``columns.ONCE_KINDS``), not in ``idx`` too.
#: 15: the trigger tests a list stored once only where ``idx`` holds its
#: key, the named keys in groups, and numbers a list from its column; the
#: function that numbers lists remembers the last one (``LAST_LIST``).
#: 16: the typed columns hold a string longer than ``columns.TEXT_KEPT``
#: characters by its first characters (the trigger's derivations).
#: 17: a FieldIndex or UUIDIndex without its typed column is served by a
#: B-tree on the value the column would hold (``columns.held_value``), no
#: longer by B-trees on its JSON value and text (``UNHELD_KINDS``), where a
#: long string failed the commit.
#: 18: full text is split and folded as Plone's lexicon does
#: (``fulltext``): the words of other scripts than Latin change (the
#: upgrade step reads the text indexes of those objects again).
SCHEMA_VERSION = 18

#: The catalog's table; ``layout.TABLE`` names it in statements.
TABLE = "pgcatalog_objects"

#: The texts snippets show: SearchableText as written (``TEXTS_DDL``).
TEXTS = "pgcatalog_texts"

#: Beside the catalog's table, not in it: a page's text (2 KB and more)
#: would take the row's place in the heap that every large search scans
#: (``benchmarks/snippet_storage.py``: at 10,000 documents the heap grew
#: by 35 % with the text in a column; beside it, it stays as it was, for
#: 28.5 MB of text table and writes 1.28x instead of 1.19x).  Keyed by the
#: object, as the table: a row goes with the object's state (pack, undo);
#: searches read a text only for the rows they found.
TEXTS_DDL = """\
CREATE TABLE IF NOT EXISTS pgcatalog_texts (
    zoid bigint PRIMARY KEY REFERENCES object_state (zoid) ON DELETE CASCADE,
    config text NOT NULL,
    body text NOT NULL
);
"""

#: The catalog's columns, in the table's order (after ``zoid``).
COLUMNS = ("path", "parent_path", "path_depth", "idx", "meta", "searchable_text")

#: The table and its own indexes (``{table}``: its name; the upgrade to
#: schema 5 builds it under another name, ``{prefix}`` its index names).
TABLE_DDL = """\
CREATE TABLE IF NOT EXISTS {table} (
    zoid bigint PRIMARY KEY REFERENCES object_state (zoid) ON DELETE CASCADE,
    path text COLLATE "C",
    parent_path text COLLATE "C",
    path_depth integer,
    idx jsonb,
    meta json,
    searchable_text tsvector
) WITH (toast_tuple_target = TOAST_TUPLE_TARGET);
ALTER TABLE {table} SET (toast_tuple_target = TOAST_TUPLE_TARGET),
    ALTER COLUMN idx SET STORAGE EXTENDED,
    ALTER COLUMN path SET STORAGE MAIN,
    ALTER COLUMN parent_path SET STORAGE MAIN;
CREATE INDEX IF NOT EXISTS {prefix}path ON {table} (path);
CREATE INDEX IF NOT EXISTS {prefix}parent_path ON {table} (parent_path);
CREATE INDEX IF NOT EXISTS {prefix}idx ON {table} USING gin (idx jsonb_path_ops);
CREATE INDEX IF NOT EXISTS {prefix}searchable_text
    ON {table} USING gin (searchable_text);
CREATE INDEX IF NOT EXISTS {prefix}path_depth ON {table} (path_depth, path);
CREATE INDEX IF NOT EXISTS {prefix}path_elements
    ON {table} USING gin (string_to_array(path, '/'));
""".replace("TOAST_TUPLE_TARGET", str(TOAST_TUPLE_TARGET))

#: Names of the indexes ``TABLE_DDL`` creates, after the prefix.
TABLE_INDEXES = (
    "path",
    "parent_path",
    "idx",
    "searchable_text",
    "path_depth",
    "path_elements",
)

# Schemas 1-4: ``pgcatalog_objects`` is a view over the catalog columns on
# ``object_state``; an insert sets them on the object's row, a delete sets
# them to NULL (never deletes the object).  Updates go through the view as
# PostgreSQL updates a simple view.
_LEGACY_VIEW = """\
CREATE OR REPLACE VIEW pgcatalog_objects AS
    SELECT zoid, path, parent_path, path_depth, idx, meta, searchable_text
    FROM object_state WHERE idx IS NOT NULL;
CREATE OR REPLACE FUNCTION pgcatalog_legacy_insert() RETURNS trigger
LANGUAGE plpgsql AS $fn$ BEGIN
    UPDATE object_state SET path = NEW.path, parent_path = NEW.parent_path,
        path_depth = NEW.path_depth, idx = NEW.idx, meta = NEW.meta,
        searchable_text = NEW.searchable_text
        WHERE zoid = NEW.zoid;
    RETURN NEW;
END $fn$;
CREATE OR REPLACE FUNCTION pgcatalog_legacy_delete() RETURNS trigger
LANGUAGE plpgsql AS $fn$ BEGIN
    UPDATE object_state SET path = NULL, parent_path = NULL,
        path_depth = NULL, idx = NULL, meta = NULL, searchable_text = NULL
        WHERE zoid = OLD.zoid;
    RETURN OLD;
END $fn$;
CREATE OR REPLACE TRIGGER pgcatalog_legacy_insert
    INSTEAD OF INSERT ON pgcatalog_objects
    FOR EACH ROW EXECUTE FUNCTION pgcatalog_legacy_insert();
CREATE OR REPLACE TRIGGER pgcatalog_legacy_delete
    INSTEAD OF DELETE ON pgcatalog_objects
    FOR EACH ROW EXECUTE FUNCTION pgcatalog_legacy_delete();
"""


def _dollar(body: str) -> str:
    return "$pgcatalog$ " + body + " $pgcatalog$"


BASE_DDL = f"""\
CREATE TABLE IF NOT EXISTS pgcatalog_state (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);
{columns.COLUMNS_DDL}{columns.SETS_DDL}{columns.COUNTS_DDL}{TEXTS_DDL}\
DO $pgcatalog_base$
DECLARE
    legacy boolean := EXISTS (
        SELECT 1 FROM pg_attribute WHERE attrelid = 'object_state'::regclass
        AND attname = 'idx' AND attnum > 0 AND NOT attisdropped);
BEGIN
    INSERT INTO pgcatalog_state (key, value) VALUES ('counter', 0),
        ('schema_version', CASE WHEN legacy THEN 4 ELSE {SCHEMA_VERSION} END)
        ON CONFLICT (key) DO NOTHING;
    IF legacy THEN
        EXECUTE {_dollar(_LEGACY_VIEW)};
    ELSE
        EXECUTE {_dollar(TABLE_DDL.format(table=TABLE, prefix="pgcatalog_"))};
        BEGIN
            ALTER TABLE pgcatalog_objects ALTER COLUMN idx SET COMPRESSION lz4;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE 'plone_pgcatalog: idx stays compressed with pglz: %',
                SQLERRM;
        END;
    END IF;
END $pgcatalog_base$;
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

#: The time (Unix seconds) of a site's last rebuild, under ``rebuild_key``.
NOTE_REBUILD = sql.SQL(
    "INSERT INTO pgcatalog_state (key, value)"
    " VALUES (%s, extract(epoch FROM now())::bigint)"
    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)


def rebuild_key(site_path: str) -> str:
    """The key of ``pgcatalog_state`` that holds when the site at
    ``site_path`` was last rebuilt."""
    return f"last_rebuild:{site_path}"


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


def expression_ddl(
    index_name: str, meta_type: str, legacy: bool, table: str = TABLE, name=str
) -> str:
    """The statements of ``index_ddl``, on ``table`` or (``legacy``) on
    the columns of schemas 1-4, as text; ``name`` maps each SQL object's
    name to the one it is created with (an upgrade builds under others)."""
    if legacy:
        table = "object_state"
    statements = []
    for kind, method, expression, predicate in _index_expressions(
        index_name, meta_type
    ):
        conditions = [sql.SQL("idx IS NOT NULL")] if legacy else []
        if predicate is not None:
            conditions.append(predicate)
        where = sql.SQL("")
        if conditions:
            where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions)
        statements.append(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {name} ON {table} USING {method}"
                " (({expression})){where}"
            ).format(
                name=sql.Identifier(name(sql_index_name(index_name, kind))),
                table=sql.Identifier(table),
                method=sql.SQL(method),
                expression=expression,
                where=where,
            )
        )
        if conditions:
            # PostgreSQL keeps statistics of the expressions of an index
            # without a predicate only: a partial one needs this object,
            # or each condition on it is estimated with a fixed default
            # selectivity.  ANALYZE (autovacuum) fills it.
            statements.append(
                sql.SQL(
                    "CREATE STATISTICS IF NOT EXISTS {name} ON ({expression})"
                    " FROM {table}"
                ).format(
                    name=sql.Identifier(name(sql_index_name(index_name, "s" + kind))),
                    expression=expression,
                    table=sql.Identifier(table),
                )
            )
    return "; ".join(statement.as_string(None) for statement in statements)


def index_ddl(index_name: str, meta_type: str) -> sql.Composed | None:
    """The DDL serving one catalog index, or None if it needs none.

    Expression indexes on the catalog's table, or, until the upgrade step
    4 -> 5 has run, partial indexes on ``object_state`` as schemas 1-4 made
    them: one statement that looks which layout the database has.
    """
    if not _index_expressions(index_name, meta_type):
        return None
    return sql.SQL(
        "DO $pgcatalog_index$ BEGIN"
        " IF (SELECT relkind FROM pg_class WHERE oid = to_regclass({table})) = 'v'"
        " THEN EXECUTE {legacy}; ELSE EXECUTE {ddl}; END IF;"
        " END $pgcatalog_index$"
    ).format(
        table=sql.Literal(TABLE),
        legacy=sql.Literal(expression_ddl(index_name, meta_type, legacy=True)),
        ddl=sql.Literal(expression_ddl(index_name, meta_type, legacy=False)),
    )


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


def _run(conn: psycopg.Connection, statement, lock_timeout: str) -> None:
    """``statement`` in a transaction of its own, each lock waited for
    ``lock_timeout`` at most."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(statement)


def column_kind(meta_type: str) -> str | None:
    """The kind of typed column an index type's translator asks for
    (``columns.KINDS``), or None."""
    return getattr(get_translator(meta_type), "column_kind", None)


def create_index(
    conn: psycopg.Connection, index_name: str, meta_type: str, lock_timeout: str
) -> str | None:
    """Create what serves one catalog index: on the catalog's table, its
    typed column where its type has one (``columns.add_column``: added,
    filled in batches, indexed; the expression indexes of earlier versions
    go), else the expression indexes of ``index_ddl``.  What it made:
    "column", "indexes" or None.  ``conn`` is in autocommit mode.
    """
    kind = column_kind(meta_type)
    with conn.cursor() as cur:
        table = _relkind(cur, TABLE) == "r"
    if kind is not None and table:
        try:
            made = columns.add_column(conn, index_name, kind, lock_timeout)
        except psycopg.errors.LockNotAvailable:
            # Adding a column waits for every transaction that has read the
            # table (an exclusive lock; an index needs none against
            # readers).  Meanwhile the expression indexes serve the index;
            # the column comes with the next try (zodb-pgjsonb tries a
            # failed change again at the next start-up).
            statement = index_ddl(index_name, meta_type)
            if statement is not None:
                _run(conn, statement, lock_timeout)
            raise
        if made:
            drop = drop_index_ddl(index_name, meta_type)
            if drop is not None:
                _run(conn, drop, lock_timeout)
            return "column"
    statement = index_ddl(index_name, meta_type)
    if statement is None:
        return None
    _run(conn, statement, lock_timeout)
    return "indexes"


def drop_index(
    conn: psycopg.Connection, index_name: str, meta_type: str, lock_timeout: str
) -> None:
    """Take away what ``create_index`` made for a deleted catalog index."""
    statement = drop_index_ddl(index_name, meta_type)
    if statement is not None:
        _run(conn, statement, lock_timeout)
    if column_kind(meta_type) is not None:
        with conn.cursor() as cur:
            table = _relkind(cur, TABLE) == "r"
        if table:
            columns.drop_column(conn, index_name, lock_timeout)


def index_version(index_name: str, meta_type: str) -> str:
    """What ``create_index`` makes for one catalog index, as text: the
    version of its deferred DDL (zodb-pgjsonb runs each version once)."""
    statement = index_ddl(index_name, meta_type)
    text = statement.as_string(None) if statement is not None else ""
    return f"column {column_kind(meta_type)}; {text}"


# -- the whole schema, put back and taken away ----------------------------------

#: The start of the name of every SQL object of the catalog: its tables,
#: their indexes and statistics objects (``BASE_DDL``, ``sql_index_name``),
#: and those schemas 1-4 made on ``object_state``.
NAME_PREFIX = "pgcatalog_"

STATE_TABLE = "pgcatalog_state"

#: zodb-pgjsonb remembers in this table the version of each deferred DDL
#: it applied, by source; ``PGCatalogTool._schema_change`` names its sources
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
_EXISTS = sql.SQL("SELECT to_regclass(%s) IS NOT NULL")
_RELKIND = sql.SQL("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)")
_LEGACY_COLUMNS = sql.SQL(
    "SELECT attname FROM pg_attribute WHERE attrelid = 'object_state'::regclass"
    " AND attname = ANY(%s) AND attnum > 0 AND NOT attisdropped"
)
_A_CATALOG_ROW = sql.SQL("SELECT path FROM pgcatalog_objects LIMIT 1")
_OWN_INDEXES = sql.SQL(
    "SELECT n.nspname, c.relname FROM pg_index AS i"
    " JOIN pg_class AS c ON c.oid = i.indexrelid"
    " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
    " WHERE i.indrelid IN ('object_state'::regclass, to_regclass(%s))"
    " AND starts_with(c.relname, %s) ORDER BY c.relname"
)
_OWN_STATISTICS = sql.SQL(
    "SELECT n.nspname, s.stxname FROM pg_statistic_ext AS s"
    " JOIN pg_namespace AS n ON n.oid = s.stxnamespace"
    " WHERE s.stxrelid IN ('object_state'::regclass, to_regclass(%s))"
    " AND starts_with(s.stxname, %s) ORDER BY s.stxname"
)
_DROP_STATE_TABLE = sql.SQL("DROP TABLE IF EXISTS {}").format(
    sql.Identifier(STATE_TABLE)
)
_DROP_COLUMNS_TABLE = sql.SQL(
    "DROP TABLE IF EXISTS {}; DROP FUNCTION IF EXISTS {}();"
    " DROP FUNCTION IF EXISTS {}(text[]); DROP TABLE IF EXISTS {};"
    " DROP TABLE IF EXISTS {}; DROP FUNCTION IF EXISTS {}()"
).format(
    sql.Identifier(columns.COLUMNS_TABLE),
    sql.Identifier(columns.TRIGGER),
    sql.Identifier(columns.SETS_FUNCTION),
    sql.Identifier(columns.SETS_TABLE),
    sql.Identifier(columns.COUNTS_TABLE),
    sql.Identifier(columns.COUNTS_FUNCTION),
)
_FORGET_VERSIONS = sql.SQL("DELETE FROM {} WHERE starts_with(source, %s)").format(
    sql.Identifier(SCHEMA_STATE_TABLE)
)


@dataclass(frozen=True)
class SchemaDrop:
    """What ``drop_schema`` did; ``kept`` says why it left everything."""

    kept: str | None = None
    #: the catalog's table (or, before schema 5, its view) was dropped
    table: bool = False
    #: catalog columns of schemas 1-4 dropped from ``object_state``
    columns: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    statistics: tuple[str, ...] = ()
    state_table: bool = False


def _exists(cur: psycopg.Cursor, relation: str) -> bool:
    return cur.execute(_EXISTS, (relation,)).fetchone()[0]


def _relkind(cur: psycopg.Cursor, relation: str) -> str | None:
    row = cur.execute(_RELKIND, (relation,)).fetchone()
    return row[0] if row else None


def legacy_columns(cur: psycopg.Cursor) -> list[str]:
    """The catalog columns of schemas 1-4 still on ``object_state``."""
    return [row[0] for row in cur.execute(_LEGACY_COLUMNS, (list(COLUMNS),))]


def _own_objects(cur: psycopg.Cursor, query: sql.SQL) -> list[tuple[str, str]]:
    return [tuple(row) for row in cur.execute(query, (TABLE, NAME_PREFIX))]


def drop_names(kind: str, names: list[tuple[str, str]]) -> sql.Composed:
    """``DROP INDEX`` / ``DROP STATISTICS`` of ``(schema, name)`` pairs."""
    return sql.SQL("DROP {} IF EXISTS {}").format(
        sql.SQL(kind), sql.SQL(", ").join(sql.Identifier(*name) for name in names)
    )


#: What schemas 1-4 and an unfinished upgrade to 5 leave beside the table:
#: the view and its functions (``_LEGACY_VIEW``), the mirror of the build.
LEGACY_ROUTINES = (
    "pgcatalog_legacy_insert",
    "pgcatalog_legacy_delete",
    "pgcatalog_mirror",
)
LEGACY_TRIGGERS = ("pgcatalog_mirror_insert", "pgcatalog_mirror_update")


def drop_legacy(cur: psycopg.Cursor) -> tuple[list, list, list]:
    """Drop what schemas 1-4 kept on ``object_state``: the catalog's indexes
    and statistics objects there, its columns, the view that stands for the
    table meanwhile, and the triggers and functions of both.

    Runs in the caller's transaction, which holds the locks it needs.
    Returns the names of the indexes, statistics objects and columns
    dropped.
    """
    indexes = [
        name
        for name in cur.execute(
            sql.SQL(
                "SELECT n.nspname, c.relname FROM pg_index AS i"
                " JOIN pg_class AS c ON c.oid = i.indexrelid"
                " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                " WHERE i.indrelid = 'object_state'::regclass"
                " AND starts_with(c.relname, %s) ORDER BY c.relname"
            ),
            (NAME_PREFIX,),
        ).fetchall()
    ]
    statistics = [
        name
        for name in cur.execute(
            sql.SQL(
                "SELECT n.nspname, s.stxname FROM pg_statistic_ext AS s"
                " JOIN pg_namespace AS n ON n.oid = s.stxnamespace"
                " WHERE s.stxrelid = 'object_state'::regclass"
                " AND starts_with(s.stxname, %s) ORDER BY s.stxname"
            ),
            (NAME_PREFIX,),
        ).fetchall()
    ]
    if _relkind(cur, TABLE) == "v":
        cur.execute(sql.SQL("DROP VIEW {}").format(sql.Identifier(TABLE)))
    for trigger in LEGACY_TRIGGERS:
        cur.execute(
            sql.SQL("DROP TRIGGER IF EXISTS {} ON object_state").format(
                sql.Identifier(trigger)
            )
        )
    for routine in LEGACY_ROUTINES:
        cur.execute(
            sql.SQL("DROP FUNCTION IF EXISTS {}()").format(sql.Identifier(routine))
        )
    if indexes:
        cur.execute(drop_names("INDEX", indexes))
    if statistics:
        cur.execute(drop_names("STATISTICS", statistics))
    columns = legacy_columns(cur)
    if columns:
        cur.execute(
            sql.SQL("ALTER TABLE object_state {}, RESET (toast_tuple_target)").format(
                sql.SQL(", ").join(
                    sql.SQL("DROP COLUMN {}").format(sql.Identifier(column))
                    for column in columns
                )
            )
        )
    return (
        [name for _schema, name in indexes],
        [name for _schema, name in statistics],
        columns,
    )


def drop_schema(conn: psycopg.Connection, lock_timeout: str) -> SchemaDrop:
    """Take the catalog's schema away, unless a catalog still uses it.

    All of it or nothing, in one transaction: the table ``pgcatalog_objects``
    with its indexes, the table ``pgcatalog_state``, what schemas 1-4 or an
    unfinished upgrade left (``drop_legacy``), and zodb-pgjsonb's record of
    the tool's DDL.  A catalog uses the schema while the table has a row:
    the check comes after the locks, so no commit adds one before the drop
    commits.  ``lock_timeout`` bounds each wait for a lock (then
    ``psycopg.errors.LockNotAvailable``, and nothing has changed); while the
    drop waits, new readers of the catalog wait behind it.

    ``conn`` is in autocommit mode: the transaction is this function's.
    """
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(_SET_LOCK_TIMEOUT, (lock_timeout,))
        cur.execute(_COMMIT_LOCK)
        kind = _relkind(cur, TABLE)
        if kind is not None:
            cur.execute(
                sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    sql.Identifier(TABLE)
                )
            )
            row = cur.execute(_A_CATALOG_ROW).fetchone()
            if row is not None:
                return SchemaDrop(kept=f"a catalog still has rows ({row[0]} is one)")
        # The table's indexes and statistics go with it.
        table_indexes = {name for _schema, name in _own_objects(cur, _OWN_INDEXES)}
        cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TEXTS)))
        if kind == "r":
            cur.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(TABLE)))
        cur.execute(
            sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(BUILD_TABLE))
        )
        indexes, statistics, dropped_columns = drop_legacy(cur)
        state_table = _exists(cur, STATE_TABLE)
        cur.execute(_DROP_STATE_TABLE)
        cur.execute(_DROP_COLUMNS_TABLE)
        if _exists(cur, SCHEMA_STATE_TABLE):
            cur.execute(_FORGET_VERSIONS, (DDL_SOURCE_PREFIX,))
    return SchemaDrop(
        table=kind is not None,
        columns=tuple(dropped_columns),
        indexes=tuple(sorted(table_indexes | set(indexes))),
        statistics=tuple(statistics),
        state_table=state_table,
    )


#: The table an upgrade from schema 4 builds before it becomes
#: ``pgcatalog_objects`` (``store.upgrade5``).
BUILD_TABLE = "pgcatalog_objects_build"


def _index_object_names(index_name: str, meta_type: str) -> set[str]:
    """Names of the SQL indexes and statistics objects ``index_ddl`` makes
    on the table."""
    names = set()
    for kind, _method, _expression, predicate in _index_expressions(
        index_name, meta_type
    ):
        names.add(sql_index_name(index_name, kind))
        if predicate is not None:
            names.add(sql_index_name(index_name, "s" + kind))
    return names


#: The SQL indexes of a FieldIndex (or UUIDIndex) without its typed
#: column until schema 16: B-trees on its JSON value ("i") and on its text
#: ("t"), where a string longer than a B-tree entry may be (2,704 bytes)
#: failed the commit.  Schema 17 has one B-tree on the value the column
#: would hold instead (``columns.held_value``).
UNHELD_KINDS = ("i", "t")


def drop_unheld_indexes(
    conn: psycopg.Connection,
    lock_timeout: str,
    indexes: Iterable[tuple[str, str]],
) -> list[str]:
    """Drop the ``UNHELD_KINDS`` indexes of those of ``indexes`` (catalog
    index names and meta_types) whose kind of column is computed from
    ``idx`` where the column is missing (``columns.COMPUTED_KINDS``); the
    names of the catalog indexes that had them.  Only a pair made by
    schema 16 (its "t", which no other type makes) goes: where no
    FieldIndex so named has one, a DateIndex of another site so named
    keeps its "i".  (Where both are, with a name too long for a column,
    they shared the "i": the other site's upgrade step, or its
    ``ensure_sql_indexes``, makes it again.)  ``create_schema`` first makes
    what serves them now.  ``conn`` is in autocommit mode."""
    with conn.cursor() as cur:
        present = {pair[1]: pair for pair in _own_objects(cur, _OWN_INDEXES)}
        present_statistics = {
            pair[1]: pair for pair in _own_objects(cur, _OWN_STATISTICS)
        }
    dropped = []
    for index_name, meta_type in indexes:
        if column_kind(meta_type) not in columns.COMPUTED_KINDS:
            continue
        if sql_index_name(index_name, "t") not in present:
            continue
        names = [sql_index_name(index_name, kind) for kind in UNHELD_KINDS]
        statements = [drop_names("INDEX", [present[n] for n in names if n in present])]
        statistics = [
            present_statistics[name]
            for name in (sql_index_name(index_name, "s" + k) for k in UNHELD_KINDS)
            if name in present_statistics
        ]
        if statistics:
            statements.append(drop_names("STATISTICS", statistics))
        _run(conn, sql.SQL("; ").join(statements), lock_timeout)
        dropped.append(index_name)
    return dropped


def create_schema(
    conn: psycopg.Connection,
    lock_timeout: str,
    indexes: Iterable[tuple[str, str]] = (),
) -> list[str]:
    """Put back what is missing of the schema: ``BASE_DDL`` in one
    transaction, then the SQL indexes of ``indexes`` (catalog index names
    and meta_types), each in its own (an index is built under a lock that
    stops writers, not readers): their typed columns where they have one
    (``create_index``), then the covering indexes (``columns.cover``) and
    the typed columns' own (``columns.index_columns``).  What it ran:
    "base", index names, "covering index of <column>" (and "of <column>
    (its untyped values)": ``columns.cover``), "SQL index of the column
    <column>", "counts per group" (``columns.counts_behind``).

    Looks first, without locks: on a complete schema it runs nothing.
    ``lock_timeout`` bounds each wait for a lock, as in ``drop_schema``;
    what is done stays done, a try again does the rest.  ``conn`` is in
    autocommit mode.
    """
    ran = []
    with conn.cursor() as cur:
        base = all(
            _exists(cur, name)
            for name in (
                TABLE,
                STATE_TABLE,
                columns.COLUMNS_TABLE,
                columns.SETS_TABLE,
                TEXTS,
            )
        )
    if not base:
        _run(conn, sql.SQL(BASE_DDL), lock_timeout)
        ran.append("base")
    with conn.cursor() as cur:
        present = {name for _schema, name in _own_objects(cur, _OWN_INDEXES)}
        present |= {name for _schema, name in _own_objects(cur, _OWN_STATISTICS)}
        table = _relkind(cur, TABLE) == "r"
        typed = columns.registered(cur)
    for name, meta_type in indexes:
        kind = column_kind(meta_type)
        indexed = _index_object_names(name, meta_type) <= present
        if table and kind is not None and columns.column_name(name) is not None:
            known = typed.get(name)
            if known == (kind, True):
                continue  # its column is ready
            if known is not None and known[0] != kind and indexed:
                continue  # another site's column of the name: ``idx``
        elif indexed:
            continue
        if create_index(conn, name, meta_type, lock_timeout) is not None:
            ran.append(name)
    if table:
        ran += [
            f"numbers of the lists of {columns.source_key(name)}"
            for name in columns.number(conn, lock_timeout)
        ]
        ran += [
            f"covering index of {name}" for name in columns.cover(conn, lock_timeout)
        ]
        ran += [
            f"SQL index of the column {name}"
            for name in columns.index_columns(conn, lock_timeout)
        ]
        if columns.counts_behind(conn):
            columns.rebuild_trigger(conn)
            ran.append("counts per group")
    return ran
