"""Metadata values round-trip to the Python values ZCatalog brains give."""

from __future__ import annotations

from DateTime import DateTime
from plone_pgcatalog.metadata import decode
from plone_pgcatalog.metadata import encode
from plone_pgcatalog.store import processor

import datetime
import json
import math
import Missing
import pytest


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        2.5,
        "text",
        ("a", "b"),
        ["a", ("b",)],
        {"k": 1},
        {"@dt": "not a tag, a real dict"},
        DateTime("2026/01/02 03:04:05.123456 GMT+2"),
        datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        datetime.date(2026, 1, 2),
    ],
)
def test_round_trip_through_json(value):
    decoded = decode(json.loads(json.dumps(encode(value))))
    assert decoded == value
    assert type(decoded) is type(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_float_json_has_no_form_for_comes_back(value):
    """ZCatalog's brain gives the attribute's NaN or infinity back; JSON
    has neither (PostgreSQL refused the row's metadata: the commit
    failed)."""
    stored = processor.dumps(encode(value))
    decoded = decode(json.loads(stored))
    assert type(decoded) is float
    assert math.isnan(decoded) if math.isnan(value) else decoded == value


def test_datetime_keeps_its_timezone():
    value = DateTime("2026/01/02 03:04:05 GMT+2")
    decoded = decode(json.loads(json.dumps(encode(value))))
    assert decoded.timezone() == value.timezone()
    assert decoded.micros() == value.micros()


def test_missing_value():
    assert decode(encode(Missing.Value)) is Missing.Value


def test_pytz_datetime_keeps_its_pytz_zone():
    import pytz

    value = pytz.timezone("Europe/Vienna").localize(datetime.datetime(2030, 7, 1, 12))
    decoded = decode(json.loads(json.dumps(encode(value))))
    assert decoded == value
    assert decoded.tzinfo.zone == "Europe/Vienna"
    assert hasattr(decoded.tzinfo, "localize")


def test_zoneinfo_datetime_keeps_its_zone():
    import zoneinfo

    value = datetime.datetime(2030, 1, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Vienna"))
    decoded = decode(json.loads(json.dumps(encode(value))))
    assert decoded == value and decoded.tzinfo.key == "Europe/Vienna"
