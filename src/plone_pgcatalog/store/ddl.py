"""The one runner of the catalog's DDL: deferred schema changes.

Owns ``SchemaChange``: DDL must not run inside a request's read snapshot,
so every change of the schema (install, uninstall, a catalog index added or
deleted, upgrade steps) is a zodb-pgjsonb deferred action, run on a short
autocommit connection when a transaction of this process begins, and tried
again when it did not get its locks.

Must not import the tool or Zope's publisher.
"""

from __future__ import annotations

from collections.abc import Callable
from plone_pgcatalog.store.connection import ddl_connection_to
from zodb_pgjsonb.storage import PGJsonbStorage

import logging
import psycopg
import threading

logger = logging.getLogger(__name__)

#: How long a schema change waits for each lock.  While it waits, new
#: readers of the catalog's table queue behind it: short, and tried again.
LOCK_TIMEOUT = "5s"
#: Seconds before each new try of a schema change that did not get its
#: locks; after the last one it gives up and says how to try again.
RETRY_DELAYS = (10.0, 60.0, 300.0, 900.0)


class SchemaChange:
    """A change of the catalog's schema, as a zodb-pgjsonb deferred action.

    With a ``version`` (the DDL's digest), zodb-pgjsonb runs it once per
    version and database, and again at the next start if it failed (its
    own retry); without one, every time it is queued, and the retries
    below apply.

    zodb-pgjsonb calls it with the DSN when a transaction of this process
    begins (before its read snapshot, or its commit): ``change`` gets an
    autocommit connection.  zodb-pgjsonb forgets an action that failed: a
    change that did not get its locks in ``LOCK_TIMEOUT`` (each try is
    whole transactions, so nothing is half done) queues itself again after
    the next of ``RETRY_DELAYS`` (a timer: queued at once, a try would
    cost every transaction of the process a connection until then), then
    gives up with an error that says how to try again (``remedy``).
    """

    def __init__(
        self,
        storage: PGJsonbStorage,
        label: str,
        change: Callable[[psycopg.Connection], None],
        remedy: str,
        attempt: int = 0,
        version: str | None = None,
    ):
        self.storage = storage
        self.label = label
        self.change = change
        self.remedy = remedy
        self.attempt = attempt
        self.version = version

    def queue(self) -> None:
        self.storage.defer_startup_action(
            self, f"plone_pgcatalog {self.label}", version=self.version
        )

    def __call__(self, dsn: str) -> None:
        try:
            with ddl_connection_to(dsn) as conn:
                self.change(conn)
        except psycopg.OperationalError as error:
            if self.version is not None:
                raise  # not marked done: tried again at the next start
            self._again(error)

    def _again(self, error: psycopg.OperationalError) -> None:
        if self.attempt >= len(RETRY_DELAYS):
            logger.error(
                "plone_pgcatalog: %s given up after %d tries (%s): %s",
                self.label,
                self.attempt + 1,
                str(error).strip(),
                self.remedy,
            )
            return
        delay = RETRY_DELAYS[self.attempt]
        logger.warning(
            "plone_pgcatalog: %s not done (%s); trying again in %s s",
            self.label,
            str(error).strip(),
            delay,
        )
        again = SchemaChange(
            self.storage, self.label, self.change, self.remedy, self.attempt + 1
        )
        if delay <= 0:
            again.queue()
            return
        timer = threading.Timer(delay, again.queue)
        timer.daemon = True
        timer.start()
