"""Reads of the operators' reports: ``pgcatalog verify`` and ``stats``, the
ZMI tabs and the control panel.

Owns the statements ``health`` and ``overview`` run to compare the stored
rows with the content, to list and size the catalog, and to describe the
database; they compose them with a site clause (``paths.path_clause``)
and run them.

Pure: statements only, no connection.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.schema import COLUMNS
from psycopg import sql
from psycopg.rows import tuple_row

import psycopg
import re

# Composed with the statements' own placeholders ({site}, {vector}, {}),
# which the CLI fills in.
_TABLE = TABLE.as_string(None)

# Rows of the walked objects, and whether their stored words equal the
# words extracted now (the same expression the processor writes with).
# ``{typed}``: the typed columns that differ from what ``idx`` derives
# (``typed_drift``).
STORED_ROWS = sql.SQL(
    "SELECT s.zoid, s.path, {idx}, s.meta,"
    " s.searchable_text IS NOT DISTINCT FROM {vector}, {typed}"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS e(zoid, config, words)"
    " JOIN " + _TABLE + " AS s ON s.zoid = e.zoid"
)


#: The rows of a site (``{site}``) whose metadata (its JSON text) or kept
#: text (the text snippets show) holds a character beyond ASCII (``%s``:
#: that pattern): path, the metadata as text (``->>`` would fail on a NUL
#: a metadata value may hold), the text.  The upgrade to profile 19 reads
#: their words again where Plone's lexicon makes others of them.
NON_ASCII_TEXTS = sql.SQL(
    "SELECT o.path, o.meta::text, t.body"
    " FROM " + _TABLE + " AS o LEFT JOIN pgcatalog_texts AS t ON t.zoid = o.zoid"
    " WHERE {site} AND (o.meta::text ~ %s OR t.body ~ %s) ORDER BY o.path"
)


def typed_drift(typed: dict[str, str]) -> sql.Composable:
    """``text[]`` of the names of the typed columns ``{name: kind}`` whose
    value in row ``s`` is not what the row's ``idx`` derives (set by hand:
    the trigger derives them whenever ``idx`` is written)."""
    if not typed:
        return sql.SQL("ARRAY[]::text[]")
    checks = []
    for name, kind in sorted(typed.items()):
        value = columns.value_of(sql.SQL("s"), columns.source_key(name), typed)
        stored = sql.SQL("s.{}").format(sql.Identifier(name))
        if kind == "set":
            # A list's number is not derived but found (found anew, it may
            # be added): the list it numbers must be the row's.
            stored = sql.SQL("(SELECT terms FROM {} WHERE id = {})").format(
                sql.Identifier(columns.SETS_TABLE), stored
            )
            kind = "keywords"
        checks.append(
            sql.SQL("CASE WHEN {} IS DISTINCT FROM {} THEN {} END").format(
                stored, columns.derive(kind, value), sql.Literal(name)
            )
        )
    return sql.SQL("array_remove(ARRAY[{}]::text[], NULL)").format(
        sql.SQL(", ").join(checks)
    )


# Every row of the site, a page at a time (keyset on the primary key).
SITE_ROWS = sql.SQL(
    "SELECT zoid, path FROM " + _TABLE + " WHERE {site}"
    " AND zoid > %s ORDER BY zoid LIMIT %s"
)

ROW_COUNT = sql.SQL("SELECT count(*) FROM " + _TABLE + " WHERE {}")

PER_VALUE = sql.SQL(
    "SELECT idx ->> %s, count(*) FROM " + _TABLE + " WHERE {}"
    " GROUP BY 1 ORDER BY 2 DESC, 1"
)

COLUMN_SIZES = sql.SQL("SELECT {} FROM " + _TABLE + " WHERE {}")

#: The catalog's columns (schema.BASE_DDL), in the order of ``COLUMN_SIZES``.
CATALOG_COLUMNS = COLUMNS

SQL_INDEXES = sql.SQL(
    "SELECT indexname, pg_relation_size(format('%%I.%%I', schemaname, indexname))"
    " FROM pg_indexes WHERE tablename IN ('pgcatalog_objects', 'object_state')"
    " AND schemaname = current_schema() AND indexname LIKE %s"
    " ORDER BY 2 DESC, 1"
)

STATE = sql.SQL("SELECT key, value FROM pgcatalog_state")


def explain(statement: sql.Composable) -> sql.Composed:
    """``statement`` run and explained (the slow-query report)."""
    return sql.SQL("EXPLAIN (ANALYZE, BUFFERS) {}").format(statement)


#: Run before ``prepare_kept``'s statement is explained: the plan PostgreSQL keeps for a
#: prepared statement is its generic one once it has taken it.
GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan"


def prepare_kept(
    statement: sql.Composable, name: str, count: int
) -> tuple[sql.Composed, sql.Composed]:
    """``(prepare, deallocate)`` of ``statement`` (with ``count``
    parameters) as ``name``, to explain it with the plan made blind to its
    values, as a search whose plan is kept runs
    (``query.SearchSQL.plan_kept``; ``explain_prepared``).  Prepared from
    its text, placeholders numbered: preparing it through psycopg would
    run it."""
    numbers = iter(range(1, count + 1))
    text = re.sub(
        r"%(%|s)",
        lambda found: "%" if found.group(1) == "%" else f"${next(numbers)}",
        statement.as_string(None),
    )
    identifier = sql.Identifier(name)
    return (
        sql.SQL("PREPARE {} AS {}").format(identifier, sql.SQL(text)),
        sql.SQL("DEALLOCATE {}").format(identifier),
    )


#: The parameter types PostgreSQL gave the statement prepared as ``%s``.
PREPARED_TYPES = sql.SQL(
    "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = %s"
)


def explain_prepared(name: str, types: list[str]) -> sql.Composed:
    """The statement prepared as ``name`` run and explained; its values
    are parameters, each cast to the type PostgreSQL gave it
    (``PREPARED_TYPES``: names of types, as PostgreSQL writes them)."""
    return sql.SQL("EXPLAIN (ANALYZE, BUFFERS) EXECUTE {}({})").format(
        sql.Identifier(name),
        sql.SQL(", ").join(sql.Placeholder() + sql.SQL("::" + kind) for kind in types),
    )


def explain_generic(
    conn: psycopg.Connection, statement, params, name: str, settings=None
) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of ``statement`` run with ``params``
    and the plan PostgreSQL makes blind to its values (the one a search
    whose plan is kept runs: ``query.SearchSQL.plan_kept``,
    ``plan_forced``), on ``conn`` in a transaction rolled back, after the
    ``(statement, params)`` of ``settings`` if given (the catalog's reads'
    settings, ``connection.read_settings``).  Prepared as ``name`` for it,
    and deallocated after."""
    prepare, deallocate = prepare_kept(statement, name, len(params))
    try:
        with conn.transaction(force_rollback=True):
            # Bound by psycopg on the client: PostgreSQL does not read the
            # types of a utility statement's parameters (EXPLAIN EXECUTE).
            with psycopg.ClientCursor(conn, row_factory=tuple_row) as cursor:
                if settings is not None:
                    cursor.execute(*settings)
                cursor.execute(GENERIC_PLANS)
                cursor.execute(prepare)
                [(types,)] = cursor.execute(PREPARED_TYPES, (name,))
                cursor.execute(explain_prepared(name, types), params)
                return [row[0] for row in cursor.fetchall()]
    finally:
        # A prepared statement outlives the transaction that made it.
        with conn.cursor(row_factory=tuple_row) as cursor:
            if cursor.execute(PREPARED_TYPES, (name,)).fetchall():
                cursor.execute(deallocate)


# -- the operators' pages (``overview``) ----------------------------------------

#: A page of the site's rows in path order, with their type and state.
CATALOG_PAGE = sql.SQL(
    "SELECT zoid, path, idx ->> 'portal_type', idx ->> 'review_state'"
    " FROM " + _TABLE + ' WHERE {} ORDER BY path COLLATE "C" LIMIT %s OFFSET %s'
)

#: Per key of ``idx`` (``{idx}``: with the values stored in columns only,
#: ``columns.whole_idx``): the rows with a value (not JSON null, not an
#: empty list) and the distinct values (each element of a list counted).
INDEX_FIGURES = sql.SQL(
    "SELECT e.key, count(DISTINCT s.zoid), count(DISTINCT v.value)"
    " FROM " + _TABLE + " AS s"
    " CROSS JOIN LATERAL jsonb_each({idx}) AS e(key, value)"
    " CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(e.value)"
    " WHEN 'array' THEN e.value ELSE jsonb_build_array(e.value) END) AS v(value)"
    " WHERE {site} AND v.value <> 'null'::jsonb GROUP BY e.key"
)

#: The catalog's tables and SQL indexes: name, kind (``r``/``i``), the
#: table an index is on, its definition, its size (a table's without
#: its indexes and TOAST), and a table's size with them.
RELATIONS = sql.SQL(
    "SELECT c.relname, c.relkind, t.relname, pg_get_indexdef(c.oid),"
    " pg_relation_size(c.oid), pg_total_relation_size(c.oid)"
    " FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
    " LEFT JOIN pg_index AS i ON i.indexrelid = c.oid"
    " LEFT JOIN pg_class AS t ON t.oid = i.indrelid"
    " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')"
    " AND (c.relname LIKE 'pgcatalog\\_%%' OR t.relname LIKE 'pgcatalog\\_%%')"
    " ORDER BY c.relkind DESC, pg_relation_size(c.oid) DESC, c.relname"
)

#: Live and dead rows, last vacuum and analyze of the catalog's tables.
TABLE_ACTIVITY = sql.SQL(
    "SELECT relname, n_live_tup, n_dead_tup,"
    " greatest(last_vacuum, last_autovacuum),"
    " greatest(last_analyze, last_autoanalyze)"
    " FROM pg_stat_user_tables WHERE schemaname = current_schema()"
    " AND relname LIKE 'pgcatalog\\_%%' ORDER BY relname"
)

SERVER_VERSION = sql.SQL("SELECT current_setting('server_version'), version()")

HAS_PG_STAT_STATEMENTS = sql.SQL(
    "SELECT EXISTS (SELECT 1 FROM pg_extension" " WHERE extname = 'pg_stat_statements')"
)

#: The catalog's statements as ``pg_stat_statements`` counts them in this
#: database (every client), slowest mean first.
PG_STAT_STATEMENTS = sql.SQL(
    "SELECT calls, total_exec_time, mean_exec_time, max_exec_time, rows, query"
    " FROM pg_stat_statements"
    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND query LIKE '%%pgcatalog\\_objects%%'"
    " ORDER BY mean_exec_time DESC LIMIT %s"
)

#: Rows, and rows with full text.
TEXT_ROWS = sql.SQL("SELECT count(searchable_text) FROM " + _TABLE + " WHERE {}")

#: Indexes kept in the table's own columns rather than in ``idx``: their
#: columns as the Indexes tab names them, and their SQL indexes
#: (``schema.BASE_DDL``).
BUILT_IN = {
    "path": (
        "path, parent_path, path_depth",
        (
            "pgcatalog_path",
            "pgcatalog_parent_path",
            "pgcatalog_path_depth",
            "pgcatalog_path_elements",
        ),
    ),
    "SearchableText": ("searchable_text (tsvector)", ("pgcatalog_searchable_text",)),
}
