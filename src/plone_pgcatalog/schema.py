"""The catalog's PostgreSQL schema: columns and indexes on ``object_state``.

Owns: the DDL, all of it idempotent (``IF NOT EXISTS``), and its version.

- ``BASE_DDL`` adds the catalog columns and the indexes every catalog
  needs.  zodb-pgjsonb applies it (version-tagged by its text) before the
  first write transaction, when no read snapshot holds the table.
- ``index_ddl()`` gives the expression index that serves one catalog index;
  the tool applies it when an index is added.

Rows of objects that are not cataloged have NULL catalog columns; every
index is partial (``WHERE idx IS NOT NULL``), so the catalog's indexes
stay as small as the catalog.  Must not open connections.
"""

from __future__ import annotations

from psycopg import sql

import hashlib
import re


#: Bumped with every change of the DDL below (upgrade steps key on it).
SCHEMA_VERSION = 1

BASE_DDL = """\
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
    ('schema_version', 1)
    ON CONFLICT (key) DO NOTHING;
CREATE INDEX IF NOT EXISTS pgcatalog_path_depth
    ON object_state (path_depth, path) WHERE idx IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_path_elements
    ON object_state USING gin (string_to_array(path, '/')) WHERE idx IS NOT NULL;
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

# GIN serves containment and key-existence operators (KeywordIndex);
# B-tree serves equality, ranges and ORDER BY of single values.
_GIN_TYPES = frozenset({"KeywordIndex"})
_BTREE_TYPES = frozenset(
    {"FieldIndex", "DateIndex", "BooleanIndex", "UUIDIndex", "GopipIndex",
     "DateRecurringIndex"}
)


def sql_index_name(index_name: str) -> str:
    """A valid, unique PostgreSQL index name for a catalog index."""
    safe = re.sub(r"[^a-z0-9_]", "_", index_name.lower())[:40]
    digest = hashlib.sha1(index_name.encode("utf-8")).hexdigest()[:8]
    return f"pgcatalog_i_{safe}_{digest}"


def index_ddl(index_name: str, meta_type: str) -> sql.Composed | None:
    """``CREATE INDEX`` serving one catalog index, or None if none is needed."""
    if meta_type in _GIN_TYPES:
        method = sql.SQL("gin")
    elif meta_type in _BTREE_TYPES:
        method = sql.SQL("btree")
    else:
        return None
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON object_state USING {method}"
        " ((idx -> {key})) WHERE idx IS NOT NULL"
    ).format(
        name=sql.Identifier(sql_index_name(index_name)),
        method=method,
        key=sql.Literal(index_name),
    )
