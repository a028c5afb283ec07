"""Zones of datetimes in object states, as zodb-pgjsonb gives them back.

A state goes the way zodb-pgjsonb takes it: ZODB's writer pickles it, the
codec turns the record into JSON (what PostgreSQL stores) and back into a
record, and ZODB's reader unpickles it with the database's class factory.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
from datetime import timezone
from persistent.mapping import PersistentMapping
from plone_pgcatalog.timezones import PytzUTCClassFactory
from plone_pgcatalog.timezones import restore_pytz_utc
from ZODB.broken import find_global
from ZODB.serialize import ObjectReader
from ZODB.serialize import ObjectWriter

import pytest
import pytz
import ZODB
import zodb_json_codec


def _default_factory(connection, modulename, globalname):
    return find_global(modulename, globalname)


def _stored_and_loaded(value, factory=PytzUTCClassFactory(_default_factory)):
    obj = PersistentMapping({"value": value})
    record = ObjectWriter().serialize(obj)
    as_stored = zodb_json_codec.decode_zodb_record(record)
    loaded = zodb_json_codec.encode_zodb_record(as_stored)
    return ObjectReader(factory=factory).getState(loaded)["data"]["value"]


def _in_2026(tz) -> datetime:
    return datetime(2026, 7, 1, 10, 30, tzinfo=tz)


def test_the_codec_alone_gives_back_datetime_timezone_for_pytz_utc():
    """The storage behaviour this module exists for (README, Known issues):
    if this fails, zodb-json-codec keeps pytz.utc itself now."""
    loaded = _stored_and_loaded(_in_2026(pytz.utc), factory=_default_factory)

    assert loaded.tzinfo is timezone.utc


def test_a_datetime_in_pytz_utc_loads_in_pytz_utc():
    loaded = _stored_and_loaded(_in_2026(pytz.utc))

    assert loaded == _in_2026(pytz.utc)
    assert loaded.tzinfo is pytz.utc
    assert loaded.tzinfo.localize(datetime(2026, 1, 1)).utcoffset() == timedelta(0)


@pytest.mark.parametrize("name", pytz.all_timezones)
def test_every_pytz_zone_loads_as_it_was_stored(name):
    zone = pytz.timezone(name)
    stored = [zone.localize(datetime(2026, 7, 1, 10, 30)), _in_2026(zone), zone]

    loaded = _stored_and_loaded(stored)

    assert loaded == stored
    assert [value.utcoffset() for value in loaded[:2]] == [
        value.utcoffset() for value in stored[:2]
    ]
    assert all(hasattr(value.tzinfo, "localize") for value in loaded[:2])
    assert loaded[2] is zone


@pytest.mark.parametrize(
    "zone",
    [timezone(timedelta(hours=2)), timezone(timedelta(hours=-5), "EST"), None],
    ids=["offset", "named offset", "naive"],
)
def test_other_zones_and_naive_datetimes_load_unchanged(zone):
    loaded = _stored_and_loaded(_in_2026(zone))

    assert loaded == _in_2026(zone)
    assert type(loaded.tzinfo) is type(zone)
    assert loaded.tzname() == _in_2026(zone).tzname()


def test_a_stored_datetime_timezone_utc_loads_as_the_equal_pytz_utc():
    loaded = _stored_and_loaded(_in_2026(timezone.utc))

    assert loaded == _in_2026(timezone.utc)
    assert loaded.tzname() == "UTC"


def test_restore_pytz_utc_reaches_connections_opened_before_it():
    db = ZODB.DB(None)
    try:
        opened_before = db.open()
        opened_before.close()

        restore_pytz_utc(db)
        restore_pytz_utc(db)

        assert isinstance(db.classFactory, PytzUTCClassFactory)
        assert not isinstance(db.classFactory.wrapped, PytzUTCClassFactory)
        reopened = db.open()
        assert reopened is opened_before
        assert reopened._reader._factory is db.classFactory
        assert db.open()._reader._factory is db.classFactory
    finally:
        db.close()
