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
from plone_pgcatalog.store.schema import SCHEMA_STATE_TABLE
from psycopg import sql
from zodb_pgjsonb.storage import PGJsonbStorage

import itertools
import logging
import psycopg
import threading
import time

logger = logging.getLogger(__name__)

#: How long a schema change waits for each lock.  While it waits, new
#: readers of the catalog's table queue behind it: short, and tried again.
LOCK_TIMEOUT = "5s"
#: Seconds between the tries of one run of a change that did not get its
#: locks.  Locks held for a moment are waited out without leaving the queue:
#: a request ending, or autovacuum, which gives way to a waiting lock only
#: after ``deadlock_timeout`` (1 s by default; the exclusive steps wait
#: longer, ``columns._set_exclusive_lock_timeout``).
LOCK_PAUSES = (0.5, 2.0)
#: Seconds before each new try of a schema change that did not get its
#: locks; after the last one it gives up and says how to try again.
RETRY_DELAYS = (10.0, 60.0, 300.0, 900.0)

#: Who holds a lock on a table of the catalog: named in the warning of a
#: change that did not get its locks, so an operator sees what to end.
_LOCK_HOLDERS = """
SELECT DISTINCT a.pid, a.backend_type, a.state,
       extract(epoch FROM now() - a.xact_start)::int, left(a.query, 120)
FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.granted AND l.pid <> pg_backend_pid()
  AND l.relation IN (SELECT oid FROM pg_class WHERE starts_with(relname, 'pgcatalog'))
ORDER BY 4 DESC NULLS LAST LIMIT 5
"""
#: zodb-pgjsonb's record of the version it last applied per source.
_FORGET_VERSION = sql.SQL("DELETE FROM {} WHERE source = %s").format(
    sql.Identifier(SCHEMA_STATE_TABLE)
)

#: The newest change queued per storage and label: a change tried again
#: later is not queued after a newer one of its label (an index deleted,
#: then added again before the drop got its locks).
_newest: dict[tuple[int, str], int] = {}
_generations = itertools.count(1)


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
        generation: int | None = None,
    ):
        self.storage = storage
        self.label = label
        self.change = change
        self.remedy = remedy
        self.attempt = attempt
        self.version = version
        self.generation = generation
        #: Who held the catalog's tables when it last missed its locks.
        self.holders = ""

    @property
    def source(self) -> str:
        """Its name in zodb-pgjsonb's queue and version record."""
        return f"plone_pgcatalog {self.label}"

    def queue(self) -> None:
        if self.generation is None:
            self.generation = next(_generations)
            _newest[id(self.storage), self.label] = self.generation
        elif _newest.get((id(self.storage), self.label)) != self.generation:
            logger.info(
                "plone_pgcatalog: %s not tried again: a newer change of it is queued",
                self.label,
            )
            return
        self.storage.defer_startup_action(self, self.source, version=self.version)

    def __call__(self, dsn: str) -> None:
        try:
            with ddl_connection_to(dsn) as conn:
                self._run(conn)
        except psycopg.OperationalError as error:
            if self.version is not None:
                # zodb-pgjsonb keeps the version it applied before (an
                # index's creation, when this drops it): forgotten, the
                # next change of this source runs whatever its version.
                self._forget_version(dsn)
            self._again(error)
            if self.version is not None:
                raise  # not marked done; zodb-pgjsonb logs it

    def _run(self, conn: psycopg.Connection) -> None:
        """``change(conn)``, tried again after each of ``LOCK_PAUSES`` while
        it does not get its locks (each try is whole transactions)."""
        for pause in (*LOCK_PAUSES, None):
            try:
                self.change(conn)
                return
            except psycopg.errors.LockNotAvailable as error:
                self.holders = lock_holders(conn)
                if pause is None:
                    raise
                logger.info(
                    "plone_pgcatalog: %s waits for its locks (%s)%s",
                    self.label,
                    str(error).strip(),
                    self.holders,
                )
            time.sleep(pause)

    def _forget_version(self, dsn: str) -> None:
        try:
            with ddl_connection_to(dsn) as conn:
                conn.execute(_FORGET_VERSION, (self.source,))
        except psycopg.Error as error:
            logger.warning(
                "plone_pgcatalog: %s: its applied version not forgotten: %s",
                self.label,
                error,
            )

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
            "plone_pgcatalog: %s not done (%s); trying again in %s s%s",
            self.label,
            str(error).strip(),
            delay,
            self.holders,
        )
        again = SchemaChange(
            self.storage,
            self.label,
            self.change,
            self.remedy,
            self.attempt + 1,
            self.version,
            self.generation,
        )
        if delay <= 0:
            again.queue()
            return
        timer = threading.Timer(delay, again.queue)
        timer.daemon = True
        timer.start()


def queue_at_commit(
    change: SchemaChange,
    transaction,
    undo: SchemaChange | None = None,
    wanted: Callable[[], bool] | None = None,
) -> None:
    """Queue ``change`` when ``transaction`` commits, and not before.

    A schema change follows the index definitions its transaction writes
    to the ZODB, so a transaction that aborts (``transaction.abort()``, an
    error in the request, a failed import) must change no column.  Queued
    by a before-commit hook, it still runs in the commit, at its start
    (zodb-pgjsonb runs deferred actions in ``tpc_begin``), before the
    processor writes the rows.  ``wanted()``, asked then, tells whether the
    definitions still call for it (an index added in a savepoint rolled
    back, or deleted and added again as it was, needs nothing).

    A commit that fails after its start (a conflict found at the vote) has
    run it already: ``undo`` is queued then, the undos of a transaction in
    the reverse order of their changes (an index deleted and added again
    with another type comes back as it was).  As the newest change of its
    label, an undo also stops a later try of its change.
    """

    def before_commit() -> None:
        if wanted is not None and not wanted():
            return
        change.queue()
        if undo is not None:
            _undos(transaction).append(undo)

    transaction.addBeforeCommitHook(before_commit)


#: The key of a transaction's list of undos (``queue_at_commit``).
_UNDOS = object()


def _undos(transaction) -> list[SchemaChange]:
    """The undos of ``transaction``'s changes, queued if its commit fails."""
    try:
        return transaction.data(_UNDOS)
    except KeyError:
        pass
    undos: list[SchemaChange] = []
    transaction.set_data(_UNDOS, undos)

    def after_commit(committed: bool) -> None:
        if not committed:
            for undo in reversed(undos):
                undo.queue()

    transaction.addAfterCommitHook(after_commit)
    return undos


def lock_holders(conn: psycopg.Connection) -> str:
    """The sessions holding locks on the catalog's tables, as the end of a
    log message ('' when none is left)."""
    try:
        rows = conn.execute(_LOCK_HOLDERS).fetchall()
    except psycopg.Error:
        return ""
    return "".join(
        f"; held by pid {pid} ({kind}, {state}, transaction of {age} s: {query!r})"
        for pid, kind, state, age, query in rows
    )
