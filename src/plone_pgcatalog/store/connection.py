"""Where the catalog gets its PostgreSQL connections.  The only module that
opens or borrows one.

Reads use the PostgreSQL connection of the ZODB connection that loaded the
catalog tool: zodb-pgjsonb's storage instance holds it for the whole
request (``pg_connection``), inside the REPEATABLE READ snapshot it loads
objects from.  So a query sees exactly the catalog of the objects the
request sees, and costs no connection of its own.

DDL (index creation) runs on a short autocommit connection to the same
database, because DDL must not run inside the request's read snapshot.

Everything else receives a connection or a cursor; ``json_cursor`` is
the one cursor every reader of catalog rows takes, decoding JSON with
orjson on that cursor only (never globally: the connection belongs to the
ZODB storage).
"""

from __future__ import annotations

from Acquisition import aq_chain
from contextlib import contextmanager
from plone_pgcatalog.errors import ConnectionLost
from plone_pgcatalog.errors import PGCatalogConfigurationError
from plone_pgcatalog.errors import SearchTimeout
from plone_pgcatalog.sharedcache import instance_of
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import layout
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row
from psycopg.types.json import JsonbLoader
from ZODB.utils import u64

import logging
import orjson
import os
import psycopg
import re


class _OrjsonLoader(JsonbLoader):
    # Text format: the same loader serves ``json`` and ``jsonb``.
    def load(self, data):
        return orjson.loads(bytes(data) if isinstance(data, memoryview) else data)


def json_cursor(conn: psycopg.Connection) -> psycopg.Cursor:
    """A cursor of ``conn`` giving tuples, JSON decoded with orjson."""
    cursor = conn.cursor(row_factory=tuple_row)
    cursor.adapters.register_loader("jsonb", _OrjsonLoader)
    cursor.adapters.register_loader("json", _OrjsonLoader)
    return cursor


logger = logging.getLogger(__name__)


def _jar(context):
    for item in aq_chain(context):
        jar = getattr(item, "_p_jar", None)
        if jar is not None:
            return jar
    raise PGCatalogConfigurationError(
        f"{context!r} is not stored in a ZODB database: the catalog needs the "
        "zodb-pgjsonb storage of its site"
    )


def changed_in_transaction(context) -> set[int]:
    """Oids (ints) of the objects the current transaction of ``context``'s
    ZODB connection changed or added, also before its savepoints."""
    jar = _jar(context)
    oids = {obj._p_oid for obj in jar._registered_objects}
    oids.update(jar._added)
    savepoints = getattr(jar, "_savepoint_storage", None)
    if savepoints is not None:
        oids.update(savepoints.index.keys())
    return {u64(oid) for oid in oids if oid is not None}


def _storage_instance(context):
    # ``_normal_storage``: during a savepoint ZODB swaps ``_storage`` for a
    # temporary store; the PostgreSQL connection stays on the real one.
    storage = instance_of(_jar(context))
    if not hasattr(storage, "pg_connection"):
        raise PGCatalogConfigurationError(
            f"the ZODB storage {storage!r} is not zodb-pgjsonb: plone_pgcatalog "
            "needs the site's database on zodb-pgjsonb (see README, zope.conf)"
        )
    return storage


def read_connection(context) -> psycopg.Connection:
    """The request's PostgreSQL connection, in its ZODB snapshot."""
    return _pg_connection(_storage_instance(context))


def _pg_connection(storage) -> psycopg.Connection:
    conn = storage.pg_connection
    if conn is None:
        raise PGCatalogConfigurationError(
            "the ZODB connection of the catalog is closed"
        )
    return conn


#: Set once per read snapshot, before its first catalog statement.
_SAVEPOINT = "SAVEPOINT pgcatalog_read"
_BACK_TO_SAVEPOINT = "ROLLBACK TO SAVEPOINT pgcatalog_read"


@contextmanager
def reading(context):
    """The request's connection for catalog reads (``read_connection``).

    A failed statement aborts a PostgreSQL transaction, and with it the
    snapshot the ZODB loads objects from: the rest of the request (an
    error page, too) could not load anything.  So the first catalog read
    of each ZODB transaction sets a savepoint, and a failed read rolls
    back to it: the snapshot stays, the error propagates.

    One savepoint per transaction, not one per statement: reads change
    nothing a rollback would have to undo, and ``ROLLBACK TO`` keeps the
    savepoint for the next failure.  (A pair per statement cost two round
    trips, 0.15 ms, on every search.)
    """
    storage = _storage_instance(context)
    conn = _pg_connection(storage)
    try:
        if _savepoint_missing(context, storage, conn):
            # The settings, the savepoint, the lock (which waits while an
            # operator's VACUUM FULL holds the table), the columns, whether
            # the site is alone in the table.
            site = _site(context)
            found, alone = _savepoint_and_columns(conn, site)
            _mark_savepoint(context, storage, found, site, alone)
        yield conn
    except psycopg.Error as error:
        failure = _recover(conn, error)
        if failure is None or failure is error:
            raise
        raise failure from error


def _recover(conn: psycopg.Connection, error: psycopg.Error) -> BaseException | None:
    """After a failed catalog read: the transaction back at its read
    savepoint where the failure aborted it.  What to raise instead of
    ``error``: ``ConnectionLost`` for a broken connection, ``SearchTimeout``
    for a cancelled read (the snapshot usable), ``error`` itself when the
    snapshot is lost; None when the snapshot is usable and ``error`` is the
    statement's own."""
    if conn.broken:
        return _lost(error)
    if not _back_to_savepoint(conn):
        return error
    if isinstance(error, psycopg.errors.QueryCanceled):
        return _cancelled(error)
    return None


def _lost(error: psycopg.Error) -> ConnectionLost:
    return ConnectionLost(
        f"the catalog's PostgreSQL connection is lost ({error}): the request"
        " is tried again in a new transaction, which connects anew"
    )


def _cancelled(error: psycopg.errors.QueryCanceled) -> SearchTimeout:
    """The error of a catalog read PostgreSQL cancelled: at the statement
    timeout (``STATEMENT_TIMEOUT``), or by an operator's cancel."""
    reason = error.diag.message_primary or str(error)
    if "statement timeout" not in reason:
        return SearchTimeout(f"catalog read cancelled by PostgreSQL ({reason})")
    if STATEMENT_TIMEOUT is None:
        setting = "the server's statement_timeout (PGCATALOG_STATEMENT_TIMEOUT=server)"
    else:
        setting = f"PGCATALOG_STATEMENT_TIMEOUT ({STATEMENT_TIMEOUT})"
    return SearchTimeout(
        f"catalog read cancelled by PostgreSQL: it ran longer than {setting};"
        " narrow the query (a path, a type, fewer words) or raise the setting"
    )


def _back_to_savepoint(conn: psycopg.Connection) -> bool:
    """After a failed catalog read: the transaction back at the read
    savepoint if the failure aborted it.  False if the snapshot is lost."""
    if conn.info.transaction_status != TransactionStatus.INERROR:
        return True
    try:
        conn.execute(_BACK_TO_SAVEPOINT)
    except psycopg.Error:
        # The snapshot began after the savepoint was set (a sync inside
        # one ZODB transaction): nothing to go back to.
        logger.warning("catalog read failed; the read snapshot is lost")
        return False
    return True


def _savepoint_missing(context, storage, conn) -> bool:
    """Whether the next catalog read of the transaction is its first: in a
    read transaction, with no savepoint set yet."""
    if conn.info.transaction_status != TransactionStatus.INTRANS:
        return False
    current = _jar(context).transaction_manager.get()
    return getattr(storage, "_pgcatalog_savepoint_of", None) is not current


def _site(context) -> str | None:
    """The path of the site whose catalog ``context`` is, if it is one."""
    site_path = getattr(context, "site_path", None)
    return site_path() if callable(site_path) else None


def _mark_savepoint(
    context, storage, found: list[tuple], site: str | None, alone: bool
) -> None:
    """Record what ``columns.READY`` found (``found``, its rows) and whether
    the site at path ``site`` is alone in the table (``layout.PATH_ENDS``)
    for the transaction."""
    ready, rows, lists, counted = columns.ready_rows(found)
    storage._pgcatalog_columns = ready
    storage._pgcatalog_counted = counted
    # For the snapshot it was read in: a sync inside one ZODB transaction
    # begins another, where another site may have rows.
    storage._pgcatalog_alone = (site, snapshot_id(context)) if alone else None
    storage._pgcatalog_savepoint_of = _jar(context).transaction_manager.get()
    # What the next transaction's first search translates with
    # (``likely_columns``, ``likely_alone``); shared by the storage's
    # instances.
    storage._main._pgcatalog_columns_seen = ready
    storage._main._pgcatalog_counted_seen = counted
    if site is not None:
        storage._main._pgcatalog_alone_seen = site if alone else None
    # The catalog's size, as the last transaction that read it found it,
    # and the number of its numbered lists.
    storage._main._pgcatalog_rows_seen = rows
    storage._main._pgcatalog_lists_seen = lists


def catalog_rows(context) -> float:
    """The catalog table's estimated rows, as this process last read them
    (``columns.READY``; 0 before the first read): how large a result may
    be, for the shape of a search's statement (``query.COUNT_APART_ROWS``).
    It changes slowly; a search translated with an older figure gets the
    same rows."""
    return getattr(_storage_instance(context)._main, "_pgcatalog_rows_seen", 0.0)


def numbered_lists(context) -> float:
    """The estimated number of numbered lists (``columns.NUMBERED``), as
    this process last read it (``columns.READY``; 0 before the first read):
    the form of a search's test of them (``columns.MANY_LISTS``).  Either
    form finds the same rows."""
    return getattr(_storage_instance(context)._main, "_pgcatalog_lists_seen", 0.0)


def first_read(context) -> bool:
    """Whether the next catalog read of the current transaction is its
    first, which sets the savepoint and reads the ready typed columns
    (``reading``): ``search_first`` does both with a search, in its round
    trip."""
    storage = _storage_instance(context)
    return _savepoint_missing(context, storage, _pg_connection(storage))


def site_alone(context) -> bool:
    """Whether every row of the catalog's table, in the current
    transaction's snapshot, is in the subtree of ``context``'s site
    (``layout.PATH_ENDS``, read with the typed columns by the transaction's
    first catalog read, for the site that read): its searches then need no
    test of the path (``query.QueryContext.site_alone``).  False outside a
    read transaction, for the other sites of a transaction that reads
    several, and in another snapshot than the one it was read in."""
    storage = _storage_instance(context)
    current = _jar(context).transaction_manager.get()
    if getattr(storage, "_pgcatalog_savepoint_of", None) is not current:
        return False
    read = getattr(storage, "_pgcatalog_alone", None)
    snapshot = snapshot_id(context)
    return (
        read is not None and snapshot is not None and read == (_site(context), snapshot)
    )


def likely_alone(context) -> bool:
    """``site_alone`` as the last read snapshot of this database found it
    (``likely_columns``): a site alone stays so until another site of the
    database catalogs an object.  ``search_first`` tells whether the guess
    was right."""
    seen = getattr(_storage_instance(context)._main, "_pgcatalog_alone_seen", None)
    return seen is not None and seen == _site(context)


def group_counts(context) -> frozenset | None:
    """The counts per group (``columns.GROUPED``) as the current
    transaction's snapshot has them (read with the typed columns,
    ``columns.ready_rows``): None where they are not kept, else the range
    columns whose rows out of a range a count may take away; None outside
    a read transaction."""
    storage = _storage_instance(context)
    current = _jar(context).transaction_manager.get()
    if getattr(storage, "_pgcatalog_savepoint_of", None) is not current:
        return None
    return getattr(storage, "_pgcatalog_counted", None)


def likely_group_counts(context) -> frozenset | None:
    """``group_counts`` as the last read snapshot of this database found
    it (``likely_columns``)."""
    return getattr(_storage_instance(context)._main, "_pgcatalog_counted_seen", None)


def likely_columns(context) -> dict[str, str]:
    """The typed columns the last read snapshot of this database (in this
    process) had ready: what the next snapshot most likely has, since
    columns come and go only with ``addIndex``/``delIndex``.
    ``search_first`` tells whether the guess was right."""
    return getattr(_storage_instance(context)._main, "_pgcatalog_columns_seen", {})


#: ``keep_plan`` of a search statement whose plan PostgreSQL is made to
#: keep (``query.SearchSQL.plan_forced``; ``send_search``).
FORCED = "forced"

# Around a statement whose plan is forced: ``plan_cache_mode`` as it was
# is kept in a setting of the catalog's own (a target list is computed in
# its order), the generic plan forced, and the mode set back after it.
# Local to the transaction, and undone with the savepoint when the search
# fails (the statement after it is then not run).
GENERIC_PLAN = (
    "SELECT set_config('pgcatalog.plan_cache_mode',"
    " current_setting('plan_cache_mode'), true),"
    " set_config('plan_cache_mode', 'force_generic_plan', true)"
)
PLAN_AS_BEFORE = (
    "SELECT set_config('plan_cache_mode',"
    " current_setting('pgcatalog.plan_cache_mode'), true)"
)


def send_search(
    conn: psycopg.Connection,
    cursor: psycopg.Cursor,
    statement,
    params,
    keep_plan: bool | str = False,
) -> None:
    """Send a search ``statement`` on ``cursor``: planned for its values
    (``keep_plan`` false), prepared (true: PostgreSQL keeps its generic
    plan where it looks as cheap as those, ``query.SearchSQL.plan_kept``)
    or prepared and run with its generic plan (``FORCED``).  ``conn`` is
    in a pipeline where the plan is forced: the mode's change and its
    undoing go with the statement, in its round trip."""
    if keep_plan != FORCED:
        cursor.execute(statement, params, prepare=bool(keep_plan))
        return
    conn.execute(GENERIC_PLAN, prepare=True)
    cursor.execute(statement, params, prepare=True)
    conn.execute(PLAN_AS_BEFORE, prepare=True)


def search_first(
    context, statement, params, keep_plan: bool | str = False
) -> list | None:
    """The first catalog read of a transaction (``first_read``): the
    savepoint, the page cost, the ready typed columns and whether the site
    is alone (as ``reading`` sets and reads them) and the search
    ``statement``, in one round trip.

    Returns the search's rows.  The search was translated with
    ``likely_columns`` and ``likely_alone``: its rows are the answer only
    if those are ``ready_columns`` and ``site_alone`` (which this read
    records).  The rows are None when the search failed (a column the
    guess named is gone, no table yet, a bad query): the transaction is
    back at its savepoint, and the caller runs the search again through
    ``reading``, where an error that is the search's own propagates.
    ``keep_plan``: as ``send_search`` plans it.
    """
    storage = _storage_instance(context)
    conn = _pg_connection(storage)
    site = _site(context)
    try:
        with conn.pipeline():
            with (
                conn.cursor(row_factory=tuple_row) as prelude,
                conn.cursor(row_factory=tuple_row) as sites,
                json_cursor(conn) as cursor,
            ):
                _send_prelude(prelude, sites, site)
                send_search(conn, cursor, statement, params, keep_plan)
                found = prelude.fetchall()
                alone = _alone(sites, site)
                rows = cursor.fetchall()
    except psycopg.Error as error:
        # A lost connection, a cancelled read (not run again: it would run
        # as long) or a lost snapshot raise; the next read sets the
        # savepoint again (``reading``).
        failure = _recover(conn, error)
        if failure is error:
            raise
        if failure is not None:
            raise failure from error
        # ``reading`` sets the savepoint again and reads the columns.
        return None
    _mark_savepoint(context, storage, found, site, alone)
    return rows


def _random_page_cost() -> str | None:
    """``random_page_cost`` for the catalog's reads, from the environment
    (``PGCATALOG_RANDOM_PAGE_COST``, default 1.1; "server" keeps the
    server's setting)."""
    value = os.environ.get("PGCATALOG_RANDOM_PAGE_COST", "1.1").strip()
    if value.lower() == "server":
        return None
    try:
        if float(value) <= 0:
            raise ValueError(value)
    except ValueError:
        logger.warning(
            "PGCATALOG_RANDOM_PAGE_COST=%r is not a positive number: the"
            " server's random_page_cost applies",
            value,
        )
        return None
    return value


#: PostgreSQL's default random_page_cost (4) prices a heap page read as a
#: disk seek.  The catalog's table and indexes are read from memory on a
#: live site: at 4 the planner ANDed the security term's GIN bitmap (every
#: row of a Manager's or Anonymous's site matches it) into searches for a
#: few thousand rows, and building it cost more than the heap pages it
#: saved (100,000 rows: 27.7 ms instead of 4.6 for ``portal_type``).
RANDOM_PAGE_COST = _random_page_cost()


def _plan_for_requests() -> bool:
    """Whether the catalog's reads plan without JIT compilation and
    parallel workers (``PGCATALOG_PLANNING``: "requests", the default, or
    "server" for the server's settings)."""
    value = os.environ.get("PGCATALOG_PLANNING", "requests").strip().lower()
    if value not in ("requests", "server"):
        logger.warning(
            "PGCATALOG_PLANNING=%r is neither 'requests' nor 'server':"
            " the catalog's reads plan for requests",
            value,
        )
    return value != "server"


#: A catalog read serves a request: milliseconds.  PostgreSQL compiles a
#: query with JIT, or starts parallel workers, when its estimated cost is
#: high, and estimates of a set-returning function over each row (facet
#: counts' ``jsonb_array_elements``: 100 rows a row) or of a table whose
#: statistics lag a bulk load are high: at 10,000 documents the facet
#: counts of 5,000 matches took 176 ms with two workers and JIT, 50 ms
#: with JIT alone (16.5 ms of compiling: EXPLAIN ANALYZE), and
#: ``facet_counts`` 55 ms a call before, 36 ms with neither
#: (``benchmarks/facet_bench.py``); during the load, lookups of one path
#: took 160 ms.  Off for the transactions that read the catalog.
PLAN_FOR_REQUESTS = _plan_for_requests()


#: A duration as ``statement_timeout`` takes it (no unit: milliseconds).
_DURATION = re.compile(r"\d{1,9}(ms|s|min)?")


def _statement_timeout() -> str | None:
    """``statement_timeout`` for the catalog's reads, from the environment
    (``PGCATALOG_STATEMENT_TIMEOUT``, default 30s; "server" keeps the
    server's setting, 0 none)."""
    value = os.environ.get("PGCATALOG_STATEMENT_TIMEOUT", "30s").strip().lower()
    if value == "server":
        return None
    if _DURATION.fullmatch(value) is None:
        logger.warning(
            "PGCATALOG_STATEMENT_TIMEOUT=%r is not a duration (30s, 500ms,"
            " 2min, 0): the server's statement_timeout applies",
            value,
        )
        return None
    return value


#: How long one catalog read may run before PostgreSQL cancels it: a
#: search that would read a large site for minutes (a runaway query, a
#: plan gone wrong) ends with ``SearchTimeout`` instead of holding a
#: worker thread and a connection.  For the reads of a request's
#: transaction (``SET LOCAL``, with its first catalog read); its object
#: loads are bounded by it too, its commit is not (another transaction).
STATEMENT_TIMEOUT = _statement_timeout()


def _settings_statement() -> tuple[str, tuple] | None:
    """One ``set_config`` per setting given, all in one statement, the
    names and values bound."""
    settings = [
        (name, value)
        for name, value in (
            ("random_page_cost", RANDOM_PAGE_COST),
            ("statement_timeout", STATEMENT_TIMEOUT),
            ("jit", "off" if PLAN_FOR_REQUESTS else None),
            ("max_parallel_workers_per_gather", "0" if PLAN_FOR_REQUESTS else None),
        )
        if value is not None
    ]
    if not settings:
        return None
    calls = sql.SQL(", ").join(sql.SQL("set_config(%s, %s, true)") for _ in settings)
    statement = sql.SQL("SELECT {}").format(calls).as_string(None)
    return statement, tuple(item for pair in settings for item in pair)


#: One statement setting them all for the transaction.
_SETTINGS = _settings_statement()


def read_settings() -> tuple[str, tuple] | None:
    """The statement (and its parameters) that gives a transaction the
    settings the catalog's reads plan and run with, or None when every one
    is the server's: for a tool that runs a search's SQL on a connection
    of its own (the benchmark's EXPLAIN) and must see the plan the search
    got."""
    return _SETTINGS


def set_statement_timeout(value: str | None) -> None:
    """Set ``STATEMENT_TIMEOUT`` for this process's next transactions (a
    duration as PostgreSQL reads it; "0" none; None the server's): the
    ``pgcatalog`` command reads whole catalogs on purpose and sets "0"."""
    global STATEMENT_TIMEOUT, _SETTINGS
    if value is not None and _DURATION.fullmatch(value) is None:
        raise ValueError(f"statement timeout {value!r} is not a duration (30s, 0)")
    STATEMENT_TIMEOUT = value
    _SETTINGS = _settings_statement()


def _send_prelude(
    cursor: psycopg.Cursor, sites: psycopg.Cursor, site: str | None
) -> None:
    # In a pipeline: the page cost and the timeout (before the savepoint:
    # a failed read keeps them), the savepoint, the table's share lock,
    # then the ready columns (``cursor``'s result) and whether ``site`` is
    # alone in the table (``sites``'s).
    if _SETTINGS is not None:
        cursor.execute(*_SETTINGS)
    cursor.execute(_SAVEPOINT)
    cursor.execute(columns.LOCK)
    cursor.execute(columns.READY)
    if site is not None:
        # Its plan kept: the same for every site (``layout.PATH_ENDS``).
        sites.execute(layout.PATH_ENDS, (site,), prepare=True)


def _alone(sites: psycopg.Cursor, site: str | None) -> bool:
    """Whether ``site`` is alone in the table, from the row of
    ``layout.PATH_ENDS`` that ``_send_prelude`` sent."""
    return site is not None and layout.site_alone(sites.fetchone(), site)


def _savepoint_and_columns(
    conn: psycopg.Connection, site: str | None
) -> tuple[list[tuple], bool]:
    """Set the read savepoint, the planner's page cost for the rest of the
    transaction (before the savepoint: a failed read keeps it), and read the
    typed columns searches may use (``columns.READY``) and whether the site
    at path ``site`` is alone in the table (``layout.PATH_ENDS``), in one
    round trip: the columns' rows, and that."""
    try:
        with (
            conn.pipeline(),
            conn.cursor(row_factory=tuple_row) as cursor,
            conn.cursor(row_factory=tuple_row) as sites,
        ):
            _send_prelude(cursor, sites, site)
            return cursor.fetchall(), _alone(sites, site)
    except (psycopg.errors.UndefinedTable, psycopg.errors.WrongObjectType):
        # No table yet (the first transaction of a new database), or the
        # registry of columns not yet made (a restart has not applied this
        # version's DDL yet): no typed columns.  The savepoint was set.
        conn.execute(_BACK_TO_SAVEPOINT)
        return [], False


def ready_columns(context) -> dict[str, str]:
    """``{column: kind}`` of the typed columns the searches of the current
    transaction may use, read in its snapshot (``reading``); none outside
    a read transaction."""
    storage = _storage_instance(context)
    current = _jar(context).transaction_manager.get()
    if getattr(storage, "_pgcatalog_savepoint_of", None) is not current:
        return {}
    return getattr(storage, "_pgcatalog_columns", {})


def snapshot_id(context) -> tuple | None:
    """What identifies the committed state the request reads, or None.

    zodb-pgjsonb begins each read snapshot, then reads the last committed
    transaction id in it (``_polled_tid``): two readers with the same id
    of the same database see the same stored rows.  None when the storage
    does not tell (then nothing may be shared between readers).
    """
    storage = _storage_instance(context)
    tid = getattr(storage, "_polled_tid", None)
    if tid is None or not getattr(storage, "_in_read_txn", False):
        return None
    return (id(storage._main), tid)


def storage_dsn(context) -> str:
    """The DSN of the database that stores ``context``."""
    return _storage_instance(context)._main._dsn


def ddl_connection(context):
    """A short autocommit connection for DDL, closed on exit."""
    return ddl_connection_to(storage_dsn(context))


@contextmanager
def ddl_connection_to(dsn: str):
    """``ddl_connection`` by DSN: zodb-pgjsonb's deferred actions get only
    the DSN, when no ZODB connection may be at hand."""
    with psycopg.connect(dsn, autocommit=True) as conn:
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
