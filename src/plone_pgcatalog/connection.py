"""Where the catalog gets its PostgreSQL connections.  The only module that
opens or borrows one.

Reads use the PostgreSQL connection of the ZODB connection that loaded the
catalog tool: zodb-pgjsonb's storage instance holds it for the whole
request (``pg_connection``), inside the REPEATABLE READ snapshot it loads
objects from.  So a query sees exactly the catalog of the objects the
request sees, and costs no connection of its own.

DDL (index creation) runs on a short autocommit connection to the same
database, because DDL must not run inside the request's read snapshot.

Everything else receives a connection or a cursor.
"""

from __future__ import annotations

from Acquisition import aq_chain
from contextlib import contextmanager
from plone_pgcatalog.errors import PGCatalogConfigurationError

import psycopg


def _jar(context):
    for item in aq_chain(context):
        jar = getattr(item, "_p_jar", None)
        if jar is not None:
            return jar
    raise PGCatalogConfigurationError(
        f"{context!r} is not stored in a ZODB database: the catalog needs the "
        "zodb-pgjsonb storage of its site"
    )


def _storage_instance(context):
    # ``_normal_storage``: during a savepoint ZODB swaps ``_storage`` for a
    # temporary store; the PostgreSQL connection stays on the real one.
    jar = _jar(context)
    # Never ``x or y`` on a storage: its truth is ``len()``, which for
    # zodb-pgjsonb counts every object in PostgreSQL.
    storage = getattr(jar, "_normal_storage", None)
    if storage is None:
        storage = jar._storage
    if not hasattr(storage, "pg_connection"):
        raise PGCatalogConfigurationError(
            f"the ZODB storage {storage!r} is not zodb-pgjsonb: plone_pgcatalog "
            "needs the site's database on zodb-pgjsonb (see README, zope.conf)"
        )
    return storage


def read_connection(context) -> psycopg.Connection:
    """The request's PostgreSQL connection, in its ZODB snapshot."""
    conn = _storage_instance(context).pg_connection
    if conn is None:
        raise PGCatalogConfigurationError(
            "the ZODB connection of the catalog is closed"
        )
    return conn


def storage_dsn(context) -> str:
    """The DSN of the database that stores ``context``."""
    return _storage_instance(context)._main._dsn


@contextmanager
def ddl_connection(context):
    """A short autocommit connection for DDL, closed on exit."""
    with psycopg.connect(storage_dsn(context), autocommit=True) as conn:
        conn.execute("SET lock_timeout = '30s'")
        yield conn


def join_transaction(context) -> None:
    """Make ``context``'s ZODB connection take part in the current commit.

    A ZODB connection joins a transaction when its first object changes;
    catalog changes alone (a reindex of an unchanged object, a removal)
    must reach the storage's commit too, where the state processor writes
    them, without storing any object.  ``_needs_to_join`` is the flag ZODB's
    ``Connection.register`` uses for the same purpose.
    """
    jar = _jar(context)
    if getattr(jar, "_needs_to_join", False):
        jar.transaction_manager.get().join(jar)
        jar._needs_to_join = False
