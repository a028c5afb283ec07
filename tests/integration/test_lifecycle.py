"""Install on a populated ZCatalog site, uninstall, reinstall: same answers.

One scenario, run once for the module (``lifecycle``): a second Plone site
``/zsite`` on the same zodb-pgjsonb database, created *without* this
add-on, gets an add-on index and metadata column on its ZCatalog and some
content; then the ``default`` profile is installed, the ``uninstall``
profile run, and ``default`` installed again, each step committed.  At
every step the fixture records what the catalog is and answers
(``Stage``); the tests compare the stages with the first one, ZCatalog's.

The catalog's schema (its table, ``pgcatalog_objects``) is recorded too
(``Schema``): it
stays while the test layer's site ``/plone`` has catalog rows, goes when
``/plone`` is uninstalled as well, comes back with the reinstall, goes
again (after a try that did not get its locks), stays away when a new
``ZODB.DB`` on a new storage opens the database (as a new Zope process
would), and comes back with an install in that new one.
"""

from __future__ import annotations

from Acquisition import aq_base
from dataclasses import dataclass
from dataclasses import field
from DateTime import DateTime
from plone import api
from plone_pgcatalog import setuphandlers
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import layout
from plone_pgcatalog.store import schema
from plone_pgcatalog.testing import EXTENSION_PROFILES
from plone_pgcatalog.testing import open_db
from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
from plone_pgcatalog.testing import SITE_ID
from tests.conftest import run_in
from zope.component.hooks import setSite

import contextlib
import logging
import psycopg
import pytest
import re
import transaction

SITE = "zsite"
INSTALL = "profile-plone_pgcatalog:default"
UNINSTALL = "profile-plone_pgcatalog:uninstall"
ZCATALOG_CLASS = "Products.CMFPlone.CatalogTool.CatalogTool"
PGCATALOG_CLASS = "plone_pgcatalog.tool.PGCatalogTool"


def _paths(brains) -> list[str]:
    return [brain.getPath() for brain in brains]


def _any_order(brains) -> list[str]:
    return sorted(_paths(brains))


#: name -> (user: "manager" or "anonymous", restricted search?, query,
#: how to record the brains).  Unsorted queries are compared as sets.
QUERIES = {
    "everything unrestricted": (True, False, {"path": "/"}, _any_order),
    "site path sorted by path": (
        True,
        False,
        {"path": "/zsite", "sort_on": "path"},
        _paths,
    ),
    "pages by title": (
        True,
        True,
        {"portal_type": "Document", "sort_on": "sortable_title"},
        _paths,
    ),
    "news by title reversed": (
        True,
        True,
        {
            "portal_type": "News Item",
            "sort_on": "sortable_title",
            "sort_order": "reverse",
        },
        _paths,
    ),
    "events by start": (
        True,
        True,
        {"portal_type": "Event", "sort_on": "start"},
        _paths,
    ),
    "events starting after a date": (
        True,
        True,
        {
            "portal_type": "Event",
            "start": {"query": DateTime("2030-01-05"), "range": "min"},
        },
        _any_order,
    ),
    "full text word": (True, True, {"SearchableText": "lighthouse"}, _any_order),
    "full text prefix": (True, True, {"SearchableText": "light*"}, _any_order),
    "full text two words": (
        True,
        True,
        {"SearchableText": "lighthouse harbour"},
        _any_order,
    ),
    "children of folder-1": (
        True,
        True,
        {
            "path": {"query": "/zsite/folder-1", "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        _paths,
    ),
    "folder-1 itself": (
        True,
        True,
        {"path": {"query": "/zsite/folder-1", "depth": 0}},
        _any_order,
    ),
    "two subtrees": (
        True,
        True,
        {"path": {"query": ["/zsite/folder-1", "/zsite/folder-2"]}},
        _any_order,
    ),
    "subject": (True, True, {"Subject": "blue"}, _any_order),
    "subjects and": (
        True,
        True,
        {"Subject": {"query": ["blue", "red"], "operator": "and"}},
        _any_order,
    ),
    "published": (
        True,
        True,
        {"review_state": "published", "sort_on": "sortable_title"},
        _paths,
    ),
    "private": (True, True, {"review_state": "private"}, _any_order),
    "add-on index": (True, True, {"my_field": "alpha"}, _any_order),
    "add-on index several values": (
        True,
        True,
        {"my_field": ["beta", "gamma"], "sort_on": "my_field"},
        _any_order,
    ),
    "folderish": (True, True, {"is_folderish": True}, _any_order),
    "anonymous everything": (False, True, {"sort_on": "sortable_title"}, _paths),
    "anonymous full text": (False, True, {"SearchableText": "lighthouse"}, _any_order),
    "anonymous subject": (False, True, {"Subject": "red"}, _any_order),
    "limited": (
        True,
        True,
        {"sort_on": "sortable_title", "sort_limit": 5},
        lambda b: _paths(b)[:5],
    ),
}


@dataclass
class Stage:
    """What the site's catalog is and answers after one step."""

    tool_class: str
    indexes: dict[str, str]  # name -> meta_type
    columns: list[str]
    length: int
    results: dict[str, list]
    metadata: list[tuple]  # (path, my_column, Title) of every object
    find: list[str]  # api.content.find, as the site uses the catalog
    pg_rows: int  # rows of the site with catalog data in PostgreSQL
    utility_is_tool: bool
    toolset_class: str
    extra: dict = field(default_factory=dict)


#: The columns of the catalog's table.
CATALOG_COLUMNS = (
    "zoid",
    "path",
    "parent_path",
    "path_depth",
    "idx",
    "meta",
    "searchable_text",
)


@dataclass
class Schema:
    """The catalog's part of the database's schema."""

    columns: list[str]  # columns of pgcatalog_objects, in table order
    indexes: list[str]  # every index named pgcatalog...
    statistics: list[str]  # every statistics object named pgcatalog...
    state_table: bool  # pgcatalog_state exists
    table_options: list[str]  # storage parameters of pgcatalog_objects
    markers: list[str]  # zodb-pgjsonb's version records of the tool's DDL
    tables: list[str] = ()  # every table named pgcatalog...
    functions: list[str] = ()  # every function named pgcatalog...


#: SQL objects and DDL records of catalog indexes that no site of the
#: lifecycle defines: earlier test modules in this process added them to the
#: shared test database (their rows are restored per test, DDL is not).
#: Dropped with the schema, not created again: left out of every ``Schema``.
_LEFT_BY_EARLIER_TESTS: set[str] = set()

#: How ``schema.sql_index_name`` names the objects of one catalog index.
_INDEX_OBJECT = re.compile(r"^pgcatalog_[a-z]+_.*_[0-9a-f]{8}$")


def _left_by_earlier_tests(dsn: str, definitions: dict) -> set[str]:
    """Names in the database now that belong to no index of ``definitions``."""
    wanted = set()
    for name, index in definitions.items():
        wanted |= schema._index_object_names(name, index.meta_type)
        wanted.add(columns.sql_index_name(name))  # of its typed column
        wanted.add(f"{schema.DDL_SOURCE_PREFIX}index {name}")
    found = _schema(dsn)
    return {
        name
        for name in [*found.indexes, *found.statistics]
        if _INDEX_OBJECT.match(name) and name not in wanted
    } | {
        marker
        for marker in found.markers
        if marker.startswith(f"{schema.DDL_SOURCE_PREFIX}index ")
        and marker not in wanted
        # DDL of the tests themselves (``PGCatalogTool._defer_ddl``).
        or marker.startswith(f"{schema.DDL_SOURCE_PREFIX}test: ")
    }


#: An index with a typed column is served by it, or, while adding the
#: column waits for the readers of the table (an exclusive lock: the
#: install's own request has read it), by its expression indexes
#: (``schema.create_index``): either is its SQL index.  Filled per index of
#: the site (``_served``) and of ``my_field``, added before the install.
_SERVED: dict[str, str | None] = {}
#: zodb-pgjsonb's records of those changes: there when they got their lock.
_MARKERS_OF_ADDED: set[str] = set()


def _served(names) -> None:
    for name in names:
        _SERVED[columns.sql_index_name(name)] = f"the SQL index of {name}"
        _SERVED[schema.sql_index_name(name)] = f"the SQL index of {name}"
        _SERVED[schema.sql_index_name(name, "t")] = None  # string ranges
        _MARKERS_OF_ADDED.add(f"{schema.DDL_SOURCE_PREFIX}index {name}")


_served(["my_field"])


def _schema(dsn: str) -> Schema:
    with psycopg.connect(dsn) as conn:

        def names(query: str, *params) -> list[str]:
            found = [row[0] for row in conn.execute(query, params)]
            return [
                _SERVED.get(name, name)
                for name in found
                if name not in _LEFT_BY_EARLIER_TESTS
                and name not in _MARKERS_OF_ADDED
                and _SERVED.get(name, name) is not None
            ]

        return Schema(
            columns=names(
                "SELECT column_name::text FROM information_schema.columns"
                " WHERE table_name = 'pgcatalog_objects' AND column_name = ANY(%s)"
                " ORDER BY ordinal_position",
                list(CATALOG_COLUMNS),
            ),
            indexes=sorted(
                names(
                    "SELECT indexname::text FROM pg_indexes WHERE indexname LIKE %s",
                    "pgcatalog%",
                )
            ),
            statistics=names(
                "SELECT stxname::text FROM pg_statistic_ext WHERE stxname LIKE %s"
                " ORDER BY 1",
                "pgcatalog%",
            ),
            state_table=conn.execute(
                "SELECT to_regclass('pgcatalog_state') IS NOT NULL"
            ).fetchone()[0],
            table_options=names(
                "SELECT unnest(reloptions) FROM pg_class"
                " WHERE oid = to_regclass('pgcatalog_objects')"
            ),
            markers=names(
                "SELECT source FROM pgjsonb_schema_state WHERE source LIKE %s"
                " ORDER BY 1",
                "plone_pgcatalog%",
            ),
            tables=names(
                "SELECT relname::text FROM pg_class WHERE relname LIKE %s"
                " AND relkind = 'r' ORDER BY 1",
                "pgcatalog%",
            ),
            functions=names(
                "SELECT proname::text FROM pg_proc WHERE proname LIKE %s ORDER BY 1",
                "pgcatalog%",
            ),
        )


class _Messages(logging.Handler):
    """What ``setuphandlers`` and its schema changes (``store.ddl``) log,
    taken stage by stage."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def take(self) -> list[str]:
        taken, self.messages = self.messages, []
        return taken


@contextlib.contextmanager
def _holding_the_catalog(dsn: str):
    """Another session reading the catalog's table in an open transaction."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT zoid FROM pgcatalog_objects LIMIT 1")
        yield
        conn.rollback()


def _pg_rows(dsn: str) -> int:
    if "idx" not in _schema(dsn).columns:
        return 0
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM pgcatalog_objects" " WHERE path = %s OR path LIKE %s",
            (f"/{SITE}", f"/{SITE}/%"),
        ).fetchone()[0]


def _pg_rows_not_of_the_plone_site(dsn: str) -> int:
    """Catalog rows that are not ``/plone``'s."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM pgcatalog_objects"
            " WHERE NOT (coalesce(path, '') = %s OR coalesce(path, '') LIKE %s)",
            (f"/{SITE_ID}", f"/{SITE_ID}/%"),
        ).fetchone()[0]


def _record(site, dsn: str) -> Stage:
    from Products.CMFCore.interfaces import ICatalogTool
    from zope.component import getUtility

    site._p_jar.sync()
    catalog = site.portal_catalog
    results = {}
    for name, (manager, restricted, query, record) in QUERIES.items():
        if manager:
            with api.env.adopt_roles(["Manager"]):
                search = (
                    catalog.searchResults
                    if restricted
                    else (catalog.unrestrictedSearchResults)
                )
                results[name] = record(search(**query))
        else:
            with _anonymous():
                results[name] = record(catalog.searchResults(**query))
    with api.env.adopt_roles(["Manager"]):
        metadata = sorted(
            (b.getPath(), b.my_column, b.Title)
            for b in catalog.unrestrictedSearchResults(path="/")
        )
        find = _any_order(api.content.find(context=site, portal_type="Document"))
    setup = site.portal_setup
    toolset = setup.getToolsetRegistry().getRequiredToolInfo("portal_catalog")
    cls = type(catalog.aq_base)
    return Stage(
        tool_class=f"{cls.__module__}.{cls.__name__}",
        indexes={
            name: catalog._catalog.getIndex(name).meta_type
            for name in catalog.indexes()
        },
        columns=list(catalog.schema()),
        length=len(catalog),
        results=results,
        metadata=metadata,
        find=find,
        pg_rows=_pg_rows(dsn),
        utility_is_tool=aq_base(getUtility(ICatalogTool)) is aq_base(catalog),
        toolset_class=toolset["class"],
    )


def _record_in_another_request(db, dsn: str) -> Stage:
    """``_record`` on a connection of its own, in a thread of its own (as
    a concurrent request of another Zope worker)."""
    from AccessControl.SecurityManagement import getSecurityManager
    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.SecurityManagement import noSecurityManager

    import threading

    found = []
    user = getSecurityManager().getUser()  # the same user as this request

    def run():
        conn = db.open()
        try:
            site = conn.root()["Application"][SITE]
            setSite(site)
            newSecurityManager(None, user)
            found.append(_record(site, dsn))
        except BaseException as error:  # reported to the test thread
            found.append(error)
        finally:
            transaction.abort()
            noSecurityManager()
            setSite(None)
            conn.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]


class _anonymous:
    """Search as the anonymous user (``searchResults`` filters by user)."""

    def __enter__(self):
        from AccessControl.SecurityManagement import getSecurityManager
        from AccessControl.SecurityManagement import newSecurityManager
        from AccessControl.SecurityManagement import setSecurityManager
        from AccessControl.SpecialUsers import nobody

        self._restore = setSecurityManager
        self._saved = getSecurityManager()
        newSecurityManager(None, nobody)

    def __exit__(self, *exc):
        self._restore(self._saved)


def _populate(site) -> None:
    """~30 items: folders, pages, news, events; states, subjects, add-on data."""
    site.portal_workflow.setDefaultChain("simple_publication_workflow")
    catalog = site.portal_catalog
    catalog.addIndex("my_field", "FieldIndex")
    catalog.addColumn("my_column")
    values = ("alpha", "beta", "gamma")
    colours = (("blue",), ("red",), ("blue", "red"), ())
    texts = ("A lighthouse by the harbour", "Lights in the harbour", "A quiet meadow")
    count = 0

    def make(container, type_, id_, **extra):
        nonlocal count
        count += 1
        obj = api.content.create(
            container=container,
            type=type_,
            id=id_,
            title=f"{type_} {count:02d} {texts[count % 3]}",
            description=texts[count % 3],
            subject=colours[count % 4],
            **extra,
        )
        obj.my_field = values[count % 3]
        obj.my_column = f"column {count}"
        if count % 3 != 2:
            api.content.transition(obj=obj, transition="publish")
        obj.reindexObject()
        return obj

    for f in (1, 2, 3):
        folder = make(site, "Folder", f"folder-{f}")
        for i in (1, 2, 3):
            make(folder, "Document", f"page-{i}")
        make(folder, "News Item", "news")
        make(
            folder,
            "Event",
            "event",
            start=DateTime(f"2030-01-{f * 3:02d} 10:00").asdatetime(),
            end=DateTime(f"2030-01-{f * 3:02d} 12:00").asdatetime(),
        )
        sub = make(folder, "Folder", "sub")
        make(sub, "Document", "deep")
    for i in (1, 2, 3):
        make(site, "Document", f"top-{i}")


def _catalog_btrees(site) -> list[tuple[str, str, int]]:
    """(where, class, entries) of every BTrees structure the tool holds.

    Walks the tool's persistent state: attributes, mappings, sequences,
    down from the tool (never up into the site), without entering BTrees.
    """
    from persistent import Persistent

    found = []
    seen = {id(site.aq_base)}

    def walk(obj, where):
        obj = aq_base(obj)
        if id(obj) in seen:
            return
        seen.add(id(obj))
        module = type(obj).__module__
        if module.startswith("BTrees."):
            entries = obj.value if type(obj).__name__ == "Length" else len(obj)
            found.append((where, f"{module}.{type(obj).__name__}", entries))
            return
        if isinstance(obj, Persistent):
            obj._p_activate()
            for key, value in vars(obj).items():
                walk(value, f"{where}.{key}")
        if isinstance(obj, dict) or hasattr(obj, "data") and isinstance(obj.data, dict):
            for key, value in dict(obj).items():
                walk(value, f"{where}[{key!r}]")
        elif isinstance(obj, (list, tuple)):
            for i, value in enumerate(obj):
                walk(value, f"{where}[{i}]")

    walk(site.portal_catalog, "portal_catalog")
    return found


@contextlib.contextmanager
def _new_process(dsn: str):
    """The database opened as a new Zope process opens it: a new storage
    (nothing queued in it, the processor registered at its start) under a
    new ``ZODB.DB``; the application, a request and the test user."""
    from plone.app.testing import login
    from plone.app.testing import TEST_USER_NAME
    from plone.testing import zope as zope_testing
    from plone.testing.zope import addRequestContainer
    from zope.globalrequest import setRequest

    import Zope2

    db = open_db(dsn)
    conn = db.open()
    app = addRequestContainer(Zope2.app(conn))
    setRequest(app.REQUEST)
    login(app[SITE_ID], TEST_USER_NAME)
    try:
        yield app
    finally:
        transaction.abort()
        zope_testing.logout()
        setSite(None)
        setRequest(None)
        app.REQUEST.close()
        conn.close()
        db.close()


def _catalog_size(site) -> tuple[str, int]:
    setSite(site)
    cls = type(aq_base(site.portal_catalog))
    return f"{cls.__module__}.{cls.__name__}", len(site.portal_catalog)


@pytest.fixture(scope="module")
def lifecycle():
    from Products.CMFPlone.factory import addPloneSite

    messages = _Messages()
    loggers = [logging.getLogger(module.__name__) for module in (setuphandlers, ddl)]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(messages)
        logger.setLevel(logging.INFO)
    runner = run_in(PGCATALOG_FUNCTIONAL_TESTING)
    layer = next(runner)
    dsn = layer["pgcatalog_dsn"]
    stages = {}
    _LEFT_BY_EARLIER_TESTS.clear()
    definitions = layer["portal"].portal_catalog.getIndexDefinitions()
    _LEFT_BY_EARLIER_TESTS.update(_left_by_earlier_tests(dsn, definitions))
    _served(
        name
        for name, index in definitions.items()
        if schema.column_kind(index.meta_type) is not None
    )
    try:
        app = layer["app"]
        addPloneSite(
            app,
            SITE,
            default_language="en",
            extension_ids=EXTENSION_PROFILES,
        )
        site = app[SITE]
        setSite(site)
        with api.env.adopt_roles(["Manager"]):
            _populate(site)
        transaction.commit()
        stages["zcatalog"] = _record(site, dsn)
        stages["zcatalog"].extra["plone catalog"] = _catalog_size(app[SITE_ID])
        setSite(site)
        old_catalog_oid = site.portal_catalog._p_oid

        site.portal_setup.runAllImportStepsFromProfile(INSTALL)
        # Not committed yet: another request still gets ZCatalog's answers.
        stages["during install"] = _record_in_another_request(layer["pgdb"], dsn)
        transaction.commit()
        stages["installed"] = _record(site, dsn)
        stages["installed"].extra["btrees"] = _catalog_btrees(site)
        stages["installed"].extra["old_catalog_referenced"] = (
            site._getOb("portal_catalog")._p_oid == old_catalog_oid
            or old_catalog_oid in site.objectIds()
        )
        stages["installed"].extra["lexicon_words"] = {
            lexicon_id: len(lexicon._wids)
            for lexicon_id, lexicon in site.portal_catalog.objectItems()
            if hasattr(lexicon, "_wids")
        }
        stages["installed"].extra["schema"] = _schema(dsn)
        messages.take()

        # /plone still has its catalog: the schema stays.
        site.portal_setup.runAllImportStepsFromProfile(UNINSTALL)
        transaction.commit()
        stages["uninstalled"] = _record(site, dsn)  # its sync runs the drop
        stages["uninstalled"].extra["foreign_rows"] = _pg_rows_not_of_the_plone_site(
            dsn
        )
        stages["uninstalled"].extra["schema"] = _schema(dsn)
        stages["uninstalled"].extra["log"] = messages.take()

        # The last catalog of the database goes: the schema with it.
        plone = app[SITE_ID]
        setSite(plone)
        plone.portal_setup.runAllImportStepsFromProfile(UNINSTALL)
        transaction.commit()
        setSite(site)
        stages["all uninstalled"] = _record(site, dsn)
        stages["all uninstalled"].extra["schema"] = _schema(dsn)
        stages["all uninstalled"].extra["log"] = messages.take()
        stages["all uninstalled"].extra["plone catalog"] = _catalog_size(plone)
        setSite(site)

        site.portal_setup.runAllImportStepsFromProfile(INSTALL)
        transaction.commit()
        stages["reinstalled"] = _record(site, dsn)
        stages["reinstalled"].extra["schema"] = _schema(dsn)
        stages["reinstalled"].extra["log"] = messages.take()

        # A second install on an installed site changes nothing.
        site.portal_setup.runAllImportStepsFromProfile(INSTALL)
        transaction.commit()
        stages["installed twice"] = _record(site, dsn)
        stages["installed twice"].extra["schema"] = _schema(dsn)

        # Uninstalled again, while another session reads the catalog: the
        # drop does not get its lock, and is tried again.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ddl, "LOCK_TIMEOUT", "200ms")
            patch.setattr(ddl, "RETRY_DELAYS", (0.0,))
            patch.setattr(ddl, "LOCK_PAUSES", ())
            site.portal_setup.runAllImportStepsFromProfile(UNINSTALL)
            transaction.commit()
            messages.take()
            with _holding_the_catalog(dsn):
                site._p_jar.sync()  # runs the drop
                locked = _schema(dsn), messages.take()
        # The try again, with the locks' usual patience: under load,
        # autovacuum of the tables gives way only after deadlock_timeout.
        stage = stages["uninstalled again"] = _record(site, dsn)  # the drop
        stage.extra["while locked"] = locked
        stage.extra["schema"] = _schema(dsn)
        stage.extra["log"] = messages.take()

        runner.close()  # no read snapshot of this process is left open
        with _new_process(dsn) as new_app:
            at_start = _schema(dsn)
            site = new_app[SITE]
            setSite(site)
            site.portal_setup.runAllImportStepsFromProfile(INSTALL)
            transaction.commit()
            stage = stages["reinstalled in a new process"] = _record(site, dsn)
            stage.extra["schema at start"] = at_start
            stage.extra["schema"] = _schema(dsn)
        yield stages
    finally:
        for logger, level in zip(loggers, levels):
            logger.removeHandler(messages)
            logger.setLevel(level)
        setSite(None)
        runner.close()
        # The next tests of this process need the schema; put it back if a
        # failure above left it away.
        with psycopg.connect(dsn, autocommit=True) as conn:
            indexes = stages["zcatalog"].indexes if "zcatalog" in stages else {}
            schema.create_schema(conn, "30s", indexes.items())


STAGES_AFTER = (
    "installed",
    "uninstalled",
    "all uninstalled",
    "reinstalled",
    "installed twice",
    "uninstalled again",
    "reinstalled in a new process",
)


def test_the_zcatalog_site_starts_without_catalog_rows_in_postgresql(lifecycle):
    zcatalog = lifecycle["zcatalog"]
    assert zcatalog.tool_class == ZCATALOG_CLASS
    assert zcatalog.pg_rows == 0
    # The scenario is not vacuous: each query finds something.
    assert all(zcatalog.results.values()), [
        name for name, paths in zcatalog.results.items() if not paths
    ]
    assert zcatalog.length == 28  # 27 items and the site root
    assert len(zcatalog.metadata) == 28
    assert ("/zsite/top-3", "column 27", "Document 27 A lighthouse by the harbour") in (
        zcatalog.metadata
    )


@pytest.mark.parametrize(
    "stage,tool_class",
    [
        ("installed", PGCATALOG_CLASS),
        ("uninstalled", ZCATALOG_CLASS),
        ("all uninstalled", ZCATALOG_CLASS),
        ("reinstalled", PGCATALOG_CLASS),
        ("installed twice", PGCATALOG_CLASS),
        ("uninstalled again", ZCATALOG_CLASS),
        ("reinstalled in a new process", PGCATALOG_CLASS),
    ],
)
def test_each_step_swaps_the_tool_its_utility_and_toolset_entry(
    lifecycle, stage, tool_class
):
    after = lifecycle[stage]
    assert after.tool_class == tool_class
    assert after.utility_is_tool
    assert after.toolset_class == tool_class


@pytest.mark.parametrize("stage", STAGES_AFTER)
def test_each_step_keeps_index_and_metadata_definitions(lifecycle, stage):
    before = lifecycle["zcatalog"]
    after = lifecycle[stage]
    assert after.indexes == before.indexes
    assert after.indexes["my_field"] == "FieldIndex"
    assert sorted(after.columns) == sorted(before.columns)
    assert "my_column" in after.columns


@pytest.mark.parametrize("stage", STAGES_AFTER)
def test_each_step_catalogs_every_object_again(lifecycle, stage):
    before = lifecycle["zcatalog"]
    after = lifecycle[stage]
    assert after.length == before.length
    assert after.metadata == before.metadata


@pytest.mark.parametrize("stage", STAGES_AFTER)
@pytest.mark.parametrize("query", sorted(QUERIES))
def test_each_step_answers_queries_as_zcatalog_did(lifecycle, stage, query):
    assert lifecycle[stage].results[query] == lifecycle["zcatalog"].results[query]


@pytest.mark.parametrize("stage", STAGES_AFTER)
def test_the_site_finds_its_content_through_the_catalog(lifecycle, stage):
    assert lifecycle[stage].find == lifecycle["zcatalog"].find
    assert len(lifecycle[stage].find) == 15


def test_the_site_answers_queries_while_the_install_runs(lifecycle):
    during, before = lifecycle["during install"], lifecycle["zcatalog"]
    assert during.tool_class == ZCATALOG_CLASS
    assert during.results == before.results
    assert during.metadata == before.metadata and during.length == before.length


@pytest.mark.parametrize(
    "stage", ["installed", "reinstalled", "reinstalled in a new process"]
)
def test_install_writes_the_catalog_rows_to_postgresql(lifecycle, stage):
    assert lifecycle[stage].pg_rows == lifecycle["zcatalog"].length


def test_install_leaves_no_catalog_data_in_the_zodb(lifecycle):
    installed = lifecycle["installed"]
    assert not installed.extra["old_catalog_referenced"]
    btrees = installed.extra["btrees"]
    # The index definitions keep their (empty) structures, nothing more;
    # ``_counter`` is ZCatalog's count of changes to an index, not data.
    assert len(btrees) > 50
    assert [
        entry for entry in btrees if entry[2] and not entry[0].endswith("._counter")
    ] == []
    assert installed.extra["lexicon_words"]
    assert set(installed.extra["lexicon_words"].values()) == {0}


def test_uninstall_removes_the_sites_rows_from_postgresql(lifecycle):
    assert lifecycle["uninstalled"].pg_rows == 0
    # Nor is any catalog column left set on a row of the site's objects.
    assert lifecycle["uninstalled"].extra["foreign_rows"] == 0


def _removed(found: Schema) -> bool:
    return found == Schema(
        columns=[],
        indexes=[],
        statistics=[],
        state_table=False,
        table_options=[],
        markers=[],
        tables=[],
        functions=[],
    )


def test_the_installed_schema_is_the_catalogs(lifecycle):
    """What the tests below see go and come back."""
    installed = lifecycle["installed"].extra["schema"]
    assert installed.columns == list(CATALOG_COLUMNS)
    assert {"pgcatalog_path", "pgcatalog_idx", "pgcatalog_searchable_text"} <= set(
        installed.indexes
    )
    assert "the SQL index of my_field" in installed.indexes
    # Statistics objects for the partial indexes only (of the occurrences
    # of DateRecurringIndex): PostgreSQL keeps those of the others.
    assert schema.sql_index_name("start", "sf") in installed.statistics
    assert all(
        name.startswith(("pgcatalog_sf_", "pgcatalog_sl_"))
        for name in installed.statistics
    )
    assert installed.state_table
    assert installed.table_options == [
        f"toast_tuple_target={layout.TOAST_TUPLE_TARGET}"
    ]
    assert installed.markers
    assert installed.tables == [
        "pgcatalog_columns",
        "pgcatalog_counts",
        "pgcatalog_keyword_sets",
        "pgcatalog_objects",
        "pgcatalog_state",
        "pgcatalog_texts",
    ]
    assert installed.functions == [
        "pgcatalog_count_groups",
        "pgcatalog_keyword_set",
        "pgcatalog_typed_columns",
    ]


def test_uninstall_keeps_the_schema_while_another_site_has_catalog_rows(lifecycle):
    uninstalled = lifecycle["uninstalled"]
    assert uninstalled.extra["schema"] == lifecycle["installed"].extra["schema"]
    [kept] = [m for m in uninstalled.extra["log"] if "schema stays" in m]
    # The row it names is one of /plone's.
    assert kept.startswith(
        f"plone_pgcatalog: the schema stays: a catalog still has rows (/{SITE_ID}"
    )


def test_uninstall_of_the_last_catalog_removes_the_schema(lifecycle):
    """No catalog table, no index or statistics object of the catalog, no
    pgcatalog_state, zodb-pgjsonb's records of the catalog's DDL forgotten."""
    stage = lifecycle["all uninstalled"]
    assert _removed(stage.extra["schema"]), stage.extra["schema"]
    assert any("schema removed" in message for message in stage.extra["log"])


def test_the_other_site_gets_its_zcatalog_back_with_its_content(lifecycle):
    before = lifecycle["zcatalog"].extra["plone catalog"]
    after = lifecycle["all uninstalled"].extra["plone catalog"]
    assert before[0] == PGCATALOG_CLASS and after[0] == ZCATALOG_CLASS
    assert after[1] == before[1] >= 1


def test_reinstall_in_the_same_process_puts_the_schema_back(lifecycle):
    assert lifecycle["reinstalled"].extra["schema"] == (
        lifecycle["installed"].extra["schema"]
    )
    assert lifecycle["installed twice"].extra["schema"] == (
        lifecycle["installed"].extra["schema"]
    )


def test_a_drop_that_does_not_get_its_lock_changes_nothing_and_runs_again(lifecycle):
    stage = lifecycle["uninstalled again"]
    while_locked, log = stage.extra["while locked"]
    assert while_locked == lifecycle["installed"].extra["schema"]
    [again] = [message for message in log if "not done" in message]
    assert again.startswith("plone_pgcatalog: schema removal not done (")
    # It names the session holding the lock.
    assert "); trying again in 0.0 s; held by pid " in again
    assert "idle in transaction" in again
    assert "lock timeout" in again
    assert _removed(stage.extra["schema"]), (stage.extra["schema"], stage.extra["log"])


def test_a_new_process_leaves_the_removed_schema_away(lifecycle):
    # Its processor queues the catalog's DDL at start-up; zodb-pgjsonb
    # finds it applied already and skips it.
    found = lifecycle["reinstalled in a new process"].extra["schema at start"]
    assert _removed(found), found


def test_reinstall_in_a_new_process_puts_the_schema_back(lifecycle):
    found = lifecycle["reinstalled in a new process"].extra["schema"]
    installed = lifecycle["installed"].extra["schema"]
    assert found == installed
