"""zodb-pgjsonb's object loads on a lost PostgreSQL connection: tried again.

Owns: the rule that a read of an object's state (``load``,
``load_multiple``, ``loadBefore``, ``loadSerial``, ``loadBlob``) whose
PostgreSQL connection is lost raises ``errors.ConnectionLost``, a
``TransientError``, and its installation on a zodb-pgjsonb storage.

Why: the catalog's own reads already raise ``ConnectionLost`` when their
connection is lost (``store.connection._recover``), and Zope's publisher
then runs the request again (three times at most) in a new transaction,
for which zodb-pgjsonb connects anew.  The objects' loads of the same
request run on the same connection, but zodb-pgjsonb lets psycopg's error
through (``AdminShutdown`` when an operator or a failover terminates the
backend): Zope's publisher does not retry that, and the client got
"500 AdminShutdown" for a page or a search that the next try serves.  The
soak (``benchmarks/soak.py --faults``) met it: a folder listing in flight
when its connection was terminated.

Trying again is safe for any request: a load runs before the request's
commit (a load during the vote resolves a conflict, before zodb-pgjsonb's
``COMMIT``), and PostgreSQL rolls back the transaction of a connection it
lost, so nothing of the failed try was saved.  Only an
``OperationalError`` on a connection that psycopg reports broken or closed
is one; any other error (a missing object, a bad query) propagates as it
was.

Installed by Zope's start-up (``startup.prepare_database``) on each
zodb-pgjsonb database: the connections the storage makes from then on and
those it has made (Zope opens one before it tells subscribers the database
is open).  Each gets the rule as attributes of its own, whatever its
class (``sharedcache`` may change that).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from plone_pgcatalog.errors import ConnectionLost
from plone_pgcatalog.sharedcache import on_every_instance

import psycopg

#: zodb-pgjsonb's reads of objects' states, each a method of its
#: ``PGJsonbStorageInstance`` (``prefetch`` and ``openCommittedBlobFile``
#: read through ``load_multiple`` and ``loadBlob``).
READS = ("load", "load_multiple", "loadBefore", "loadSerial", "loadBlob")

#: The attribute of an instance, and of the storage, saying the rule is
#: installed on it.
_GUARDED = "_plone_pgcatalog_lost_loads"


def lost(error: BaseException, conn: psycopg.Connection | None) -> bool:
    """Whether ``error``, raised by a read on ``conn``, means the
    connection is lost (terminated, the server gone, the network cut).
    Not where the read had no connection: the pool gave none in time
    (``PoolTimeout``, also an ``OperationalError``), which the WSGI filter
    answers "503, try again later" (``plone_pgcatalog.wsgi``) rather than
    Zope trying the request again, each try waiting as long."""
    # ``closed``: by the error (``broken``) or before the read.
    return isinstance(error, psycopg.OperationalError) and (
        conn is not None and conn.closed
    )


def _guarded(instance, read: Callable) -> Callable:
    @wraps(read)
    def guarded(*args, **kwargs):
        try:
            return read(*args, **kwargs)
        except psycopg.OperationalError as error:
            if not lost(error, getattr(instance, "_conn", None)):
                raise
            raise ConnectionLost(
                f"the PostgreSQL connection of the request's object loads is"
                f" lost ({type(error).__name__}: {str(error).strip()}): the"
                " request is tried again in a new transaction, which connects"
                " anew"
            ) from error

    return guarded


def guard(instance) -> None:
    """Install the rule on ``instance``, a zodb-pgjsonb storage instance
    (a ZODB connection's storage); a second call changes nothing."""
    if instance.__dict__.get(_GUARDED):
        return
    for name in READS:
        setattr(instance, name, _guarded(instance, getattr(instance, name)))
    setattr(instance, _GUARDED, True)


def retry_lost_loads(db) -> None:
    """Install the rule on the zodb-pgjsonb storage of ``db`` (a
    ``ZODB.DB``): on the instances it makes from now on and on those of
    its open connections (``sharedcache.on_every_instance``).  Calling it
    twice changes nothing."""
    if getattr(db.storage, _GUARDED, False):
        return
    setattr(db.storage, _GUARDED, True)
    on_every_instance(db, guard)
