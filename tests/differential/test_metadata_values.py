"""Differential: a metadata column gives back what ZCatalog's brains give,
value and type, for values of every kind an add-on's attribute may hold.

ZCatalog keeps a brain's metadata in the ZODB (pickled): whatever the
attribute held comes back, a ``Decimal`` as a ``Decimal``, a set as a
set.  Here metadata is JSON (``metadata.encode``); each value below is
written in both catalogs, read back in a later transaction through a
search, and compared with ZCatalog's: equal, of the same type, also inside
containers (NaN is equal to NaN here).
"""

from __future__ import annotations

from DateTime import DateTime
from decimal import Decimal
from persistent.list import PersistentList
from persistent.mapping import PersistentMapping
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in

import copy
import datetime
import math
import Missing
import pytest
import transaction


def _values() -> list[tuple[str, object]]:
    """(name, value): what an attribute may hold; new objects each time
    (a persistent value belongs to the connection that stored it)."""
    return [
        ("none", None),
        ("true", True),
        ("zero", 0),
        ("big int", 2**62),
        ("int beyond 64 bits", 2**70),
        ("negative int beyond 64 bits", -(2**64) - 1),
        ("huge float", 1e300),
        ("tiny float", 5e-324),
        ("float", 0.1),
        ("negative zero", -0.0),
        ("nan", math.nan),
        ("infinity", math.inf),
        ("minus infinity", -math.inf),
        ("text", "Grüße \u2603"),
        ("empty text", ""),
        ("missing", Missing.Value),
        ("DateTime", DateTime("2026/03/04 05:06:07.891 GMT+2")),
        ("datetime", datetime.datetime(2026, 3, 4, 5, 6, 7)),
        ("date", datetime.date(2026, 3, 4)),
        ("tuple", ("a", ("b", 1))),
        ("list", ["a", ["b", None]]),
        ("dict", {"a": [1, 2], "b": {"c": None}}),
        ("dict like a tag", {"@tuple": [1, 2]}),
        ("nested floats", {"ratio": [math.inf, 1.5]}),
        ("bytes", b"\x00caf\xc3\xa9\xff"),
        ("set", {"b", "a"}),
        ("frozenset", frozenset({1, 2})),
        ("set of tuples", {("a", 1), ("b", 2)}),
        ("decimal", Decimal("12.50")),
        ("decimal nan", Decimal("NaN")),
        ("dict with number keys", {1: "one", 2: ("two",)}),
        ("dict with tuple keys", {("a", 1): b"x"}),
        ("bytes in a list", [b"a", {"b"}]),
        ("persistent list", PersistentList(["a", 1])),
        ("persistent mapping", PersistentMapping({"a": [1], "b": "c"})),
    ]


VALUES = _values()


def _same(expected, actual) -> bool:
    """``expected`` and ``actual`` equal and of the same types, NaN equal
    to NaN, throughout."""
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(actual)
    if isinstance(expected, Decimal) and expected.is_nan():
        return actual.is_nan()
    if isinstance(expected, (list, tuple, PersistentList)):
        return len(expected) == len(actual) and all(
            _same(e, a) for e, a in zip(expected, actual)
        )
    if isinstance(expected, (dict, PersistentMapping)):
        return expected.keys() == actual.keys() and all(
            _same(expected[key], actual[key]) for key in expected
        )
    if isinstance(expected, DateTime):
        return expected.__getstate__() == actual.__getstate__()
    if isinstance(expected, float):
        return math.copysign(1, expected) == math.copysign(1, actual) and (
            expected == actual
        )
    return expected == actual


def _read_back(layer) -> dict:
    """Each value of ``VALUES`` set on a page's attribute ``pgc_value``, a
    metadata column: what the brains give in the next transaction."""
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    catalog.addColumn("pgc_value")
    for number, (_, value) in enumerate(_values()):
        page = api.content.create(
            container=portal, type="Document", id=f"value-{number:02d}"
        )
        page.pgc_value = value
        page.reindexObject()
    transaction.commit()
    brains = catalog(portal_type="Document", sort_on="id")
    # ZCatalog's persistent values are the stored objects, of a connection
    # that closes with the layer: copies (new objects, the same state).
    return {
        brain.getId: (
            brain.pgc_value
            if brain.pgc_value is Missing.Value
            else copy.deepcopy(brain.pgc_value)
        )
        for brain in brains
    }


@pytest.fixture(scope="module")
def read_back():
    return collect_in("zcatalog", _read_back), collect_in("pg", _read_back)


@pytest.mark.parametrize(
    "number,name", [(n, name) for n, (name, _) in enumerate(VALUES)], ids=lambda x: x
)
def test_a_metadata_value_comes_back_as_zcatalog_gives_it(read_back, number, name):
    zcatalog, pgcatalog = read_back
    key = f"value-{number:02d}"
    value = VALUES[number][1]
    assert _same(value, zcatalog[key]), "the test's own premise: ZCatalog's value"
    assert _same(zcatalog[key], pgcatalog[key]), (zcatalog[key], pgcatalog[key])
