"""Install on a populated ZCatalog site, uninstall, reinstall: same answers.

One scenario, run once for the module (``lifecycle``): a second Plone site
``/zsite`` on the same zodb-pgjsonb database, created *without* this
add-on, gets an add-on index and metadata column on its ZCatalog and some
content; then the ``default`` profile is installed, the ``uninstall``
profile run, and ``default`` installed again, each step committed.  At
every step the fixture records what the catalog is and answers
(``Stage``); the tests compare the stages with the first one, ZCatalog's.
"""

from __future__ import annotations

from Acquisition import aq_base
from DateTime import DateTime
from dataclasses import dataclass
from dataclasses import field
from plone import api
from plone_pgcatalog.testing import EXTENSION_PROFILES
from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
from plone_pgcatalog.testing import SITE_ID
from tests.conftest import run_in
from zope.component.hooks import setSite

import psycopg
import pytest
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
    "site path sorted by path": (True, False, {"path": "/zsite", "sort_on": "path"}, _paths),
    "pages by title": (
        True, True, {"portal_type": "Document", "sort_on": "sortable_title"}, _paths),
    "news by title reversed": (
        True, True,
        {"portal_type": "News Item", "sort_on": "sortable_title", "sort_order": "reverse"},
        _paths),
    "events by start": (True, True, {"portal_type": "Event", "sort_on": "start"}, _paths),
    "events starting after a date": (
        True, True,
        {"portal_type": "Event",
         "start": {"query": DateTime("2030-01-05"), "range": "min"}},
        _any_order),
    "full text word": (True, True, {"SearchableText": "lighthouse"}, _any_order),
    "full text prefix": (True, True, {"SearchableText": "light*"}, _any_order),
    "full text two words": (True, True, {"SearchableText": "lighthouse harbour"}, _any_order),
    "children of folder-1": (
        True, True,
        {"path": {"query": "/zsite/folder-1", "depth": 1},
         "sort_on": "getObjPositionInParent"},
        _paths),
    "folder-1 itself": (
        True, True, {"path": {"query": "/zsite/folder-1", "depth": 0}}, _any_order),
    "two subtrees": (
        True, True,
        {"path": {"query": ["/zsite/folder-1", "/zsite/folder-2"]}}, _any_order),
    "subject": (True, True, {"Subject": "blue"}, _any_order),
    "subjects and": (
        True, True,
        {"Subject": {"query": ["blue", "red"], "operator": "and"}}, _any_order),
    "published": (
        True, True, {"review_state": "published", "sort_on": "sortable_title"}, _paths),
    "private": (True, True, {"review_state": "private"}, _any_order),
    "add-on index": (True, True, {"my_field": "alpha"}, _any_order),
    "add-on index several values": (
        True, True, {"my_field": ["beta", "gamma"], "sort_on": "my_field"}, _any_order),
    "folderish": (True, True, {"is_folderish": True}, _any_order),
    "anonymous everything": (False, True, {"sort_on": "sortable_title"}, _paths),
    "anonymous full text": (False, True, {"SearchableText": "lighthouse"}, _any_order),
    "anonymous subject": (False, True, {"Subject": "red"}, _any_order),
    "limited": (
        True, True, {"sort_on": "sortable_title", "sort_limit": 5}, lambda b: _paths(b)[:5]),
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


def _pg_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM object_state WHERE idx IS NOT NULL"
            " AND (path = %s OR path LIKE %s)",
            (f"/{SITE}", f"/{SITE}/%"),
        ).fetchone()[0]


def _pg_rows_not_of_the_plone_site(dsn: str) -> int:
    """Rows with any catalog column set that are not ``/plone``'s."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM object_state WHERE (idx IS NOT NULL"
            " OR meta IS NOT NULL OR searchable_text IS NOT NULL OR path IS NOT NULL)"
            " AND NOT (coalesce(path, '') = %s OR coalesce(path, '') LIKE %s)",
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
                search = catalog.searchResults if restricted else (
                    catalog.unrestrictedSearchResults)
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
            name: catalog._catalog.getIndex(name).meta_type for name in catalog.indexes()
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


@pytest.fixture(scope="module")
def lifecycle():
    from Products.CMFPlone.factory import addPloneSite

    runner = run_in(PGCATALOG_FUNCTIONAL_TESTING)
    layer = next(runner)
    try:
        app = layer["app"]
        dsn = layer["pgcatalog_dsn"]
        addPloneSite(
            app,
            SITE,
            setup_content=False,
            default_language="en",
            extension_ids=EXTENSION_PROFILES,
        )
        site = app[SITE]
        setSite(site)
        with api.env.adopt_roles(["Manager"]):
            _populate(site)
        transaction.commit()
        stages = {"zcatalog": _record(site, dsn)}
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

        site.portal_setup.runAllImportStepsFromProfile(UNINSTALL)
        transaction.commit()
        stages["uninstalled"] = _record(site, dsn)
        stages["uninstalled"].extra["foreign_rows"] = _pg_rows_not_of_the_plone_site(dsn)

        site.portal_setup.runAllImportStepsFromProfile(INSTALL)
        transaction.commit()
        stages["reinstalled"] = _record(site, dsn)

        # A second install on an installed site changes nothing.
        site.portal_setup.runAllImportStepsFromProfile(INSTALL)
        transaction.commit()
        stages["installed twice"] = _record(site, dsn)
        yield stages
    finally:
        setSite(None)
        runner.close()


STAGES_AFTER = ("installed", "uninstalled", "reinstalled", "installed twice")


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
        ("reinstalled", PGCATALOG_CLASS),
        ("installed twice", PGCATALOG_CLASS),
    ],
)
def test_each_step_swaps_the_tool_its_utility_and_toolset_entry(lifecycle, stage, tool_class):
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


def test_install_writes_the_catalog_rows_to_postgresql(lifecycle):
    assert lifecycle["installed"].pg_rows == lifecycle["zcatalog"].length
    assert lifecycle["reinstalled"].pg_rows == lifecycle["zcatalog"].length


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
