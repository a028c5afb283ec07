"""Subtrees moved in one transaction, as set-based SQL over stored rows.

Owns: turning the moves and renames of a transaction (``(old root, new
root)`` in the order they happened) into ``Relocation`` entries that say,
for rows as PostgreSQL stores them, where they are now; and the SQL that
applies them: one ``UPDATE`` at commit (``relocate_statement``), and the same
mapping as a row source for searches made before the commit
(``relocated_rows``).

Why a composition and not one statement per move: before the commit,
searches must see stored rows where the transaction has put them, which
may take several moves (a folder renamed twice, a subtree moved into a
folder that moves next).  A stored row at path ``p`` is at ``final +
p[len(stored):]`` for the relocation with the longest ``stored`` prefix of
``p``; rows under no ``stored`` prefix did not move.

Rows the transaction catalogs in full are written with their current path
and are left out of the relocation (a new object may take a path a moved
one had).

Pure: no database, no Zope objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.paths import path_depth
from plone_pgcatalog.store.columns import whole_idx
from plone_pgcatalog.store.layout import TABLE
from psycopg import sql
from psycopg.types.json import Jsonb


@dataclass(frozen=True)
class Relocation:
    """Stored rows at and below ``stored`` now lie at and below ``final``."""

    stored: str
    final: str

    def as_json(self) -> dict:
        return {
            "stored": self.stored,
            "final": self.final,
            "final_parent": parent_of(self.final),
            "delta": path_depth(self.final) - path_depth(self.stored),
        }


def parent_of(path: str) -> str:
    """The parent path, as extraction stores it (``/`` for a top item)."""
    return path.rsplit("/", 1)[0] or "/"


def moved_path(path: str, old: str, new: str) -> str | None:
    """``path`` after moving ``old`` to ``new``; None if it is not below."""
    if path == old:
        return new
    if path.startswith(old + "/"):
        return new + path[len(old) :]
    return None


def _strictly_below(path: str, root: str) -> bool:
    return path.startswith(root + "/")


def compose(moves: Iterable[tuple[str, str]]) -> tuple[Relocation, ...]:
    """The net effect of ``moves`` on stored rows (see module docstring)."""
    mapping: list[list[str]] = []  # [stored prefix, where it is now]
    for old, new in moves:
        before = [tuple(entry) for entry in mapping]
        inner_moves = []
        for entry in mapping:
            stored, current = entry
            moved = moved_path(current, old, new)
            if moved is not None:
                entry[1] = moved
            elif _strictly_below(old, current):
                # A folder inside a subtree moved earlier: its stored rows
                # lie below the matching part of the earlier stored prefix.
                inner_moves.append([stored + old[len(current) :], new])
        for inner in inner_moves:
            if not any(s == inner[0] for s, _ in mapping):
                mapping.append(inner)
        # Stored rows still at ``old``: those under no earlier prefix that
        # contains ``old`` (rows under such a prefix were moved elsewhere).
        if not any(old == s or _strictly_below(old, s) for s, _ in before):
            mapping.append([old, new])
    return tuple(Relocation(stored, final) for stored, final in mapping)


def relocate(path: str, relocations: Iterable[Relocation]) -> str:
    """Where a row stored at ``path`` is now."""
    best = None
    for relocation in relocations:
        if path == relocation.stored or _strictly_below(path, relocation.stored):
            if best is None or len(relocation.stored) > len(best.stored):
                best = relocation
    if best is None:
        return path
    return best.final + path[len(best.stored) :]


def unmoved_clause(relocations: Iterable[Relocation]) -> tuple[sql.Composable, list]:
    """Stored rows that no relocation touches (index-served conditions)."""
    parts, params = [], []
    for relocation in relocations:
        clause, values = path_clause(relocation.stored, -1)
        parts.append(sql.SQL("NOT ") + clause)
        params += values
    if not parts:
        return sql.SQL("TRUE"), []
    return sql.SQL(" AND ").join(parts), params


def _within(relocations) -> tuple[sql.Composable, list]:
    """Stored rows below any relocated prefix, as conditions the B-tree on
    ``path`` serves (the join below picks the longest prefix per row)."""
    parts, params = [], []
    for relocation in relocations:
        clause, values = path_clause(relocation.stored, -1)
        parts.append(clause)
        params += values
    return sql.SQL("(") + sql.SQL(" OR ").join(parts) + sql.SQL(")"), params


# Each stored row below a relocated prefix, with the longest such prefix:
# ``zoid`` and its path, parent path and depth where the row is now.
_MATCHES = sql.SQL(
    "SELECT DISTINCT ON (s.zoid) s.zoid,"
    ' (r.final || substr(s.path, length(r.stored) + 1)) COLLATE "C" AS path,'
    " (CASE WHEN s.path = r.stored THEN r.final_parent"
    " ELSE r.final || substr(s.parent_path, length(r.stored) + 1) END)"
    ' COLLATE "C" AS parent_path,'
    " s.path_depth + r.delta AS path_depth{extra}"
    " FROM {table} AS s JOIN jsonb_to_recordset(%s) AS"
    " r(stored text, final text, final_parent text, delta integer)"
    ' ON s.path = r.stored COLLATE "C"'
    " OR (s.path >= (r.stored || '/') COLLATE \"C\""
    " AND s.path < (r.stored || '0') COLLATE \"C\")"
    " WHERE {within}{excluded}"
    " ORDER BY s.zoid, length(r.stored) DESC"
)


def relocate_statement(
    relocations: tuple[Relocation, ...], keep: list[int]
) -> tuple[sql.Composed, tuple]:
    """The commit's ``UPDATE`` moving the stored rows of relocated subtrees,
    except the zoids ``keep`` (rows written in full by the same commit
    carry their current path)."""
    within, within_params = _within(relocations)
    matches = _MATCHES.format(
        table=TABLE,
        extra=sql.SQL(""),
        within=within,
        excluded=sql.SQL(" AND NOT s.zoid = ANY(%s::bigint[])"),
    )
    statement = sql.SQL(
        "UPDATE {} AS o SET path = m.path, parent_path = m.parent_path,"
        " path_depth = m.path_depth FROM ({}) AS m WHERE o.zoid = m.zoid"
    ).format(TABLE, matches)
    params = (Jsonb([r.as_json() for r in relocations]), *within_params, keep)
    return statement, params


#: Up to this many relocations a search reads the moved rows by ``CASE``
#: tests (``relocated_rows``); more (a paste of many items, each a
#: relocation of its own) by the join ``relocate_statement`` uses: the
#: tests take 19 parameters a relocation, PostgreSQL takes 65,535 at
#: most (about 3,000 items), and they are tried in turn for each row
#: (3,000 relocations: 19.5 s against 1.45 s for the join; helper-35).
CASE_RELOCATIONS = 8


def relocated_rows(
    relocations: tuple[Relocation, ...], columns: dict[str, str]
) -> tuple[sql.Composed, list]:
    """The stored rows of relocated subtrees where they are now:
    ``zoid, path, parent_path, path_depth, idx, searchable_text``, ``idx``
    with every value (``columns.whole_idx`` of the ready ``columns``).

    The longest relocated prefix of a row is the first of those ``CASE``
    tests, longest first: the same mapping as ``relocate_statement``'s,
    without its join.  A search reads this in every statement it makes
    before the commit, which PostgreSQL plans each time: the join took
    1.7 ms to plan (twice in a search: its window and its count), this
    0.13 ms.  Beyond ``CASE_RELOCATIONS``, the join."""
    if len(relocations) > CASE_RELOCATIONS:
        return _joined_rows(relocations, columns)
    ordered = sorted(relocations, key=lambda r: len(r.stored), reverse=True)
    paths, parents, depths = [], [], []
    params: dict[str, list] = {"path": [], "parent": [], "depth": []}
    for relocation in ordered:
        moved = relocation.as_json()
        within, values = path_clause(relocation.stored, -1)
        rest = sql.SQL("substr({}, %s)")
        paths.append(
            sql.SQL("WHEN {} THEN %s || {}").format(
                within, rest.format(sql.SQL("s.path"))
            )
        )
        params["path"] += [*values, moved["final"], len(relocation.stored) + 1]
        parents.append(
            sql.SQL("WHEN s.path = %s THEN %s WHEN {} THEN %s || {}").format(
                within, rest.format(sql.SQL("s.parent_path"))
            )
        )
        params["parent"] += [
            relocation.stored,
            moved["final_parent"],
            *values,
            moved["final"],
            len(relocation.stored) + 1,
        ]
        depths.append(sql.SQL("WHEN {} THEN %s").format(within))
        params["depth"] += [*values, moved["delta"]]
    within, within_params = _within(relocations)
    statement = sql.SQL(
        'SELECT s.zoid, (CASE {paths} END) COLLATE "C" AS path,'
        ' (CASE {parents} END) COLLATE "C" AS parent_path,'
        " s.path_depth + (CASE {depths} END) AS path_depth,"
        " {idx} AS idx, s.searchable_text FROM {table} AS s WHERE {within}"
    ).format(
        paths=sql.SQL(" ").join(paths),
        parents=sql.SQL(" ").join(parents),
        depths=sql.SQL(" ").join(depths),
        idx=whole_idx(sql.SQL("s"), columns),
        table=TABLE,
        within=within,
    )
    return statement, [
        *params["path"],
        *params["parent"],
        *params["depth"],
        *within_params,
    ]


def _joined_rows(
    relocations: tuple[Relocation, ...], columns: dict[str, str]
) -> tuple[sql.Composed, list]:
    """``relocated_rows`` by a join of the rows with the relocations (one
    JSON parameter), each row with its longest prefix (``_MATCHES``)."""
    within, within_params = _within(relocations)
    statement = _MATCHES.format(
        table=TABLE,
        extra=sql.SQL(", {} AS idx, s.searchable_text").format(
            whole_idx(sql.SQL("s"), columns)
        ),
        within=within,
        excluded=sql.SQL(""),
    )
    return statement, [Jsonb([r.as_json() for r in relocations]), *within_params]
