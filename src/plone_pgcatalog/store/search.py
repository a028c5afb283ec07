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
from psycopg.types.json import Jsonb

import psycopg

_PATH_OF = sql.SQL(
    "SELECT path FROM {} WHERE zoid = %s AND (path = %s OR path LIKE %s)"
).format(TABLE)

# ``meta::json``: a no-op on the table; until the upgrade to schema 5 the
# view may show a ``jsonb`` column (schema 3), and a statement prepared on
# the view must keep its result type when it runs on the table.
_LOAD_METADATA = sql.SQL(
    "SELECT zoid, meta::json FROM {} WHERE zoid = ANY(%s::bigint[])"
).format(TABLE)


@dataclass(frozen=True)
class Found:
    """What one search found: the window's rows and the number of matches."""

    #: ``[(zoid, path)]`` of the window, in order
    ids: list
    total: int
    #: ``[(score, normalized score)]`` aligned with ``ids``, when ranked
    scores: list | None = None
    #: the best score of the whole result, when ranked
    best: float | None = None


@dataclass(frozen=True)
class Anchor:
    """The last row a result has read, as its snapshot had it: where the
    rest of the result continues once that snapshot has ended
    (``SearchSQL.rest_query``)."""

    zoid: int
    #: ``layout.ROW_OF_VALUES``'s parameters: the row its sort keys read
    row: tuple
    score: float | None = None
    best: float | None = None
    #: the zoids of the rows read (``FIRST_ROWS`` at most)
    read: tuple = ()


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
    return found_by(conn, search, _execute(conn, *search_statement(search)))


def search_statement(search: SearchSQL) -> tuple[sql.Composed, tuple]:
    """The statement ``run_search`` runs: the window's query, or the first
    ``FIRST_ROWS`` of a result without a window, counted."""
    if not search.windowed and search.python_slice is None:
        return search.rows_query(FIRST_ROWS, 0, counted=True)
    return search.ids_query()


def found_by(conn: psycopg.Connection, search: SearchSQL, rows: list) -> Found:
    """What the rows of ``search_statement`` found (counted with one more
    query when a window past the end returned none)."""
    first = not search.windowed and search.python_slice is None
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
    """Rows ``offset`` to the end of a result ``run_search`` began, in the
    same snapshot."""
    statement, params = search.rows_query(None, offset, counted=False)
    rows = _execute(conn, statement, params)
    return _found(search, rows, offset + len(rows))


_ANCHOR_ROW = sql.SQL(
    "SELECT zoid, path, parent_path, path_depth, idx FROM {} WHERE zoid = %s"
).format(TABLE)


def anchor(conn: psycopg.Connection, found: Found) -> Anchor | None:
    """The anchor of the last row of ``found``, read in the snapshot that
    found it (one row, whatever the size of the result); None if that row
    is gone."""
    zoid = found.ids[-1][0]
    with json_cursor(conn) as cursor:
        cursor.execute(_ANCHOR_ROW, (zoid,))
        row = cursor.fetchone()
    if row is None:
        return None
    zoid, path, parent_path, depth, idx = row
    score = found.scores[-1][0] if found.scores else None
    return Anchor(
        zoid,
        (zoid, path, parent_path, depth, Jsonb(idx)),
        score,
        found.best,
        tuple(z for z, _ in found.ids),
    )


def fetch_after(conn: psycopg.Connection, search: SearchSQL, after: Anchor) -> Found:
    """The rows of a result after ``after``, in this connection's snapshot."""
    statement, params = search.rest_query(after)
    rows = _execute(conn, statement, params)
    return _found(search, rows, len(rows))


def _found(search: SearchSQL, rows: list[tuple], total: int) -> Found:
    ids = [(row[0], row[1]) for row in rows]
    scores = best = None
    if search.score is not None:
        # ZCatalog: the normalized score is a percentage of the best one.
        scores = [
            (score, int(100.0 * score / best) if best else 100)
            for _, _, score, best, *_ in rows
        ]
        best = rows[0][3] if rows else None
    return Found(ids, total, scores, best)


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


_ROW_DATA = sql.SQL("SELECT idx, meta::json FROM {} WHERE zoid = %s").format(TABLE)


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
