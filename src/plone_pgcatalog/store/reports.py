"""Reads of the operators' reports: ``pgcatalog verify`` and ``stats``.

Owns the statements the CLI (``cli.py``) runs to compare the stored rows
with the content and to size the catalog; the CLI composes them with a
site clause (``paths.path_clause``) and runs them.

Pure: statements only, no connection.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.schema import COLUMNS
from psycopg import sql

# Composed with the statements' own placeholders ({site}, {vector}, {}),
# which the CLI fills in.
_TABLE = TABLE.as_string(None)

# Rows of the walked objects, and whether their stored words equal the
# words extracted now (the same expression the processor writes with).
# ``{typed}``: the typed columns that differ from what ``idx`` derives
# (``typed_drift``).
STORED_ROWS = sql.SQL(
    "SELECT s.zoid, s.path, s.idx, s.meta,"
    " s.searchable_text IS NOT DISTINCT FROM {vector}, {typed}"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS e(zoid, config, words)"
    " JOIN " + _TABLE + " AS s ON s.zoid = e.zoid"
)


def typed_drift(typed: dict[str, str]) -> sql.Composable:
    """``text[]`` of the names of the typed columns ``{name: kind}`` whose
    value in row ``s`` is not what the row's ``idx`` derives (set by hand:
    the trigger derives them whenever ``idx`` is written)."""
    if not typed:
        return sql.SQL("ARRAY[]::text[]")
    checks = [
        sql.SQL(
            "CASE WHEN s.{column} IS DISTINCT FROM {derived} THEN {name} END"
        ).format(
            column=sql.Identifier(name),
            derived=columns.derive(
                kind, sql.SQL("(s.idx -> {})").format(sql.Literal(name))
            ),
            name=sql.Literal(name),
        )
        for name, kind in sorted(typed.items())
    ]
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
