"""Query translation is a pure function: SQL text and parameters."""

from __future__ import annotations

from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.store.columns import held_value
from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex
from Products.PluginIndexes.KeywordIndex.KeywordIndex import KeywordIndex
from psycopg.types.json import Jsonb

import pytest

#: A FieldIndex without its typed column, as searches compare it
#: (``columns.typed_value``).
HELD = held_value("portal_type", "text").as_string(None)


class _Extra:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _indexes():
    from Products.ExtendedPathIndex.ExtendedPathIndex import ExtendedPathIndex

    return {
        "portal_type": FieldIndex("portal_type"),
        "Subject": KeywordIndex("Subject"),
        "path": ExtendedPathIndex("path"),
    }


def _sql(plan):
    statement, params = plan.ids_query()
    return statement.as_string(None), params


def _values(params):
    return [
        (
            [p.obj for p in param]
            if isinstance(param, list) and param and isinstance(param[0], Jsonb)
            else (param.obj if isinstance(param, Jsonb) else param)
        )
        for param in params
    ]


def test_a_value_with_a_nul_is_looked_up_as_stored():
    # As ``extraction.index_value`` stores it: NUL made U+0001.
    query = {
        "portal_type": {"query": "a\x00b", "not": ["c\x00"]},
        "Subject": {"query": ["\x00", "s"], "range": "min:max"},
        "path": {"query": "/plone/a\x00b", "depth": 0},
    }
    text, params = _sql(build_query(query, _indexes(), "/plone"))
    assert not any("\x00" in repr(value) for value in _values(params))
    values = _values(params)
    for expected in (["a\x01b"], ["c\x01"], "\x01", "/plone/a\x01b"):
        assert expected in values


def test_field_values_are_one_array_parameter():
    text, params = _sql(
        build_query({"portal_type": ["Document", "News Item"]}, _indexes(), "/plone")
    )
    # No typed column here: the value as the column would hold it.
    assert f"{HELD} = ANY(%s::text[])" in text
    assert ["Document", "News Item"] in _values(params)


def test_sql_text_is_stable_for_any_number_of_values():
    one, _ = _sql(build_query({"portal_type": ["a"]}, _indexes(), "/plone"))
    three, _ = _sql(build_query({"portal_type": ["a", "b", "c"]}, _indexes(), "/plone"))
    assert one == three


def test_values_never_appear_in_the_sql_text():
    hostile = "x'); DROP TABLE object_state; --"
    text, params = _sql(
        build_query({"portal_type": hostile, "Subject": hostile}, _indexes(), "/plone")
    )
    assert "DROP TABLE" not in text
    assert hostile in str(_values(params))


def test_keyword_or_and_and():
    text, params = _sql(build_query({"Subject": ["a", "b"]}, _indexes(), "/plone"))
    assert "(idx -> 'Subject') ?| %s" in text
    text, params = _sql(
        build_query(
            {"Subject": {"query": ["a", "b"], "operator": "and"}}, _indexes(), "/plone"
        )
    )
    assert "(idx -> 'Subject') ?& %s" in text


def test_unknown_keys_are_ignored():
    with_key, params_with = _sql(
        build_query({"portal_type": "a", "nope": 1}, _indexes(), "/plone")
    )
    without, params_without = _sql(
        build_query({"portal_type": "a"}, _indexes(), "/plone")
    )
    assert with_key == without


def test_every_query_is_confined_to_the_site():
    text, params = _sql(build_query({}, _indexes(), "/plone"))
    assert "path >= %s AND path < %s" in text
    assert params[:3] == ("/plone", "/plone/", "/plone0")


def test_children_use_parent_path():
    text, params = _sql(
        build_query({"path": {"query": "/plone/f", "depth": 1}}, _indexes(), "/plone")
    )
    assert "parent_path = %s" in text
    assert "/plone/f" in params


def test_sort_and_batch():
    plan = build_query(
        {"sort_on": "portal_type", "sort_order": "reverse", "b_start": 10, "b_size": 5},
        _indexes(),
        "/plone",
    )
    text, params = _sql(plan)
    assert "DESC" in text and "LIMIT %s" in text and "OFFSET %s" in text
    # Sorted: counted in the same pass (a sort index walked for the window
    # reads whole groups of equal keys).
    assert "count(*) OVER ()" in text
    assert text.count(" FROM pgcatalog_objects WHERE ") == 1
    assert params[-2:] == (5, 10)


def test_a_window_is_counted_apart_and_cut_by_its_limit():
    """The count is an uncorrelated subquery (run once) of the same
    conditions; the window's own rows stop at its ``LIMIT`` (no window
    function keeping every match for the count)."""
    plan = build_query({"portal_type": "a", "b_size": 5}, _indexes(), "/plone")
    text, params = _sql(plan)
    where = plan.where.as_string(None)
    assert text == (
        f"SELECT zoid, path, (SELECT count(*) FROM pgcatalog_objects WHERE {where})"
        f" FROM pgcatalog_objects WHERE {where} ORDER BY zoid LIMIT %s"
    )
    assert params == (*plan.params, *plan.params, 5)


def test_in_a_large_catalog_a_sorted_window_is_counted_apart():
    """``QueryContext.large``: the count is an uncorrelated subquery, the
    window's rows ordered on the sort keys, then zoid, and cut by ``LIMIT``
    (PostgreSQL may walk a sort index and stop early)."""
    query = {"portal_type": "a", "sort_on": "portal_type", "b_start": 10, "b_size": 5}
    plan = build_query(query, _indexes(), "/plone", QueryContext(large=True))
    text, params = _sql(plan)
    where = plan.where.as_string(None)
    order_by = plan.order_by.as_string(None)
    assert order_by.endswith(" ASC, zoid")
    assert text == (
        f"SELECT zoid, path, (SELECT count(*) FROM pgcatalog_objects WHERE {where})"
        f" FROM pgcatalog_objects WHERE {where} ORDER BY {order_by}"
        " LIMIT %s OFFSET %s"
    )
    assert params == (*plan.params, *plan.params, 5, 10)
    # Not in a small one (``test_sort_and_batch``).
    assert "count(*) OVER ()" in _sql(build_query(query, _indexes(), "/plone"))[0]
    # Nor for the first rows of a whole result (the rest needs every match
    # sorted: counted apart, they would be read twice).
    del query["b_start"], query["b_size"]
    whole = build_query(query, _indexes(), "/plone", QueryContext(large=True))
    text, _ = whole.rows_query(100, 0, counted=True)
    assert "count(*) OVER ()" in text.as_string(None)


def test_a_site_alone_in_its_table_has_no_test_of_its_path():
    """``QueryContext.site_alone``: every row of the table is the site's,
    so no condition keeps other sites' rows out; with pending changes laid
    over the rows (which may be another site's) it stays."""
    from plone_pgcatalog.store.overlay import Overlay

    site = "(path = %s OR (path >= %s AND path < %s))"
    query = {"portal_type": "a"}
    text, params = _sql(build_query(query, _indexes(), "/plone"))
    assert site in text and "/plone/" in params
    alone = QueryContext(site_alone=True)
    text, params = _sql(build_query(query, _indexes(), "/plone", alone))
    assert site not in text and "/plone/" not in params
    assert f"WHERE ({HELD} = ANY(%s::text[])) ORDER BY zoid" in text
    overlay = Overlay(rows=({"zoid": 1, "path": "/other/a", "idx": {}},))
    text, _ = _sql(build_query(query, _indexes(), "/plone", alone, overlay))
    assert site in text
    # Every row (``len(catalog)``): no condition at all.
    every = build_query({}, _indexes(), "/plone", alone, match_all=True)
    assert every.where.as_string(None) == "TRUE"
    assert build_query({}, _indexes(), "/plone", alone).where.as_string(None) == (
        "FALSE"
    )


@pytest.mark.parametrize(
    "ends,alone",
    [
        (("/plone", "/plone/z", "/plone/a", False), True),
        (("/plone/a", "/plone/z", "/plone/b", False), True),  # root not cataloged
        ((None, None, None, False), True),  # no rows
        (("/plone", "/plone", None, False), True),
        (("/other", "/plone/z", "/plone/a", False), False),  # before the site
        (("/plone", "/plone0/a", "/plone/a", False), False),  # after its subtree
        (("/plone", "/plone/z", "/plone-archive", False), False),  # between
        (("/plone", "/plone/z", "/plone.x", False), False),
        (("/plone", "/plone/z", "/plone/a", True), False),  # a row without a path
    ],
)
def test_where_the_paths_lie_tells_whether_a_site_is_alone(ends, alone):
    from plone_pgcatalog.store import layout

    assert layout.site_alone(ends, "/plone") is alone


def test_b_start_without_a_window_size_is_ignored():
    plan = build_query({"portal_type": "a", "b_start": 5}, _indexes(), "/plone")
    assert (plan.limit, plan.offset) == (None, 0)


def test_sorting_on_the_path_index_sorts_on_the_path():
    text, _ = _sql(
        build_query({"portal_type": "a", "sort_on": "path"}, _indexes(), "/plone")
    )
    assert "ORDER BY path ASC, zoid" in text


def test_unknown_sort_index_raises_catalog_error():
    from Products.ZCatalog.Catalog import CatalogError

    with pytest.raises(CatalogError, match="Unknown sort_on index"):
        build_query({"sort_on": "nope"}, _indexes(), "/plone")
    with pytest.raises(UnknownIndexError):
        build_query({"sort_on": "Subject"}, _indexes(), "/plone")


def test_invalid_operator_names_index():
    with pytest.raises(
        ValueError, match="index 'Subject': operator 'xor' is not valid"
    ):
        build_query(
            {"Subject": {"query": "a", "operator": "xor"}}, _indexes(), "/plone"
        )


def test_keyword_range_tests_each_keyword():
    text, params = _sql(
        build_query(
            {"Subject": {"query": ["a", "c"], "range": "min:max"}}, _indexes(), "/plone"
        )
    )
    assert "jsonb_array_elements((idx -> 'Subject')) AS e(k)" in text
    assert "((e.k #>> '{}') COLLATE \"C\") >= %s" in text
    assert ["a", "c"] == [p for p in params if p in ("a", "c")]


def test_a_range_without_values_names_the_index():
    with pytest.raises(QueryError, match="'portal_type'"):
        build_query(
            {"portal_type": {"query": [], "range": "min"}}, _indexes(), "/plone"
        )


def test_values_that_cannot_be_sorted_name_the_index():
    with pytest.raises(QueryError, match="'portal_type'"):
        build_query({"portal_type": ["a", 1]}, _indexes(), "/plone")


def test_a_query_naming_no_index_has_no_results():
    for query in ({}, {"nope": 1}, {"sort_on": "portal_type"}):
        text, _ = _sql(build_query(query, _indexes(), "/plone"))
        assert " AND FALSE" in text


def test_an_index_with_nothing_to_do_ends_the_search():
    text, _ = _sql(build_query({"portal_type": []}, _indexes(), "/plone"))
    assert " AND FALSE" in text


def test_not_only_removes_excluded_objects_or_keeps_those_with_a_value():
    # UnIndex: every object minus those with an excluded value, or, when no
    # object has one, the objects with a value.
    for query in (
        {"portal_type": {"not": "a"}},
        {"Subject": "x", "portal_type": {"not": "a"}},
    ):
        text, _ = _sql(build_query(query, _indexes(), "/plone"))
        assert (
            f"NOT COALESCE({HELD} = ANY(%s::text[]), FALSE) AND "
            "((idx -> 'portal_type') IS NOT NULL OR EXISTS"
            " (SELECT 1 FROM pgcatalog_objects"
        ) in text


def test_sort_limit_is_the_window_size_from_b_start():
    plan = build_query(
        {"portal_type": "a", "sort_on": "portal_type", "sort_limit": 3, "b_start": 2},
        _indexes(),
        "/plone",
    )
    assert (plan.limit, plan.offset) == (3, 2)


def test_full_text_without_sort_is_ordered_by_relevance():
    from plone_pgcatalog.query import QueryContext
    from Products.ZCTextIndex.ZCTextIndex import ZCTextIndex

    indexes = dict(_indexes())
    indexes["SearchableText"] = ZCTextIndex.__new__(ZCTextIndex)
    indexes["SearchableText"].id = "SearchableText"
    indexes["SearchableText"].meta_type = "ZCTextIndex"
    plan = build_query(
        {"SearchableText": "Lighthouses"},
        indexes,
        "/plone",
        QueryContext(text_configs=("english",)),
    )
    text, params = _sql(plan)
    assert "ORDER BY score DESC, zoid" in text
    assert "to_tsquery(%s::regconfig, %s)" in text
    assert (
        "lighthouses:A" in params and "lighthouses:B" in params and "english" in params
    )


def test_full_text_sorted_on_the_path_is_not_ranked():
    from Products.ZCTextIndex.ZCTextIndex import ZCTextIndex

    indexes = dict(_indexes())
    indexes["SearchableText"] = ZCTextIndex.__new__(ZCTextIndex)
    indexes["SearchableText"].id = "SearchableText"
    indexes["SearchableText"].meta_type = "ZCTextIndex"
    plan = build_query(
        {"SearchableText": "Lighthouses", "sort_on": "path"}, indexes, "/plone"
    )
    text, _ = _sql(plan)
    assert "ORDER BY path ASC, zoid" in text and "score" not in text


def test_moved_subtrees_are_read_at_their_new_paths():
    from plone_pgcatalog.store.overlay import Overlay
    from plone_pgcatalog.store.relocation import Relocation

    overlay = Overlay(relocations=(Relocation("/plone/a", "/plone/b/a"),))
    text, params = _sql(
        build_query({"portal_type": "a"}, _indexes(), "/plone", overlay=overlay)
    )
    # The other rows are read as stored, outside the moved subtree...
    assert "NOT (path = %s OR (path >= %s AND path < %s))" in text
    assert params[1:4] == ("/plone/a", "/plone/a/", "/plone/a0")
    # ...the moved rows through the relocation, with its target.
    assert "THEN %s || substr(s.path, %s)" in text
    assert "WHEN s.path = %s THEN %s" in text
    first = params.index("/plone/b/a")
    assert params[first - 3 : first + 2] == (
        "/plone/a",
        "/plone/a/",
        "/plone/a0",
        "/plone/b/a",
        9,
    )
    assert "/plone/b" in params  # its parent


def test_pending_rows_stand_in_for_the_table():
    from plone_pgcatalog.store.overlay import Overlay

    overlay = Overlay(
        rows=(
            {
                "zoid": 7,
                "path": "/plone/a",
                "parent_path": "/plone",
                "path_depth": 2,
                "idx": {"portal_type": "a"},
                "searchable_text": None,
                "text_config": "simple",
            },
        ),
        removed_paths=("/plone/b",),
    )
    text, params = _sql(
        build_query({"portal_type": "a"}, _indexes(), "/plone", overlay=overlay)
    )
    assert "FROM (SELECT zoid, path" in text and "jsonb_to_recordset(%s)" in text
    assert params[:2] == ([7], ["/plone/b"])
    # Encoded as the commit encodes the rows (orjson, ``jsonvalue``).
    from plone_pgcatalog.store import jsonvalue

    [rows] = [p for p in params if isinstance(p, Jsonb)]
    assert rows.dumps is jsonvalue.dumps


#: Typed columns ready, as a request reads them (``columns.ready_rows``).
_COLUMNS = {
    "portal_type": "text",
    "Subject": "keywords",
    "Title": "text",
    "getObjPositionInParent": "integer",
}


def _positioned():
    """``_indexes`` and the position index (a stand-in: plone.folder's
    asks its catalog for the folders, which a translation never does)."""
    name = "getObjPositionInParent"
    gopip = _Extra(meta_type="GopipIndex", id=name, getId=lambda: name)
    return {**_indexes(), name: gopip}


def test_pending_changes_derive_only_the_columns_the_search_names():
    # Each derived column is planned for every branch that lays changes
    # over: some 25 of them for a search by UID after a rename, 5.5 ms of
    # planning for 0.24 ms of execution.
    from plone_pgcatalog.store.overlay import Overlay
    from plone_pgcatalog.store.relocation import Relocation

    overlay = Overlay(relocations=(Relocation("/plone/a", "/plone/b/a"),))
    context = QueryContext(columns=_COLUMNS)
    text, _ = _sql(
        build_query({"portal_type": "a"}, _indexes(), "/plone", context, overlay)
    )
    assert "jsonb_typeof((b.idx -> 'portal_type'))" in text
    assert '"Title"' not in text and '"Subject"' not in text
    query = {"portal_type": "a", "sort_on": "getObjPositionInParent"}
    text, _ = _sql(build_query(query, _positioned(), "/plone", context, overlay))
    assert 'AS "getObjPositionInParent"' in text and '"Title"' not in text


def test_items_of_reordered_folders_keep_their_stored_columns_but_positions():
    # The other conditions of a search still use the column's indexes in
    # that branch: a search by UID sorted on positions after a reorder in
    # a folder of 1,500 items derived every column of each, 70 ms.
    from plone_pgcatalog.store.overlay import Overlay

    overlay = Overlay(
        reordered=("/plone/f",),
        positions={"/plone/f/a": {"getObjPositionInParent": 1}},
    )
    context = QueryContext(columns=_COLUMNS)
    query = {"portal_type": "a", "sort_on": "getObjPositionInParent"}
    text, params = _sql(build_query(query, _positioned(), "/plone", context, overlay))
    assert text.count("jsonb_typeof") == 1
    assert (
        "SELECT zoid, path, parent_path, path_depth, idx || n.new AS idx,"
        " searchable_text, COALESCE(CASE WHEN jsonb_typeof((n.new ->"
        " 'getObjPositionInParent'))"
    ) in text
    assert ' AS "getObjPositionInParent", "portal_type" FROM pgcatalog_objects' in text
    assert {"/plone/f/a": {"getObjPositionInParent": 1}} in _values(params)
    # Nothing pending: no branch of pending rows.
    assert "AS p(zoid bigint, path text" not in text


def test_bad_batch_size_names_the_key():
    with pytest.raises(ValueError, match="b_size"):
        build_query({"b_size": "ten"}, _indexes(), "/plone")


def test_sort_presence_is_not_a_condition_a_b_tree_can_drive():
    # ``(idx -> 'name') IS NOT NULL`` let the planner walk the sort key's
    # whole B-tree instead of the index of a selective condition (a
    # folder's items sorted on their position, 10,000 documents: 16-23 ms
    # instead of 3): the presence is a key test, which no index answers.
    text, _ = _sql(
        build_query(
            {"path": {"query": "/plone/f", "depth": 1}, "sort_on": "portal_type"},
            _indexes(),
            "/plone",
        )
    )
    assert "idx ? 'portal_type'" in text
    assert "(idx -> 'portal_type') IS NOT NULL" not in text
