"""Differential: path queries give what ExtendedPathIndex gives.

Two parts:

- Plone sites: the same nested content (five levels of folders and pages
  under ``/plone``) is built in a stock ZCatalog site and in a
  plone_pgcatalog site; every query of ``QUERIES`` must give the same
  paths (in order where it sorts, as sets otherwise; for
  ``getObjPositionInParent`` the order of the siblings of each folder).
- The index alone: ``Products.ExtendedPathIndex`` holding a tree of paths
  against ``PathTranslator``'s SQL over a temporary ``pgcatalog_objects`` table
  with the same paths, for a seeded sample of every option combination
  (levels, depths, navtrees, relative and odd paths, several keys).
"""

from __future__ import annotations

from Acquisition import Implicit
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in

import pytest
import random
import transaction

#: Folders (path below the site, title); each gets the pages of ``PAGES``.
FOLDERS = [
    ("alpha", "Kilo folder"),
    ("beta", "Bravo folder"),
    ("gamma", "Echo folder"),
    ("alpha/one", "Yankee folder"),
    ("alpha/two", "Delta folder"),
    ("beta/one", "Lima folder"),
    ("gamma/two", "Alpha folder"),
    ("alpha/one/deep", "Oscar folder"),
    ("alpha/two/deep", "Golf folder"),
    ("gamma/two/deep", "Uniform folder"),
    ("alpha/one/deep/deeper", "Hotel folder"),
    ("gamma/two/deep/deeper", "Papa folder"),
]

#: Pages in every folder and in the site root (id, title prefix).
PAGES = [("page-b", "Sierra"), ("page-a", "Mike")]

#: More pages in the site root, named like folders deeper down, so that
#: "one" and "deep" are path elements at two levels.
ROOT_PAGES = [("one", "Charlie"), ("deep", "Quebec")]

#: (name, query, how to compare: "set", "ordered" or "siblings")
QUERIES = [
    # one path, depth
    ("site subtree", {"path": "/plone"}, "set"),
    ("subtree", {"path": "/plone/alpha"}, "set"),
    ("subtree with trailing slash", {"path": "/plone/alpha/"}, "set"),
    ("relative subtree", {"path": "plone/alpha/one"}, "set"),
    ("missing path", {"path": "/plone/nope"}, "set"),
    ("missing path depth 1", {"path": {"query": "/plone/nope", "depth": 1}}, "set"),
    ("depth 0", {"path": {"query": "/plone/alpha/one", "depth": 0}}, "set"),
    (
        "depth 0 trailing slash",
        {"path": {"query": "/plone/alpha/one/", "depth": 0}},
        "set",
    ),
    ("depth 0 relative", {"path": {"query": "plone/alpha", "depth": 0}}, "set"),
    ("depth 0 site root", {"path": {"query": "/plone", "depth": 0}}, "set"),
    ("depth 1 site root", {"path": {"query": "/plone", "depth": 1}}, "set"),
    ("depth 1", {"path": {"query": "/plone/alpha/one", "depth": 1}}, "set"),
    ("depth 1 trailing slash", {"path": {"query": "/plone/alpha/", "depth": 1}}, "set"),
    ("depth 2", {"path": {"query": "/plone/gamma", "depth": 2}}, "set"),
    ("depth 3 from the site", {"path": {"query": "/plone", "depth": 3}}, "set"),
    ("depth -2", {"path": {"query": "/plone/alpha", "depth": -2}}, "set"),
    ("slash depth 1", {"path": {"query": "/", "depth": 1}}, "set"),
    ("slash subtree", {"path": {"query": "/"}}, "set"),
    ("empty string depth 1", {"path": {"query": "", "depth": 1}}, "set"),
    ("no paths", {"path": {"query": []}}, "set"),
    # several paths
    ("or subtrees", {"path": ["/plone/alpha/one", "/plone/gamma/two/deep"]}, "set"),
    (
        "or depth 1",
        {"path": {"query": ["/plone/beta", "/plone/alpha/two"], "depth": 1}},
        "set",
    ),
    (
        "or depth 0",
        {
            "path": {
                "query": ["/plone/beta", "/plone/alpha/two", "/plone/x"],
                "depth": 0,
            }
        },
        "set",
    ),
    (
        "or depth 2",
        {"path": {"query": ["/plone/beta", "/plone/alpha/one/deep"], "depth": 2}},
        "set",
    ),
    (
        "and nested subtrees",
        {"path": {"query": ["/plone/alpha", "/plone/alpha/one"], "operator": "and"}},
        "set",
    ),
    (
        "and disjoint subtrees",
        {"path": {"query": ["/plone/alpha", "/plone/beta"], "operator": "and"}},
        "set",
    ),
    (
        "and depth 1",
        {
            "path": {
                "query": ["/plone/alpha", "/plone/alpha"],
                "depth": 1,
                "operator": "and",
            }
        },
        "set",
    ),
    # navtree
    (
        "navtree (CMFPlone navtree)",
        {
            "path": {
                "query": "/plone/alpha/one/deep/page-a",
                "navtree": 1,
                "navtree_start": 0,
            }
        },
        "set",
    ),
    (
        "navtree start 1 (navigation portlet)",
        {
            "path": {
                "query": "/plone/alpha/one/deep",
                "navtree": 1,
                "depth": 1,
                "navtree_start": 1,
            }
        },
        "set",
    ),
    (
        "navtree start 2",
        {
            "path": {
                "query": "/plone/alpha/one/deep/deeper",
                "navtree": 1,
                "navtree_start": 2,
            }
        },
        "set",
    ),
    (
        "breadcrumbs",
        {
            "path": {
                "query": "/plone/gamma/two/deep/deeper/page-b",
                "navtree": 1,
                "depth": 0,
            }
        },
        "set",
    ),
    (
        "breadcrumbs start 2",
        {
            "path": {
                "query": "/plone/gamma/two/deep/deeper",
                "navtree": 1,
                "depth": 0,
                "navtree_start": 2,
            }
        },
        "set",
    ),
    (
        "navtree depth 2 (restapi)",
        {"path": {"query": "/plone/alpha/two", "navtree": 1, "depth": 2}},
        "set",
    ),
    (
        "navtree depth 3 start 1",
        {
            "path": {
                "query": "/plone/alpha/one/deep",
                "navtree": 1,
                "depth": 3,
                "navtree_start": 1,
            }
        },
        "set",
    ),
    (
        "navtree depth 999 start 2",
        {
            "path": {
                "query": "/plone/gamma/two",
                "navtree": True,
                "depth": 999,
                "navtree_start": 2,
            }
        },
        "set",
    ),
    (
        "navtree depth 2 start 4",
        {
            "path": {
                "query": "/plone/alpha/one/deep",
                "navtree": 1,
                "depth": 2,
                "navtree_start": 4,
            }
        },
        "set",
    ),
    (
        "navtree start below the content",
        {
            "path": {
                "query": "/plone/alpha/one/deep/deeper",
                "navtree": 1,
                "depth": 2,
                "navtree_start": 6,
            }
        },
        "set",
    ),
    (
        "navtree of a missing path",
        {"path": {"query": "/plone/alpha/nope/x", "navtree": 1}},
        "set",
    ),
    (
        "navtree several paths",
        {
            "path": {
                "query": ["/plone/beta/one", "/plone/gamma/two"],
                "navtree": 1,
                "navtree_start": 1,
            }
        },
        "set",
    ),
    # level
    (
        "level 1 relative (PloneTool)",
        {"path": {"query": "alpha/one", "level": 1}},
        "set",
    ),
    ("level 1 depth 1", {"path": {"query": "alpha", "level": 1, "depth": 1}}, "set"),
    ("level 2 depth 0", {"path": {"query": "one", "level": 2, "depth": 0}}, "set"),
    ("level 2 depth 1", {"path": {"query": "two/deep", "level": 2, "depth": 1}}, "set"),
    (
        "level 0 depth 2",
        {"path": {"query": "/plone/alpha", "level": 0, "depth": 2}},
        "set",
    ),
    ("level -1", {"path": {"query": "deep", "level": -1}}, "set"),
    ("level -1 depth 0", {"path": {"query": "one", "level": -1, "depth": 0}}, "set"),
    (
        "level -1 depth 1",
        {"path": {"query": "one/deep", "level": -1, "depth": 1}},
        "set",
    ),
    (
        "level -1 slash depth 0",
        {"path": {"query": "/", "level": -1, "depth": 0}},
        "set",
    ),
    (
        "level pairs",
        {"path": {"query": [("one", 2), ("two", 2)], "depth": 0}},
        "set",
    ),
    (
        "level 1 navtree",
        {
            "path": {
                "query": "alpha/one/deep",
                "level": 1,
                "navtree": 1,
                "depth": 2,
                "navtree_start": 2,
            }
        },
        "set",
    ),
    # with other indexes and sorting
    ("pages of a subtree", {"path": "/plone/alpha", "portal_type": "Document"}, "set"),
    (
        "children in order",
        {
            "path": {"query": "/plone/alpha", "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    (
        "folders of a navtree in order (navigation portlet)",
        {
            "path": {
                "query": "/plone/gamma/two/deep",
                "navtree": 1,
                "navtree_start": 1,
            },
            "portal_type": "Folder",
            "sort_on": "getObjPositionInParent",
        },
        "siblings",
    ),
    (
        "navtree depth 3 in order",
        {
            "path": {"query": "/plone/alpha/one", "navtree": 1, "depth": 3},
            "sort_on": "getObjPositionInParent",
        },
        "siblings",
    ),
    (
        "subtree by title",
        {"path": "/plone/gamma", "sort_on": "sortable_title"},
        "ordered",
    ),
    (
        "navtree by title",
        {
            "path": {"query": "/plone/beta/one", "navtree": 1, "depth": 2},
            "sort_on": "sortable_title",
        },
        "ordered",
    ),
    (
        "level -1 pages by title, reversed",
        {
            "path": {"query": "deep", "level": -1, "depth": 1},
            "portal_type": "Document",
            "sort_on": "sortable_title",
            "sort_order": "reverse",
        },
        "ordered",
    ),
    (
        "several paths by title, batched",
        {
            "path": {"query": ["/plone/alpha/two", "/plone/gamma"], "depth": 2},
            "sort_on": "sortable_title",
            "b_start": 2,
            "b_size": 5,
        },
        "ordered",
    ),
]


def build_content(portal) -> None:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for page_id, title in PAGES + ROOT_PAGES:
        api.content.create(
            container=portal, type="Document", id=page_id, title=f"{title} root"
        )
    for number, (path, title) in enumerate(FOLDERS):
        parent_path, _, folder_id = path.rpartition("/")
        parent = portal.unrestrictedTraverse(parent_path) if parent_path else portal
        folder = api.content.create(
            container=parent, type="Folder", id=folder_id, title=title
        )
        for page_id, page_title in PAGES:
            page = api.content.create(
                container=folder,
                type="Document",
                id=page_id,
                title=f"{page_title} {title} {number:02d}",
            )
            if number % 2:
                api.content.transition(obj=page, transition="publish")
        # Move the last page to the top: positions differ from creation order.
        folder.moveObjectsToTop([folder.objectIds()[-1]])
    transaction.commit()


def run_queries(layer) -> dict:
    build_content(layer["portal"])
    catalog = api.portal.get_tool("portal_catalog")
    results = {}
    for name, query, _ in QUERIES:
        brains = catalog(**query)
        results[name] = [brain.getPath() for brain in brains]
    return results


def results_in(layer_name: str) -> dict:
    return collect_in(layer_name, run_queries)


@pytest.fixture(scope="module")
def site_results():
    return results_in("zcatalog"), results_in("pg")


def _by_parent(paths: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(path.rsplit("/", 1)[0], []).append(path)
    return groups


@pytest.mark.parametrize("name,query,compare", QUERIES, ids=[q[0] for q in QUERIES])
def test_path_query_as_zcatalog(site_results, name, query, compare):
    zcatalog, pg = site_results
    expected, actual = zcatalog[name], pg[name]
    if compare == "ordered":
        assert actual == expected
    else:
        assert sorted(actual) == sorted(expected)
    if compare == "siblings":
        assert _by_parent(actual) == _by_parent(expected)


def test_the_queries_find_something(site_results):
    """Guards the comparison: most queries must have results to compare."""
    zcatalog, _ = site_results
    empty = sorted(name for name, paths in zcatalog.items() if not paths)
    assert empty == [
        "and disjoint subtrees",
        "depth 0 trailing slash",
        "depth 1 trailing slash",
        "missing path",
        "missing path depth 1",
        "navtree start below the content",
        "no paths",
    ]


# -- the index alone, against SQL on a scratch table ----------------------------

#: A tree with a path element repeated at several levels ("plone/plone",
#: "one" as page and folder) and one level deeper under "a" only.
TREE = (
    ["/plone"]
    + [
        path
        for a in ("a", "b")
        for path in [f"/plone/{a}"]
        + [
            p
            for b in ("a", "b")
            for p in [f"/plone/{a}/{b}"]
            + [
                q
                for c in ("a", "c")
                for q in [f"/plone/{a}/{b}/{c}"]
                + ([f"/plone/{a}/{b}/{c}/a"] if a == "a" else [])
            ]
        ]
    ]
    + ["/plone/c", "/plone/plone", "/plone/plone/a"]
)

#: Query paths: existing, missing, relative, with odd slashes, on the index's
#: own path (which ExtendedPathIndex skips at level 0).
KEY_PATHS = [
    "/plone",
    "/plone/",
    "",
    "/",
    "plone",
    "/plone/a",
    "/plone/a/",
    "a",
    "a/b",
    "/a/b",
    "b/a",
    "/plone/a/b",
    "/plone/a/b/c",
    "/plone/a/b/a/a",
    "/plone/a/b/a/a/x",
    "/plone/x",
    "/plone/x/y",
    "/plone/b/a",
    "/plone/plone",
    "plone/a",
    "/plone/portal_catalog",
    "/plone/portal_catalog/a",
    "/plone/portal_catalog/path/b",
    "a/a",
    "//plone/a",
]


def _sample_queries(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    queries = []
    while len(queries) < count:
        keys = rng.sample(KEY_PATHS, rng.choice([1, 1, 1, 2, 3]))
        if rng.random() < 0.1:
            keys[0] = (keys[0], rng.choice([-1, 0, 1, 2, 3]))
        query = {"query": keys if len(keys) > 1 or rng.random() < 0.3 else keys[0]}
        if rng.random() < 0.8:
            query["depth"] = rng.choice([-2, -1, 0, 1, 2, 3, 5])
        if rng.random() < 0.4:
            query["level"] = rng.choice([-1, 0, 1, 2, 3])
        if rng.random() < 0.5:
            query["navtree"] = 1
            if rng.random() < 0.8:
                query["navtree_start"] = rng.choice([-1, 0, 1, 2, 3, 4, 5, 6])
        if len(keys) > 1 and rng.random() < 0.5:
            query["operator"] = "and"
        if not _raises_here_only(query):
            queries.append(query)
    return queries


def _raises_here_only(query: dict) -> bool:
    """navtree, every level, an empty path, depth < -1: ExtendedPathIndex
    raises or answers nothing depending on the content; we raise (see
    tests/unit/test_paths.py)."""
    keys = query["query"] if isinstance(query["query"], list) else [query["query"]]
    return bool(
        query.get("navtree")
        and query.get("depth", -1) < -1
        and any(
            (key[1] if isinstance(key, tuple) else query.get("level", 0)) < 0
            and not (key[0] if isinstance(key, tuple) else key).strip("/")
            for key in keys
        )
    )


SAMPLE = _sample_queries(600, seed=20240611)


class _Catalog(Implicit):
    """Where the index lives, as in a site: /plone/portal_catalog."""

    def getPhysicalPath(self):
        return ("", "plone", "portal_catalog")


class _Object:
    def __init__(self, path):
        self.path = path

    def getPhysicalPath(self):
        return tuple(self.path.split("/"))


@pytest.fixture(scope="module")
def tree_index():
    from Products.ExtendedPathIndex.ExtendedPathIndex import ExtendedPathIndex

    index = ExtendedPathIndex("path")
    for docid, path in enumerate(TREE, start=1):
        index.index_object(docid, _Object(path))
    return index.__of__(_Catalog())


@pytest.fixture(scope="module")
def tree_table():
    from plone_pgcatalog.paths import path_depth
    from plone_pgcatalog.testing import server_dsn

    import psycopg

    with psycopg.connect(server_dsn(), autocommit=True) as conn:
        # A temporary table shadows any catalog table of that database.
        conn.execute(
            "CREATE TEMP TABLE pgcatalog_objects (zoid serial,"
            ' path text COLLATE "C", parent_path text COLLATE "C",'
            " path_depth integer, idx jsonb)"
        )
        for path in TREE:
            conn.execute(
                "INSERT INTO pgcatalog_objects (path, parent_path, path_depth, idx)"
                " VALUES (%s, %s, %s, '{}')",
                (path, path.rsplit("/", 1)[0] or "/", path_depth(path)),
            )
        yield conn


def _index_result(index, query):
    from Products.ZCatalog.query import IndexQuery

    record = IndexQuery({"path": query}, "path", index.query_options)
    return sorted(TREE[docid - 1] for docid in index.query_index(record))


def _sql_result(conn, index, query):
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.paths import PathTranslator
    from plone_pgcatalog.query import QueryContext
    from Products.ZCatalog.query import IndexQuery
    from psycopg import sql

    record = IndexQuery({"path": query}, "path", index.query_options)
    clause, params = PathTranslator().where(
        index, record, QueryContext(site_path="/plone")
    )
    site, site_params = path_clause("/plone", -1)
    statement = sql.SQL("SELECT path FROM pgcatalog_objects WHERE {} AND ({})").format(
        site, clause
    )
    return sorted(row[0] for row in conn.execute(statement, [*site_params, *params]))


@pytest.mark.parametrize("query", SAMPLE, ids=[str(n) for n in range(len(SAMPLE))])
def test_sql_selects_what_the_index_finds(tree_index, tree_table, query):
    from plone_pgcatalog.errors import QueryError

    try:
        expected = _index_result(tree_index, query)
    except TypeError:
        # ExtendedPathIndex fails on this query; so must we, clearly.
        with pytest.raises(QueryError, match="index 'path'"):
            _sql_result(tree_table, tree_index, query)
        return
    assert _sql_result(tree_table, tree_index, query) == expected


def test_the_sample_covers_every_option():
    assert any(q.get("navtree") and q.get("depth", -1) >= 2 for q in SAMPLE)
    assert any(q.get("level", 0) < 0 and q.get("navtree") for q in SAMPLE)
    assert any(q.get("level", 0) > 0 and not q.get("navtree") for q in SAMPLE)
    assert any(q.get("operator") == "and" for q in SAMPLE)
    assert any(
        isinstance(q["query"], list) and any(isinstance(k, tuple) for k in q["query"])
        for q in SAMPLE
    )


# -- the SQL is served by the path indexes ---------------------------------------

#: (query, an index its plan must use)
PLANNED = [
    ({"query": "/plone/f3"}, "pgcatalog_path"),
    ({"query": ["/plone/f3/s4", "/plone/f7"], "depth": 2}, "pgcatalog_path"),
    ({"query": "/plone/f3", "depth": 1}, "pgcatalog_parent_path"),
    (
        {"query": "/plone/f3/s4/t5", "navtree": 1, "navtree_start": 1},
        "pgcatalog_parent_path",
    ),
    ({"query": "/plone/f3/s4/t5", "navtree": 1, "depth": 0}, "pgcatalog_path"),
    ({"query": "/plone/f3/s4", "navtree": 1, "depth": 3}, "pgcatalog_path_depth"),
    ({"query": "f3/s4", "level": 1}, "pgcatalog_path_elements"),
    ({"query": "s4/t5", "level": -1, "depth": 1}, "pgcatalog_path_elements"),
]


@pytest.fixture(scope="module")
def large_table():
    """20,000 catalog rows with the catalog's path indexes."""
    from plone_pgcatalog.store.schema import BASE_DDL
    from plone_pgcatalog.testing import server_dsn

    import psycopg
    import re

    with psycopg.connect(server_dsn(), autocommit=True) as conn:
        conn.execute(
            "CREATE TEMP TABLE pgcatalog_objects (zoid bigint PRIMARY KEY,"
            ' path text COLLATE "C", parent_path text COLLATE "C",'
            " path_depth integer, idx jsonb)"
        )
        conn.execute(
            "INSERT INTO pgcatalog_objects SELECT row_number() OVER (), p,"
            " regexp_replace(p, '/[^/]+$', ''), d, '{}' FROM ("
            " SELECT '/plone/f' || a AS p, 2 AS d FROM generate_series(1, 20) a"
            " UNION ALL SELECT '/plone/f' || a || '/s' || b, 3"
            "  FROM generate_series(1, 20) a, generate_series(1, 20) b"
            " UNION ALL SELECT '/plone/f' || a || '/s' || b || '/t' || c, 4"
            "  FROM generate_series(1, 20) a, generate_series(1, 20) b,"
            "  generate_series(1, 49) c) AS tree"
        )
        path_indexes = re.findall(
            r"CREATE INDEX IF NOT EXISTS pgcatalog_path[^;]*;", BASE_DDL
        )
        path_indexes += re.findall(
            r"CREATE INDEX IF NOT EXISTS pgcatalog_parent_path[^;]*;", BASE_DDL
        )
        for statement in path_indexes:
            conn.execute(statement)
        conn.execute("ANALYZE pgcatalog_objects")
        yield conn


def _plan_indexes(plan: dict) -> set[str]:
    names = {plan["Index Name"]} if "Index Name" in plan else set()
    for child in plan.get("Plans", ()):
        names |= _plan_indexes(child)
    return names


def _scans(plan: dict) -> set[str]:
    kinds = {plan["Node Type"]}
    for child in plan.get("Plans", ()):
        kinds |= _scans(child)
    return kinds


@pytest.mark.parametrize(
    "query,index_name", PLANNED, ids=[str(query) for query, _ in PLANNED]
)
def test_path_queries_use_the_path_indexes(tree_index, large_table, query, index_name):
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.paths import PathTranslator
    from plone_pgcatalog.query import QueryContext
    from Products.ZCatalog.query import IndexQuery
    from psycopg import sql

    record = IndexQuery({"path": query}, "path", tree_index.query_options)
    clause, params = PathTranslator().where(
        tree_index, record, QueryContext(site_path="/plone")
    )
    site, site_params = path_clause("/plone", -1)
    statement = sql.SQL(
        "EXPLAIN (FORMAT JSON) SELECT zoid, path FROM pgcatalog_objects"
        " WHERE {} AND ({})"
    ).format(site, clause)
    ((plan,),) = large_table.execute(statement, [*site_params, *params]).fetchall()
    assert index_name in _plan_indexes(plan[0]["Plan"])
    assert "Seq Scan" not in _scans(plan[0]["Plan"])
