"""Each index type's translation: SQL text and bound values, no database."""

from __future__ import annotations

from DateTime import DateTime
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.store.columns import held_value
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
        (
            p.obj
            if isinstance(p, Jsonb)
            else (
                [v.obj if isinstance(v, Jsonb) else v for v in p]
                if isinstance(p, list)
                else p
            )
        )
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
    # No typed column here: the value as the column would hold it, the
    # expression of the index's B-tree (``columns.held_value``).
    text, values = _translate({"UID": "abc"})
    assert held_value("UID", "text").as_string(None) + " = %s::text" in text
    assert "abc" in values


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
    text, _ = _translate(
        {"start": {"query": DateTime("2024/01/01"), "not": DateTime("2024/01/02")}}
    )
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
    assert (
        "NOT COALESCE((idx -> 'Subject') ?| %s, FALSE)"
        " AND ((idx -> 'Subject') IS NOT NULL" in text
    )
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


# -- Full text: negation excludes the word in every form --------------------

EACH_LANGUAGE = (
    "(to_tsquery('simple'::regconfig, %s) || to_tsquery(%s::regconfig, %s)"
    " || to_tsquery(%s::regconfig, %s))"
)


def _text_where(text, index="SearchableText", configs=("english", "german")):
    from plone_pgcatalog.registry import get_translator
    from Products.ZCatalog.query import IndexQuery

    translator = get_translator("ZCTextIndex")
    clause, params = translator.where(
        _indexes()["SearchableText"] if index == "SearchableText" else _Named(index),
        IndexQuery({index: text}, index),
        QueryContext(text_configs=configs),
    )
    return clause.as_string(None), params


class _Named:
    def __init__(self, name):
        self.name = name

    def getId(self):
        return self.name


def _each_language(a, b):
    return [a, "english", b, "german", b]


@pytest.mark.parametrize(
    "text", ["python AND NOT zope", "python NOT zope", "python -zope", "Python -ZOPE"]
)
def test_negated_word_is_excluded_in_every_language_not_per_language(text):
    # Negated inside each language's query, "zope" was only excluded in
    # that language's form: an item with German stems ("zop") satisfied
    # the English query "python:B & !zope:B".
    clause, params = _text_where(text)
    assert clause == (f"searchable_text @@ ({EACH_LANGUAGE} && (!!{EACH_LANGUAGE}))")
    assert params == _each_language("python:A", "python:B") + _each_language(
        "zope:A", "zope:B"
    )


@pytest.mark.parametrize(
    "text,negated",
    [
        ("python AND NOT (zope OR plone)", "zope:{w} | plone:{w}"),
        ("python -Plone-Konferenz", "(plone:{w} <-> konferenz:{w})"),
        ('python AND NOT "Plone Konferenz"', "(plone:{w} <-> konferenz:{w})"),
        ("python -zop*", "zop:*{w}"),
        ("python AND NOT Übersetzung", "ubersetzung:{w}"),
        ("python AND NOT (Café bar)", "cafe:{w} & bar:{w}"),
    ],
)
def test_negated_groups_phrases_and_prefixes_in_every_form(text, negated):
    clause, params = _text_where(text)
    # The same SQL for every query of this shape: the words are parameters.
    assert clause == f"searchable_text @@ ({EACH_LANGUAGE} && (!!{EACH_LANGUAGE}))"
    assert params[5:] == _each_language(negated.format(w="A"), negated.format(w="B"))


def test_positive_words_still_match_within_one_language():
    clause, params = _text_where("python plone -zope -wien")
    assert clause == (
        f"searchable_text @@ ({EACH_LANGUAGE} && (!!{EACH_LANGUAGE})"
        f" && (!!{EACH_LANGUAGE}))"
    )
    assert params[:5] == _each_language("python:A & plone:A", "python:B & plone:B")
    assert not [p for p in params if "!" in p]


def test_only_stop_words_left_in_one_language_do_not_turn_into_a_negation():
    # English drops "the": inside the English query, "the:B & !tickets:B"
    # was "!tickets", which every item without the word matched.  The
    # negation is outside now, and the exact words have no stop words.
    clause, params = _text_where("the -tickets")
    assert clause == f"searchable_text @@ ({EACH_LANGUAGE} && (!!{EACH_LANGUAGE}))"
    assert params[:5] == _each_language("the:A", "the:B")


def test_nested_negation_excludes_what_the_group_finds():
    clause, params = _text_where("python AND NOT (zope AND NOT wien)")
    assert clause == (
        f"searchable_text @@ ({EACH_LANGUAGE}"
        f" && (!!({EACH_LANGUAGE} && (!!{EACH_LANGUAGE}))))"
    )
    assert params == (
        _each_language("python:A", "python:B")
        + _each_language("zope:A", "zope:B")
        + _each_language("wien:A", "wien:B")
    )


def test_negation_in_an_or_group():
    clause, params = _text_where("(python AND NOT zope) OR plone")
    assert clause == (
        f"searchable_text @@ (({EACH_LANGUAGE} && (!!{EACH_LANGUAGE}))"
        f" || {EACH_LANGUAGE})"
    )
    assert params[-5:] == _each_language("plone:A", "plone:B")


def test_query_without_negation_keeps_one_query_per_language():
    clause, params = _text_where("python (zope OR plone)")
    assert clause == f"searchable_text @@ {EACH_LANGUAGE}"
    assert params == _each_language(
        "python:A & ( zope:A | plone:A )", "python:B & ( zope:B | plone:B )"
    )


def test_negation_without_languages_is_on_exact_words():
    clause, params = _text_where("python -zope", configs=())
    simple = "(to_tsquery('simple'::regconfig, %s))"
    assert clause == f"searchable_text @@ ({simple} && (!!{simple}))"
    assert params == ["python:A", "zope:A"]


def test_title_negation_stays_one_exact_query():
    clause, params = _text_where("python -zope", index="Title")
    assert clause == (
        "to_tsvector('simple'::regconfig, COALESCE(idx ->> 'Title', ''))"
        " @@ to_tsquery('simple'::regconfig, %s)"
    )
    assert params == ["python & ! zope"]


def test_negated_query_is_ranked_on_the_union_of_languages():
    # ts_rank of "... && !!..." (top operator AND) scores only pairs of
    # words near each other: one positive word would rank 0.
    plan = build_query(
        {"SearchableText": "python -zope"},
        _indexes(),
        "/plone",
        QueryContext(text_configs=("english", "german")),
    )
    statement, params = plan.ids_query()
    assert f"ts_rank(searchable_text, {EACH_LANGUAGE}, 1)" in statement.as_string(None)
    assert list(params[:5]) == _each_language(
        "python:A & ! zope:A", "python:B & ! zope:B"
    )


@pytest.mark.parametrize("value", [{}, []])
def test_date_range_without_a_date_is_refused_as_zcatalog_fails(value):
    # DateRangeIndex reads keys[0]: IndexError in ZCatalog.  Finding
    # nothing instead would hide the bad query.
    with pytest.raises(QueryError, match="'effectiveRange': no date to test"):
        _translate({"effectiveRange": value})
