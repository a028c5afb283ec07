"""Translation onto typed columns (``store.columns``): which query values a
column serves, and that everything else still reads ``idx``.

No database: SQL text and bound values, with ``QueryContext.columns``
saying which columns are ready.
"""

from __future__ import annotations

from DateTime import DateTime
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.store import columns
from plone_pgcatalog.store.columns import held_value
from plone_pgcatalog.store.overlay import Overlay
from Products.PluginIndexes.KeywordIndex.KeywordIndex import KeywordIndex
from psycopg import sql
from tests.unit.test_translators import _indexes

import pytest

#: Every typed column the indexes of ``_indexes`` can have, ready.
READY = {
    "Subject": "keywords",
    "UID": "text",
    "created": "integer",
    "effectiveRange": "range",
    "getObjPositionInParent": "integer",
    "is_folderish": "boolean",
    "portal_type": "text",
}


def _translate(query, ready=READY, overlay=None):
    plan = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(ready)), overlay
    )
    statement, params = plan.ids_query()
    return statement.as_string(None), list(params)


def test_field_index_strings_are_looked_up_in_the_column():
    text, values = _translate({"portal_type": ["Document", "News Item"]})
    assert '"portal_type" = ANY(%s::text[])' in text
    assert "idx" not in text
    assert ["Document", "News Item"] in values


def test_field_index_computes_its_value_while_its_column_is_not_ready():
    """From ``idx``, as the column would hold it: the expression of the
    index's B-tree where it has no column (``columns.held_value``)."""
    text, _ = _translate({"portal_type": "Document"}, ready={})
    held = held_value("portal_type", "text").as_string(None)
    assert f"{held} = ANY(%s::text[])" in text
    assert '"portal_type"' not in text


def test_field_index_numbers_are_looked_up_in_idx():
    # The text column holds strings only: a number is found as JSON.
    text, _ = _translate({"portal_type": 5})
    assert "(idx -> 'portal_type') = ANY(%s)" in text


def test_a_column_of_another_kind_is_not_used():
    text, _ = _translate({"portal_type": "Document"}, ready={"portal_type": "keywords"})
    assert '"portal_type"' not in text


def test_field_index_not_is_false_where_the_column_is_null():
    # NOT (NULL) would drop the rows whose value is not a string.
    text, _ = _translate({"portal_type": {"query": "Document", "not": "Folder"}})
    assert (
        '"portal_type" = ANY(%s::text[]) AND NOT COALESCE("portal_type"'
        " = ANY(%s::text[]), FALSE)" in text
    )


def test_field_index_string_ranges_compare_the_column():
    text, values = _translate(
        {"portal_type": {"query": ["A", "M"], "range": "min:max"}}
    )
    assert '"portal_type" IS NOT NULL AND TRUE AND "portal_type" >= %s' in text
    assert '"portal_type" <= %s' in text
    assert "A" in values and "M" in values


def test_an_unbounded_range_counts_values_of_every_type():
    # No min and no max: every object with a value, strings or not.
    text, _ = _translate({"portal_type": {"query": "A", "range": "all"}})
    assert "(idx -> 'portal_type') IS NOT NULL AND TRUE" in text


def test_date_index_ranges_compare_the_bigint_column_with_plain_ints():
    text, values = _translate(
        {"created": {"query": DateTime("2024/01/02 03:04 UTC"), "range": "min"}}
    )
    assert '"created" IS NOT NULL AND TRUE AND "created" >= %s' in text
    assert any(isinstance(value, int) for value in values)


def test_keywords_any_and_all():
    text, values = _translate({"Subject": ["a", "b"]})
    assert '"Subject" && %s::text[]' in text
    assert ["a", "b"] in values
    text, _ = _translate({"Subject": {"query": ["a", "b"], "operator": "and"}})
    assert '"Subject" @> %s::text[]' in text


def test_keyword_ranges_read_the_lists_where_they_are_stored():
    # A ready keywords column holds the lists of strings alone (they are
    # stored once: ``columns.stored_once``); other lists are in ``idx``.
    text, _ = _translate({"Subject": {"query": "a", "range": "min"}})
    value = (
        "COALESCE((pgcatalog_objects.idx -> 'Subject'),"
        ' to_jsonb(pgcatalog_objects."Subject"))'
    )
    assert f"jsonb_array_elements({value})" in text
    text, _ = _translate({"Subject": {"query": "a", "range": "min"}}, ready={})
    assert "jsonb_array_elements((idx -> 'Subject'))" in text
    text, _ = _translate(
        {"Subject": {"query": ["a", "z"], "range": "min:max", "operator": "and"}}
    )
    assert (
        "jsonb_array_elements(COALESCE((o.idx -> 'Subject'), to_jsonb(o.\"Subject\")))"
        in text
    )
    assert f"NOT {value} @> jsonb_build_array(e.k)" in text


def test_keyword_not_only_tests_the_value_where_it_is_stored():
    text, _ = _translate({"Subject": {"not": "a"}})
    assert (
        "(COALESCE((pgcatalog_objects.idx -> 'Subject'),"
        ' to_jsonb(pgcatalog_objects."Subject")) IS NOT NULL OR EXISTS' in text
    )


def test_boolean_index_compares_the_boolean_column():
    text, values = _translate({"is_folderish": 1})
    assert '"is_folderish" = %s' in text
    assert True in values


def test_effective_range_tests_the_moment_in_the_int8range():
    text, values = _translate({"effectiveRange": DateTime("2024/01/02 03:04 UTC")})
    assert '"effectiveRange" @> %s::bigint' in text
    assert "idx" not in text.split("WHERE", 1)[1].split("ORDER BY")[0]


def test_sorting_on_a_string_index_reads_idx_only_without_a_string():
    text, _ = _translate({"portal_type": "Document", "sort_on": "portal_type"})
    assert "(CASE WHEN \"portal_type\" IS NULL THEN (idx -> 'portal_type') END)" in text
    # Presence: the column first, ``idx`` for the other rows only.
    assert "(\"portal_type\" IS NOT NULL OR idx ? 'portal_type')" in text


def test_sorting_on_dates_and_positions_uses_their_columns():
    text, _ = _translate({"portal_type": "Document", "sort_on": "created"})
    assert "ORDER BY sort_key_0 ASC, zoid" in text or '"created" ASC' in text
    assert '"created" AS sort_key_0' in text or '"created" ASC' in text
    text, _ = _translate(
        {"portal_type": "Document", "sort_on": "getObjPositionInParent"}
    )
    assert '"getObjPositionInParent"' in text


def test_the_overlay_derives_the_columns_of_pending_rows():
    overlay = Overlay(rows=({"zoid": 1, "path": "/plone/a", "idx": {}},))
    text, _ = _translate({"portal_type": "Document"}, overlay=overlay)
    # Stored rows read the column as stored; pending rows derive it.  Only
    # the columns the search names are given (``query._columns_named``).
    assert 'searchable_text, "portal_type" FROM pgcatalog_objects' in text
    assert '"Subject"' not in text and '"UID"' not in text
    assert "jsonb_typeof((b.idx -> 'portal_type')) = 'string'" in text


@pytest.mark.parametrize("kind", sorted(columns.KINDS))
def test_the_trigger_sets_each_kind_from_the_new_idx(kind):
    ddl = columns.trigger_ddl({"x": kind}).as_string(None)
    assert "NEW.idx -> ''x''" in ddl
    assert 'INTO NEW."x"' in ddl
    assert "BEFORE INSERT OR UPDATE OF idx ON pgcatalog_objects" in ddl


def test_names_that_cannot_be_columns():
    assert columns.column_name("portal_type") == "portal_type"
    assert columns.column_name("path") is None  # the table's own
    assert columns.column_name("idx") is None
    assert columns.column_name("x" * 64) is None  # PostgreSQL's 63 bytes


def test_derive_composes_one_expression_for_each_use():
    composed = columns.derive("text", sql.SQL("v")).as_string(None)
    # A string longer than ``TEXT_KEPT`` by its first characters.
    assert composed == (
        "CASE WHEN jsonb_typeof(v) = 'string'"
        " THEN left(v #>> '{}', 501) COLLATE \"C\" END"
    )


def _parts(plan, name):
    """The window's conditions and its two count parts, as text."""
    where = plan.where.as_string(None)
    presence = f"(\"{name}\" IS NOT NULL OR idx ? '{name}')"
    assert presence in where
    typed = where.replace(presence, f'"{name}" IS NOT NULL')
    untyped = where.replace(presence, f"\"{name}\" IS NULL AND idx ? '{name}'")
    return where, typed, untyped


def test_a_sorted_window_counted_apart_counts_in_two_parts_on_a_date_column():
    """``SearchSQL.count_parts``: sorted on ``created`` (``columns.SORTED``)
    in a large catalog, the count is the sum of the matches with a typed
    value and those whose value is only in ``idx``: each part's conditions
    are the window's, its presence test replaced; the parameters repeat.
    Here the date is the second sort key (the first: ``test_a_window_
    sorted_first_on_a_date_walks_from_the_edge``)."""
    query = {
        "portal_type": "Document",
        "sort_on": ["portal_type", "created"],
        "b_start": 20,
        "b_size": 10,
    }
    plan = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY), large=True)
    )
    assert plan.edge is None
    statement, params = plan.ids_query()
    text = statement.as_string(None)
    where, typed, untyped = _parts(plan, "created")
    assert text.startswith(
        f"SELECT zoid, path, (SELECT count(*) FROM pgcatalog_objects WHERE {typed})"
        f" + (SELECT count(*) FROM pgcatalog_objects WHERE {untyped})"
        f" FROM pgcatalog_objects WHERE {where} ORDER BY "
    )
    assert list(params) == [*plan.params, *plan.params, *plan.params, 10, 20]
    # The partial index's predicate, as the second part writes it.
    assert columns.untyped_predicate("created").as_string(None) == (
        "\"created\" IS NULL AND idx ? 'created'"
    )


@pytest.mark.parametrize(
    "order,first,bound,direction",
    [("reverse", "max", "<=", "DESC"), ("ascending", "min", ">=", "ASC")],
)
def test_a_window_sorted_first_on_a_date_walks_from_the_edge(
    order, first, bound, direction
):
    """``SearchSQL.edge``: the count of the typed part also takes the first
    key of the matches in the window's order, and the walk of the typed
    rows starts there (an index condition; the walk's own conditions are
    one test no index answers); the untyped rows are read once, counted and
    sorted with the walk's rows.  The walk's own limit is the
    end of the window."""
    query = {
        "portal_type": "Document",
        "sort_on": "created",
        "sort_order": order,
        "b_start": 20,
        "b_size": 10,
    }
    plan = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY), large=True)
    )
    column, reverse = plan.edge
    assert (column.as_string(None), reverse) == ('"created"', order == "reverse")
    statement, params = plan.ids_query()
    _where, typed, untyped = _parts(plan, "created")
    assert statement.as_string(None) == (
        "WITH counted AS MATERIALIZED (SELECT c.matches, c.edge, t.rows > 0 AND"
        " c.matches::float8 * c.matches >= %s * t.rows AS many FROM (SELECT"
        f' count(*) AS matches, {first}("created") AS edge FROM pgcatalog_objects'
        f" WHERE {typed}) AS c, (SELECT reltuples AS rows FROM pg_class"
        " WHERE oid = 'pgcatalog_objects'::regclass) AS t), untyped AS MATERIALIZED"
        f' (SELECT zoid, path, "created" AS sort_key_0 FROM pgcatalog_objects'
        f" WHERE {untyped}) SELECT zoid, path, (SELECT matches FROM counted)"
        " + (SELECT count(*) FROM untyped) FROM (SELECT * FROM untyped UNION ALL"
        f' (SELECT zoid, path, "created" AS sort_key_0 FROM pgcatalog_objects'
        f' WHERE COALESCE({typed}, false) AND "created" {bound}'
        " (SELECT edge FROM counted)"
        " AND (SELECT many FROM counted)"
        f' ORDER BY "created" {direction}, zoid LIMIT %s) UNION ALL (SELECT *'
        f' FROM (SELECT zoid, path, "created" AS sort_key_0 FROM pgcatalog_objects'
        f" WHERE {typed} AND NOT (SELECT many FROM counted) OFFSET 0) AS few"
        f" ORDER BY sort_key_0 {direction}, zoid LIMIT %s)) AS walked"
        f" ORDER BY sort_key_0 {direction}, zoid LIMIT %s OFFSET %s"
    )
    # The factor of the catalog's rows the square of the count is tested
    # on is the end of the window, as are the walk's and the sort's limit.
    p = list(plan.params)
    assert list(params) == [30, *p, *p, *p, 30, *p, 30, 10, 20]
    # The first page has no offset.
    query["b_start"] = 0
    first_page = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY), large=True)
    )
    statement, params = first_page.ids_query()
    assert statement.as_string(None).endswith(" LIMIT %s")
    assert list(params)[-2:] == [10, 10]
    # Its plan kept (``SearchSQL.plan_forced``) in a large catalog and in
    # a small one: the same statement.
    assert first_page.plan_forced and first_page.sorted_count_apart
    small = build_query(query, _indexes(), "/plone", QueryContext(columns=dict(READY)))
    assert small.plan_forced and small.sorted_count_apart
    assert small.ids_query() == first_page.ids_query()
    # But with pending changes (planned for them): counted in the same pass
    # there; and never for the first rows of a whole result.
    overlay = Overlay(rows=({"zoid": 1, "path": "/plone/a", "idx": {}},))
    pending = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY)), overlay
    )
    assert not pending.plan_forced
    assert "count(*) OVER ()" in pending.ids_query()[0].as_string(None)
    del query["b_size"], query["b_start"]
    whole = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY), large=True)
    )
    assert "WITH" not in whole.rows_query(100, 0, counted=True)[0].as_string(None)


@pytest.mark.parametrize(
    "narrowing",
    [
        {},
        {"path": "/plone"},  # the whole site: every row of it
        {"allowedRolesAndUsers": ["Anonymous"], "effectiveRange": DateTime()},
        {"path": "/plone/news"},  # a section's latest items
        {"path": {"query": "/plone", "depth": 2}},
        {"path": {"query": ["/plone/a", "/plone/b"]}},
        {"portal_type": "News Item"},
        {"Subject": "rare"},
    ],
)
def test_every_window_from_the_edge_keeps_its_plan(narrowing):
    """A window walked from the edge keeps one plan, blind to the values
    (``SearchSQL.plan_forced``), whatever its conditions and the catalog's
    size: the statement itself reads a condition's few matches by its
    indexes instead of walking (``SearchSQL._from_the_edge``)."""
    query = {"sort_on": "created", "b_size": 20, **narrowing}
    indexes = dict(
        _indexes(),
        path=_path_index(),
        allowedRolesAndUsers=KeywordIndex("allowedRolesAndUsers"),
    )
    for large in (False, True):
        plan = build_query(
            dict(query),
            indexes,
            "/plone",
            QueryContext(columns=dict(READY), large=large),
        )
        assert plan.from_the_edge and plan.plan_forced, (narrowing, large)
        assert "AS few" in plan.ids_query()[0].as_string(None)


def _path_index():
    from tests.unit.test_paths import _index

    return _index()


def test_only_date_sort_keys_split_the_count():
    query = {"portal_type": "Document", "sort_on": "getObjPositionInParent"}
    query.update(b_start=20, b_size=10)
    plan = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY), large=True)
    )
    assert plan.count_parts == ()
    assert plan.ids_query()[0].as_string(None).count("SELECT count(*)") == 1
    # Nor where the window is counted in the same pass (a small catalog,
    # sorted on an index that is not a date).
    small = build_query(query, _indexes(), "/plone", QueryContext(columns=dict(READY)))
    assert small.count_parts == () and not small.plan_forced
    assert "count(*) OVER ()" in small.ids_query()[0].as_string(None)


def _listing_plan(query, overlay=None, ready=READY):
    from tests.unit.test_paths import _index

    indexes = dict(_indexes(), path=_index())
    return build_query(
        query, indexes, "/plone", QueryContext(columns=dict(ready)), overlay
    )


@pytest.mark.parametrize(
    "query",
    [
        # Plone's navigation and a folder's contents.
        {
            "path": {"query": "/plone/a", "depth": 1},
            "portal_type": ["Document", "Folder"],
            "sort_on": "getObjPositionInParent",
        },
        {"path": {"query": "/plone/a", "depth": 1}, "b_start": 20, "b_size": 20},
        {"path": {"query": ["/plone/a"], "depth": 1}, "is_folderish": True},
    ],
)
def test_a_folders_listing_keeps_its_plan(query):
    """``SearchSQL.plan_kept``: one folder's items, sorted on their
    position or not sorted: the plan that reads them by ``parent_path`` is
    the best for every folder."""
    plan = _listing_plan(query)
    assert plan.plan_kept
    # The folder's items first, the one condition an index answers; the
    # others one test, with the same values.
    where = plan.where.as_string(None)
    assert where.startswith("(parent_path = %s) AND ((path = %s OR ")
    assert where.endswith(") IS TRUE")
    assert where.count("parent_path") == 1
    assert plan.params[:4] == ("/plone/a", "/plone", "/plone/", "/plone0")
    planned = _listing_plan(dict(query, sort_on="created"))
    assert not planned.plan_kept
    assert sorted(map(repr, planned.params)) == sorted(map(repr, plan.params))


@pytest.mark.parametrize(
    "query",
    [
        # A subtree, two folders' items.
        {"path": "/plone/a", "sort_on": "getObjPositionInParent"},
        {"path": {"query": ["/plone/a", "/plone/b"], "depth": 1}},
        # UIDs not on their column (not ready), or not looked up.
        {"UID": {"query": ["x"], "range": "min"}},
        {"UID": {"not": "x"}},
        # Sorted on a key whose index PostgreSQL may walk for a large
        # folder's first items, or ranked: a plan for the values.
        {"path": {"query": "/plone/a", "depth": 1}, "sort_on": "created"},
        {
            "path": {"query": "/plone/a", "depth": 1},
            "sort_on": ["getObjPositionInParent", "created"],
        },
        {"path": {"query": "/plone/a", "depth": 1}, "SearchableText": "word"},
        {
            "path": {"query": "/plone/a", "depth": 1},
            "SearchableText": "word",
            "sort_on": "getObjPositionInParent",
        },
        # A condition with a subquery of the table: ``not`` a value
        # (ZCatalog's answer depends on whether any row has it).
        {
            "path": {"query": "/plone/a", "depth": 1},
            "portal_type": {"not": "Document"},
        },
        # Not a listing at all.
        {"portal_type": "Document"},
        # A list of UIDs: PostgreSQL never keeps the plan of ``= ANY``.
        {"UID": ["x", "y"]},
    ],
)
def test_other_searches_are_planned_for_their_values(query):
    assert not _listing_plan(query).plan_kept


@pytest.mark.parametrize(
    "query,key,values",
    [
        # plone.app.uuid's lookup of a brain, a relation list's targets.
        ({"UID": "x"}, '"UID" = %s::text', ["x"]),
        (
            {"UID": ["x"], "portal_type": "Document"},
            '"UID" = %s::text',
            ["x"],
        ),
        # One object by its path.
        ({"path": {"query": "/plone/a", "depth": 0}}, "path = %s", ["/plone/a"]),
    ],
)
def test_a_lookup_by_a_key_keeps_its_plan(query, key, values):
    """One object a value: the key's index is the plan for any value."""
    plan = _listing_plan(query)
    assert plan.plan_kept
    where = plan.where.as_string(None)
    assert where.startswith(f"({key}) AND ((path = %s OR ")
    assert where.endswith(") IS TRUE")
    assert list(plan.params[: len(values)]) == values
    assert list(plan.params[len(values) :][:3]) == ["/plone", "/plone/", "/plone0"]


def test_a_uid_keeps_its_plan_without_its_column_too():
    """The B-tree on the value as its column would hold it finds one
    object whatever the UID, as the column's does."""
    assert _listing_plan({"UID": "x"}).plan_kept
    assert _listing_plan({"UID": "x"}, ready={}).plan_kept
    assert not _listing_plan({"UID": ["x", "y"]}, ready={}).plan_kept


def test_a_listing_with_pending_changes_is_planned_for_them():
    """The transaction's own rows come as parameters of the source
    (``overlay.Overlay``): a statement of another shape every time."""
    overlay = Overlay(rows=({"zoid": 1, "path": "/plone/a/x", "idx": {}},))
    query = {"path": {"query": "/plone/a", "depth": 1}}
    assert _listing_plan(query).plan_kept
    assert not _listing_plan(query, overlay).plan_kept


def _security(ready, overlay=None, many_lists=False, operator="or"):
    """The security terms' part of a statement (``numbered lists``)."""
    indexes = {
        **_indexes(),
        "allowedRolesAndUsers": KeywordIndex("allowedRolesAndUsers"),
    }
    query = {
        "portal_type": "Document",
        "allowedRolesAndUsers": {
            "query": ["Anonymous", "user:bob"],
            "operator": operator,
        },
    }
    plan = build_query(
        query,
        indexes,
        "/plone",
        QueryContext(columns=dict(ready), many_lists=many_lists),
        overlay,
    )
    statement, params = plan.ids_query()
    return statement.as_string(None), list(params)


NUMBERED = {
    **READY,
    "allowedRolesAndUsers": "keywords",
    "allowedRolesAndUsers:set": "set",
}


def test_the_security_terms_test_the_numbers_of_their_lists():
    text, values = _security(NUMBERED)
    assert (
        '"allowedRolesAndUsers:set" = ANY(ARRAY(SELECT s.id FROM'
        ' "pgcatalog_keyword_sets" AS s WHERE s.terms && %s::text[]))' in text
    )
    assert '"allowedRolesAndUsers" &&' not in text
    assert ["Anonymous", "user:bob"] in values


def test_many_lists_are_tested_by_a_semi_join():
    text, _ = _security(NUMBERED, many_lists=True)
    assert (
        '"allowedRolesAndUsers:set" IN (SELECT s.id FROM'
        ' "pgcatalog_keyword_sets" AS s WHERE s.terms && %s::text[])' in text
    )
    assert "ANY(ARRAY(" not in text
    assert columns.many_lists(columns.MANY_LISTS)
    assert not columns.many_lists(columns.MANY_LISTS - 1)
    assert not columns.many_lists(-1)  # never analyzed: few


@pytest.mark.parametrize(
    "ready, overlay, operator",
    [
        # The numbers not ready (being filled, or schema 10).
        ({**READY, "allowedRolesAndUsers": "keywords"}, None, "or"),
        # Pending rows have no number.
        (
            NUMBERED,
            Overlay(rows=({"zoid": 1, "path": "/plone/a", "idx": {}},)),
            "or",
        ),
        # Every term: the list contains them all.
        (NUMBERED, None, "and"),
    ],
)
def test_otherwise_the_security_terms_test_the_lists(ready, overlay, operator):
    text, _ = _security(ready, overlay, operator=operator)
    assert "allowedRolesAndUsers:set" not in text
    assert "pgcatalog_keyword_sets" not in text
    test = "@>" if operator == "and" else "&&"
    assert f'"allowedRolesAndUsers" {test} %s::text[]' in text


def test_the_overlay_derives_no_list_numbers():
    overlay = Overlay(rows=({"zoid": 1, "path": "/plone/a", "idx": {}},))
    source, _ = overlay.source(NUMBERED)
    text = source.as_string(None)
    assert '"allowedRolesAndUsers"' in text
    assert "allowedRolesAndUsers:set" not in text
    assert "pgcatalog_keyword_set(" not in text
    assert columns.derivable(NUMBERED) == {**READY, "allowedRolesAndUsers": "keywords"}


def test_a_numbered_lists_column_is_derived_from_its_index_key():
    ddl = columns.trigger_ddl({"allowedRolesAndUsers:set": "set"}).as_string(None)
    assert "pgcatalog_keyword_set(" in ddl
    assert "NEW.idx -> ''allowedRolesAndUsers''" in ddl
    assert columns.column_name("allowedRolesAndUsers:set") is None
    assert columns.source_key("allowedRolesAndUsers:set") == "allowedRolesAndUsers"


def _search_text(plan, metadata=True):
    from plone_pgcatalog.store.search import search_statement

    statement, params = search_statement(plan, metadata)
    return statement.as_string(None), list(params)


def test_a_window_in_zoid_order_carries_its_rows_metadata():
    """The first rows' metadata of a window in zoid order comes from the
    window's own rows (``SearchSQL.keeps_row_metadata``): no subquery of
    the table per row; the columns are those of the other form."""
    plan = build_query(
        {"portal_type": "Document"},
        _indexes(),
        "/plone",
        QueryContext(columns=dict(READY)),
    )
    assert plan.keeps_row_metadata(counted=True)
    text, params = _search_text(plan)
    inner, inner_params = plan.rows_query(100, 0, counted=True, with_meta=True)
    assert text == (
        "SELECT w.zoid, w.path, w.total, CASE WHEN row_number() OVER () <= %s"
        f" THEN w.meta::text END FROM ({inner.as_string(None)}) AS w"
    )
    assert ") AS total, meta FROM pgcatalog_objects WHERE" in text
    assert "o.zoid = w.zoid" not in text
    assert params == [20, *inner_params]
    # Without metadata: the window alone, as before.
    text, params = _search_text(plan, metadata=False)
    assert text == plan.rows_query(100, 0, counted=True)[0].as_string(None)
    assert "meta" not in text
    # A window the query asks for (``b_size``) in zoid order: the same.
    paged = build_query(
        {"portal_type": "Document", "b_start": 20, "b_size": 20},
        _indexes(),
        "/plone",
        QueryContext(columns=dict(READY)),
    )
    text, params = _search_text(paged)
    assert text.startswith("SELECT w.zoid, w.path, w.total, CASE")
    assert params[-2:] == [20, 20]


@pytest.mark.parametrize(
    "query, overlaid",
    [
        ({"portal_type": "Document", "sort_on": "created"}, False),
        ({"portal_type": "Document", "sort_on": "getObjPositionInParent"}, False),
        ({"SearchableText": "glacier"}, False),
        ({"portal_type": "Document"}, True),
    ],
)
def test_other_windows_read_their_rows_metadata_by_key(query, overlaid):
    """A sorted or ranked window (a sort would carry every match's
    metadata) and one over the pending changes (the overlay has no
    ``meta``) read the first rows' metadata by ``zoid`` after the cut."""
    overlay = None
    if overlaid:
        overlay = Overlay(rows=({"zoid": 1, "path": "/plone/a", "idx": {}},))
    plan = build_query(
        query, _indexes(), "/plone", QueryContext(columns=dict(READY)), overlay
    )
    assert not plan.keeps_row_metadata(counted=True)
    text, _ = _search_text(plan)
    assert text.startswith("SELECT w.*, CASE WHEN row_number() OVER () <= %s")
    assert (
        "(SELECT meta::text FROM pgcatalog_objects AS o WHERE o.zoid = w.zoid)" in text
    )
    with pytest.raises(ValueError, match="cannot carry"):
        plan.rows_query(100, 0, counted=True, with_meta=True)


def _grouped_plan(query: dict, group_counts=frozenset()):
    context = QueryContext(
        columns=dict(READY), group_counts=group_counts, site_alone=True
    )
    return build_query(query, _indexes(), "/plone", context)


@pytest.mark.parametrize(
    "query",
    [
        {"portal_type": "Document"},
        {"portal_type": "Document", "b_size": 5},
        {"portal_type": ["Document", "News Item"], "b_start": 5, "b_size": 5},
    ],
)
def test_a_window_in_zoid_order_counted_by_groups_keeps_one_plan(query):
    """Its count chooses how the window is read (``_by_the_count``)."""
    plan = _grouped_plan(query)
    assert plan.group_count is not None
    assert plan.by_the_count and plan.plan_forced
    statement, _ = plan.rows_query(plan.limit or 100, plan.offset, counted=True)
    text = statement.as_string(None)
    assert "AND NOT (SELECT many FROM counted)" in text
    assert columns.COUNTS_TABLE in text
    # The first rows' metadata is read by zoid after the window is cut.
    assert not plan.keeps_row_metadata(True)


@pytest.mark.parametrize(
    "query,group_counts",
    [
        # Cut in Python: the whole result is read.
        ({"portal_type": "Document", "b_size": -5}, frozenset()),
        # Sorted: its own statements (``_from_the_edge``, the sort).
        ({"portal_type": "Document", "sort_on": "created", "b_size": 5}, frozenset()),
        # A residue taken away: read by the range's indexes, for its values.
        (
            {"portal_type": "Document", "effectiveRange": DateTime(), "b_size": 5},
            frozenset({"effectiveRange"}),
        ),
        # A condition the groups do not have: its matches are counted.
        ({"portal_type": "Document", "Subject": "red", "b_size": 5}, frozenset()),
    ],
)
def test_other_windows_do_not_read_by_the_count(query, group_counts):
    plan = _grouped_plan(query, group_counts)
    assert not plan.by_the_count
    if group_counts:
        assert plan.group_count is not None and plan.group_count_residue
    if not plan.from_the_edge:
        assert not plan.plan_forced
