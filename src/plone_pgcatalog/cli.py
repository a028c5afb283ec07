"""The ``pgcatalog`` command: maintain a site's catalog from a shell.

Usage::

    pgcatalog -C etc/zope.conf [--site Plone] rebuild
    pgcatalog -C etc/zope.conf [--site Plone] reindex INDEX [INDEX ...]
    pgcatalog -C etc/zope.conf [--site Plone] verify [--repair] [--show N]
    pgcatalog -C etc/zope.conf [--site Plone] stats

Owns: the command line (arguments, one-line errors, exit codes), opening
Zope from an instance's ``zope.conf`` as Zope's own scripts do
(``zconsole``: ``make_wsgi_app``, then ``Zope2.app()`` with a request and
the system user), the four commands, and ``ProgressBarHandler``, the
progress bar drawn on a terminal (elsewhere the log lines of
``maintenance.ProgressLogHandler``).

Catalog changes go through the tool's API (``rebuild``, which commits in
batches, ``reindexIndex``, ``catalog_object``, ``uncatalog_object``) and
reach PostgreSQL when the command commits, through the state processor.  The
SQL of this module only reads (``verify``, ``stats``), on the ZODB
connection's own PostgreSQL connection (``connection.read_connection``).

Must not import Zope, Plone or the catalog's Zope modules at module level:
Zope is configured from ``zope.conf`` first (and ``--help`` stays fast).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from plone_pgcatalog.store import reports
from psycopg import sql
from typing import Any
from typing import TextIO

import argparse
import json
import logging
import shutil
import sys
import time

logger = logging.getLogger("plone_pgcatalog.cli")

EXIT_OK = 0
#: ``verify`` found rows that differ from the content
EXIT_PROBLEMS = 1
#: bad input: arguments, zope.conf, site, index names
EXIT_USAGE = 2
#: the command failed (database, conflict, an unexpected error)
EXIT_FAILURE = 3

#: objects compared per SQL round trip in ``verify``
VERIFY_BATCH = 500


class CommandError(Exception):
    """Bad input or a failed command: one line for the user, an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


# -- progress ------------------------------------------------------------------


class ProgressBarHandler:
    """ZCatalog's ``IProgressHandler`` as a one-line bar on a terminal.

    ``[#####.....] 120/480 25.0% 40.2/s ETA 0:00:09``, redrawn in place
    (``\\r``) at most every ``interval`` seconds.  ``max`` may be an
    estimate (a rebuild only knows how many rows the catalog had): past it
    the bar shows the count and rate without an ETA.  With ``savepoint``
    a ZODB savepoint every ``steps`` objects lets the cache shrink, as
    ZCatalog's handlers do.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        steps: int = 1000,
        savepoint: bool = False,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ):
        self._stream = stream if stream is not None else sys.stderr
        self._steps = max(int(steps), 1)
        self._interval = interval
        self._clock = clock
        self._width = width
        self.savepoint = savepoint
        self._ident = ""
        self._max = 0
        self._current = 0
        self._start = self._drawn = 0.0

    def init(self, ident, max, savepoint=None):
        self._ident = str(ident)
        self._max = int(max or 0)
        self._current = 0
        if savepoint is not None:
            self.savepoint = savepoint
        self._start = self._clock()
        self._drawn = -self._interval
        self._draw(force=True)

    def info(self, text):
        self.output(text)

    def output(self, text):
        """A line of text above the bar, which is then drawn again."""
        self._clear()
        self._stream.write(f"{self._ident}: {text}\n")
        self._draw(force=True)

    def report(self, current, *args, **kw):
        self._current = current
        if self.savepoint and current > 0 and current % self._steps == 0:
            import transaction

            transaction.savepoint(optimistic=True)
        self._draw()

    def finish(self):
        self._draw(force=True)
        elapsed = self._clock() - self._start
        self._stream.write(f"\n{self._ident}: done in {_duration(elapsed)}\n")
        self._stream.flush()

    def line(self) -> str:
        """The bar as it is drawn now (without ``\\r``)."""
        elapsed = self._clock() - self._start
        current = self._current
        rate = current / elapsed if elapsed > 0 else 0.0
        if self._max and current <= self._max:
            fraction = current / self._max
            remaining = (self._max - current) / rate if rate else 0.0
            tail = (
                f" {current}/{self._max} {100 * fraction:5.1f}%"
                f" {rate:.1f}/s ETA {_duration(remaining)}"
            )
        else:
            fraction = 1.0 if current else 0.0
            tail = f" {current} {rate:.1f}/s"
        width = self._width or shutil.get_terminal_size((80, 24)).columns
        bar_width = max(10, min(30, width - len(tail) - len(self._ident) - 6))
        filled = int(bar_width * fraction)  # full only when done
        text = f"{self._ident} [{'#' * filled}{'.' * (bar_width - filled)}]{tail}"
        return text[: width - 1]

    def _draw(self, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._drawn < self._interval:
            return
        self._drawn = now
        self._stream.write("\r" + self.line() + "\x1b[K")
        self._stream.flush()

    def _clear(self) -> None:
        self._stream.write("\r\x1b[K")


def _duration(seconds: float) -> str:
    # maintenance imports Zope: not at module level (see the docstring).
    from plone_pgcatalog.maintenance import duration

    return duration(seconds)


def progress_handler(stream: TextIO | None = None):
    """A bar on a terminal, else ``maintenance.ProgressLogHandler``'s lines."""
    from plone_pgcatalog.maintenance import ProgressLogHandler
    from Products.ZCatalog.interfaces import IProgressHandler
    from zope.interface import classImplements

    stream = stream if stream is not None else sys.stderr
    if not IProgressHandler.implementedBy(ProgressBarHandler):
        classImplements(ProgressBarHandler, IProgressHandler)
    if _isatty(stream):
        return ProgressBarHandler(stream, savepoint=True)
    return ProgressLogHandler(savepoint=True)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- Zope and the site ---------------------------------------------------------


def open_zope(config: Path):
    """The Zope root of the instance configured by ``config``, with a request
    and the system user, as Zope's ``zconsole run`` gives scripts."""
    try:
        with open(config, "rb"):
            pass
    except OSError as exc:
        raise CommandError(
            f"cannot read the Zope configuration {str(config)!r}: {exc.strerror}"
        ) from exc
    from plone_pgcatalog.store import connection
    from Zope2.Startup.run import make_wsgi_app

    import ZConfig

    # A command reads whole catalogs on purpose (verify, stats, rebuild):
    # the timeout that protects a web request's catalog reads is off.
    connection.set_statement_timeout("0")
    try:
        make_wsgi_app({}, str(config))
    except ZConfig.ConfigurationError as exc:
        raise CommandError(
            f"bad Zope configuration {str(config)!r}: {_one_line(exc)}"
        ) from exc
    except Exception as exc:
        raise CommandError(
            f"cannot start Zope from {str(config)!r}: {_one_line(exc)}",
            EXIT_FAILURE,
        ) from exc

    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.users import system
    from Testing.makerequest import makerequest
    from zope.globalrequest import setRequest

    import Zope2

    app = makerequest(Zope2.app())
    app.REQUEST["PARENTS"] = [app]
    setRequest(app.REQUEST)
    newSecurityManager(None, system)
    return app


def close_zope(app) -> None:
    """Abort what is left, close the connection and the databases."""
    from AccessControl.SecurityManagement import noSecurityManager
    from zope.component.hooks import setSite
    from zope.globalrequest import setRequest

    import transaction
    import Zope2

    transaction.abort()
    noSecurityManager()
    setSite(None)
    setRequest(None)
    connection = app._p_jar
    # The request holds cleanups that touch persistent objects.
    app.REQUEST.close()
    connection.close()
    for database in getattr(Zope2, "opened", ()):
        database.close()


def find_site(app, name: str | None):
    """The Plone site ``name`` (a path from the Zope root), or the only one."""
    from plone.base.interfaces import IPloneSiteRoot

    sites = [obj for obj in app.objectValues() if IPloneSiteRoot.providedBy(obj)]
    ids = ", ".join(sorted(site.getId() for site in sites)) or "none"
    if name is None:
        if len(sites) == 1:
            return sites[0]
        if not sites:
            raise CommandError("no Plone site in the Zope root")
        raise CommandError(f"several Plone sites, choose one with --site: {ids}")
    path = "/" + name.strip("/")
    site = app.unrestrictedTraverse(path.lstrip("/"), None)
    # Acquisition could answer a path with an object elsewhere.
    if (
        site is None
        or not IPloneSiteRoot.providedBy(site)
        or "/".join(site.getPhysicalPath()) != path
    ):
        raise CommandError(f"no Plone site {name!r}; sites found: {ids}")
    return site


def catalog_of(site):
    """The site's ``portal_catalog``, if it is plone_pgcatalog's."""
    from plone_pgcatalog.interfaces import IPGCatalogTool

    tool = getattr(site.aq_explicit, "portal_catalog", None)
    if tool is None or not IPGCatalogTool.providedBy(tool):
        kind = getattr(tool, "meta_type", "none")
        raise CommandError(
            f"the portal_catalog of {_path(site)} is not plone_pgcatalog's"
            f" ({kind}); install the profile plone_pgcatalog:default first"
        )
    return tool


def commit(note: str) -> None:
    import transaction

    txn = transaction.get()
    txn.note(note)
    txn.setUser("pgcatalog")
    transaction.commit()


def _path(obj) -> str:
    return "/".join(obj.getPhysicalPath())


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# -- rebuild and reindex -------------------------------------------------------


def rebuild(tool, out: TextIO, handler, batch_size: int = 1000) -> int:
    # Commits every batch_size objects (maintenance.rebuild): readers keep
    # the complete catalog meanwhile, memory stays flat.
    tool.rebuild(batch_size=batch_size, pghandler=handler)
    out.write(f"rebuilt the catalog of {tool.site_path()}: {len(tool)} objects\n")
    return EXIT_OK


def reindex(tool, names: list[str], out: TextIO, handler) -> int:
    valid = sorted(tool.indexes())
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise CommandError(
            f"unknown index {', '.join(map(repr, unknown))}; valid indexes: "
            + ", ".join(valid)
        )
    names = list(dict.fromkeys(names))
    tool.reindexIndex(names, None, pghandler=handler)
    commit(f"pgcatalog reindex {' '.join(names)} {_path(tool)}")
    out.write(
        f"reindexed {', '.join(names)} in the catalog of {tool.site_path()}:"
        f" {len(tool)} objects\n"
    )
    return EXIT_OK


# -- verify --------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: paths of each kind of problem."""

    site_path: str
    objects: int = 0
    rows: int = 0
    #: objects a rebuild would catalog that have no row (at their path)
    missing: list[str] = field(default_factory=list)
    #: rows no walked object matches (deleted, moved, not content)
    orphan: list[str] = field(default_factory=list)
    #: ``(path, [names])``: index values, metadata or words that differ
    stale: list[tuple[str, list[str]]] = field(default_factory=list)
    #: path -> zoid of every walked object (used by the repair)
    walked: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.orphan) + len(self.stale)

    def report(self, out: TextIO, show: int) -> None:
        if not self.problems:
            out.write(
                f"catalog of {self.site_path} is in order:"
                f" {self.objects} objects, {self.rows} rows\n"
            )
            return
        out.write(
            f"catalog of {self.site_path}: {self.problems} problems"
            f" ({len(self.missing)} missing, {len(self.orphan)} orphan,"
            f" {len(self.stale)} stale) in {self.objects} objects,"
            f" {self.rows} rows\n"
        )
        kinds = (
            ("missing", [(p, "") for p in self.missing]),
            ("orphan", [(p, "") for p in self.orphan]),
            ("stale", [(p, f" ({', '.join(names)})") for p, names in self.stale]),
        )
        for kind, entries in kinds:
            if not entries:
                continue
            out.write(f"{kind}: {len(entries)}\n")
            for path, detail in entries[:show]:
                out.write(f"  {path}{detail}\n")
            if len(entries) > show:
                out.write(f"  ... and {len(entries) - show} more\n")


def walk_content(tool, visit: Callable[[Any], None]) -> None:
    """Call ``visit`` with what a rebuild catalogs, in its order
    (``maintenance.content_objects``); nothing is kept."""
    from plone_pgcatalog.maintenance import content_objects

    for obj in content_objects(tool):
        visit(obj)


def _json(value):
    """``value`` as it comes back from a JSON column."""
    return json.loads(json.dumps(value))


def _differences(expected: dict, stored: dict, names) -> list[str]:
    absent = object()
    return [
        name for name in names if expected.get(name, absent) != stored.get(name, absent)
    ]


def verify(tool, handler=None) -> Verification:
    """Compare the catalog rows of the site with the content (see module)."""
    from plone_pgcatalog.extraction import extract_row
    from plone_pgcatalog.extraction import indexable
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.store import columns as store_columns
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import schema
    from psycopg.rows import tuple_row
    from ZODB.utils import u64

    site_path = tool.site_path()
    result = Verification(site_path)
    definitions = tool.getIndexDefinitions()
    index_names = sorted(name for name in definitions if name != "SearchableText")
    columns = list(tool.schema())
    language = tool.site_languages()[0]
    conn = connection.read_connection(tool)
    with conn.transaction(), conn.cursor(row_factory=tuple_row) as cursor:
        typed = {
            name: kind
            for name, (kind, ready) in store_columns.registered(cursor).items()
            if ready
        }
    statement = reports.STORED_ROWS.format(
        vector=schema.searchable_vector(sql.SQL("e.words"), sql.SQL("e.config")),
        typed=reports.typed_drift(typed),
    )

    def compare(batch: list) -> None:
        params = (
            [row.zoid for row in batch],
            [row.text_config for row in batch],
            [row.searchable_text for row in batch],
        )
        with conn.transaction(), connection.json_cursor(conn) as cursor:
            cursor.execute(statement, params)
            stored = {zoid: rest for zoid, *rest in cursor.fetchall()}
        for row in batch:
            found = stored.get(row.zoid)
            if found is None or found[0] != row.path:
                result.missing.append(row.path)
                continue
            _, idx, meta, same_words, drifted = found
            names = _differences(_json(row.idx), idx, index_names)
            names += _differences(_json(row.meta), meta, columns)
            if not same_words and "SearchableText" in definitions:
                names.append("SearchableText")
            # A typed column that is not what ``idx`` holds.
            names += [f"{name} column" for name in drifted if name in definitions]
            if names:
                result.stale.append((row.path, names))

    if handler is not None:
        handler.init(f"verifying {site_path}", len(tool))
    batch = []

    def visit(obj) -> None:
        path = _path(obj)
        oid = getattr(obj, "_p_oid", None)
        result.objects += 1
        if handler is not None:
            handler.report(result.objects)
        if oid is None:  # never stored: it cannot have a row
            result.missing.append(path)
            return
        zoid = u64(oid)
        result.walked[path] = zoid
        batch.append(
            extract_row(
                zoid,
                path,
                definitions,
                columns,
                indexable(obj, tool),
                default_language=language,
            )
        )
        if len(batch) >= VERIFY_BATCH:
            compare(batch)
            batch.clear()

    walk_content(tool, visit)
    if batch:
        compare(batch)
    if handler is not None:
        handler.finish()

    site, site_params = path_clause(site_path, -1)
    rows = reports.SITE_ROWS.format(site=site)
    last = -1
    while True:
        with conn.transaction(), connection.json_cursor(conn) as cursor:
            cursor.execute(rows, [*site_params, last, VERIFY_BATCH])
            page = cursor.fetchall()
        if not page:
            break
        for zoid, path in page:
            result.rows += 1
            if result.walked.get(path) != zoid:
                result.orphan.append(path)
        last = page[-1][0]
    result.missing.sort()
    result.orphan = sorted(set(result.orphan))
    result.stale.sort()
    return result


def repair(tool, found: Verification) -> None:
    """Catalog missing and stale objects, uncatalog orphan rows (at commit)."""
    from plone_pgcatalog.maintenance import resolve

    # Orphans first: an uncatalog clears every row at that path but the
    # rows this transaction catalogs, so an object living at an orphan's
    # path is cataloged again after it.
    for path in found.orphan:
        tool.uncatalog_object(path)
    todo = [*found.missing, *(path for path, _ in found.stale)]
    todo += [path for path in found.orphan if path in found.walked]
    for path in dict.fromkeys(todo):
        obj = resolve(tool, path)
        if obj is not None:
            tool.catalog_object(obj, path)


def run_verify(tool, out: TextIO, handler, repair_it: bool, show: int) -> int:
    import transaction

    found = verify(tool, handler)
    found.report(out, show)
    if not found.problems or not repair_it:
        return EXIT_PROBLEMS if found.problems else EXIT_OK
    repair(tool, found)
    commit(f"pgcatalog verify --repair {_path(tool)}")
    transaction.begin()
    out.write("repaired; verifying again\n")
    again = verify(tool, handler)
    again.report(out, show)
    return EXIT_PROBLEMS if again.problems else EXIT_OK


# -- stats ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    site_path: str
    rows: int
    indexes: int
    columns: int
    per_type: list[tuple[str | None, int]] | None
    per_state: list[tuple[str | None, int]] | None
    column_sizes: dict[str, int]
    sql_indexes: list[tuple[str, int]]
    schema_version: int | None
    counter: int | None

    def report(self, out: TextIO, expected_version: int) -> None:
        index_bytes = sum(size for _, size in self.sql_indexes)
        data_bytes = sum(self.column_sizes.values())
        out.write(
            f"catalog of {self.site_path}\n"
            f"  rows: {self.rows}\n"
            f"  indexes: {self.indexes}\n"
            f"  metadata columns: {self.columns}\n"
            f"  schema version: {self.schema_version}"
            f" (this code: {expected_version})\n"
            f"  change counter: {self.counter}\n"
            f"  catalog columns: {_size(data_bytes)}\n"
            f"  SQL indexes: {len(self.sql_indexes)}, {_size(index_bytes)}\n"
        )
        for title, counts in (
            ("portal_type", self.per_type),
            ("review_state", self.per_state),
        ):
            if counts is None:
                out.write(f"rows per {title}: (no index {title})\n")
                continue
            out.write(f"rows per {title}:\n")
            for value, count in counts:
                out.write(f"  {'(none)' if value is None else value}: {count}\n")
        out.write(f"catalog column sizes (rows of {self.site_path}):\n")
        for name, size in self.column_sizes.items():
            out.write(f"  {name}: {_size(size)}\n")
        out.write("SQL indexes (every site of the database):\n")
        for name, size in self.sql_indexes:
            out.write(f"  {name}: {_size(size)}\n")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def stats(tool) -> Stats:
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.store import connection

    site_path = tool.site_path()
    site, params = path_clause(site_path, -1)
    indexes = set(tool.indexes())
    conn = connection.read_connection(tool)
    sizes = sql.SQL(", ").join(
        sql.SQL("COALESCE(sum(pg_column_size({})), 0)").format(sql.Identifier(name))
        for name in reports.CATALOG_COLUMNS
    )
    with conn.transaction(), connection.json_cursor(conn) as cursor:
        cursor.execute(reports.ROW_COUNT.format(site), params)
        rows = cursor.fetchone()[0]
        per_value = {}
        for name in ("portal_type", "review_state"):
            if name in indexes:
                cursor.execute(reports.PER_VALUE.format(site), [name, *params])
                per_value[name] = [tuple(row) for row in cursor.fetchall()]
        cursor.execute(reports.COLUMN_SIZES.format(sizes, site), params)
        column_sizes = dict(zip(reports.CATALOG_COLUMNS, cursor.fetchone()))
        cursor.execute(reports.SQL_INDEXES, [r"pgcatalog\_%"])
        sql_indexes = [tuple(row) for row in cursor.fetchall()]
        cursor.execute(reports.STATE)
        state = dict(cursor.fetchall())
    return Stats(
        site_path=site_path,
        rows=rows,
        indexes=len(indexes),
        columns=len(tool.schema()),
        per_type=per_value.get("portal_type"),
        per_state=per_value.get("review_state"),
        column_sizes={k: int(v) for k, v in column_sizes.items()},
        sql_indexes=[(name, int(size)) for name, size in sql_indexes],
        schema_version=state.get("schema_version"),
        counter=state.get("counter"),
    )


# -- command line --------------------------------------------------------------


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return number


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block) and exit code 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pgcatalog",
        description="Maintain the PostgreSQL catalog (plone_pgcatalog) of a"
        " Plone site, with the Zope instance's configuration.",
        epilog="Exit codes: 0 done, 1 verify found problems, 2 bad input,"
        " 3 the command failed.",
    )
    parser.add_argument(
        "-C",
        "--config",
        required=True,
        type=Path,
        metavar="ZOPE_CONF",
        help="the instance's zope.conf",
    )
    parser.add_argument(
        "--site",
        help="path of the Plone site from the Zope root (default: the only one)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an unexpected error",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    rebuild_parser = commands.add_parser(
        "rebuild",
        help="catalog every content object again and drop the rows of objects"
        " that are gone, committing in batches (queries keep the complete"
        " catalog meanwhile)",
    )
    rebuild_parser.add_argument(
        "--batch-size",
        type=_positive,
        default=1000,
        metavar="N",
        help="objects per transaction (default: 1000)",
    )
    reindex_parser = commands.add_parser(
        "reindex", help="read the given indexes again for every cataloged object"
    )
    reindex_parser.add_argument("indexes", nargs="+", metavar="INDEX")
    verify_parser = commands.add_parser(
        "verify",
        help="compare the catalog with the content: missing, orphan and stale"
        " rows (exit code 1 if any)",
    )
    verify_parser.add_argument(
        "--repair",
        action="store_true",
        help="catalog missing and stale objects, uncatalog orphan rows, verify"
        " again",
    )
    verify_parser.add_argument(
        "--show",
        type=int,
        default=10,
        metavar="N",
        help="paths listed per kind of problem (default: 10)",
    )
    commands.add_parser(
        "stats", help="rows, rows per type and state, sizes, schema version"
    )
    return parser


def _configure_logging(stream: TextIO) -> None:
    logging.basicConfig(
        level=logging.WARNING,
        stream=stream,
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
    )
    # On a terminal the bar shows progress; elsewhere the log lines do.
    level = logging.WARNING if _isatty(stream) else logging.INFO
    logging.getLogger("plone_pgcatalog").setLevel(level)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from plone_pgcatalog.store import schema
    from zope.component.hooks import setSite

    app = open_zope(args.config)
    try:
        site = find_site(app, args.site)
        setSite(site)
        tool = catalog_of(site)
        if args.command == "stats":
            stats(tool).report(out, schema.SCHEMA_VERSION)
            return EXIT_OK
        handler = progress_handler(err)
        if args.command == "rebuild":
            return rebuild(tool, out, handler, args.batch_size)
        if args.command == "reindex":
            return reindex(tool, args.indexes, out, handler)
        if args.command == "verify":
            return run_verify(tool, out, handler, args.repair, args.show)
        raise AssertionError(args.command)  # argparse allows no other
    finally:
        close_zope(app)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    _configure_logging(err)
    try:
        code = run(args, out, err)
    except CommandError as exc:
        err.write(f"pgcatalog: error: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        if args.command == "rebuild":
            # Committed batches hold correct rows; the old ones are still
            # there for the rest.
            err.write("pgcatalog: interrupted, batches committed so far stay\n")
        else:
            err.write("pgcatalog: interrupted, nothing committed\n")
        return EXIT_FAILURE
    except Exception as exc:
        if args.debug:
            raise
        from ZODB.POSException import ConflictError

        hint = " (run it again)" if isinstance(exc, ConflictError) else ""
        err.write(
            f"pgcatalog: error: {args.command} failed: {type(exc).__name__}:"
            f" {_one_line(exc)}{hint} (--debug shows the traceback)\n"
        )
        return EXIT_FAILURE
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
