"""ExtendedPathIndex queries over the catalog's path columns.

Owns: the ``path`` query (one or many paths, ``depth``, ``navtree``,
``navtree_start``, ``level``, ``operator``) and ``path_clause``, the SQL for
"this path and what lies below it".  Paths are stored in the ``path``,
``parent_path`` and ``path_depth`` columns, not in ``idx``.

Pure: no database, no Zope objects beyond the index definition.
"""

from __future__ import annotations

from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.interfaces import MISSING
from psycopg import sql
from zope.interface import implementer


@implementer(IIndexTranslator)
class PathTranslator:
    """ExtendedPathIndex over the ``path`` columns.

    ``path`` is the physical path; ``parent_path`` and ``path_depth`` are
    derived from it at write time so that children and depth limits are
    plain B-tree lookups.
    """

    query_options = ("query", "level", "operator", "depth", "navtree", "navtree_start")

    def extract(self, index, obj):
        return MISSING  # stored in the path columns, not in idx

    def where(self, index, query):
        if not query.keys:
            return None
        name = index.getId()
        for option in ("navtree", "navtree_start", "level"):
            if query.get(option):
                raise QueryError(
                    f"index {name!r}: option {option!r} is not supported by "
                    "plone_pgcatalog yet"
                )
        depth = int(query.get("depth", -1))
        clauses, params = [], []
        for path in query.keys:
            if not isinstance(path, str):
                raise QueryError(f"index {name!r}: path {path!r} is not a string")
            path = "/" + path.strip("/") if path.strip("/") else "/"
            clause, values = path_clause(path, depth)
            clauses.append(clause)
            params += values
        joiner = " AND " if query.get("operator", "or") == "and" else " OR "
        return sql.SQL("(") + sql.SQL(joiner).join(clauses) + sql.SQL(")"), params

    def sort_expressions(self, index):
        return None


def path_clause(path: str, depth: int) -> tuple[sql.Composable, list]:
    """Rows at ``path`` and below it, ``depth`` levels deep (-1: all)."""
    if depth == 0:
        return sql.SQL("path = %s"), [path]
    if depth == 1:
        return sql.SQL("parent_path = %s"), [path]
    prefix = path.rstrip("/") + "/"
    # Every path below ``prefix`` sorts between prefix and prefix with its
    # last "/" replaced by the next code point, "0".
    subtree = sql.SQL("(path = %s OR (path >= %s AND path < %s))")
    params = [path, prefix, prefix[:-1] + "0"]
    if depth > 0:
        subtree += sql.SQL(" AND path_depth <= %s")
        params.append(path_depth(path) + depth)
    return subtree, params


def path_depth(path: str) -> int:
    """Number of path elements: '/Plone' is 1, '/Plone/a' is 2."""
    return len([p for p in path.split("/") if p])
