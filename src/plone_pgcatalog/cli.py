"""The ``pgcatalog`` command: maintain a site's catalog from a shell.

Usage::

    pgcatalog -C etc/zope.conf [--site Plone] rebuild [--batch-size N]
    pgcatalog -C etc/zope.conf [--site Plone] reindex [--batch-size N] INDEX...
    pgcatalog -C etc/zope.conf [--site Plone] verify [--repair] [--show N]
    pgcatalog -C etc/zope.conf [--site Plone] stats

Owns: the command line (arguments, one-line errors, exit codes), opening
Zope from an instance's ``zope.conf`` as Zope's own scripts do
(``zconsole``: ``make_wsgi_app``, then ``Zope2.app()`` with a request and
the system user), the four commands, and ``ProgressBarHandler``, the
progress bar drawn on a terminal (elsewhere the log lines of
``maintenance.ProgressLogHandler``).

Catalog changes go through the tool's API (``rebuild``, which commits in
batches, ``catalog_object``, ``uncatalog_object``) or ``maintenance``'s
(``reindex_index`` in batches) and
reach PostgreSQL when the command commits, through the state processor.
``verify`` and ``stats`` are ``health``'s, shared with the operators' pages.

Must not import Zope, Plone or the catalog's Zope modules at module level:
Zope is configured from ``zope.conf`` first (and ``--help`` stays fast).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from plone_pgcatalog.health import repair
from plone_pgcatalog.health import stats
from plone_pgcatalog.health import verify
from typing import TextIO

import argparse
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


def reindex(
    tool, names: list[str], out: TextIO, handler, batch_size: int = 1000
) -> int:
    from plone_pgcatalog import maintenance

    valid = sorted(tool.indexes())
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise CommandError(
            f"unknown index {', '.join(map(repr, unknown))}; valid indexes: "
            + ", ".join(valid)
        )
    names = list(dict.fromkeys(names))
    # Commits every batch_size objects (memory stays flat), the rest here.
    count = maintenance.reindex_index(
        tool, names, pghandler=handler, batch_size=batch_size
    )
    commit(f"pgcatalog reindex {' '.join(names)} {_path(tool)}")
    out.write(
        f"reindexed {', '.join(names)} in the catalog of {tool.site_path()}:"
        f" {count} objects\n"
    )
    return EXIT_OK


# -- verify ----------------------------------------------------------------------


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
    reindex_parser = commands.add_parser(
        "reindex",
        help="read the given indexes again for every cataloged object,"
        " committing in batches",
    )
    reindex_parser.add_argument("indexes", nargs="+", metavar="INDEX")
    for batched in (rebuild_parser, reindex_parser):
        batched.add_argument(
            "--batch-size",
            type=_positive,
            default=1000,
            metavar="N",
            help="objects per transaction (default: 1000)",
        )
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
            return reindex(tool, args.indexes, out, handler, args.batch_size)
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
        if args.command in ("rebuild", "reindex"):
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
