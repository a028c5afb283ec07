"""Each index type's translation: SQL text and bound values, no database."""

from __future__ import annotations

from DateTime import DateTime
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import QueryContext
from Products.PluginIndexes.BooleanIndex.BooleanIndex import BooleanIndex
from Products.PluginIndexes.DateIndex.DateIndex import DateIndex
from Products.PluginIndexes.DateRangeIndex.DateRangeIndex import DateRangeIndex
from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex
from Products.PluginIndexes.KeywordIndex.KeywordIndex import KeywordIndex
from Products.PluginIndexes.UUIDIndex.UUIDIndex import UUIDIndex
from psycopg.types.json import Jsonb

import datetime
import pytest


class _Extra:
    recurdef = "recurrence"
    until = "recurrence_until"


def _indexes():
    from plone.folder.nogopip import GopipIndex
    from Products.DateRecurringIndex.index import DateRecurringIndex
    from Products.ZCTextIndex.ZCTextIndex import ZCTextIndex

    gopip = GopipIndex.__new__(GopipIndex)
    gopip.id = "getObjPositionInParent"
    text = ZCTextIndex.__new__(ZCTextIndex)
    text.id = "SearchableText"
    return {
        "SearchableText": text,
        "Subject": KeywordIndex("Subject"),
        "created": DateIndex("created"),
        "effectiveRange": DateRangeIndex(
            "effectiveRange", since_field="effective", until_field="expires"
        ),
        "getObjPositionInParent": gopip,
        "is_folderish": BooleanIndex("is_folderish"),
        "portal_type": FieldIndex("portal_type"),
        "start": DateRecurringIndex("start", extra=_Extra()),
        "UID": UUIDIndex("UID"),
    }


def _translate(query, **context):
    plan = build_query(query, _indexes(), "/plone", QueryContext(**context))
    statement, params = plan.ids_query()
    values = [
        p.obj if isinstance(p, Jsonb)
        else [v.obj if isinstance(v, Jsonb) else v for v in p] if isinstance(p, list)
        else p
        for p in params
    ]
    return statement.as_string(None), values


def test_date_index_compares_zcatalog_minutes():
    text, values = _translate(
        {"created": {"query": DateTime("2024/01/02 03:04 UTC"), "range": "min"}}
    )
    minutes = DateIndex("created")._convert(DateTime("2024/01/02 03:04 UTC"))
    assert "(idx -> 'created') >= %s" in text
    assert minutes in values


def test_date_index_takes_datetime_date_and_strings_alike():
    index = DateIndex("created")
    aware = datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)
    for value in (aware, "2024/01/02 03:04 UTC", DateTime("2024/01/02 03:04 UTC")):
        _, values = _translate({"created": value})
        assert [index._convert(aware)] in values
    _, values = _translate({"created": datetime.date(2024, 1, 2)})
    assert [index._convert(datetime.date(2024, 1, 2))] in values


def test_boolean_index_answers_with_its_first_value_only():
    text, values = _translate({"is_folderish": [True, False]})
    # ZCatalog sorts the list first: False comes first.
    assert "(idx -> 'is_folderish') = %s" in text
    assert False in values and True not in values


def test_uuid_index_equality():
    text, values = _translate({"UID": "abc"})
    assert "(idx -> 'UID') = ANY(%s)" in text
    assert ["abc"] in values


def test_effective_range_first_in_plan_needs_a_range():
    text, _ = _translate({"effectiveRange": DateTime("2024/01/01")})
    assert "(idx -> 'effectiveRange') IS NOT NULL AND" in text


def test_effective_range_after_another_index_keeps_objects_without_range():
    # Text indexes narrow nothing given, and "S" < "e": full text comes first.
    text, _ = _translate(
        {"effectiveRange": DateTime("2024/01/01"), "SearchableText": "word"}
    )
    assert "(idx -> 'effectiveRange') IS NULL OR" in text


def test_effective_range_unparsable_date_names_the_index():
    with pytest.raises(QueryError, match="'effectiveRange'"):
        _translate({"effectiveRange": "not a date at all"})


def test_position_index_query_finds_nothing():
    text, _ = _translate({"getObjPositionInParent": 3})
    assert " AND FALSE" in text


def test_recurring_dates_match_any_occurrence():
    text, _ = _translate({"start": {"query": DateTime("2024/01/01"), "range": "min"}})
    assert "jsonb_array_elements((idx -> 'start')) AS e(k)" in text
    text, _ = _translate({"start": {"query": DateTime("2024/01/01"), "not": DateTime("2024/01/02")}})
    assert "NOT COALESCE((idx -> 'start') @> ANY(%s), FALSE)" in text


def test_recurring_dates_sort_on_the_tuple_of_occurrences():
    text, _ = _translate({"portal_type": "Event", "sort_on": "start"})
    assert "ORDER BY ((idx -> 'start') -> 0) ASC, ARRAY(SELECT e::bigint" in text


def test_recurring_dates_sort_keeps_objects_with_occurrences_by_their_index():
    # Few objects have occurrences: the condition is the predicate of their
    # partial indexes (schema), which can then find them.
    text, _ = _translate({"sort_on": "start"})
    assert "(idx -> 'start') IS NOT NULL" in text


def test_keyword_not_only_excludes_every_listed_keyword():
    text, values = _translate({"Subject": {"not": ["a", "b"]}})
    assert "NOT COALESCE((idx -> 'Subject') ?| %s, FALSE) AND ((idx -> 'Subject') IS NOT NULL" in text
    assert ["a", "b"] in values


def test_text_configs_add_one_stemmed_tsquery_each():
    plan = build_query(
        {"SearchableText": "word"},
        _indexes(),
        "/plone",
        QueryContext(text_configs=("english", "german")),
    )
    text = plan.ids_query()[0].as_string(None)
    assert text.count("to_tsquery(%s::regconfig, %s)") == 4  # where + score
