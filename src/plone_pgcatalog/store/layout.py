"""Where catalog data lives: the table, its catalog columns, value expressions.

Owns the names every statement of the catalog is composed from, outside
this package as inside it: the table (``TABLE``), the name a search gives
its row source (``ROWS``: the table, or the read-your-writes overlay), and
the expression of an
index's value (``json_key``, ``text_key``, ``words``, ``has_key``), which
the SQL indexes (``schema``) and the query translators write alike, so
that PostgreSQL matches one to the other; and the form a value takes to be
held at all (``nul_free``), which index values and query values take alike.

Schema 5: the catalog's own table, ``pgcatalog_objects``, one row per
cataloged object keyed by its ``zoid`` (``schema.BASE_DDL``).  Until the
upgrade step 4 -> 5 has run, the same name is a view over the columns
schemas 1-4 kept on zodb-pgjsonb's ``object_state`` (``schema.LEGACY_VIEW``),
so that every statement reads and writes one name in either layout.

Pure: no database, no Zope.
"""

from __future__ import annotations

from psycopg import sql

import functools
import hashlib
import re

# Constant names, composed as plain SQL so that statements read (and are
# prepared) as they are written.

#: The table that holds the catalog rows.
TABLE = sql.SQL("pgcatalog_objects")

#: Bytes a row of the table may take before PostgreSQL moves its widest
#: values out of line (``toast_tuple_target``; why 1,024: ``schema``).
TOAST_TUPLE_TARGET = 1024

#: The name a search's row source has in its statement: the table itself,
#: or the overlay of pending changes (``overlay.Overlay.source``) named so.
ROWS = sql.SQL("pgcatalog_objects")

#: zodb-pgjsonb's table of object states: the catalog reads it only for
#: what it keeps of an object (``tid``: when it was stored; its class).
OBJECTS = sql.SQL("object_state")

#: The full-text column of SearchableText (a ``tsvector``).
SEARCHABLE_TEXT = sql.SQL("searchable_text")


def nul_free(value):
    """``value`` with each NUL character of its strings made U+0001.

    PostgreSQL's ``text`` and ``jsonb`` hold no NUL, and text pasted or
    imported into a site can have one: the row failed the commit.  U+0001
    sorts where NUL does against every other character.  Index values are
    stored so (``extraction.index_value``) and query values (a URL with
    ``%00``) are looked up so, which finds what ZCatalog finds: the
    objects whose value is that string.  (Metadata is ``json``, which
    keeps it; the words are split at it.)"""
    if isinstance(value, str):
        return value.replace("\x00", "\x01") if "\x00" in value else value
    if isinstance(value, list):
        if any(
            isinstance(item, (list, dict)) or (isinstance(item, str) and "\x00" in item)
            for item in value
        ):
            return [nul_free(item) for item in value]
        return value
    if isinstance(value, dict):
        return {nul_free(key): nul_free(item) for key, item in value.items()}
    return value


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


@functools.lru_cache(maxsize=4096)
def column(index_name: str) -> sql.SQL:
    """The typed column of an index (``store.columns``), quoted."""
    return sql.SQL(sql.Identifier(index_name).as_string(None))


def has_key(index_name: str) -> sql.SQL:
    """Rows with a value in index ``index_name`` (JSON ``null`` counts)."""
    return sql.SQL(f"idx ? {_quoted(index_name)}")


def sql_index_name(index_name: str, kind: str = "i") -> str:
    """A valid, unique PostgreSQL name for a catalog index's SQL objects.

    ``kind`` tells the objects of one catalog index apart: ``i`` its main
    index (the name tests and EXPLAIN output look for), other letters the
    helper indexes and ``s...`` the statistics objects.
    """
    safe = re.sub(r"[^a-z0-9_]", "_", index_name.lower())[:40]
    digest = hashlib.sha1(index_name.encode("utf-8")).hexdigest()[:8]
    return f"pgcatalog_{kind}_{safe}_{digest}"


def subtree_bounds(path: str) -> tuple[str, str]:
    """``(first, end)``: every path below ``path`` sorts from ``first`` (the
    path and "/") to before ``end`` (the same with its last "/" replaced by
    the next code point, "0"), in the path column's "C" collation."""
    first = path.rstrip("/") + "/"
    return first, first[:-1] + "0"


#: Where the catalog's rows lie in the order of their paths: the first and
#: the last path, the first after a site's own path (``%s``), and whether a
#: row has no path (``site_alone``).  Each is a probe of one end of the
#: path's B-tree, whatever the value: the plan may be kept (prepared), which
#: spares the four references to the table a plan each transaction (about
#: 0.1 ms each, the table's indexes).  A test of the ranges around the
#: subtree (``EXISTS ... WHERE path < %s``) would not be: a plan blind to
#: the value would scan the table for rows of which there are none.
PATH_ENDS = sql.SQL(
    "SELECT (SELECT min(path) FROM {t}), (SELECT max(path) FROM {t}),"
    " (SELECT path FROM {t} WHERE path > %s ORDER BY path LIMIT 1),"
    " EXISTS (SELECT FROM {t} WHERE path IS NULL)"
).format(t=TABLE)


def site_alone(ends: tuple, site: str) -> bool:
    """Whether every row of the table is at or below the site at path
    ``site``, from ``PATH_ENDS``'s row (``ends``) for it: then a search of
    that site needs no test of the path to keep other sites' rows out
    (``query.QueryContext.site_alone``).  Paths compare as the "C"
    collation compares them (UTF-8 bytes: code points)."""
    first, last, after, unplaced = ends
    if unplaced:
        return False
    if first is None:
        return True  # no rows
    below, end = subtree_bounds(site)
    return first >= site and last < end and (after is None or after >= below)
