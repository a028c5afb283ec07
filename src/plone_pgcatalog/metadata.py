"""Metadata values: Python values of catalog columns to JSON and back.

Owns: the JSON form of metadata (the ``meta`` column), chosen so that a
brain gives back the same Python values and types that ZCatalog's brains
give: ``DateTime`` (with its timezone and microseconds), ``datetime``,
``date``, tuples, ``Missing.Value``.

JSON-native values are stored as they are.  Others are tagged objects
with a single key starting with ``@``::

    DateTime      {"@dt": [micros, tz, timezone_naive]}
    datetime      {"@datetime": ["2026-01-02T03:04:05", "Europe/Vienna"]}
                  (local time and zone name, so a pytz or zoneinfo zone
                  comes back as the same kind; without a named zone the
                  ISO form with its offset, and null)
    date          {"@date": "2026-01-02"}
    NaN, infinity {"@float": "nan"}  ("inf", "-inf")
    int beyond 64 bits
                  {"@int": "1180591620717411303424"}
    tuple         {"@tuple": [...]}
    Missing.Value {"@missing": true}
    bytes         {"@bytes": "base64"}
    set           {"@set": [...]}  (frozenset: "@frozenset")
    Decimal       {"@decimal": "12.50"}
    dict whose keys are not all strings
                  {"@items": [[key, value], ...]}
    PersistentList, PersistentMapping
                  {"@plist": [...]}, {"@pmap": [[key, value], ...]}
                  (new, unattached objects, equal to the stored ones:
                  ZCatalog gives the stored object itself)
    other         {"@str": "str(value)"}   (decoded as that string)

An add-on's attribute may hold any of these; ZCatalog, which pickles
metadata, gives each back as it was (``tests/differential/
test_metadata_values.py``).  Rows written before ``@bytes`` and the tags
after it had such values as ``@str``: they come back as strings until
the object is cataloged again.

Pure: no database, no Zope beyond DateTime and Missing.
"""

from __future__ import annotations

from DateTime import DateTime
from decimal import Decimal
from persistent.list import PersistentList
from persistent.mapping import PersistentMapping

import base64
import datetime
import math
import Missing

#: The integers JSON numbers bring back as integers: brains' metadata is
#: decoded by orjson, which reads a larger one as a float.
_EXACT_INTS = range(-(2**63), 2**64)


def encode(value):
    """Return the JSON form of a metadata value."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"@float": repr(value)}  # JSON has no NaN nor infinity
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value in _EXACT_INTS else {"@int": str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if value is Missing.Value:
        return {"@missing": True}
    if isinstance(value, DateTime):
        micros, naive, tz = value.__getstate__()
        return {"@dt": [micros, tz, naive]}
    if isinstance(value, datetime.datetime):
        return {"@datetime": _encode_datetime(value)}
    if isinstance(value, datetime.date):
        return {"@date": value.isoformat()}
    if isinstance(value, tuple):
        return {"@tuple": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return {"@items": _items(value)}
        if len(value) == 1 and next(iter(value)).startswith("@"):
            # A real dict that looks like a tag: wrap it so it stays a dict.
            return {"@dict": {k: encode(v) for k, v in value.items()}}
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return {"@bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        tag = "@frozenset" if isinstance(value, frozenset) else "@set"
        return {tag: [encode(item) for item in value]}
    if isinstance(value, Decimal):
        return {"@decimal": str(value)}
    if isinstance(value, PersistentList):
        return {"@plist": [encode(item) for item in value]}
    if isinstance(value, PersistentMapping):
        return {"@pmap": _items(value)}
    return {"@str": str(value)}


def _items(mapping) -> list:
    """``[[key, value], ...]`` of ``mapping``, both encoded: keys of any
    kind JSON has no object for."""
    return [[encode(key), encode(item)] for key, item in mapping.items()]


def _decode_items(payload: list) -> list:
    return [(decode(key), decode(item)) for key, item in payload]


def _zone_name(tzinfo) -> str | None:
    """The name of a pytz or zoneinfo zone; None for other tzinfos."""
    return getattr(tzinfo, "zone", None) or getattr(tzinfo, "key", None)


def _encode_datetime(value: datetime.datetime) -> list:
    zone = _zone_name(value.tzinfo)
    if zone is None:
        return [value.isoformat(), None]
    kind = "pytz" if hasattr(value.tzinfo, "localize") else "zoneinfo"
    return [value.replace(tzinfo=None).isoformat(), zone, kind]


def _decode_datetime(payload: list) -> datetime.datetime:
    text, zone = payload[0], payload[1]
    value = datetime.datetime.fromisoformat(text)
    if zone is None:
        return value
    if payload[2] == "pytz":
        import pytz

        return pytz.timezone(zone).localize(value)
    import zoneinfo

    return value.replace(tzinfo=zoneinfo.ZoneInfo(zone))


def _new_datetime(micros: int, tz: str, naive: bool) -> DateTime:
    value = DateTime.__new__(DateTime)
    value.__setstate__((micros, naive, tz))
    return value


_DECODERS = {
    "@missing": lambda payload: Missing.Value,
    "@dt": lambda payload: _new_datetime(*payload),
    "@datetime": _decode_datetime,
    "@date": datetime.date.fromisoformat,
    "@tuple": lambda payload: tuple(decode(item) for item in payload),
    "@dict": lambda payload: {k: decode(v) for k, v in payload.items()},
    "@str": str,
    "@float": float,
    "@int": int,
    "@bytes": base64.b64decode,
    "@set": lambda payload: {decode(item) for item in payload},
    "@frozenset": lambda payload: frozenset(decode(item) for item in payload),
    "@decimal": Decimal,
    "@items": lambda payload: dict(_decode_items(payload)),
    "@plist": lambda payload: PersistentList(decode(item) for item in payload),
    "@pmap": lambda payload: PersistentMapping(_decode_items(payload)),
}


def decode(value):
    """Return the Python value of a JSON metadata value."""
    if isinstance(value, dict):
        if len(value) == 1:
            key = next(iter(value))
            decoder = _DECODERS.get(key)
            if decoder is not None:
                return decoder(value[key])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value
