"""The zodb-pgjsonb state processor: the only writer of catalog data.

Owns: writing catalog rows inside the ZODB two-phase commit.

- ``process()`` runs when zodb-pgjsonb queues an object's state during the
  commit; it only notes the cataloged objects whose states the commit
  stores (ZODB checks those for conflicts).  It writes nothing on
  ``object_state``: objects that are not cataloged pay nothing.
- ``finalize()`` runs at the end of the vote on the writing cursor, after
  the object states are written: it refuses the commit if a row that a
  catalog-only write replaces was moved or removed by another transaction
  meanwhile; then moved subtrees are relocated, the transaction's rows
  are written into the catalog's table (``layout.TABLE``, one statement
  per kind of change) and their texts into ``schema.TEXTS`` (snippets),
  uncataloged paths are cleared (and the rows a
  rebuild did not write, ``PendingCatalog.keep_only``, noting the time
  of the rebuild), and the change counter moves.
- ``undone()`` runs when zodb-pgjsonb undoes a transaction
  (history-preserving storages): it names the cataloged objects the undo
  concerns and notifies ``RowsUndone``, on which ``undo`` mends their
  rows once the undo has committed.

Rows of removed objects go with them: the table's foreign key on
``object_state`` deletes them (``ON DELETE CASCADE``) when zodb-pgjsonb
deletes the state (pack, undo of a creation).

``process()`` and ``finalize()`` read only the transaction's
``PendingCatalog``.  An abort rolls the
PostgreSQL transaction back with everything else.  Must not open
connections.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import CatalogRow
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.connection import GENERIC_PLAN
from plone_pgcatalog.store.connection import PLAN_AS_BEFORE
from plone_pgcatalog.store.jsonvalue import dumps
from plone_pgcatalog.store.layout import OBJECTS
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.relocation import relocate_statement
from psycopg import sql
from psycopg.rows import tuple_row
from psycopg.types.json import Json
from psycopg.types.json import Jsonb
from ZODB.POSException import ConflictError
from ZODB.utils import p64
from zodb_pgjsonb.storage import ExtraColumn

import functools
import importlib
import json
import logging
import zope.event

logger = logging.getLogger(__name__)

_TABLE = TABLE.as_string(None)
_OBJECTS = OBJECTS.as_string(None)

# The object's state is in ``object_state`` (stored by this commit or an
# earlier one): a row is never written for an object that is not there
# (one added and removed again before the commit), which the foreign key
# would refuse.
_OBJECT_STORED = (
    " AND EXISTS (SELECT 1 FROM " + _OBJECTS + " AS o WHERE o.zoid = {}.zoid)"
)

# Rows cataloged in full (new objects, reindexes, a rebuild), all in two
# statements with the same parameters, one array per column and one
# element per row: the stored rows are updated, the others inserted.  The
# arrays travel in binary (``%b``): in text every JSON value and string is
# quoted and escaped into the array's text and parsed back (1,000 rows'
# metadata, values and removed keys: 22.5 ms in text, 9.0 in binary).
_ROWS = (
    " FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::integer[],"
    " %b::jsonb[], %b::json[], %b::text[], %b::text[])"
    " AS r(zoid, path, parent_path, path_depth, idx, meta, config, words)"
)
_ROW_VECTOR = schema.searchable_vector(sql.SQL("r.words"), sql.SQL("r.config"))

_UPDATE_ROWS = sql.SQL(
    "UPDATE " + _TABLE + " AS s SET path = r.path, parent_path = r.parent_path,"
    " path_depth = r.path_depth, idx = r.idx, meta = r.meta,"
    " searchable_text = {vector}" + _ROWS + " WHERE s.zoid = r.zoid"
).format(vector=_ROW_VECTOR)

_INSERT_ROWS = sql.SQL(
    "INSERT INTO " + _TABLE + " (zoid, path, parent_path, path_depth, idx, meta,"
    " searchable_text) SELECT r.zoid, r.path, r.parent_path, r.path_depth, r.idx,"
    " r.meta, {vector}"
    + _ROWS
    + " WHERE NOT EXISTS (SELECT 1 FROM "
    + _TABLE
    + " AS c WHERE c.zoid = r.zoid)"
    + _OBJECT_STORED.format("r")
).format(vector=_ROW_VECTOR)

# Rows cataloged in full whose text indexes gave no string (``CatalogRow.
# kept``): the stored row keeps those indexes' words, as ZCTextIndex's
# ``index_object`` leaves them.  Their own statement, so that the others'
# is the same as without them.
_UPDATE_KEEPING = sql.SQL(
    "UPDATE " + _TABLE + " AS s SET path = r.path, parent_path = r.parent_path,"
    " path_depth = r.path_depth,"
    " idx = COALESCE((SELECT jsonb_object_agg(e.key, e.value)"
    " FROM jsonb_each(s.idx) AS e WHERE r.kept ? e.key), '{{}}'::jsonb) || r.idx,"
    " meta = r.meta, searchable_text = CASE WHEN r.keep_text"
    " THEN s.searchable_text ELSE {vector} END"
    " FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::integer[],"
    " %b::jsonb[], %b::json[], %b::text[], %b::text[], %b::jsonb[], %b::boolean[])"
    " AS r(zoid, path, parent_path, path_depth, idx, meta, config, words, kept,"
    " keep_text) WHERE s.zoid = r.zoid"
).format(vector=_ROW_VECTOR)

_CLEAR_WHERE = sql.SQL(
    "DELETE FROM " + _TABLE + " WHERE {} AND NOT zoid = ANY(%s::bigint[])"
)
# ``::bigint[]``: without it a list of ints travels as numeric[] and the
# test is a scan of the array per row (200,000 rows, 200,000 kept: 89 s
# instead of 0.3 s, PostgreSQL 15): a rebuild's end passes every zoid.

# The objects of a subtree stored at or before a transaction (``keep_only``).
_STORED_SINCE = sql.SQL(
    "EXISTS (SELECT 1 FROM " + _OBJECTS + " AS o"
    " WHERE o.zoid = " + _TABLE + ".zoid AND o.tid <= %s)"
)


# Partial reindexes, all in two statements with the same parameters: a
# JSONB merge into each stored row, then a row for the objects that were
# not cataloged yet, with their path and metadata too (ZCatalog catalogs a
# new object with the given indexes only).  SET expressions read the old
# row.
_PATCHES = (
    " FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::integer[],"
    " %b::boolean[], %b::json[], %b::boolean[], %b::text[], %b::text[],"
    " %b::jsonb[], %b::jsonb[])"
    " AS p(zoid, path, parent_path, path_depth, update_metadata, meta,"
    " text_given, config, words, removed, vals)"
)
_PATCH_VECTOR = schema.searchable_vector(sql.SQL("p.words"), sql.SQL("p.config"))

# ``s.meta::json``: until the upgrade to schema 5 has run, ``meta`` may
# still be a ``jsonb`` column of ``object_state`` (schemas 1-3).
_PATCH_ROWS = sql.SQL(
    "UPDATE " + _TABLE + " AS s SET"
    " meta = CASE WHEN p.update_metadata THEN p.meta ELSE s.meta::json END,"
    " searchable_text = CASE WHEN p.text_given THEN {vector}"
    " ELSE s.searchable_text END,"
    " idx = (s.idx - ARRAY(SELECT jsonb_array_elements_text(p.removed))) || p.vals"
    + _PATCHES
    + " WHERE s.zoid = p.zoid RETURNING s.zoid"
).format(vector=_PATCH_VECTOR)

_INSERT_PATCHED = sql.SQL(
    "INSERT INTO " + _TABLE + " (zoid, path, parent_path, path_depth, idx, meta,"
    " searchable_text) SELECT p.zoid, p.path, p.parent_path, p.path_depth,"
    " p.vals, p.meta, CASE WHEN p.text_given THEN {vector} END"
    + _PATCHES
    + " WHERE NOT EXISTS (SELECT 1 FROM "
    + _TABLE
    + " AS c WHERE c.zoid = p.zoid)"
    + _OBJECT_STORED.format("p")
).format(vector=_PATCH_VECTOR)


# The texts snippets show (``schema.TEXTS``), of the rows written with
# SearchableText: kept where it has one (not rewritten when unchanged),
# taken away where it has none now.
_WRITE_TEXTS = sql.SQL(
    "INSERT INTO {texts} AS t (zoid, config, body)"
    " SELECT w.zoid, w.config, w.body"
    " FROM unnest(%b::bigint[], %b::text[], %b::text[]) AS w(zoid, config, body)"
    " WHERE w.body IS NOT NULL" + _OBJECT_STORED.format("w") + " ON CONFLICT (zoid)"
    " DO UPDATE SET config = EXCLUDED.config, body = EXCLUDED.body"
    " WHERE (t.config, t.body) IS DISTINCT FROM (EXCLUDED.config, EXCLUDED.body)"
).format(texts=sql.Identifier(schema.TEXTS))
_DELETE_TEXTS = sql.SQL("DELETE FROM {} WHERE zoid = ANY(%s::bigint[])").format(
    sql.Identifier(schema.TEXTS)
)


def text_arrays(written: list) -> tuple[tuple[list, ...], list[int]]:
    """Bound parameters of ``_WRITE_TEXTS`` for the rows and patches
    ``written`` that give SearchableText, and the zoids that have none."""
    given = [w for w in written if w.text_given]
    kept = [w for w in given if w.text_source is not None]
    gone = [w.zoid for w in given if w.text_source is None]
    return (
        (
            [w.zoid for w in kept],
            [w.text_config for w in kept],
            [w.text_source for w in kept],
        ),
        gone,
    )


# Every child of one folder gets its position (0-based) in one statement.
_SET_POSITIONS = sql.SQL(
    "UPDATE " + _TABLE + " AS s"
    " SET idx = jsonb_set(s.idx, %s::text[], to_jsonb(o.position - 1))"
    " FROM unnest(%s::text[]) WITH ORDINALITY AS o(id, position)"
    " WHERE s.parent_path = %s"
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
        [Json(p.meta, dumps) for p in patches],
        [p.text_given for p in patches],
        [p.text_config if p.searchable_text is not None else None for p in patches],
        [p.searchable_text for p in patches],
        [Jsonb(list(p.removed), dumps) for p in patches],
        [Jsonb(p.values, dumps) for p in patches],
    )


# ``columns.PATCHED_KEYS`` for the transaction: the keys of ``idx`` the
# statement that follows changes (a JSON list), or none ('').
_PATCHED_KEYS = sql.SQL("SELECT set_config({}, %s, true)").format(
    sql.Literal(columns.PATCHED_KEYS)
)


# ``columns.WHOLE_ROWS`` for the transaction: "on" around the ``UPDATE`` of
# whole rows, else ''.
_WHOLE_ROWS = sql.SQL("SELECT set_config({}, %s, true)").format(
    sql.Literal(columns.WHOLE_ROWS)
)


def patched_keys(patches: list[CatalogPatch]) -> list[str]:
    """The keys of ``idx`` that ``_PATCH_ROWS`` changes in some row of
    ``patches``: the indexes they give values of and those they remove."""
    keys = set()
    for patch in patches:
        keys.update(patch.values)
        keys.update(patch.removed)
    return sorted(keys)


def _values_only(patch: CatalogPatch) -> bool:
    """Whether ``patch`` gives values of indexes only (no metadata, text or
    index removed): a sharing change's."""
    return not (patch.update_metadata or patch.text_given or patch.removed)


def _write_once(cursor, keys: list[str], patches: list, registry: dict) -> set[int]:
    """Write ``patches`` (``_values_only``, each of ``keys``) straight into
    the typed columns of keys stored once, where the layout allows it
    (``columns.once_patch``); the zoids of the rows written."""
    statement = columns.once_patch(keys, registry)
    if statement is None:
        return set()
    cursor.execute(
        statement,
        ([p.zoid for p in patches], [Jsonb(p.values, dumps) for p in patches]),
        prepare=True,
    )
    return {zoid for (zoid,) in cursor.fetchall()}


def _by_keys(patches: list[CatalogPatch]) -> list[tuple[list[str], list]]:
    """``patches`` grouped by the keys each changes (``patched_keys``), in
    the order of their first patch."""
    groups: dict[tuple[str, ...], list] = {}
    for patch in patches:
        groups.setdefault(tuple(patched_keys([patch])), []).append(patch)
    return [(list(keys), group) for keys, group in groups.items()]


def row_arrays(rows: list[CatalogRow]) -> tuple[list, ...]:
    """Bound parameters of ``_UPDATE_ROWS``: one array per column."""
    return (
        [r.zoid for r in rows],
        [r.path for r in rows],
        [r.parent_path for r in rows],
        [r.path_depth for r in rows],
        [Jsonb(r.idx, dumps) for r in rows],
        [Json(r.meta, dumps) for r in rows],
        [r.text_config if r.searchable_text is not None else None for r in rows],
        [r.searchable_text for r in rows],
    )


def keeping_arrays(rows: list[CatalogRow]) -> tuple[list, ...]:
    """Bound parameters of ``_UPDATE_KEEPING``: ``row_arrays`` and the
    kept indexes of each row."""
    return (
        *row_arrays(rows),
        [Jsonb(list(r.kept), dumps) for r in rows],
        [not r.text_given for r in rows],
    )


# Rows another transaction moved or removed since this one read them: their
# path then differs from the one read.
_REPLACED_ELSEWHERE = sql.SQL(
    "SELECT r.zoid FROM unnest(%s::bigint[], %s::text[]) AS r(zoid, path)"
    " LEFT JOIN " + _TABLE + " AS s ON s.zoid = r.zoid"
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


#: How far an undo's restored states are followed to the cataloged object
#: holding them (``undone_paths``): a folder's items are in a B-tree of
#: buckets, a comment in the B-tree of a conversation in the annotations
#: of its page.
UNDONE_STEPS = 6
#: The objects (each with its class, and its catalog row's path or NULL)
#: given, or (``_HOLDERS``) those whose states reference any of them:
#: zodb-pgjsonb's index of references (``refs``, GIN).
_OBJECTS_AND_ROWS = (
    "SELECT o.zoid, o.class_mod, o.class_name, c.path FROM {objects} AS o"
    " LEFT JOIN {table} AS c ON c.zoid = o.zoid WHERE "
)
_GIVEN = sql.SQL(_OBJECTS_AND_ROWS + "o.zoid = ANY(%s::bigint[])").format(
    table=TABLE, objects=OBJECTS
)
_HOLDERS = sql.SQL(_OBJECTS_AND_ROWS + "o.refs && %s::bigint[]").format(
    table=TABLE, objects=OBJECTS
)


#: Tools whose state no index reads, which creations and deletions
#: change: CMFUid's (its generator's counter; an object's uid is its own
#: annotation) and CMFEditions' storage of versions.  Other tools are
#: followed to the site: catalog values are computed from their settings
#: (``review_state`` from portal_workflow's chains, ``Type`` from
#: portal_types' titles), and a transaction that changes one and reindexes
#: content writes the rows, not the content's states (helper-37).
NO_ROWS_TOOLS = frozenset(
    {
        "Products.CMFUid.UniqueIdGeneratorTool.UniqueIdGeneratorTool",
        "Products.CMFUid.UniqueIdAnnotationTool.UniqueIdAnnotationTool",
        "Products.CMFUid.UniqueIdHandlerTool.UniqueIdHandlerTool",
        "Products.CMFEditions.ZVCStorageTool.ZVCStorageTool",
        "Products.CMFEditions.historyidhandlertool.HistoryIdHandlerTool",
    }
)


@functools.lru_cache(maxsize=1024)
def holds_no_rows(module: str, name: str) -> bool:
    """Whether objects of class ``module.name`` hold nothing a catalog row
    is made of: component registries (a site's local utilities, such as
    five.intid's ids, which every creation and deletion changes) and the
    tools of ``NO_ROWS_TOOLS``.  An undo that restores one concerns no
    catalog row through it: followed, they led to the site, and the repair
    read the whole site (some 11 ms an object) for an undone comment.  A
    class that cannot be imported, or whose module fails to import, is
    followed (the undo must not fail for it)."""
    if f"{module}.{name}" in NO_ROWS_TOOLS:
        return True
    from zope.interface.adapter import BaseAdapterRegistry
    from zope.interface.registry import Components

    try:
        found = getattr(importlib.import_module(module), name)
    except Exception:
        return False
    return isinstance(found, type) and issubclass(
        found, (Components, BaseAdapterRegistry)
    )


def undone_paths(cursor, restored: list[int]) -> list[str]:
    """The paths of the catalog rows an undo concerns (``undone``): those
    of the restored objects, and those of the cataloged objects that hold
    a restored object without a row, through other objects without one
    (a folder whose items were added, removed or reordered; a page whose
    workflow history or comments changed), at most ``UNDONE_STEPS`` away,
    not through objects that hold no rows (``holds_no_rows``).  A holder
    found that way which the undo did not change only makes the repair job
    read its subtree for nothing; one missed would leave its rows stale.
    ``cursor`` gives dict rows (zodb-pgjsonb's undo cursor)."""
    paths: set[str] = set()
    seen = set(restored)
    cursor.execute(_GIVEN, (list(restored),))
    found = cursor.fetchall()
    for step in range(UNDONE_STEPS + 1):
        followed = []
        for row in found:
            if row["path"] is not None:
                paths.add(row["path"])
            elif not holds_no_rows(row["class_mod"], row["class_name"]):
                followed.append(row["zoid"])
        if not followed or step == UNDONE_STEPS:
            break
        cursor.execute(_HOLDERS, (followed,))
        found = [row for row in cursor.fetchall() if row["zoid"] not in seen]
        seen.update(row["zoid"] for row in found)
    return sorted(paths)


#: What the log says when an undo concerns cataloged objects.
UNDONE = (
    "undo of transaction %s concerns %d cataloged objects (%s): their catalog"
    " rows, and those of their subtrees, are as that transaction left them"
    " (ZCatalog's undo restores its catalog too).  A Verify and repair job"
    " mends them after the commit where the undo runs in a Plone site's"
    " request; else run it (the catalog's control panel, or `pgcatalog"
    " verify --repair`)."
)


@dataclass(frozen=True)
class RowsUndone:
    """An undo concerns the catalog rows at ``paths`` (``undone``): the
    event ``undo`` mends them on."""

    tid: int
    paths: tuple[str, ...]


class CatalogStateProcessor:
    """Registered on a ``PGJsonbStorage``; see the module docstring."""

    def get_extra_columns(self) -> list[ExtraColumn]:
        return []  # nothing of the catalog is on ``object_state``

    def get_schema_sql(self) -> str:
        return schema.BASE_DDL

    def process(self, zoid: int, class_mod: str, class_name: str, state) -> dict | None:
        pending = current_pending()
        if pending is None:
            return None
        if zoid in pending.rows:
            pending.written.add(zoid)  # its state is checked by ZODB
        return None  # no column of ``object_state`` to write

    def undone(self, cursor, tid: int, restored, deleted, entries) -> None:
        """zodb-pgjsonb's undo (history-preserving storages only) restores
        object states, not the catalog rows the undone transaction wrote:
        ZCatalog's BTrees are restored with the objects, these rows are
        not, and the catalog cannot read the restored objects here (no
        Zope, no acquisition).  Rows of deleted states go with them (the
        foreign key).  So the undo goes on; the log names the cataloged
        objects it concerns (``undone_paths``, ``UNDONE``) and
        ``RowsUndone`` is notified, on which ``undo`` mends the catalog
        after the commit."""
        if not restored:
            return
        paths = tuple(undone_paths(cursor, list(restored)))
        if paths:
            logger.warning(UNDONE, tid, len(paths), ", ".join(paths[:10]))
            zope.event.notify(RowsUndone(tid, paths))

    def finalize(self, cursor) -> None:
        pending = current_pending()
        if not pending:
            return
        _check_replaced_rows(cursor, pending)
        # This commit's statements merge their change into the counts per
        # group (``columns.MERGING``): set with the first statement below.
        # First the moved subtrees, in one statement: everything below
        # names the paths where the objects are now.  Rows written in full
        # (just below) carry their paths already.
        relocations = pending.relocations
        if relocations:
            cursor.execute(columns.MERGE_COUNTS)
            cursor.execute(*relocate_statement(relocations, list(pending.rows)))
        with cursor.connection.pipeline():
            # The rest in one round trip; an error is raised as it ends.
            if not relocations:
                cursor.execute(columns.MERGE_COUNTS)
            _write_rows(cursor, pending)
            _clear_rows(cursor, pending)
            cursor.execute(schema.BUMP_COUNTER)
        logger.debug(
            "catalog: %d rows written, %d patched, %d paths removed, %d moves",
            len(pending.rows),
            len(pending.patches),
            len(pending.removed_paths),
            len(pending.moves),
        )


def _write_rows(cursor, pending) -> None:
    """The rows written in full and the patches, and their texts, each
    statement with one plan kept (prepared, its generic plan forced, as
    ``connection.send_search`` runs a search's): its plan is the same for
    every value (each row by its key).  Planned for their values, as
    PostgreSQL did (its generic estimate of an ``unnest`` is ten rows, the
    custom one the arrays' length: the custom plan always looked cheaper),
    they cost 1.1 ms of planning a modification, of 2.5 ms of catalog SQL
    (``benchmarks/README.rst``, "Where a modification's time goes")."""
    if not (pending.rows or pending.patches):
        return
    conn = cursor.connection
    conn.execute(GENERIC_PLAN, prepare=True)
    if pending.rows:
        rows = list(pending.rows.values())
        arrays = row_arrays(rows)
        keeping = [row for row in rows if row.kept]
        # Whole rows: the trigger derives every column (a key stored once
        # that a row no longer has is written too: its column emptied).
        cursor.execute(_WHOLE_ROWS, ("on",))
        if keeping:
            whole = [row for row in rows if not row.kept]
            if whole:
                cursor.execute(_UPDATE_ROWS, row_arrays(whole), prepare=True)
            cursor.execute(_UPDATE_KEEPING, keeping_arrays(keeping), prepare=True)
        else:
            cursor.execute(_UPDATE_ROWS, arrays, prepare=True)
        cursor.execute(_WHOLE_ROWS, ("",))
        cursor.execute(_INSERT_ROWS, arrays, prepare=True)
    if pending.patches:
        patches = list(pending.patches.values())
        # The trigger derives the typed columns of the keys named, from
        # each row's new ``idx``: one statement per set of keys, so that
        # every row of a statement gives or removes each key named (a row
        # that named none of a key stored once, a list in its column only,
        # would have its column derived from nothing).
        patched: set[int] = set()
        with conn.cursor(row_factory=tuple_row) as updating:
            registry = None
            for keys, group in _by_keys(patches):
                if all(_values_only(patch) for patch in group):
                    if registry is None:
                        registry = columns.registered(updating)
                    done = _write_once(updating, keys, group, registry)
                    patched.update(done)
                    group = [patch for patch in group if patch.zoid not in done]
                    if not group:
                        continue
                updating.execute(_PATCHED_KEYS, (json.dumps(keys),))
                updating.execute(_PATCH_ROWS, patch_arrays(group), prepare=True)
                # Read at once (a round trip in the pipeline): only the
                # patches of objects without a row are sent again, below.
                # Sending every patch twice cost a sharing change on 1,000
                # items some 20 ms of psycopg's array dumping.
                patched.update(zoid for (zoid,) in updating.fetchall())
        cursor.execute(_PATCHED_KEYS, ("",))
        unpatched = [patch for patch in patches if patch.zoid not in patched]
        if unpatched:
            cursor.execute(_INSERT_PATCHED, patch_arrays(unpatched), prepare=True)
    texts, without = text_arrays([*pending.rows.values(), *pending.patches.values()])
    if texts[0]:
        cursor.execute(_WRITE_TEXTS, texts, prepare=True)
    if without:
        cursor.execute(_DELETE_TEXTS, (without,), prepare=True)
    conn.execute(PLAN_AS_BEFORE, prepare=True)


def _clear_rows(cursor, pending) -> None:
    """The rows of removed paths and cleared subtrees, and the positions of
    reordered items (planned for their values: a path's range may hold a
    few rows or the whole site)."""
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
            _CLEAR_WHERE.format(sql.SQL("{} AND {}").format(subtree, _STORED_SINCE)),
            (*params, since, [*kept, *zoids.tolist()]),
        )
        # A rebuild's last commit: when the site was last rebuilt.
        cursor.execute(schema.NOTE_REBUILD, (schema.rebuild_key(root),))
    for parent, (ids, names) in sorted(pending.positions.items()):
        for name in names:
            cursor.execute(_SET_POSITIONS, ([name], list(ids), parent, parent, [name]))


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
