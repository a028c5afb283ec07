"""Where catalog data lives: the table, its catalog columns, value expressions.

Owns the names every statement of the catalog is composed from, outside
this package as inside it: the table (``TABLE``), the name a search gives
its row source (``ROWS``: the table, or the read-your-writes overlay), what
makes a row a catalog row (``cataloged``), and the expression of an
index's value (``json_key``, ``text_key``, ``words``, ``has_key``), which
the SQL indexes (``schema``) and the query translators write alike, so
that PostgreSQL matches one to the other.

Schema 1-4: the catalog's columns (``path``, ``parent_path``,
``path_depth``, ``idx``, ``meta``, ``searchable_text``, ``text_config``)
are on zodb-pgjsonb's ``object_state``; a row is cataloged when its
``idx`` is not NULL.

Pure: no database, no Zope.
"""

from __future__ import annotations

from psycopg import sql

import functools

# Constant names, composed as plain SQL so that statements read (and are
# prepared) as they are written.

#: The table that holds the catalog rows.
TABLE = sql.SQL("object_state")

#: The name a search's row source has in its statement: the table itself,
#: or the overlay of pending changes (``overlay.Overlay.source``) named so.
ROWS = sql.SQL("object_state")

#: The full-text column of SearchableText (a ``tsvector``).
SEARCHABLE_TEXT = sql.SQL("searchable_text")


def cataloged(alias: str = "") -> sql.SQL:
    """The condition that a row of ``TABLE`` (as ``alias``) is cataloged."""
    return sql.SQL(f"{alias}.idx IS NOT NULL" if alias else "idx IS NOT NULL")


@functools.lru_cache(maxsize=4096)
def _quoted(index_name: str) -> str:
    # Quoted by psycopg once per name: composing a literal is most of the
    # time it takes to translate a query.
    return sql.Literal(index_name).as_string(None)


def json_key(index_name: str) -> sql.SQL:
    """``idx->'name'``: the JSONB value of one index."""
    return sql.SQL(f"(idx -> {_quoted(index_name)})")


def text_key(index_name: str) -> sql.SQL:
    """``idx->>'name'`` compared by code point, as Python compares str.

    With UTF-8, byte order ("C" collation) is code point order; a
    language collation is not.
    """
    return sql.SQL(f'((idx ->> {_quoted(index_name)}) COLLATE "C")')


def words(index_name: str) -> sql.SQL:
    """The words of a text index other than SearchableText, as a
    ``tsvector`` of the exact words."""
    value = f"COALESCE(idx ->> {_quoted(index_name)}, '')"
    return sql.SQL(f"to_tsvector('simple'::regconfig, {value})")


def has_key(index_name: str) -> sql.SQL:
    """Rows with a value in index ``index_name`` (JSON ``null`` counts)."""
    return sql.SQL(f"idx ? {_quoted(index_name)}")
