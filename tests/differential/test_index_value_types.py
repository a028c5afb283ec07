"""Differential: an add-on's KeywordIndex, DateIndex and BooleanIndex
over attributes of the types an add-on may give them, ZCatalog as the
oracle (``test_field_value_types`` does the FieldIndex).

A KeywordIndex takes a string as one keyword and any sequence of
comparable values; a DateIndex a DateTime, a ``datetime`` with or without
a zone, a ``date`` or a date string; a BooleanIndex any value, by its
truth.  For each, an index of its own over pages holding such values (and
pages holding none): the queries below give what ZCatalog gives, paths
(in order where sorted) and counts, or an error of the same kind.
"""

from __future__ import annotations

from DateTime import DateTime
from decimal import Decimal
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in
from tests.differential.searched import outcome

import datetime
import pytest
import transaction
import zoneinfo

VIENNA = zoneinfo.ZoneInfo("Europe/Vienna")


def _sets() -> dict[str, tuple[str, list]]:
    """``{index name: (index type, values of its pages)}``; new objects
    each time."""
    return {
        "pgc_kw_text": (
            "KeywordIndex",
            [("a", "b"), ["b"], ("Ä", "a"), "single", {"c", "a"}, (), "a"],
        ),
        "pgc_kw_int": ("KeywordIndex", [(1, 2), [3], (2, 10), (-5,)]),
        "pgc_kw_decimal": (
            "KeywordIndex",
            [(Decimal("1.5"), Decimal("2")), [Decimal("2.0")], (Decimal("10"),)],
        ),
        "pgc_date": (
            "DateIndex",
            [
                DateTime("2026/03/04 10:00 UTC"),
                datetime.datetime(2026, 3, 4, 9, 30),
                datetime.datetime(2026, 3, 4, 11, 30, tzinfo=VIENNA),
                datetime.date(2026, 3, 4),
                "2025/12/31 23:00 GMT+1",
                DateTime("1999/01/01"),
            ],
        ),
        "pgc_bool": ("BooleanIndex", [True, False, 1, 0, "yes", "", [], ["x"]]),
    }


NAMES = list(_sets())


def _queries(name: str) -> list[tuple[str, dict]]:
    kind = _sets()[name][0]
    typed = {"portal_type": "Document"}
    if kind == "KeywordIndex":
        first = {
            "pgc_kw_text": "a",
            "pgc_kw_int": 2,
            "pgc_kw_decimal": Decimal("2"),
        }[name]
        other = {
            "pgc_kw_text": "b",
            "pgc_kw_int": 10,
            "pgc_kw_decimal": Decimal("1.5"),
        }[name]
        return [
            ("one", {name: first}),
            ("or", {name: [first, other]}),
            ("and", {name: {"query": [first, other], "operator": "and"}}),
            ("not", {name: {"not": first}, **typed}),
            ("min", {name: {"query": first, "range": "min"}}),
            ("max", {name: {"query": first, "range": "max"}}),
        ]
    if kind == "DateIndex":
        day = DateTime("2026/03/04 00:00 UTC")
        return [
            ("equal", {name: DateTime("2026/03/04 10:00 UTC")}),
            ("min", {name: {"query": day, "range": "min"}}),
            ("max", {name: {"query": day, "range": "max"}}),
            (
                "min datetime",
                {name: {"query": datetime.datetime(2026, 3, 4, 10, 0), "range": "min"}},
            ),
            (
                "sorted",
                {**typed, name: {"query": day, "range": "min"}, "sort_on": name},
            ),
            (
                "sorted reverse, limit",
                {**typed, "sort_on": name, "sort_order": "reverse", "sort_limit": 3},
            ),
        ]
    return [
        ("true", {name: True}),
        ("false", {name: False}),
        ("false and a type", {name: False, **typed}),
        ("sorted", {**typed, name: [True, False], "sort_on": name}),
    ]


def _run(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    sets = _sets()
    for name, (kind, _) in sets.items():
        catalog.addIndex(name, kind)
    transaction.commit()
    with api.env.adopt_roles(["Manager"]):
        for name, (_, values) in sets.items():
            for number, value in enumerate([*values, None]):
                page = api.content.create(
                    container=portal, type="Document", id=f"{name}-{number}"
                )
                if value is not None:
                    setattr(page, name, value)
                    page.reindexObject(idxs=[name])
    transaction.commit()
    return {
        (name, label): outcome(catalog, query)
        for name in NAMES
        for label, query in _queries(name)
    }


@pytest.fixture(scope="module")
def outcomes():
    return collect_in("zcatalog", _run), collect_in("pg", _run)


CASES = [(name, label) for name in NAMES for label, _ in _queries(name)]


@pytest.mark.parametrize("name,label", CASES, ids=[f"{n}-{q}" for n, q in CASES])
def test_as_zcatalog(outcomes, name, label):
    zcatalog, pgcatalog = outcomes
    expected, actual = zcatalog[(name, label)], pgcatalog[(name, label)]
    assert expected[0] == "raised" or expected[0], (
        "the test's own premise: the query finds something in ZCatalog",
        expected,
    )
    if "sorted" not in label and expected[0] != "raised":
        # Unsorted: ZCatalog's order is its record ids'.
        expected = (sorted(expected[0]), expected[1])
        actual = (sorted(actual[0]), actual[1])
    assert actual == expected, (expected, actual)
