"""The zodb-pgjsonb state processor: the only writer of catalog data.

Owns: writing catalog rows inside the ZODB two-phase commit.

- ``process()`` runs when zodb-pgjsonb queues an object's state during the
  commit; if the transaction cataloged that object, its catalog columns
  go into the same ``INSERT`` as the state.
- ``finalize()`` runs at the end of the vote on the writing cursor: it
  refuses the commit if a row that a catalog-only write replaces was moved
  or removed by another transaction meanwhile; then rows of
  cataloged objects whose state was not stored are updated, uncataloged
  paths are cleared (and the rows a rebuild did not write,
  ``PendingCatalog.keep_only``), and the change counter moves.

Both read only the transaction's ``PendingCatalog``.  An abort rolls the
PostgreSQL transaction back with everything else.  Must not open
connections.
"""

from __future__ import annotations

from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import CatalogRow
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.relocation import relocate_statement
from psycopg import sql
from psycopg.types.json import Json
from psycopg.types.json import Jsonb
from ZODB.POSException import ConflictError
from ZODB.utils import p64
from zodb_pgjsonb.storage import ExtraColumn

import logging

logger = logging.getLogger(__name__)

# zodb-pgjsonb binds one parameter per extra column (None for objects that
# are not cataloged), so the text and its configuration travel together as
# ``[config, text]``.
_VECTOR = schema.searchable_vector(
    sql.SQL("(%(searchable_text)s::text[])[2]"),
    sql.SQL("(%(searchable_text)s::text[])[1]"),
)

_COLUMNS = [
    ExtraColumn("path", "%(path)s"),
    ExtraColumn("parent_path", "%(parent_path)s"),
    ExtraColumn("path_depth", "%(path_depth)s"),
    ExtraColumn("idx", "%(idx)s"),
    ExtraColumn("meta", "%(meta)s"),
    ExtraColumn("searchable_text", _VECTOR.as_string()),
]

# Rows of objects whose state the transaction does not store (a rebuild, a
# reindex of an unchanged object), all in one statement: one array per
# column, one element per row.
_UPDATE_ROWS = sql.SQL(
    "UPDATE object_state AS s SET path = r.path, parent_path = r.parent_path,"
    " path_depth = r.path_depth, idx = r.idx, meta = r.meta,"
    " searchable_text = {vector}"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::integer[],"
    " %s::jsonb[], %s::json[], %s::text[], %s::text[])"
    " AS r(zoid, path, parent_path, path_depth, idx, meta, config, words)"
    " WHERE s.zoid = r.zoid"
).format(vector=schema.searchable_vector(sql.SQL("r.words"), sql.SQL("r.config")))

_CLEAR_WHERE = sql.SQL(
    "UPDATE object_state SET path = NULL, parent_path = NULL, path_depth = NULL,"
    " idx = NULL, meta = NULL, searchable_text = NULL"
    " WHERE {} AND idx IS NOT NULL AND NOT zoid = ANY(%s::bigint[])"
)
# ``::bigint[]``: without it a list of ints travels as numeric[] and the
# test is a scan of the array per row (200,000 rows, 200,000 kept: 89 s
# instead of 0.3 s, PostgreSQL 15): a rebuild's end passes every zoid.


# Partial reindexes, all in one statement: a JSONB merge into each stored
# row.  A row that was not cataloged yet gets its path and metadata too
# (ZCatalog catalogs a new object with the given indexes only).  SET
# expressions read the old row.  ``s.meta::json``: until the upgrade to
# schema 4 has run, ``meta`` may still be ``jsonb`` (``schema.meta_to_json``).
_PATCH_ROWS = sql.SQL(
    "UPDATE object_state AS s SET"
    " path = COALESCE(s.path, p.path),"
    " parent_path = COALESCE(s.parent_path, p.parent_path),"
    " path_depth = COALESCE(s.path_depth, p.path_depth),"
    " meta = CASE WHEN s.idx IS NULL OR p.update_metadata THEN p.meta"
    " ELSE s.meta::json END,"
    " searchable_text = CASE WHEN p.text_given THEN {vector}"
    " ELSE s.searchable_text END,"
    " idx = (COALESCE(s.idx, '{{}}'::jsonb)"
    " - ARRAY(SELECT jsonb_array_elements_text(p.removed))) || p.vals"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::integer[],"
    " %s::boolean[], %s::json[], %s::boolean[], %s::text[], %s::text[],"
    " %s::jsonb[], %s::jsonb[])"
    " AS p(zoid, path, parent_path, path_depth, update_metadata, meta,"
    " text_given, config, words, removed, vals)"
    " WHERE s.zoid = p.zoid"
).format(vector=schema.searchable_vector(sql.SQL("p.words"), sql.SQL("p.config")))


# Every child of one folder gets its position (0-based) in one statement.
_SET_POSITIONS = sql.SQL(
    "UPDATE object_state AS s"
    " SET idx = jsonb_set(s.idx, %s::text[], to_jsonb(o.position - 1))"
    " FROM unnest(%s::text[]) WITH ORDINALITY AS o(id, position)"
    " WHERE s.idx IS NOT NULL AND s.parent_path = %s"
    " AND s.path = %s || '/' || o.id"
    " AND s.idx -> (%s::text[])[1] IS DISTINCT FROM to_jsonb(o.position - 1)"
)


def patch_arrays(patches: list[CatalogPatch]) -> tuple[list, ...]:
    """Bound parameters of ``_PATCH_ROWS``: one array per column."""
    return (
        [p.zoid for p in patches],
        [p.path for p in patches],
        [p.parent_path for p in patches],
        [p.path_depth for p in patches],
        [p.update_metadata for p in patches],
        [Json(p.meta) for p in patches],
        [p.text_given for p in patches],
        [p.text_config if p.searchable_text is not None else None for p in patches],
        [p.searchable_text for p in patches],
        [Jsonb(list(p.removed)) for p in patches],
        [Jsonb(p.values) for p in patches],
    )


def row_arrays(rows: list[CatalogRow]) -> tuple[list, ...]:
    """Bound parameters of ``_UPDATE_ROWS``: one array per column."""
    return (
        [r.zoid for r in rows],
        [r.path for r in rows],
        [r.parent_path for r in rows],
        [r.path_depth for r in rows],
        [Jsonb(r.idx) for r in rows],
        [Json(r.meta) for r in rows],
        [r.text_config if r.searchable_text is not None else None for r in rows],
        [r.searchable_text for r in rows],
    )


def row_params(row: CatalogRow) -> dict:
    """Bound parameters of one row, keyed by column name."""
    return {
        "zoid": row.zoid,
        "path": row.path,
        "parent_path": row.parent_path,
        "path_depth": row.path_depth,
        "idx": Jsonb(row.idx),
        "meta": Json(row.meta),
        "searchable_text": (
            None
            if row.searchable_text is None
            else [row.text_config, row.searchable_text]
        ),
    }


# Rows another transaction moved or removed since this one read them: their
# path then differs from the one read.
_REPLACED_ELSEWHERE = sql.SQL(
    "SELECT s.zoid FROM object_state AS s"
    " JOIN unnest(%s::bigint[], %s::text[]) AS r(zoid, path) ON s.zoid = r.zoid"
    " WHERE s.path IS DISTINCT FROM r.path LIMIT 1"
)


def _check_replaced_rows(cursor, pending) -> None:
    """Refuse the commit if a row that a catalog-only write replaces was
    moved or removed by a transaction committed since this one read it
    (``conflicts.read_replaced_paths``).  Commits are serialized (zodb-pgjsonb's
    lock), so this sees every commit before this one; it runs before this
    commit's own moves change paths."""
    read = [
        (zoid, path)
        for zoid, path in pending.read_paths.items()
        if zoid not in pending.written
        and (zoid in pending.rows or zoid in pending.patches)
    ]
    if not read:
        return
    cursor.execute(_REPLACED_ELSEWHERE, ([z for z, _ in read], [p for _, p in read]))
    found = cursor.fetchone()
    if found is not None:
        zoid = found[0] if isinstance(found, tuple) else found["zoid"]
        raise ConflictError(
            f"catalog row of oid {zoid} moved or removed by another transaction",
            oid=p64(zoid),
        )


class CatalogStateProcessor:
    """Registered on a ``PGJsonbStorage``; see the module docstring."""

    def get_extra_columns(self) -> list[ExtraColumn]:
        return list(_COLUMNS)

    def get_schema_sql(self) -> str:
        return schema.BASE_DDL

    def process(self, zoid: int, class_mod: str, class_name: str, state) -> dict | None:
        pending = current_pending()
        if pending is None:
            return None
        row = pending.rows.get(zoid)
        if row is None:
            return None
        pending.written.add(zoid)
        return row_params(row)

    def finalize(self, cursor) -> None:
        pending = current_pending()
        if not pending:
            return
        _check_replaced_rows(cursor, pending)
        # First the moved subtrees, in one statement: everything below
        # names the paths where the objects are now.  Rows written in full
        # (in the INSERT, or just below) already carry their paths.
        relocations = pending.relocations
        if relocations:
            cursor.execute(*relocate_statement(relocations, list(pending.rows)))
        unwritten = [
            row for zoid, row in pending.rows.items() if zoid not in pending.written
        ]
        if unwritten:
            cursor.execute(_UPDATE_ROWS, row_arrays(unwritten))
        if pending.patches:
            cursor.execute(_PATCH_ROWS, patch_arrays(list(pending.patches.values())))
        kept = [*pending.rows, *pending.patches]
        if pending.removed_paths:
            paths = sql.SQL("path = ANY(%s)")
            cursor.execute(
                _CLEAR_WHERE.format(paths), (sorted(pending.removed_paths), kept)
            )
        for root in sorted(pending.cleared_subtrees):
            subtree, params = path_clause(root, -1)
            cursor.execute(_CLEAR_WHERE.format(subtree), (*params, kept))
        for root, (zoids, since) in sorted(pending.kept_subtrees.items()):
            # Objects stored after ``since`` keep the rows their commits wrote.
            subtree, params = path_clause(root, -1)
            cursor.execute(
                _CLEAR_WHERE.format(sql.SQL("{} AND tid <= %s").format(subtree)),
                (*params, since, [*kept, *zoids.tolist()]),
            )
        for parent, (ids, names) in sorted(pending.positions.items()):
            for name in names:
                cursor.execute(
                    _SET_POSITIONS, ([name], list(ids), parent, parent, [name])
                )
        cursor.execute(schema.BUMP_COUNTER)
        logger.debug(
            "catalog: %d rows written, %d patched, %d paths removed, %d moves",
            len(pending.rows),
            len(pending.patches),
            len(pending.removed_paths),
            len(pending.moves),
        )


def register(storage) -> CatalogStateProcessor | None:
    """Register the processor on a zodb-pgjsonb storage, once.

    Returns the processor, or ``None`` when ``storage`` is not a
    zodb-pgjsonb storage (the catalog then cannot write and says so when
    it is used).
    """
    from zodb_pgjsonb.storage import PGJsonbStorage

    if not isinstance(storage, PGJsonbStorage):
        return None
    for processor in storage._state_processors:
        if isinstance(processor, CatalogStateProcessor):
            return processor
    processor = CatalogStateProcessor()
    storage.register_state_processor(processor)
    return processor
