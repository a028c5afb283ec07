"""Running searches: one round trip for the ids, one for metadata.

Owns: executing a translated query (``query.SearchSQL``) on a connection it
is given, and the batch load of metadata for brains, on cursors that
decode JSON with orjson (``connection.json_cursor``).

Must not open connections or build query clauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog.query import SearchSQL
from plone_pgcatalog.store.connection import json_cursor
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.schema import READ_COUNTER
from psycopg import sql

import psycopg

_PATH_OF = sql.SQL(
    "SELECT path FROM {} WHERE zoid = %s AND (path = %s OR path LIKE %s)"
).format(TABLE)

_LOAD_METADATA = sql.SQL(
    "SELECT zoid, meta FROM {} WHERE zoid = ANY(%s::bigint[])"
).format(TABLE)


@dataclass(frozen=True)
class Found:
    """What one search found: the window's rows and the number of matches."""

    #: ``[(zoid, path)]`` of the window, in order
    ids: list
    total: int
    #: ``[(score, normalized score)]`` aligned with ``ids``, when ranked
    scores: list | None = None


#: Rows the query of a result without a window (no ``b_size`` or
#: ``sort_limit``) returns: a page of a listing reads no further.  A brain
#: read past them fetches all the others in one more query
#: (``fetch_rest``).  So ``len()`` and the first page of a result of any
#: size cost one round trip and this many rows.
FIRST_ROWS = 100


def _execute(conn: psycopg.Connection, statement, params) -> list[tuple]:
    with json_cursor(conn) as cursor:
        # Planned for its parameters every time: a prepared statement's
        # generic plan, blind to them, read every row of the site to find
        # the 70 of a word (14 ms instead of 2).
        cursor.execute(statement, params, prepare=False)
        return cursor.fetchall()


def run_search(conn: psycopg.Connection, search: SearchSQL) -> Found:
    """Run the window's query, or the first ``FIRST_ROWS`` of a result
    without a window (one round trip; two past the end of a window)."""
    first = not search.windowed and search.python_slice is None
    if first:
        statement, params = search.rows_query(FIRST_ROWS, 0, counted=True)
    else:
        statement, params = search.ids_query()
    rows = _execute(conn, statement, params)
    if search.python_slice is not None:
        # A negative batch: the whole result came, cut as ZCatalog cuts it.
        total = len(rows)
        rows = rows[slice(*search.python_slice)]
    elif first and len(rows) < FIRST_ROWS:
        total = len(rows)
    elif rows:
        total = rows[0][-1]
    else:
        total = _count(conn, search)
    return _found(search, rows, total)


def fetch_rest(conn: psycopg.Connection, search: SearchSQL, offset: int) -> Found:
    """Rows ``offset`` to the end of a result ``run_search`` began."""
    statement, params = search.rows_query(None, offset, counted=False)
    rows = _execute(conn, statement, params)
    return _found(search, rows, offset + len(rows))


def _found(search: SearchSQL, rows: list[tuple], total: int) -> Found:
    ids = [(row[0], row[1]) for row in rows]
    scores = None
    if search.score is not None:
        # ZCatalog: the normalized score is a percentage of the best one.
        scores = [
            (score, int(100.0 * score / best) if best else 100)
            for _, _, score, best, *_ in rows
        ]
    return Found(ids, total, scores)


def _count(conn: psycopg.Connection, search: SearchSQL) -> int:
    # A window past the end returns no row to carry the total: ask for it.
    statement, params = search.count_query()
    with json_cursor(conn) as cursor:
        cursor.execute(statement, params)
        return cursor.fetchone()[0]


def load_metadata(conn: psycopg.Connection, zoids: list[int]) -> dict[int, dict]:
    """``{zoid: metadata JSON}`` for the given rows, in one query."""
    if not zoids:
        return {}
    with json_cursor(conn) as cursor:
        cursor.execute(_LOAD_METADATA, (zoids,))
        return {zoid: meta for zoid, meta in cursor.fetchall()}


def path_of(conn: psycopg.Connection, zoid: int, site_path: str) -> str | None:
    """The cataloged path of one row of this site, or None."""
    with json_cursor(conn) as cursor:
        cursor.execute(_PATH_OF, (zoid, site_path, site_path + "/%"))
        row = cursor.fetchone()
    return row[0] if row else None


_ROW_DATA = sql.SQL("SELECT idx, meta FROM {} WHERE zoid = %s").format(TABLE)


def row_data(conn: psycopg.Connection, zoid: int) -> tuple[dict | None, dict | None]:
    """``(idx, meta)`` of one cataloged row, or ``(None, None)``."""
    with json_cursor(conn) as cursor:
        cursor.execute(_ROW_DATA, (zoid,))
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


_IS_CATALOGED = sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE zoid = %s)").format(
    TABLE
)


def is_cataloged(conn: psycopg.Connection, zoid: int) -> bool:
    """Whether the stored row of ``zoid`` is cataloged."""
    with json_cursor(conn) as cursor:
        cursor.execute(_IS_CATALOGED, (zoid,))
        return bool(cursor.fetchone()[0])


def read_counter(conn: psycopg.Connection) -> int:
    """The catalog's change counter (moves with every cataloging commit)."""
    with json_cursor(conn) as cursor:
        cursor.execute(READ_COUNTER)
        row = cursor.fetchone()
    return row[0] if row else 0


_STORED_PATHS = sql.SQL(
    "SELECT r.zoid, c.path FROM unnest(%s::bigint[]) AS r(zoid)"
    " LEFT JOIN {} AS c ON c.zoid = r.zoid"
).format(TABLE)


def stored_paths(conn: psycopg.Connection, zoids: list[int]) -> dict[int, str | None]:
    """``{zoid: cataloged path, None if not cataloged}`` of ``zoids``."""
    with json_cursor(conn) as cursor:
        cursor.execute(_STORED_PATHS, (zoids,))
        return dict(cursor.fetchall())


_SNAPSHOT_TID = sql.SQL("SELECT COALESCE(max(tid), 0) FROM transaction_log")


def snapshot_tid(conn: psycopg.Connection) -> int:
    """The last ZODB transaction the connection's snapshot sees (zodb-pgjsonb's
    ``transaction_log``): objects stored after it have a greater ``tid``."""
    with json_cursor(conn) as cursor:
        cursor.execute(_SNAPSHOT_TID)
        return cursor.fetchone()[0]
