"""Read-your-writes: a transaction's pending catalog changes as SQL.

Owns ``Overlay``: the row source that lays the changes a transaction has
made (``pending.PendingCatalog.overlay``) over the stored rows, so that a
search made before the commit sees them, as ZCatalog's searches do.  A
search reads it under the name ``layout.ROWS``, as it would read the table.

Pure: composes SQL, opens no connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.store.columns import derivable
from plone_pgcatalog.store.columns import derive
from plone_pgcatalog.store.columns import derived_columns
from plone_pgcatalog.store.columns import whole_idx
from plone_pgcatalog.store.jsonvalue import dumps
from plone_pgcatalog.store.layout import OBJECTS
from plone_pgcatalog.store.layout import ROWS
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.relocation import relocated_rows
from plone_pgcatalog.store.relocation import unmoved_clause
from plone_pgcatalog.store.schema import searchable_vector
from psycopg import sql
from psycopg.types.json import Jsonb

#: The fields of a pending row as ``jsonb_to_recordset`` reads them
#: (``CatalogRow.as_json``), and the vector of its SearchableText.
_PENDING_FIELDS = (
    "zoid bigint, path text, parent_path text, path_depth integer, idx jsonb,"
    " searchable_text text, text_config text"
)
_PENDING_VECTOR = searchable_vector(
    sql.SQL("p.searchable_text"), sql.SQL("p.text_config")
)


@dataclass(frozen=True)
class Overlay:
    """This transaction's catalog changes, which PostgreSQL has not seen.

    ``rows`` are JSON-ready dicts (zoid, path, parent_path, path_depth,
    idx, searchable_text, text_config) that replace the stored rows of the
    same zoids; ``patches`` (zoid, vals, removed, text_given,
    searchable_text, text_config) are merged into the stored rows of their
    zoids (partial reindexes); ``removed_paths`` and ``cleared_subtrees``
    hide stored rows, and so does ``kept_subtrees`` (``(root, kept zoids,
    tid)``, ``PendingCatalog.keep_only``): below ``root``, the stored rows
    of other zoids whose objects were stored at or before ``tid``.
    """

    rows: tuple[dict, ...] = ()
    patches: tuple[dict, ...] = ()
    #: pending rows, as ``rows``, with text indexes whose words the stored
    #: row of their zoid keeps (``kept``, a list; ``keep_text``: those of
    #: SearchableText; ``CatalogRow.kept``)
    keeping: tuple[dict, ...] = ()
    #: zoids of pending rows the search cannot find (``PendingCatalog.
    #: overlay``'s ``may_match``): their stored rows are hidden, no more
    replaced: tuple[int, ...] = ()
    removed_paths: tuple[str, ...] = ()
    cleared_subtrees: tuple[str, ...] = ()
    kept_subtrees: tuple[tuple[str, list[int], int], ...] = ()
    #: folders reordered in this transaction, and the new positions of
    #: their items: ``{item path: {position index name: position}}``
    reordered: tuple[str, ...] = ()
    positions: dict = field(default_factory=dict)
    #: subtrees moved in this transaction (``relocation.Relocation``):
    #: their stored rows are read where the transaction has put them
    relocations: tuple = ()

    def __bool__(self) -> bool:
        return bool(
            self.rows
            or self.patches
            or self.keeping
            or self.replaced
            or self.removed_paths
            or self.cleared_subtrees
            or self.kept_subtrees
            or self.reordered
            or self.relocations
        )

    def source(self, columns: dict | None = None) -> tuple[sql.Composable, tuple]:
        """A row source standing in for ``TABLE``, named ``ROWS``.

        Stored rows, minus those this transaction changed or removed, plus
        the pending rows, decoded from one JSON parameter.  PostgreSQL
        pushes the query's conditions into both branches, so the stored
        branch still uses the catalog's indexes.  ``columns`` (``{name:
        kind}``) are the typed columns the query may read: the stored
        branch reads them as stored, the others derive them from their
        ``idx`` as the table's trigger does (``store.columns``).
        """
        columns = derivable(columns or {})
        typed = sql.SQL("").join(
            sql.SQL(", ") + sql.Identifier(name) for name in sorted(columns)
        )
        gone = [sql.SQL("NOT path = ANY(%s)")]
        gone_params: list = [list(self.removed_paths)]
        for root in self.cleared_subtrees:
            clause, values = path_clause(root, -1)
            gone.append(sql.SQL("NOT ") + clause)
            gone_params += values
        replacing = [row["zoid"] for row in (*self.rows, *self.keeping)]
        replacing += self.replaced
        changed = replacing + [patch["zoid"] for patch in self.patches]
        # Rows of moved subtrees have a branch of their own (below); the
        # others are read as stored, which the indexes match.
        unmoved, unmoved_params = unmoved_clause(self.relocations)
        hidden = [sql.SQL("NOT zoid = ANY(%s::bigint[])"), unmoved, *gone]
        hidden_params = [changed, *unmoved_params, *gone_params]
        for root, kept, since in self.kept_subtrees:
            # Stored rows only: patched rows are kept at commit.  (Rows of
            # subtrees moved after ``keep_only`` in the same transaction
            # are shown where they moved; a rebuild ends its transaction.)
            clause, values = path_clause(root, -1)
            keep = (
                "NOT ({} AND NOT zoid = ANY(%s::bigint[]) AND EXISTS (SELECT 1"
                " FROM {} AS o WHERE o.zoid = {}.zoid AND o.tid <= %s))"
            )
            hidden.append(sql.SQL(keep).format(clause, OBJECTS, TABLE))
            hidden_params += [*values, kept, since]
        stored_rows = sql.SQL(
            "SELECT zoid, path, parent_path, path_depth, {} AS idx, searchable_text"
            "{} FROM {} WHERE {}{}"
        )
        if not self.reordered:
            branches = [
                stored_rows.format(
                    sql.SQL("idx"),
                    typed,
                    TABLE,
                    sql.SQL(" AND ").join(hidden),
                    sql.SQL(""),
                )
            ]
            params = list(hidden_params)
        else:
            # Items of reordered folders sort by their new positions; the
            # other rows keep ``idx`` as stored, which the indexes match.
            # Those items keep their stored columns too, but those of the
            # position indexes: a search's other conditions still use the
            # indexes in their branch (a search by UID after a reorder in a
            # folder of 1,500 items derived every column of each, 162 ms).
            names = {name for new in self.positions.values() for name in new}
            position_columns = sql.SQL("").join(
                sql.SQL(", ")
                + (
                    sql.SQL("COALESCE({}, {}) AS {}").format(
                        derive(
                            kind, sql.SQL("(n.new -> {})").format(sql.Literal(name))
                        ),
                        sql.Identifier(name),
                        sql.Identifier(name),
                    )
                    if name in names
                    else sql.Identifier(name)
                )
                for name, kind in sorted(columns.items())
            )
            branches = [
                stored_rows.format(
                    sql.SQL("idx"),
                    typed,
                    TABLE,
                    sql.SQL(" AND ").join(hidden),
                    sql.SQL(" AND NOT parent_path = ANY(%s)"),
                ),
                stored_rows.format(
                    sql.SQL("idx || n.new"),
                    position_columns,
                    sql.SQL(
                        "{} CROSS JOIN LATERAL (SELECT"
                        " COALESCE(%s::jsonb -> path, '{{}}'::jsonb) AS new) AS n"
                    ).format(TABLE),
                    sql.SQL(" AND ").join(hidden),
                    sql.SQL(" AND parent_path = ANY(%s)"),
                ),
            ]
            reordered = list(self.reordered)
            params = [
                *hidden_params,
                reordered,
                Jsonb(self.positions, dumps),
                *hidden_params,
                reordered,
            ]
        patch_columns = (
            "p(zoid bigint, vals jsonb, removed text[], text_given boolean,"
            " searchable_text text, text_config text)"
        )
        patch_vector = searchable_vector(
            sql.SQL("p.searchable_text"), sql.SQL("p.text_config")
        )
        if self.patches:
            # Partial reindexes: stored rows with the new values merged in.
            branches.append(
                _derived(
                    sql.SQL(
                        "SELECT o.zoid, o.path, o.parent_path, o.path_depth,"
                        " ({whole} - p.removed) || p.vals AS idx,"
                        " CASE WHEN p.text_given THEN {vector}"
                        " ELSE o.searchable_text END"
                        " FROM {table} AS o JOIN jsonb_to_recordset(%s) AS"
                        " {patch_columns} ON p.zoid = o.zoid"
                        " WHERE {unmoved} AND {gone}"
                    ).format(
                        whole=whole_idx(sql.SQL("o"), columns),
                        table=TABLE,
                        vector=patch_vector,
                        patch_columns=sql.SQL(patch_columns),
                        unmoved=unmoved,
                        gone=sql.SQL(" AND ").join(gone),
                    ),
                    columns,
                )
            )
            params += [Jsonb(list(self.patches), dumps), *unmoved_params, *gone_params]
        if self.relocations:
            # Stored rows of moved subtrees, at their new paths, with their
            # partial reindexes and new positions merged in.
            moved, moved_params = relocated_rows(self.relocations, columns)
            branches.append(
                _derived(
                    sql.SQL(
                        "SELECT m.zoid, m.path, m.parent_path, m.path_depth,"
                        " (CASE WHEN p.zoid IS NULL THEN m.idx"
                        " ELSE (m.idx - p.removed) || p.vals END)"
                        " || COALESCE(%s::jsonb -> m.path, '{{}}'::jsonb) AS idx,"
                        " CASE WHEN p.text_given THEN {vector}"
                        " ELSE m.searchable_text END"
                        " FROM ({moved}) AS m LEFT JOIN jsonb_to_recordset(%s) AS"
                        " {patch_columns} ON p.zoid = m.zoid"
                        " WHERE NOT m.zoid = ANY(%s::bigint[]) AND {gone}"
                    ).format(
                        vector=patch_vector,
                        moved=moved,
                        patch_columns=sql.SQL(patch_columns),
                        # ``path`` is the moved row's: the patches have none.
                        gone=sql.SQL(" AND ").join(gone),
                    ),
                    columns,
                )
            )
            params += [
                Jsonb(self.positions, dumps),
                *moved_params,
                Jsonb(list(self.patches), dumps),
                replacing,
                *gone_params,
            ]
        if self.rows:
            # Pending rows; none where the search can find none of them
            # (``replaced``: their stored rows are hidden, no more).
            pending = sql.SQL(
                'SELECT p.zoid, p.path COLLATE "C", p.parent_path COLLATE "C",'
                " p.path_depth, p.idx, {vector}"
                " FROM jsonb_to_recordset(%s) AS p(" + _PENDING_FIELDS + ")"
            ).format(vector=_PENDING_VECTOR)
            branches.append(_derived(pending, columns))
            params.append(Jsonb(list(self.rows), dumps))
        if self.keeping:
            # Pending rows that keep words of the stored row, if any.
            keeping = sql.SQL(
                'SELECT p.zoid, p.path COLLATE "C", p.parent_path COLLATE "C",'
                " p.path_depth, COALESCE((SELECT jsonb_object_agg(e.key, e.value)"
                " FROM jsonb_each(o.idx) AS e WHERE p.kept ? e.key), '{{}}'::jsonb)"
                " || p.idx, CASE WHEN p.keep_text THEN o.searchable_text"
                " ELSE {vector} END"
                " FROM jsonb_to_recordset(%s) AS p(" + _PENDING_FIELDS + ","
                " kept jsonb, keep_text boolean)"
                " LEFT JOIN {table} AS o ON o.zoid = p.zoid"
            ).format(vector=_PENDING_VECTOR, table=TABLE)
            branches.append(_derived(keeping, columns))
            params.append(Jsonb(list(self.keeping), dumps))
        source = sql.SQL("({}) AS {}").format(
            sql.SQL(" UNION ALL ").join(branches), ROWS
        )
        return source, tuple(params)


def _derived(rows: sql.Composable, columns: dict) -> sql.Composable:
    """``rows`` (the table's columns without the typed ones) with the typed
    ``columns`` derived from their ``idx``."""
    if not columns:
        return rows
    return sql.SQL(
        "SELECT b.zoid, b.path, b.parent_path, b.path_depth, b.idx,"
        " b.searchable_text, {} FROM ({}) AS"
        " b(zoid, path, parent_path, path_depth, idx, searchable_text)"
    ).format(sql.SQL(", ").join(derived_columns(columns, sql.SQL("b.idx"))), rows)
