"""The catalog changes of one ZODB transaction, waiting for its commit.

Owns: ``PendingCatalog``, joined to the transaction as a data manager so
that savepoints, savepoint rollback and abort apply to catalog changes
exactly as they apply to objects.  The state processor reads it during the
commit; nothing else is written anywhere until then.

Must not touch SQL or connections (``overlay()`` describes the changes
for ``overlay.Overlay``, which builds the SQL).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from dataclasses import replace
from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import CatalogRow
from plone_pgcatalog.paths import in_subtree
from plone_pgcatalog.store.overlay import Overlay
from plone_pgcatalog.store.relocation import compose
from plone_pgcatalog.store.relocation import moved_path
from plone_pgcatalog.store.relocation import Relocation
from transaction.interfaces import IDataManagerSavepoint
from transaction.interfaces import ISavepointDataManager
from zope.interface import implementer

import transaction

_KEY = "plone_pgcatalog.pending"


@implementer(ISavepointDataManager)
class PendingCatalog:
    """Rows to write and paths to remove when the transaction commits."""

    transaction_manager = None

    def __init__(self, txn: transaction.interfaces.ITransaction):
        self.txn = txn
        self.rows: dict[int, CatalogRow] = {}
        #: partial reindexes of rows not pending in full, merged at commit
        self.patches: dict[int, CatalogPatch] = {}
        self.removed_paths: set[str] = set()
        #: subtrees whose rows are cleared unless cataloged again
        self.cleared_subtrees: set[str] = set()
        #: subtrees whose stored rows are cleared unless their zoid is kept
        #: or cataloged again: root -> (kept zoids, tid; see ``keep_only``)
        self.kept_subtrees: dict[str, tuple[array, int]] = {}
        #: zoids whose rows the state processor wrote with the object state
        self.written: set[int] = set()
        #: folders whose items' positions are rewritten at commit:
        #: path -> (folder, names of the position indexes)
        self.reordered: dict[str, tuple] = {}
        #: path -> ids in order, read from ``reordered`` just before commit
        self.positions: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        #: folders whose next "container modified" event is an appended item
        self.added: set[str] = set()
        #: subtrees moved or renamed, ``(old root, new root)`` in order
        self.moves: list[tuple[str, str]] = []
        #: zoid -> path of the stored rows that rows and patches of objects
        #: the commit does not store replace, as this transaction read them
        #: (None: not cataloged); read just before the commit
        self.read_paths: dict[int, str | None] = {}
        txn.addBeforeCommitHook(self._read_positions)

    # -- what the tool records ------------------------------------------------

    def catalog(self, row: CatalogRow) -> None:
        """Catalog an object in full.

        A text index it gives no string keeps the words it had (``kept``):
        those a change of this transaction gave it, else the stored ones;
        none where this transaction uncataloged it (ZCatalog makes a new
        record then).
        """
        if row.kept:
            earlier = self.rows.get(row.zoid) or self.patches.get(row.zoid)
            if earlier is not None:
                row = row.after(earlier)
            if row.kept and self.uncataloged(row.path):
                row = replace(row, kept=())
        self.rows[row.zoid] = row
        self.patches.pop(row.zoid, None)  # the full row supersedes it

    def anew(self, zoid: int) -> None:
        """The pending row of ``zoid`` is a new record, as ZCatalog makes
        after clearing the catalog (a rebuild here replaces each row
        without clearing first): it keeps no words of the stored row."""
        row = self.rows.get(zoid)
        if row is not None and row.kept:
            self.rows[zoid] = replace(row, kept=())

    def patch(self, patch: CatalogPatch) -> None:
        """Merge some index values into a row (``reindexObject(idxs=...)``).

        An object this transaction uncataloged has no row to merge into:
        as ZCatalog makes a new record then, it is cataloged again with
        only the reindexed values (and the patch's metadata).
        """
        if patch.zoid in self.rows:
            self.rows[patch.zoid] = patch.merged_into(self.rows[patch.zoid])
        elif patch.zoid in self.patches:
            self.patches[patch.zoid] = self.patches[patch.zoid].then(patch)
        elif self.uncataloged(patch.path):
            self.catalog(patch.as_new_row())
        else:
            self.patches[patch.zoid] = patch

    def uncataloged(self, path: str) -> bool:
        """Whether this transaction uncataloged ``path``, alone or in a
        subtree, without cataloging it again."""
        if path in self.removed_paths:
            return True
        return any(in_subtree(path, root) for root in self.cleared_subtrees)

    def uncatalog(self, path: str) -> None:
        """Forget the object at ``path``; its row is cleared at commit."""
        for zoid in [z for z, row in self.rows.items() if row.path == path]:
            del self.rows[zoid]
        for zoid in [z for z, patch in self.patches.items() if patch.path == path]:
            del self.patches[zoid]
        self.removed_paths.add(path)

    def uncatalog_subtree(self, path: str) -> None:
        """Forget every object at and below ``path`` (a catalog clear)."""
        below = path.rstrip("/") + "/"
        for zoid in [
            z
            for z, row in self.rows.items()
            if row.path == path or row.path.startswith(below)
        ]:
            del self.rows[zoid]
        for zoid in [
            z
            for z, patch in self.patches.items()
            if patch.path == path or patch.path.startswith(below)
        ]:
            del self.patches[zoid]
        self.cleared_subtrees.add(path)

    def keep_only(self, root: str, zoids: Iterable[int], unchanged_since: int) -> None:
        """Clear, at commit, the stored rows at and below ``root`` except
        those of ``zoids`` and of objects cataloged in this transaction
        (a rebuild's end: rows it did not write are of objects that no
        longer exist or are no longer cataloged).

        Only rows of objects whose state was last stored at or before the
        transaction ``unchanged_since`` are cleared: an object another
        transaction created or changed later (while a batched rebuild ran)
        has a row that transaction wrote, which stays.
        """
        self.kept_subtrees[root] = (array("q", zoids), int(unchanged_since))

    def move(self, old: str, new: str) -> None:
        """The subtree at ``old`` now lies at ``new`` (a move or rename).

        Stored rows follow at commit, in one statement (``relocation``);
        everything recorded here so far names paths as they were, so it
        is rewritten to where those objects are now.  Paths recorded from
        now on are current paths.
        """

        def now(path: str) -> str:
            moved = moved_path(path, old, new)
            return path if moved is None else moved

        self.rows = {z: replace(r, path=now(r.path)) for z, r in self.rows.items()}
        self.patches = {
            z: replace(p, path=now(p.path)) for z, p in self.patches.items()
        }
        self.removed_paths = {now(path) for path in self.removed_paths}
        self.cleared_subtrees = {now(path) for path in self.cleared_subtrees}
        self.kept_subtrees = {now(p): kept for p, kept in self.kept_subtrees.items()}
        self.reordered = {now(path): v for path, v in self.reordered.items()}
        self.added = {now(path) for path in self.added}
        self.moves.append((old, new))

    @property
    def relocations(self) -> tuple[Relocation, ...]:
        """Where the stored rows of moved subtrees are now."""
        return compose(self.moves)

    def reorder(self, folder, index_names: tuple[str, ...]) -> None:
        """Rewrite the positions of ``folder``'s items when committing."""
        path = "/".join(folder.getPhysicalPath())
        self.reordered[path] = (folder, index_names)

    def mark_added(self, folder) -> None:
        """An item was appended to ``folder`` (see ``ordering``)."""
        self.added.add("/".join(folder.getPhysicalPath()))

    def take_added(self, folder) -> bool:
        """Whether ``folder``'s last change was an appended item (once)."""
        path = "/".join(folder.getPhysicalPath())
        if path in self.added:
            self.added.discard(path)
            return True
        return False

    def _read_positions(self) -> None:
        # The final order, read before the commit stores anything.
        self.positions = {
            path: (tuple(folder.getOrdering().idsInOrder()), names)
            for path, (folder, names) in self.reordered.items()
        }

    def __bool__(self) -> bool:
        return bool(
            self.rows
            or self.patches
            or self.removed_paths
            or self.cleared_subtrees
            or self.kept_subtrees
            or self.reordered
            or self.moves
        )

    def overlay(
        self,
        reads: Collection[str] | None = None,
        may_match: Callable[[dict], bool] | None = None,
    ) -> Overlay:
        """These changes as searches made before the commit must see them.

        Positions are read from the reordered folders now: the commit
        writes them, and ZCatalog reads them from the folders whenever it
        sorts.

        ``reads``: the names of the indexes a search tests or sorts on.  A
        partial reindex of none of them is left out: the stored row gives
        the search what the patched one would (its metadata comes from the
        pending changes anyway, ``results``).  PostgreSQL merges each
        patch into its row for every search, which after a
        ``reindexIndex`` of 2,000 objects cost every search of the
        transaction 0.2 s.

        ``may_match(idx)``: False for the ``idx`` of a row the search
        cannot find (``query.row_test``).  Such a pending row is left
        out, its stored row still hidden: a search by UID made while
        thousands of new rows wait for the commit (an import) reads the
        one it finds, not all of them (some 0.03 ms a row, for every
        search).

        With ``reads``, a pending row (and a patch) carries only the values
        of those indexes, and its text only if SearchableText is one of
        them: translators read their own index's values only
        (``IIndexTranslator``), and every row laid over is encoded,
        sent and decoded for each search (``object_provides`` alone is
        some fifty names a row).  Likewise the new positions of reordered
        folders are laid over only for a search that reads a position
        index (a listing sorted on ``getObjPositionInParent``): after a
        reorder in a folder of 1,500 items, a search by UID laid over all
        of them, 162 ms instead of 1.2.
        """
        positions: dict[str, dict] = {}
        reordered = []
        for folder_path, (folder, names) in self.reordered.items():
            if reads is not None:
                names = tuple(name for name in names if name in reads)
                if not names:
                    continue  # the search reads no position
            reordered.append(folder_path)
            for position, id in enumerate(folder.getOrdering().idsInOrder()):
                positions[f"{folder_path}/{id}"] = {name: position for name in names}
        rows = []
        keeping = []
        replaced: list[int] = []
        for row in self.rows.values():
            if (
                may_match is not None
                and row.path not in positions
                and not may_match(row.idx)
            ):
                replaced.append(row.zoid)
                continue
            data = row.as_json()
            kept = row.kept
            if reads is not None:
                idx = row.idx
                data["idx"] = {name: idx[name] for name in reads if name in idx}
                if "SearchableText" not in reads:
                    data["searchable_text"] = None
                kept = tuple(name for name in kept if name in reads)
            if data["path"] in positions:
                data["idx"] = {**data["idx"], **positions[data["path"]]}
            if kept:
                # Words of the stored row, read there (``Overlay.keeping``).
                data["kept"] = list(kept)
                data["keep_text"] = "SearchableText" in kept
                keeping.append(data)
            else:
                rows.append(data)
        patches = []
        left_out: list[int] = []
        for patch in self.patches.values():
            if (
                reads is not None
                and patch.path not in positions
                and not patch.changes_any(reads)
            ):
                left_out.append(patch.zoid)
                continue
            data = patch.as_json()
            if reads is not None:
                values = patch.values
                data["vals"] = {name: values[name] for name in reads if name in values}
                if "SearchableText" not in reads:
                    data["text_given"], data["searchable_text"] = False, None
            if patch.path in positions:
                data["vals"] = {**data["vals"], **positions[patch.path]}
            patches.append(data)
        return Overlay(
            rows=tuple(rows),
            patches=tuple(patches),
            keeping=tuple(keeping),
            replaced=tuple(replaced),
            removed_paths=tuple(sorted(self.removed_paths)),
            cleared_subtrees=tuple(sorted(self.cleared_subtrees)),
            # The commit keeps the rows of patched objects below a kept
            # subtree (``processor``): so does the stored row of a patch
            # left out.
            kept_subtrees=tuple(
                (root, zoids.tolist() + left_out, since)
                for root, (zoids, since) in sorted(self.kept_subtrees.items())
            ),
            reordered=tuple(sorted(reordered)),
            positions=positions,
            relocations=self.relocations,
        )

    # -- IDataManager ---------------------------------------------------------

    def abort(self, txn) -> None:
        self._clear()

    def tpc_begin(self, txn) -> None:
        pass

    def commit(self, txn) -> None:
        pass

    def tpc_vote(self, txn) -> None:
        pass

    def tpc_finish(self, txn) -> None:
        self._clear()

    def tpc_abort(self, txn) -> None:
        self._clear()

    def sortKey(self) -> str:
        return "~plone_pgcatalog.pending"

    def savepoint(self) -> PendingSavepoint:
        return PendingSavepoint(self)

    def _clear(self) -> None:
        self.rows.clear()
        self.patches.clear()
        self.removed_paths.clear()
        self.cleared_subtrees.clear()
        self.kept_subtrees.clear()
        self.written.clear()
        self.reordered.clear()
        self.positions.clear()
        self.added.clear()
        self.moves.clear()
        self.read_paths.clear()


@implementer(IDataManagerSavepoint)
class PendingSavepoint:
    """Restores the pending changes as they were when it was taken."""

    def __init__(self, pending: PendingCatalog):
        self.pending = pending
        self.rows = dict(pending.rows)
        self.patches = dict(pending.patches)
        self.removed_paths = set(pending.removed_paths)
        self.cleared_subtrees = set(pending.cleared_subtrees)
        self.kept_subtrees = dict(pending.kept_subtrees)  # values never change
        self.reordered = dict(pending.reordered)
        self.added = set(pending.added)
        self.moves = list(pending.moves)
        # ``written`` and ``positions`` belong to the commit, not before it.

    def rollback(self) -> None:
        self.pending.rows = dict(self.rows)
        self.pending.patches = dict(self.patches)
        self.pending.removed_paths = set(self.removed_paths)
        self.pending.cleared_subtrees = set(self.cleared_subtrees)
        self.pending.kept_subtrees = dict(self.kept_subtrees)
        self.pending.reordered = dict(self.reordered)
        self.pending.added = set(self.added)
        self.pending.moves = list(self.moves)


def current_pending() -> PendingCatalog | None:
    """The pending catalog changes of this thread's current transaction,
    if it has any."""
    try:
        return transaction.get().data(_KEY)
    except KeyError:
        return None


def pending_changes(
    read_stored_paths: Callable[[PendingCatalog], None],
) -> PendingCatalog:
    """The pending catalog changes of this thread's current transaction,
    created on first use: the one way to create them.

    A new store joins the transaction (savepoints, abort) and, before the
    commit, reads the final positions of reordered folders, then calls
    ``read_stored_paths(pending)`` (the tool reads there where the rows its
    catalog-only writes replace are stored, ``PendingCatalog.read_paths``).
    Whichever change comes first in a transaction, the same hooks are set.
    """
    pending = current_pending()
    if pending is None:
        txn = transaction.get()
        pending = PendingCatalog(txn)
        txn.addBeforeCommitHook(read_stored_paths, (pending,))
        txn.join(pending)
        txn.set_data(_KEY, pending)
    return pending
