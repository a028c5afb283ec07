"""Path queries translate to SQL as ExtendedPathIndex answers them.

Pure: SQL text and parameters, no database.  That the SQL selects what
ExtendedPathIndex selects is checked against the index itself in
tests/differential/test_paths.py.
"""

from __future__ import annotations

from Acquisition import Implicit
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.paths import PathTranslator
from plone_pgcatalog.query import QueryContext
from Products.ExtendedPathIndex.ExtendedPathIndex import ExtendedPathIndex
from Products.PluginIndexes.PathIndex.PathIndex import PathIndex
from Products.ZCatalog.query import IndexQuery

import pytest

SUBTREE = "(path = %s OR (path >= %s AND path < %s))"
DEEPEST = (
    "(SELECT max(d.path_depth) FROM pgcatalog_objects AS d"
    " WHERE d.path = %s OR (d.path >= %s AND d.path < %s))"
)
SITE = ["/plone", "/plone/", "/plone0"]


class _Catalog(Implicit):
    """Where the index lives in a site: /plone/portal_catalog."""

    def getPhysicalPath(self):
        return ("", "plone", "portal_catalog")


def _index(cls=ExtendedPathIndex):
    return cls("path").__of__(_Catalog())


def _where(query, index=None, site="/plone"):
    index = index if index is not None else _index()
    record = IndexQuery({"path": query}, "path", index.query_options)
    context = QueryContext(site_path=site) if site else None
    clause, params = PathTranslator().where(index, record, context)
    return clause.as_string(None), params


# -- one path, depth --------------------------------------------------------------


def test_a_path_selects_its_subtree():
    assert _where("/plone/a") == (SUBTREE, ["/plone/a", "/plone/a/", "/plone/a0"])


def test_subtree_paths_are_normalized():
    expected = _where("/plone/a")
    assert _where("/plone/a/") == expected
    assert _where("plone/a") == expected
    assert _where({"query": "/plone/a/", "depth": -1}) == expected


def test_depth_0_looks_the_path_up_as_given():
    assert _where({"query": "/plone/a", "depth": 0}) == ("path = %s", ["/plone/a"])
    # as ExtendedPathIndex: a trailing slash finds nothing, a leading one is added
    assert _where({"query": "/plone/a/", "depth": 0})[1] == ["/plone/a/"]
    assert _where({"query": "plone/a", "depth": 0})[1] == ["/plone/a"]


def test_depth_1_selects_the_children():
    assert _where({"query": "/plone/a", "depth": 1}) == (
        "parent_path = %s",
        ["/plone/a"],
    )


def test_depth_n_limits_the_subtree():
    assert _where({"query": "/plone/a", "depth": 2}) == (
        SUBTREE + " AND path_depth <= %s",
        ["/plone/a", "/plone/a/", "/plone/a0", 4],
    )


def test_other_negative_depths_select_the_whole_subtree():
    assert _where({"query": "/plone/a", "depth": -3}) == _where("/plone/a")


def test_the_site_or_the_root_selects_everything():
    assert _where("/plone") == ("TRUE", [])
    assert _where("/") == ("TRUE", [])


def test_a_depth_below_the_root_counts_from_level_0():
    assert _where({"query": "/", "depth": 2}) == (
        "path_depth BETWEEN %s AND %s",
        [0, 2],
    )


def test_the_site_with_a_negative_depth_other_than_minus_1_finds_nothing():
    # ExtendedPathIndex's search returns no set at all (None) here.
    assert _where({"query": "/plone", "depth": -2}) == ("FALSE", [])


def test_no_paths_find_nothing():
    assert _where({"query": []}) == ("FALSE", [])


# -- several paths ----------------------------------------------------------------


def test_paths_at_depth_0_or_1_are_one_array_parameter():
    text, params = _where({"query": ["/plone/a", "/plone/b"], "depth": 1})
    assert (text, params) == ("parent_path = ANY(%s)", [["/plone/a", "/plone/b"]])
    five, _ = _where({"query": [f"/plone/{n}" for n in "abcde"], "depth": 1})
    assert five == text


def test_several_subtrees_are_one_range_each():
    text, params = _where(["/plone/a", "/plone/b"])
    assert text == f"({SUBTREE}) OR ({SUBTREE})"
    assert params == [
        "/plone/a",
        "/plone/a/",
        "/plone/a0",
        "/plone/b",
        "/plone/b/",
        "/plone/b0",
    ]


def test_operator_and_intersects_the_paths():
    text, params = _where({"query": ["/plone/a", "/plone/a/b"], "operator": "and"})
    assert text == f"({SUBTREE}) AND ({SUBTREE})"
    assert params == [
        "/plone/a",
        "/plone/a/",
        "/plone/a0",
        "/plone/a/b",
        "/plone/a/b/",
        "/plone/a/b0",
    ]


def test_operator_and_leaves_out_a_path_without_result_set():
    with_site = _where(
        {"query": ["/plone", "/plone/a"], "depth": -2, "operator": "and"}
    )
    assert with_site == _where({"query": "/plone/a", "depth": -2})


# -- navtree ----------------------------------------------------------------------


def test_navtree_selects_the_children_of_every_ancestor():
    text, params = _where({"query": "/plone/a/b", "navtree": 1, "navtree_start": 1})
    assert (text, params) == (
        "parent_path = ANY(%s)",
        [["/plone", "/plone/a", "/plone/a/b"]],
    )


def test_navtree_start_0_includes_the_site_root():
    assert _where({"query": "/plone/a", "navtree": 1})[1] == [
        ["/", "/plone", "/plone/a"]
    ]


def test_navtree_depth_1_is_the_default():
    assert _where({"query": "/plone/a", "navtree": 1, "depth": 1}) == _where(
        {"query": "/plone/a", "navtree": True}
    )


def test_navtree_start_below_path_and_depth_finds_nothing():
    assert _where({"query": "/plone/a", "navtree": 1, "navtree_start": 3}) == (
        "FALSE",
        [],
    )


def test_breadcrumbs_are_the_ancestors():
    assert _where({"query": "/plone/a/b", "navtree": 1, "depth": 0}) == (
        "path = ANY(%s)",
        [["/", "/plone", "/plone/a", "/plone/a/b"]],
    )


def test_breadcrumbs_from_a_start_level_keep_its_ancestor_only_below_content():
    # ExtendedPathIndex answers nothing when navtree_start lies below its
    # deepest level: the ancestor above that level needs that guard.
    text, params = _where(
        {"query": "/plone/a/b", "navtree": 1, "depth": 0, "navtree_start": 2}
    )
    assert text == f"(path = %s) OR (path = %s AND %s < {DEEPEST})"
    assert params == ["/plone/a/b", "/plone/a", 2, *SITE]


def test_navtree_with_depth_adds_ancestors_subtree_and_top_levels():
    # restapi's @contextnavigation: {'navtree': 1, 'depth': N}
    text, params = _where({"query": "/plone/a/b", "navtree": 1, "depth": 2})
    assert text == (
        f"(path = ANY(%s)) OR ({SUBTREE} AND path_depth <= %s)"
        " OR (path_depth BETWEEN %s AND %s)"
    )
    # ancestors from level 1 (the site element is skipped), the subtree two
    # levels deep, and every object at levels 0..1
    assert params == [
        ["/plone/a", "/plone/a/b"],
        "/plone/a/b",
        "/plone/a/b/",
        "/plone/a/b0",
        5,
        1,
        2,
    ]


def test_navtree_start_below_the_path_level_guards_the_top_levels():
    text, params = _where(
        {"query": "/plone/a", "navtree": 1, "depth": 3, "navtree_start": 3}
    )
    assert text == (
        f"({SUBTREE} AND path_depth BETWEEN %s AND %s)"
        f" OR (path_depth BETWEEN %s AND %s AND %s < {DEEPEST})"
    )
    assert params == ["/plone/a", "/plone/a/", "/plone/a0", 4, 7, 2, 4, 3, *SITE]


def test_several_navtrees_merge_their_ancestors():
    text, params = _where(
        {"query": ["/plone/a", "/plone/b"], "navtree": 1, "navtree_start": 1}
    )
    assert (text, params) == (
        "parent_path = ANY(%s)",
        [["/plone", "/plone/a", "/plone/b"]],
    )


# -- level ------------------------------------------------------------------------


def test_a_level_matches_elements_at_that_level():
    text, params = _where({"query": "a/b", "level": 1})
    assert text == (
        "string_to_array(path, '/') @> %s::text[] AND EXISTS (SELECT 1 FROM"
        " generate_series(%s::integer, %s::integer) AS levels(l) WHERE"
        " (string_to_array(path, '/'))[l + 2 : l + %s] = %s::text[])"
    )
    assert params == [["a", "b"], 1, 1, 3, ["a", "b"]]


def test_a_level_with_depth_limits_the_levels_below_the_match():
    text, params = _where({"query": "a", "level": 2, "depth": 1})
    assert text.endswith(" AND path_depth - l BETWEEN %s AND %s)")
    assert params == [["a"], 2, 2, 2, ["a"], 1, 2]


def test_a_level_pair_sets_the_level_of_its_path():
    assert _where({"query": [("a/b", "1")]}) == _where({"query": "a/b", "level": 1})


def test_level_minus_1_matches_at_any_level_up_to_the_deepest():
    text, params = _where({"query": "a/b", "level": -1, "depth": 0})
    # level 0 (the path string as given), then levels 1..deepest
    assert text.startswith(
        "(path = %s) OR (string_to_array(path, '/') @> %s::text[] AND"
    )
    assert f"generate_series(1, LEAST(path_depth, {DEEPEST} - 1))" in text
    assert params[:2] == ["/a/b", ["a", "b"]]
    assert params[2:5] == SITE


def test_level_minus_1_of_the_root_at_depth_0_leaves_out_the_deepest_level():
    # ExtendedPathIndex searches levels up to its deepest and matches the
    # empty path one level above: objects at the deepest level are left out.
    text, params = _where({"query": "/", "level": -1, "depth": 0})
    assert text == (
        "(path = %s) OR (EXISTS (SELECT 1 FROM generate_series(1,"
        f" LEAST(path_depth, {DEEPEST} - 1)) AS levels(l)"
        " WHERE path_depth - l BETWEEN %s AND %s))"
    )
    assert params == ["/", *SITE, 0, 0]


def test_level_0_skips_the_elements_shared_with_the_index_path():
    # /plone/portal_catalog/x: ExtendedPathIndex compares only "x", at level 2.
    text, params = _where({"query": "/plone/portal_catalog/x", "depth": 2})
    assert "generate_series(%s::integer, %s::integer)" in text
    assert params[:3] == [["x"], 2, 2]


def test_path_index_compares_every_element():
    index = _index(PathIndex)
    text, params = _where("/plone/portal_catalog/x", index=index)
    assert (text, params[0]) == (SUBTREE, "/plone/portal_catalog/x")


def test_a_navtree_at_a_level_matches_ancestors_at_that_level():
    text, params = _where({"query": "a/b", "level": 1, "navtree": 1, "depth": 2})
    assert text.startswith(
        "EXISTS (SELECT 1 FROM generate_series(%s::integer, %s::integer) AS levels(l)"
        " WHERE %s <= l + %s AND"
        " ((path_depth - 1 BETWEEN LEAST(%s, l) AND GREATEST(%s, l))"
    )
    assert "@>" not in text  # the top levels need not hold the path
    # level 1, navtree_start 0 <= 1 + (2 elements - 1) + depth 2
    assert params[:4] == [1, 1, 0, 3]


# -- values and errors --------------------------------------------------------------


def test_values_never_appear_in_the_sql_text():
    hostile = "/plone/x'); DROP TABLE object_state; --"
    for query in (
        hostile,
        {"query": hostile, "depth": 1},
        {"query": hostile, "navtree": 1, "depth": 3},
        {"query": hostile, "level": -1},
    ):
        text, params = _where(query)
        assert "DROP" not in text
        assert "DROP" in str(params)


@pytest.mark.parametrize(
    "query,message",
    [
        ({"query": 5}, "index 'path': 5 is neither a path nor a (path, level) pair"),
        ({"query": None}, "index 'path': None is neither"),
        ({"query": [(None, 1)]}, "index 'path': path None is not a string"),
        ({"query": [("/a", "x")]}, "index 'path': level 'x' is not an integer"),
        ({"query": "/a", "depth": "1"}, "index 'path': depth '1' is not an integer"),
        ({"query": "/a", "level": "1"}, "index 'path': level '1' is not an integer"),
        (
            {"query": "/a", "navtree": 1, "navtree_start": "1"},
            "index 'path': navtree_start '1' is not an integer",
        ),
        (
            {"query": "/", "level": -1, "depth": -2},
            "index 'path': path '/' with depth -2 at every level is not a valid query",
        ),
    ],
)
def test_bad_queries_raise_naming_the_index_and_value(query, message):
    with pytest.raises(
        QueryError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        _where(query)


def test_query_errors_are_value_errors():
    with pytest.raises(ValueError):
        _where({"query": 5})


def test_navtree_start_is_ignored_without_navtree():
    assert _where({"query": "/plone/a", "navtree_start": "x"}) == _where("/plone/a")


def test_a_navtree_at_every_level_with_an_empty_path_and_depth_below_minus_1_raises():
    # ExtendedPathIndex fails or answers nothing here, depending on the
    # content; we always raise.
    with pytest.raises(QueryError):
        _where({"query": "/", "level": -1, "navtree": 1, "depth": -2})


def test_without_a_context_the_site_is_where_the_catalog_lives():
    with_context = _where(
        {"query": "/plone/a/b", "navtree": 1, "depth": 0, "navtree_start": 2}
    )
    assert (
        _where(
            {"query": "/plone/a/b", "navtree": 1, "depth": 0, "navtree_start": 2},
            site=None,
        )
        == with_context
    )


# -- path_clause (site confinement and the write path) ----------------------------


def test_path_clause_subtree():
    assert path_clause("/plone", -1)[1] == ["/plone", "/plone/", "/plone0"]


def test_path_clause_depths():
    assert path_clause("/plone", 0)[0].as_string(None) == "path = %s"
    assert path_clause("/plone", 1)[0].as_string(None) == "parent_path = %s"
    assert path_clause("/plone", 2)[1] == ["/plone", "/plone/", "/plone0", 3]
