"""Time zones as loaded from zodb-pgjsonb: pytz's UTC back where it was stored.

Owns: the class factory that a ZODB database on zodb-pgjsonb unpickles
object states with, and its installation on such a database.

Why: zodb-pgjsonb's codec (zodb-json-codec 1.7) writes a ``datetime`` whose
zone is ``pytz.utc`` as an ISO string with ``+00:00`` and, on load, builds
it again with ``datetime.timezone.utc``.  Every other pytz zone comes back
as the same pytz zone (checked for all of ``pytz.all_timezones``, localized
and not).  ``datetime.timezone`` has no ``localize``: plone.event's
recurrence expansion calls it, so a recurring event in UTC, Plone's default
zone, fails to be edited, moved or reindexed once it is loaded again.

The loaded pickle builds the zone as ``datetime.timezone(timedelta(0))``
through a global that ZODB resolves with the database's class factory.
Resolved here to ``pytz.utc`` for a zero offset without a name, a datetime
comes back as it was stored, for every reader of the object.  A stored
``datetime.timezone.utc`` is stored the same way, so it comes back as
``pytz.utc`` too: an equal zone (same offset, same ``tzname``), with pytz's
API on top.  Other ``datetime.timezone`` values are left as they are.

Must not import the catalog's modules: this is about the objects' states.
"""

from __future__ import annotations

from datetime import timedelta
from datetime import timezone

import pytz

_ZERO = timedelta(0)


def unpickled_timezone(offset: timedelta, name: str | None = None):
    """``datetime.timezone(offset, name)``, but ``pytz.utc`` for plain UTC."""
    if name is None:
        return pytz.utc if offset == _ZERO else timezone(offset)
    return timezone(offset, name)


class PytzUTCClassFactory:
    """A ZODB class factory that gives ``unpickled_timezone`` for
    ``datetime.timezone`` and asks ``wrapped`` for every other global."""

    def __init__(self, wrapped):
        self.wrapped = wrapped

    def __call__(self, connection, modulename: str, globalname: str):
        if globalname == "timezone" and modulename == "datetime":
            return unpickled_timezone
        return self.wrapped(connection, modulename, globalname)


def restore_pytz_utc(db) -> None:
    """Make ``db`` (a ``ZODB.DB`` on zodb-pgjsonb) load ``pytz.utc`` zones.

    Its connections that already exist (Zope opens one before it tells
    subscribers the database is open) read with the factory they were made
    with: they are given the new one too.  Calling it twice changes nothing.
    """
    if isinstance(db.classFactory, PytzUTCClassFactory):
        return
    factory = PytzUTCClassFactory(db.classFactory)
    db.classFactory = factory

    def use_factory(connection) -> None:
        connection._reader._factory = factory

    db._connectionMap(use_factory)
