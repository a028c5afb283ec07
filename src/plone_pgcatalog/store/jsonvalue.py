"""JSON of the values statements send: index values and metadata at the
commit (``processor``), pending rows and patches to a search
(``overlay``), encoded alike, so that a value reads the same before the
commit as after it.

Pure: no database.
"""

from __future__ import annotations

import json
import orjson


def dumps(value) -> bytes:
    """The JSON of a row's metadata or index values, as the commit sends
    them and as the overlay sends pending rows: orjson's, where it can
    (1,000 rows' metadata, values and removed keys: 21-24 ms with the
    standard library's ``json.dumps``, psycopg's default, 11 with orjson,
    most of the rest psycopg's arrays), else the
    standard library's (an integer beyond 64 bits, a key that is not a
    string).  The same JSON values either way; orjson writes a float that
    is not finite as ``null`` (``json.dumps`` wrote ``NaN``, which
    PostgreSQL refused: the commit failed)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value).encode()
