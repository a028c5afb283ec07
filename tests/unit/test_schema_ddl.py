"""The DDL that serves each catalog index, as SQL text.

Covers ``plone_pgcatalog.store.schema.index_ddl`` (its statements on the
catalog's table, ``expression_ddl``, and on the columns of schemas 1-4),
``drop_index_ddl`` and the names they give (``sql_index_name``): which SQL
indexes and statistics objects each index meta_type gets, that their
expressions are the ones the query translators write, and that their names
are valid PostgreSQL names, unique and stable.  Pure: the statements are
only composed, never run.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.columns import held_value
from plone_pgcatalog.store.columns import typed_value
from plone_pgcatalog.store.layout import json_key
from plone_pgcatalog.store.schema import drop_index_ddl
from plone_pgcatalog.store.schema import index_ddl
from plone_pgcatalog.store.schema import sql_index_name

import pytest
import re

#: PostgreSQL truncates longer names (NAMEDATALEN - 1 bytes).
_MAX_NAME = 63
#: Every kind of SQL object ``index_ddl`` names, with the statistics prefix.
_KINDS = ("i", "h", "f", "l", "si", "sh", "sf", "sl")


def _statements(meta_type: str, name: str, legacy: bool = False) -> list[str]:
    assert index_ddl(name, meta_type) is not None
    return schema.expression_ddl(name, meta_type, legacy=legacy).split("; ")


def _text(name: str, meta_type: str) -> str:
    """What ``index_ddl`` creates on the catalog's table."""
    return schema.expression_ddl(name, meta_type, legacy=False)


T = '"pgcatalog_objects"'


def _created_names(text: str) -> list[str]:
    return re.findall(r'CREATE (?:INDEX|STATISTICS) IF NOT EXISTS "([^"]+)"', text)


def _dropped_names(text: str) -> list[str]:
    return re.findall(r'DROP (?:INDEX|STATISTICS) IF EXISTS "([^"]+)"', text)


# -- what each meta_type gets -----------------------------------------------------


def test_field_index_gets_a_btree_on_its_value_as_a_column_holds_it():
    """Served so where it has no typed column; a long string by its first
    characters (``columns.held_value``): a B-tree on the JSON value or its
    text failed the commit of a string over 2,704 bytes."""
    assert _statements("FieldIndex", "Title") == [
        f'CREATE INDEX IF NOT EXISTS "{sql_index_name("Title", "h")}" ON {T}'
        " USING btree (((CASE WHEN jsonb_typeof((idx -> 'Title')) = 'string'"
        " THEN left((idx -> 'Title') #>> '{}', 501) COLLATE \"C\" END)))",
    ]


def test_uuid_index_gets_the_same_indexes_as_a_field_index():
    field = index_ddl("UID", "FieldIndex").as_string(None)
    uuid = index_ddl("UID", "UUIDIndex").as_string(None)
    assert uuid == field
    held = held_value("UID", "text").as_string(None)
    assert f"USING btree (({held}))" in _text("UID", "UUIDIndex")


@pytest.mark.parametrize("meta_type", ["DateIndex", "BooleanIndex", "GopipIndex"])
def test_single_value_index_gets_one_btree(meta_type):
    name = sql_index_name
    assert _statements(meta_type, "effective") == [
        f'CREATE INDEX IF NOT EXISTS "{name("effective")}" ON {T} USING'
        " btree (((idx -> 'effective')))",
    ]


def test_keyword_index_gets_a_gin_on_its_value():
    name = sql_index_name
    assert _statements("KeywordIndex", "Subject") == [
        f'CREATE INDEX IF NOT EXISTS "{name("Subject")}" ON {T} USING gin'
        " (((idx -> 'Subject')))",
    ]


def test_date_recurring_index_gets_gin_and_partial_btrees_on_first_and_last():
    name = sql_index_name
    has_value = "(idx -> 'start') IS NOT NULL"
    assert _statements("DateRecurringIndex", "start") == [
        f'CREATE INDEX IF NOT EXISTS "{name("start")}" ON {T} USING gin'
        " (((idx -> 'start')))",
        f'CREATE INDEX IF NOT EXISTS "{name("start", "f")}" ON {T} USING'
        f" btree ((((idx -> 'start') -> 0))) WHERE {has_value}",
        f'CREATE STATISTICS IF NOT EXISTS "{name("start", "sf")}"'
        f" ON (((idx -> 'start') -> 0)) FROM {T}",
        f'CREATE INDEX IF NOT EXISTS "{name("start", "l")}" ON {T} USING'
        f" btree ((((idx -> 'start') -> -1))) WHERE {has_value}",
        f'CREATE STATISTICS IF NOT EXISTS "{name("start", "sl")}"'
        f" ON (((idx -> 'start') -> -1)) FROM {T}",
    ]


def test_text_index_gets_a_gin_on_the_words_of_its_value():
    name = sql_index_name
    words = "to_tsvector('simple'::regconfig, COALESCE(idx ->> 'Description', ''))"
    assert _statements("ZCTextIndex", "Description") == [
        f'CREATE INDEX IF NOT EXISTS "{name("Description")}" ON {T}'
        f" USING gin (({words}))",
    ]


def test_before_schema_5_the_indexes_are_partial_on_object_state():
    """Until the upgrade 4 -> 5, an index added goes where schema 4 keeps
    the values, with its statistics object, as schema 4 made them."""
    name = sql_index_name
    assert _statements("KeywordIndex", "Subject", legacy=True) == [
        f'CREATE INDEX IF NOT EXISTS "{name("Subject")}" ON "object_state" USING gin'
        " (((idx -> 'Subject'))) WHERE idx IS NOT NULL",
        f'CREATE STATISTICS IF NOT EXISTS "{name("Subject", "si")}"'
        " ON ((idx -> 'Subject')) FROM \"object_state\"",
    ]
    text = index_ddl("Subject", "KeywordIndex").as_string(None)
    assert "to_regclass('pgcatalog_objects')) = 'v'" in text
    legacy = schema.expression_ddl("Subject", "KeywordIndex", legacy=True)
    assert legacy.replace("'", "''") in text
    assert _text("Subject", "KeywordIndex").replace("'", "''") in text


def test_searchable_text_needs_no_index_of_its_own():
    # Its words have their own column and GIN index (``BASE_DDL``).
    assert index_ddl("SearchableText", "ZCTextIndex") is None
    assert "pgcatalog_searchable_text" in schema.BASE_DDL


@pytest.mark.parametrize(
    "meta_type",
    [
        "DateRangeIndex",
        "ExtendedPathIndex",
        "PathIndex",
        "TopicIndex",
        "NoSuchIndex",
        "",
        "fieldindex",
    ],
)
def test_other_meta_types_need_no_ddl(meta_type):
    assert index_ddl("anything", meta_type) is None
    assert drop_index_ddl("anything", meta_type) is None


@pytest.mark.parametrize(
    "meta_type",
    [
        "FieldIndex",
        "KeywordIndex",
        "DateIndex",
        "BooleanIndex",
        "UUIDIndex",
        "GopipIndex",
        "DateRecurringIndex",
        "ZCTextIndex",
    ],
)
def test_only_partial_indexes_have_statistics_objects(meta_type):
    """PostgreSQL keeps statistics of the expressions of other indexes."""
    statements = _statements(meta_type, "some_index")
    indexes = [s for s in statements if s.startswith("CREATE INDEX")]
    statistics = [s for s in statements if s.startswith("CREATE STATISTICS")]
    assert indexes and len(indexes) + len(statistics) == len(statements)
    assert len(statistics) == len([s for s in indexes if " WHERE " in s])
    assert all(f" ON {T} " in s for s in indexes)
    assert all(s.endswith(f" FROM {T}") for s in statistics)


# -- the expressions are the query translators' -------------------------------------


@pytest.mark.parametrize(
    "meta_type, method",
    [
        ("KeywordIndex", "gin"),
        ("DateIndex", "btree"),
        ("BooleanIndex", "btree"),
        ("GopipIndex", "btree"),
        ("DateRecurringIndex", "gin"),
    ],
)
def test_value_index_expression_is_the_translators_json_key(meta_type, method):
    key = json_key("review_state").as_string(None)
    first = _statements(meta_type, "review_state")[0]
    assert first.endswith(f"USING {method} (({key}))")


@pytest.mark.parametrize("meta_type", ["FieldIndex", "UUIDIndex"])
def test_string_index_expression_is_the_translators_typed_value(meta_type):
    """The expression searches compare where the index has no column
    (``QueryContext.column``, ``columns.typed_value``)."""
    typed = typed_value({}, "sortable_title", "text").as_string(None)
    assert _statements(meta_type, "sortable_title")[0].endswith(
        f"USING btree (({typed}))"
    )


def test_occurrence_expressions_are_the_translators_bounds():
    key = json_key("start").as_string(None)
    text = _text("start", "DateRecurringIndex")
    assert f"(({key} -> 0))" in text
    assert f"(({key} -> -1))" in text
    assert f"WHERE {key} IS NOT NULL" in text


# -- names and quoting ------------------------------------------------------------


def test_index_name_is_quoted_as_a_literal_in_expressions():
    text = _text("it's", "FieldIndex")
    assert "'it''s'" in text
    assert "'it's'" not in text


def test_sql_index_name_is_stable():
    # Existing databases hold indexes under these names: a change of the
    # naming would leave them behind and build every index again.
    assert sql_index_name("Title") == "pgcatalog_i_title_768e0c1c"
    assert sql_index_name("Subject", "si") == "pgcatalog_si_subject_8d183dbd"


def test_sql_index_name_lowercases_and_replaces_odd_characters():
    name = sql_index_name("My-Index.Name ü")
    assert re.fullmatch(r"pgcatalog_i_my_index_name___[0-9a-f]{8}", name)


@pytest.mark.parametrize(
    "index_name",
    ["Title", "x" * 200, "ÜÖÄ-" * 30, "a b;c'd\"e", "", "日本語の索引" * 20],
)
@pytest.mark.parametrize("kind", _KINDS)
def test_sql_index_name_is_a_valid_unquoted_postgresql_name(index_name, kind):
    name = sql_index_name(index_name, kind)
    assert re.fullmatch(r"[a-z_][a-z0-9_]*", name)
    assert len(name.encode("utf-8")) <= _MAX_NAME


@pytest.mark.parametrize(
    "first, second",
    [
        ("Title", "title"),
        ("a-b", "a_b"),
        ("a.b", "a b"),
        ("x" * 40 + "1", "x" * 40 + "2"),
        ("Größe", "Grösse"),
    ],
)
def test_names_that_fold_alike_still_get_different_sql_names(first, second):
    assert sql_index_name(first) != sql_index_name(second)


def test_long_names_keep_a_prefix_of_the_index_name():
    name = sql_index_name("abcdefghij" * 10)
    assert name.startswith("pgcatalog_i_" + "abcdefghij" * 4 + "_")


@pytest.mark.parametrize(
    "meta_type, count",
    [
        ("FieldIndex", 1),
        ("UUIDIndex", 1),
        ("KeywordIndex", 1),
        ("DateIndex", 1),
        ("DateRecurringIndex", 5),
        ("ZCTextIndex", 1),
    ],
)
def test_objects_of_one_index_have_distinct_names(meta_type, count):
    names = _created_names(_text("x" * 100, meta_type))
    assert len(names) == len(set(names)) == count
    assert all(n.startswith(schema.NAME_PREFIX) for n in names)


def test_objects_of_different_indexes_have_distinct_names():
    names = []
    for index_name in ["Title", "title", "TITLE", "ti-tle", "ti_tle"]:
        names += _created_names(schema.expression_ddl(index_name, "FieldIndex", True))
    assert len(names) == len(set(names)) == 5 * 2


@pytest.mark.parametrize(
    "meta_type",
    [
        "FieldIndex",
        "KeywordIndex",
        "DateIndex",
        "BooleanIndex",
        "UUIDIndex",
        "GopipIndex",
        "DateRecurringIndex",
        "ZCTextIndex",
    ],
)
def test_drop_index_ddl_drops_exactly_what_index_ddl_creates(meta_type):
    """On the table, and on ``object_state`` before schema 5."""
    created = set(_created_names(index_ddl("Ab-c", meta_type).as_string(None)))
    dropped = _dropped_names(drop_index_ddl("Ab-c", meta_type).as_string(None))
    assert sorted(dropped) == sorted(created)
    assert set(_created_names(_text("Ab-c", meta_type))) <= created


@pytest.mark.parametrize("meta_type", ["FieldIndex", "DateRecurringIndex"])
def test_schema_check_looks_for_the_names_index_ddl_creates(meta_type):
    # ``create_schema`` decides from these names whether DDL is missing.
    created = _created_names(_text("start", meta_type))
    assert schema._index_object_names("start", meta_type) == set(created)


@pytest.mark.parametrize("kind", sorted(columns.KINDS))
def test_a_typed_columns_index_names_are_those_its_statements_make(kind):
    """``columns.ready_rows`` tells whether a column's indexes are there by
    ``column_index_names``, which names them without the statements."""
    for name in ("effectiveRange", "portal_type", "a name with spaces"):
        made = columns.column_indexes(name, kind)
        assert columns.column_index_names(name, kind) == [index for index, _ in made]
        for index, statement in made:
            text = statement.as_string(None)
            assert f'CREATE INDEX IF NOT EXISTS "{index}" ' in text
