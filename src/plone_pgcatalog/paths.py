"""ExtendedPathIndex queries over the catalog's path columns.

Owns: the ``path`` query (one or many paths, ``operator``, ``depth``,
``navtree``, ``navtree_start``, ``level``) with the semantics of
``Products.ExtendedPathIndex`` (``search`` and ``query_index``), and
``path_clause``, the SQL for "this path and what lies below it" that the
site confinement and the write path use.  Paths live in the ``path``,
``parent_path`` and ``path_depth`` columns, not in ``idx``.

How ExtendedPathIndex answers one path at ``level`` (levels count path
elements from 0: ``/plone`` is at level 0 and has ``path_depth`` 1):

- ``level`` 0 with ``depth`` 0 or 1 looks the path string up as given
  (a missing leading "/" is added, a trailing "/" finds nothing): the
  object itself, or its children.  With ``navtree`` the same is done for
  every ancestor of the path from ``navtree_start`` elements on: the
  breadcrumbs (depth 0) or the children of each ancestor (depth 1).
- Otherwise the path elements are matched at ``level`` and the levels
  after it; ``depth`` N keeps the matches and what lies at most N levels
  below them (-1: everything below, other negative values: the same).  At
  level 0 the elements the path shares with the index's own physical path
  are not compared ("all paths share the site's path"), which also shifts
  the start level of a navtree.
- ``navtree`` turns ``depth`` -1 into 1 and adds the ancestors of the
  path from level ``navtree_start`` on; with ``depth`` > 0 it also adds
  every object whose level lies between ``navtree_start`` and the start
  level, anywhere in the site.  A ``navtree_start`` deeper than the
  deepest object, or than the path plus ``depth``, gives nothing.
- ``level`` < 0 is the union of the searches at every level from 0 to
  the deepest level of the catalog.
- Several paths are united (``or``) or intersected (``and``); a path
  whose search yields no result set at all (a negative depth other than -1
  on the site path) is left out of either.

Where this differs, knowingly, from ExtendedPathIndex:

- its ``_depth`` (deepest level) is a high-water mark that deleting the
  deepest objects does not lower; here it is the site's deepest stored row;
- it takes a level that no object ends at, between two levels that do,
  for "everything below"; that needs a level of uncataloged containers
  with no cataloged sibling anywhere in the site, and is not reproduced;
- values it would trip over (non-integer depth or level, a path that is
  not a string) raise ``QueryError`` naming the index, also where its
  shortcuts would have answered first; so does a navtree at every level
  (``level`` < 0) of an empty path with a depth below -1, which it answers
  with an error or with nothing, depending on the content.

Pure: no database, no Zope objects beyond the index definition; must not
import ``query`` (which imports this module).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.store import layout
from psycopg import sql
from zope.interface import implementer

#: A ``path_depth`` bound that stands for "no limit" (PostgreSQL's int4 max).
NO_LIMIT = 2**31 - 1

#: The path elements of a row, as one array: ``'', 'plone', 'a', ...``.
#: Served by the GIN index ``pgcatalog_path_elements`` (schema.py).
_ELEMENTS = sql.SQL("string_to_array(path, '/')")


@implementer(IIndexTranslator)
class PathTranslator:
    """ExtendedPathIndex (and PathIndex) over the ``path`` columns.

    ``path`` is the physical path; ``parent_path`` and ``path_depth`` are
    derived from it at write time so that children, ancestors and depth
    limits are plain B-tree lookups.
    """

    column_kind = None  # the path columns are the table's own

    def sql_indexes(self, index_name: str) -> list[tuple]:
        # The path columns have their indexes in ``schema.BASE_DDL``.
        return []

    query_options = ("query", "level", "operator", "depth", "navtree", "navtree_start")

    def extract(self, index, obj):
        return MISSING  # stored in the path columns, not in idx

    def where(self, index, query, context=None):
        search = PathSearch.from_query(index, query, context)
        found = [search.rows(path, level) for path, level in search.keys(query.keys)]
        # ExtendedPathIndex combines with BTrees' union/intersection, for
        # which a missing set (None) is neutral.
        found = [rows for rows in found if rows is not None]
        if not found:
            return sql.SQL("FALSE"), []
        if query.operator == "and" and len(found) > 1:
            parts = [rows.sql() for rows in found]
            return (
                sql.SQL(" AND ").join(
                    sql.SQL("(") + part + sql.SQL(")") for part, _ in parts
                ),
                [param for _, params in parts for param in params],
            )
        union = Rows()
        for rows in found:
            union.add(rows)
        return union.sql()

    def finds_few(self, index, clause, context=None) -> bool:
        """Whether ``clause`` (of ``where``) finds rows by a key that holds
        few of them for any value: one object, or one folder's items
        (``query.SearchSQL.plan_kept``)."""
        return clause == OBJECT or clause == CHILDREN

    def sort_expressions(self, index, context=None):
        # ZCatalog sorts on the physical path string, by code point.
        return [sql.SQL("path")]

    def sort_presence(self, index):
        return None  # every cataloged row has a path


@dataclass
class Rows:
    """The rows one or more path keys select: a union of index-served parts.

    The parts stay apart until rendered so that the keys of one query
    merge: the ``path =`` and the ``parent_path =`` tests of several paths
    become one ``= ANY(%s)`` each, with one array parameter, whatever the
    number of paths.
    """

    everything: bool = False
    #: rows at these paths
    paths: set[str] = field(default_factory=set)
    #: rows whose parent is one of these paths
    parents: set[str] = field(default_factory=set)
    #: (path, min depth, max depth): the path and what lies below it,
    #: ``path_depth`` between the bounds
    subtrees: list[tuple[str, int, int]] = field(default_factory=list)
    #: (min depth, max depth): rows anywhere in the site at these depths
    depths: list[tuple[int, int]] = field(default_factory=list)
    #: any other condition, with its parameters
    clauses: list[tuple[sql.Composable, list]] = field(default_factory=list)

    def add(self, other: Rows) -> None:
        self.everything |= other.everything
        self.paths |= other.paths
        self.parents |= other.parents
        self.subtrees += [s for s in other.subtrees if s not in self.subtrees]
        self.depths += [d for d in other.depths if d not in self.depths]
        self.clauses += other.clauses

    def sql(self) -> tuple[sql.Composable, list]:
        if self.everything:
            return sql.SQL("TRUE"), []
        parts: list[sql.Composable] = []
        params: list = []
        for column, values in (("path", self.paths), ("parent_path", self.parents)):
            if len(values) == 1:
                parts.append(sql.SQL(column + " = %s"))
                params += values
            elif values:
                parts.append(sql.SQL(column + " = ANY(%s)"))
                params.append(sorted(values))
        # Subtrees stay one range each: a range join against an array is
        # never planned as index lookups, and a subquery on the table
        # would miss the transaction's pending rows (overlay.Overlay).
        for path, low, high in self.subtrees:
            clause, values = path_clause(path, -1)
            if low > path_depth(path):
                clause += sql.SQL(" AND path_depth BETWEEN %s AND %s")
                values += [low, high]
            elif high < NO_LIMIT:
                clause += sql.SQL(" AND path_depth <= %s")
                values.append(high)
            parts.append(clause)
            params += values
        for low, high in self.depths:
            parts.append(sql.SQL("path_depth BETWEEN %s AND %s"))
            params += [low, high]
        for clause, values in self.clauses:
            parts.append(clause)
            params += values
        if not parts:
            return sql.SQL("FALSE"), []
        if len(parts) == 1:
            return parts[0], params
        return (
            sql.SQL(" OR ").join(sql.SQL("(") + p + sql.SQL(")") for p in parts),
            params,
        )


@dataclass(frozen=True)
class PathSearch:
    """``ExtendedPathIndex.search`` for the options of one query.

    ``index_path`` holds the elements of the index's physical path
    (ExtendedPathIndex skips those a level-0 query shares with it);
    ``site_path`` is the site the query is confined to, whose deepest
    level stands for the index's ``_depth``.
    """

    index_name: str
    depth: int
    navtree: bool
    navtree_start: int
    default_level: object
    index_path: tuple[str, ...]
    site_path: str

    @classmethod
    def from_query(cls, index, query, context) -> PathSearch:
        name = index.getId()
        navtree = bool(query.get("navtree", 0))
        start = query.get("navtree_start", 0)
        if navtree:
            start = _integer(name, "navtree_start", start)
        if index.meta_type == "ExtendedPathIndex":
            index_path = tuple(p for p in index.getPhysicalPath() if p)
        else:
            index_path = ()  # PathIndex compares every element
        site_path = getattr(context, "site_path", None)
        if site_path is None:
            # Without a context: the site holding the catalog holding the index.
            site_path = "/" + "/".join(index_path[:-2])
        return cls(
            index_name=name,
            depth=_integer(name, "depth", getattr(query, "depth", -1)),
            navtree=navtree,
            navtree_start=start,
            default_level=query.get("level", 0),
            index_path=index_path,
            site_path=site_path,
        )

    def keys(self, keys) -> list[tuple[str, int]]:
        """``(path, level)`` of each query key: a path or a (path, level)
        pair; a path as paths are held (``layout.nul_free``: no object's
        path has NUL, nor U+0001, so a path with one finds nothing there,
        as in ZCatalog)."""
        name = self.index_name
        parsed = []
        for key in keys:
            if isinstance(key, str):
                level = _integer(name, "level", self.default_level)
                parsed.append((layout.nul_free(key), level))
                continue
            if not (isinstance(key, (tuple, list)) and len(key) >= 2):
                raise QueryError(
                    f"index {name!r}: {key!r} is neither a path"
                    " nor a (path, level) pair"
                )
            path, level = key[0], key[1]
            if not isinstance(path, str):
                raise QueryError(f"index {name!r}: path {path!r} is not a string")
            try:
                level = int(level)  # ExtendedPathIndex converts the pair's level
            except (TypeError, ValueError) as exc:
                raise QueryError(
                    f"index {name!r}: level {level!r} is not an integer"
                ) from exc
            parsed.append((layout.nul_free(path), level))
        return parsed

    # -- one path -------------------------------------------------------------

    def rows(self, path: str, level: int) -> Rows | None:
        """The rows ``path`` selects at ``level``; ``None``: no result set."""
        if level < 0:
            return self._any_level(path)
        elements = [p for p in path.split("/") if p]
        depth = self.depth
        start = self.navtree_start
        if self.navtree and depth == -1:
            depth = 1  # navtrees do not recurse
        # The half of ExtendedPathIndex's shortcut that does not depend on
        # the content; the other half (start below the deepest level) is
        # the ``_deepest`` guard where a result may lie above ``start``.
        if self.navtree and start > level + len(elements) - 1 + depth:
            return Rows()
        if level == 0 and depth in (0, 1):
            return self._lookup(path, elements, depth)
        if level == 0:
            shared = _shared_length(self.index_path, elements)
            rest = elements[shared:]
            if not rest and depth == -1:
                return Rows(everything=True)
            site = [p for p in self.site_path.split("/") if p]
            if elements[:shared] == site[:shared] and shared <= len(site):
                # Every row of the site has the skipped elements: compare
                # them too, and the whole path is a B-tree prefix.
                return self._below(elements, shared, depth)
            return self._at_level(rest, shared, depth)
        if not elements and depth == -1:
            return Rows(everything=True)
        return self._at_level(elements, level, depth)

    def _lookup(self, path: str, elements: list[str], depth: int) -> Rows:
        """Level 0, depth 0 or 1: ExtendedPathIndex's path-string lookups."""
        rows = Rows()
        if not self.navtree:
            path = path if path.startswith("/") else "/" + path
            (rows.paths if depth == 0 else rows.parents).add(path)
            return rows
        start = self.navtree_start
        # Ancestors from ``start`` elements on (Python slices, as there:
        # a negative start repeats shorter prefixes).
        for count in range(len(elements), start - 1, -1):
            ancestor = "/" + "/".join(elements[:count])
            if depth == 1:
                rows.parents.add(ancestor)
            elif count == start and start > 0:
                # The one ancestor above ``start``: kept only if the site
                # has an object at level ``start`` or deeper.
                deepest, values = self._deepest()
                rows.clauses.append(
                    (
                        sql.SQL("path = %s AND %s < ") + deepest,
                        [ancestor, start, *values],
                    )
                )
            else:
                rows.paths.add(ancestor)
        return rows

    def _below(self, elements: list[str], shared: int, depth: int) -> Rows | None:
        """Level 0, matched as a path prefix (``shared`` elements skipped)."""
        rows = Rows()
        path = "/" + "/".join(elements)
        count = len(elements)

        def add_window(low: int, high: int) -> None:
            if elements:
                rows.subtrees.append((path, low, high))
            else:
                rows.depths.append((low, high))

        if not self.navtree:
            if depth >= 0:
                add_window(count, count + depth)
            elif count == shared:
                return None  # no elements left to match: no result set
            else:
                rows.subtrees.append((path, count, NO_LIMIT))
            return rows
        # A navtree, as ExtendedPathIndex builds its ``depthset``: the top
        # levels, the ancestors, and the window below the path.
        start = self.navtree_start
        found = False
        if depth > 0:
            found = True
            self._top_levels(rows, shared)
        for level in range(max(shared, start), count):
            found = True
            rows.paths.add("/" + "/".join(elements[: level + 1]))
        if depth >= 0:
            found = True
            first = max(count - 1, start) + 1
            add_window(first, first + depth)
        return rows if found else None

    def _top_levels(self, rows: Rows, level: int) -> None:
        """Every row of the site between ``navtree_start`` and ``level``."""
        start = self.navtree_start
        low, high = min(start, level) + 1, max(start, level) + 1
        if start <= level:
            rows.depths.append((low, high))
            return
        # Rows above ``start``: only if the site has one at ``start`` or deeper.
        deepest, values = self._deepest()
        rows.clauses.append(
            (
                sql.SQL("path_depth BETWEEN %s AND %s AND %s < ") + deepest,
                [low, high, start, *values],
            )
        )

    def _at_level(self, elements: list[str], level: int, depth: int) -> Rows | None:
        """``elements`` matched from ``level`` on, whatever comes before."""
        count = len(elements)
        if depth < 0 and not self._has_ancestors(count, level):
            return None  # ExtendedPathIndex returns its unset result
        levels = sql.SQL("%s::integer, %s::integer"), [level, level]
        rows = Rows()
        rows.clauses.append(self._level_sql(elements, depth, levels))
        return rows

    def _has_ancestors(self, count: int, level: int) -> bool:
        """Whether a search with negative depth adds any row set at all."""
        if not self.navtree:
            return count > 0
        return count > 0 and level + count - 1 >= self.navtree_start

    def _any_level(self, path: str) -> Rows:
        """``level`` < 0: the union of the searches at levels 0..deepest."""
        name = self.index_name
        at_root = self.rows(path, 0)
        elements = [p for p in path.split("/") if p]
        if at_root is None or (not elements and self.depth < -1):
            # ExtendedPathIndex fails (a multiunion of None), or for a
            # navtree fails or answers nothing depending on the content.
            raise QueryError(
                f"index {name!r}: path {path!r} with depth {self.depth!r} "
                "at every level is not a valid query"
            )
        if at_root.everything:
            return at_root
        depth = 1 if self.navtree and self.depth == -1 else self.depth
        deepest, values = self._deepest()
        # Levels 1 up to the row's own depth (no match lies deeper) and at
        # most the deepest level of the site, as ExtendedPathIndex's _depth.
        levels = sql.SQL("1, LEAST(path_depth, {} - 1)").format(deepest), values
        at_root.clauses.append(self._level_sql(elements, depth, levels))
        return at_root

    def _level_sql(
        self, elements: list[str], depth: int, levels: tuple[sql.Composable, list]
    ) -> tuple[sql.Composable, list]:
        """``EXISTS`` a level ``l`` from ``generate_series(levels)`` at
        which ExtendedPathIndex's search finds the row.

        ``(string_to_array(path, '/'))[l + 2]`` is the element at level
        ``l``; ``path_depth - 1`` is the row's own level.
        """
        levels_sql, levels_params = levels
        count = len(elements)
        match = sql.SQL("({})[l + 2 : l + %s] = %s::text[]").format(_ELEMENTS)
        match_params = [count + 1, list(elements)]
        start = self.navtree_start
        terms: list[sql.Composable] = []
        params: list = []
        prefilter: list = []
        if not self.navtree:
            if count:
                terms.append(match)
                params += match_params
                prefilter = [list(elements)]
            if depth >= 0:
                terms.append(sql.SQL("path_depth - l BETWEEN %s AND %s"))
                params += [count, count + depth]
            condition = sql.SQL(" AND ").join(terms)
        else:
            # the top levels, the ancestors, the window below (see _below)
            parts: list[sql.Composable] = []
            if depth > 0:
                top = sql.SQL("path_depth - 1 BETWEEN LEAST(%s, l) AND GREATEST(%s, l)")
                params += [start, start]
                if start > 0:
                    deepest, values = self._deepest()
                    top += sql.SQL(" AND (l >= %s OR %s < {})").format(deepest)
                    params += [start, start, *values]
                parts.append(top)
            if count:
                parts.append(
                    sql.SQL(
                        "path_depth - 1 BETWEEN GREATEST(l, %s) AND l + %s"
                        " AND ({})[l + 2 : path_depth + 1]"
                        " = (%s::text[])[1 : path_depth - l]"
                    ).format(_ELEMENTS)
                )
                params += [start, count - 1, list(elements)]
            if depth >= 0:
                window = sql.SQL(
                    "path_depth - 1 - GREATEST(l + %s, %s) BETWEEN 0 AND %s"
                )
                if count:
                    parts.append(match + sql.SQL(" AND ") + window)
                    params += [*match_params, count - 1, start, depth]
                else:
                    parts.append(window)
                    params += [count - 1, start, depth]
            condition = sql.SQL("%s <= l + %s AND ({})").format(
                sql.SQL(" OR ").join(sql.SQL("(") + p + sql.SQL(")") for p in parts)
            )
            params = [start, count - 1 + depth, *params]
        exists = sql.SQL(
            "EXISTS (SELECT 1 FROM generate_series({}) AS levels(l) WHERE {})"
        ).format(levels_sql, condition)
        if prefilter:
            # Only rows holding every element can match: the GIN index.
            exists = sql.SQL("{} @> %s::text[] AND ").format(_ELEMENTS) + exists
        return exists, [*prefilter, *levels_params, *params]

    def _deepest(self) -> tuple[sql.Composable, list]:
        """The ``path_depth`` of the site's deepest row (ExtendedPathIndex's
        ``_depth`` is that level, never lowered).

        Read from the stored rows: pending rows of the transaction do not
        move it, a difference only the deepest new object could make.
        """
        prefix = self.site_path.rstrip("/") + "/"
        return (
            sql.SQL(
                "(SELECT max(d.path_depth) FROM {} AS d"
                " WHERE d.path = %s OR (d.path >= %s AND d.path < %s))"
            ).format(layout.TABLE),
            [self.site_path, prefix, prefix[:-1] + "0"],
        )


def _shared_length(index_path: tuple[str, ...], elements: list[str]) -> int:
    """How many leading elements a path shares with the index's path."""
    shared = 0
    for ours, theirs in zip(index_path, elements):
        if ours != theirs:
            break
        shared += 1
    return shared


def _integer(index_name: str, option: str, value) -> int:
    # bool is an int: ExtendedPathIndex compares and adds it as one.
    if isinstance(value, int):
        return value
    raise QueryError(f"index {index_name!r}: {option} {value!r} is not an integer")


#: The row at one path, and the rows whose parent is one path (a folder's
#: items): clauses that find a few rows by a key, whatever its value
#: (``PathTranslator.finds_few``).
OBJECT = sql.SQL("path = %s")
CHILDREN = sql.SQL("parent_path = %s")


def path_clause(path: str, depth: int) -> tuple[sql.Composable, list]:
    """Rows at ``path`` and below it, ``depth`` levels deep (-1: all)."""
    if depth == 0:
        return OBJECT, [path]
    if depth == 1:
        return CHILDREN, [path]
    subtree = sql.SQL("(path = %s OR (path >= %s AND path < %s))")
    params = [path, *layout.subtree_bounds(path)]
    if depth > 0:
        subtree += sql.SQL(" AND path_depth <= %s")
        params.append(path_depth(path) + depth)
    return subtree, params


def in_subtree(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def path_depth(path: str) -> int:
    """Number of path elements: '/Plone' is 1, '/Plone/a' is 2."""
    return len([p for p in path.split("/") if p])
