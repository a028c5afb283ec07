"""The catalog's PostgreSQL schema: columns and indexes on ``object_state``.

Owns: the DDL, all of it idempotent (``IF NOT EXISTS``), and its version.

- ``BASE_DDL`` adds the catalog columns and the indexes every catalog
  needs.  zodb-pgjsonb applies it (version-tagged by its text) before the
  first write transaction, when no read snapshot holds the table.
- ``index_ddl()`` gives the expression index that serves one catalog index;
  the tool applies it when an index is added.

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

Rows of objects that are not cataloged have NULL catalog columns; every
index is partial (``WHERE idx IS NOT NULL``), so the catalog's indexes
stay as small as the catalog.  Must not open connections.
"""

from __future__ import annotations

from psycopg import sql

import hashlib
import re


#: Bumped with every change of the DDL below or of the stored forms; the
#: GenericSetup profile version follows it (``upgrades.py``).
#: 2: path indexes for navtree and level queries; SearchableText weighted
#: (exact words A, stems B), which needs the rows rewritten.
#: 3: ``idx`` kept in the row (storage MAIN, rows of up to 4 KB kept whole,
#: lz4 where the server has it); rows are rewritten to take the new form.
SCHEMA_VERSION = 3

BASE_DDL = f"""\
ALTER TABLE object_state
    ADD COLUMN IF NOT EXISTS path text COLLATE "C",
    ADD COLUMN IF NOT EXISTS parent_path text COLLATE "C",
    ADD COLUMN IF NOT EXISTS path_depth integer,
    ADD COLUMN IF NOT EXISTS idx jsonb,
    ADD COLUMN IF NOT EXISTS meta jsonb,
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

# GIN serves containment and key-existence operators (KeywordIndex, and
# DateRecurringIndex: its occurrences are a JSON array queried with @>);
# B-tree serves equality, ranges and ORDER BY of single values.
_GIN_TYPES = frozenset({"KeywordIndex", "DateRecurringIndex"})
_BTREE_TYPES = frozenset(
    {"FieldIndex", "DateIndex", "BooleanIndex", "UUIDIndex", "GopipIndex"}
)
# Ranges over strings compare ``(idx ->> name) COLLATE "C"`` (registry's
# ``text_key``), which the B-tree on ``idx -> name`` cannot serve.
_STRING_RANGE_TYPES = frozenset({"FieldIndex", "UUIDIndex"})
# Occurrences are stored sorted: the first and the last bound a range query.
_OCCURRENCE_TYPES = frozenset({"DateRecurringIndex"})
# Words in ``idx`` matched with ``to_tsvector('simple', ...)`` (registry's
# ``TextTranslator._vector``); SearchableText has its own column and index.
_TEXT_TYPES = frozenset({"ZCTextIndex"})
_TEXT_COLUMN_INDEXES = frozenset({"SearchableText"})


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
    catalog index; ``predicate`` narrows the partial index further.

    Each expression is written exactly as the query translators write it
    (registry.py), or PostgreSQL cannot match the index to the query.
    """
    key = sql.Literal(index_name)
    value = sql.SQL("(idx -> {})").format(key)
    if meta_type in _GIN_TYPES:
        found = [("i", "gin", value, None)]
    elif meta_type in _BTREE_TYPES:
        found = [("i", "btree", value, None)]
    elif meta_type in _TEXT_TYPES and index_name not in _TEXT_COLUMN_INDEXES:
        words = sql.SQL(
            "to_tsvector('simple'::regconfig, COALESCE(idx ->> {}, ''))"
        ).format(key)
        return [("i", "gin", words, None)]
    else:
        return []
    if meta_type in _STRING_RANGE_TYPES:
        text = sql.SQL('((idx ->> {}) COLLATE "C")').format(key)
        found.append(("t", "btree", text, None))
    if meta_type in _OCCURRENCE_TYPES:
        # Only objects with occurrences: the first index, in the order of
        # the first occurrence (the sort key), also serves "has a value"
        # (``idx -> name IS NOT NULL``, which GIN cannot answer).
        has_value = sql.SQL("{} IS NOT NULL").format(value)
        found.append(("f", "btree", sql.SQL("({} -> 0)").format(value), has_value))
        found.append(("l", "btree", sql.SQL("({} -> -1)").format(value), has_value))
    return found


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
