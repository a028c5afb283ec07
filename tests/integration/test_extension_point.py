"""An add-on brings its own index type: a named ``IIndexTranslator`` utility."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.interfaces import IIndexTranslator
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.store.layout import json_key
from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex
from psycopg import sql
from psycopg.types.json import Jsonb
from zope.component import getGlobalSiteManager
from zope.interface import implementer

import contextlib
import pytest
import threading
import time
import transaction


class InitialIndex(FieldIndex):
    """An add-on's index type: the first letter of an attribute."""

    meta_type = "InitialIndex"


@implementer(IIndexTranslator)
class InitialTranslator:
    query_options = ("query",)

    def extract(self, index, obj):
        value = getattr(obj, index.getIndexSourceNames()[0], None)
        if callable(value):
            value = value()
        return value[:1].lower() if value else MISSING

    def where(self, index, query, context):
        if not query.keys:
            return None
        return json_key(index.getId()) + sql.SQL(" = ANY(%s)"), [
            [Jsonb(str(key)[:1].lower()) for key in query.keys]
        ]

    def sort_expressions(self, index):
        return [json_key(index.getId())]

    def sql_indexes(self, index_name):
        return [("i", "btree", json_key(index_name), None)]

    @property
    def index_view(self):
        from plone_pgcatalog.indexes import ValueIndexView

        return ValueIndexView


@pytest.fixture
def initial_translator():
    registry = getGlobalSiteManager()
    translator = InitialTranslator()
    registry.registerUtility(translator, IIndexTranslator, name="InitialIndex")
    yield translator
    registry.unregisterUtility(translator, IIndexTranslator, name="InitialIndex")


def _initials_of_three_pages(portal):
    """Add the add-on's index on the first letter of Title, and three pages;
    return the catalog."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog

    class Extra:
        indexed_attrs = "Title"

    catalog.addIndex("title_initial", InitialIndex("title_initial", extra=Extra()))
    for title in ("Apple", "avocado", "Banana"):
        api.content.create(container=portal, type="Document", title=title)
    transaction.commit()
    return catalog


def test_an_add_on_index_type_is_indexed_and_queried(pg_layer, initial_translator):
    catalog = _initials_of_three_pages(pg_layer["portal"])

    found = api.content.find(title_initial="A", sort_on="sortable_title")
    assert [brain.Title for brain in found] == ["Apple", "avocado"]
    assert catalog.Indexes["title_initial"].meta_type == "InitialIndex"


def test_an_index_type_without_translator_is_refused_clearly(pg_layer):
    from plone_pgcatalog.errors import UnknownIndexError

    portal = pg_layer["portal"]
    catalog = portal.portal_catalog

    class Extra:
        indexed_attrs = "Title"

    catalog.addIndex("title_initial", InitialIndex("title_initial", extra=Extra()))
    with pytest.raises(UnknownIndexError, match="'title_initial'.*'InitialIndex'"):
        catalog.unrestrictedSearchResults(title_initial="a")


def test_deleting_an_index_drops_its_sql_indexes_and_adding_it_creates_them(pg_layer):
    from plone_pgcatalog.store import schema
    from plone_pgcatalog.store.connection import ddl_connection

    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    name = schema.sql_index_name("portal_type", "c")  # its typed column's

    def exists():
        with ddl_connection(catalog) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname = %s", (name,)
            ).fetchone()[0]

    assert exists() == 1
    try:
        catalog.delIndex("portal_type")
        transaction.commit()
        assert exists() == 0
        catalog.addIndex("portal_type", FieldIndex("portal_type"))
        transaction.commit()
        assert exists() == 1
    finally:
        # Tests share the database's DDL (each restores rows only).
        with ddl_connection(catalog) as conn:
            schema.create_index(conn, "portal_type", "FieldIndex", "30s")


def _typed_column(catalog, index_name):
    """``(kind, ready)`` of ``index_name``'s typed column, None without one."""
    from plone_pgcatalog.store import columns
    from plone_pgcatalog.store.connection import ddl_connection

    with ddl_connection(catalog) as conn:
        return columns.registered(conn.cursor()).get(columns.column_name(index_name))


@contextlib.contextmanager
def _reading_the_catalog(catalog):
    """Another session reading the catalog's table in an open transaction
    (its lock keeps DROP COLUMN out)."""
    from plone_pgcatalog.store.connection import ddl_connection

    with ddl_connection(catalog) as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT zoid FROM pgcatalog_objects LIMIT 1")
        try:
            yield
        finally:
            conn.rollback()


@contextlib.contextmanager
def _reading_until_a_drop_waited(catalog):
    """``_reading_the_catalog``, ended once a lock request on the table
    has waited longer than the exclusive lock's first wait (1.5 s:
    ``columns._set_exclusive_lock_timeout``), and within the drop's tries:
    whatever time the commit before it takes (a fixed hold from the start
    ended before the drop began, under CI's load)."""
    from plone_pgcatalog.store.connection import ddl_connection

    with ddl_connection(catalog) as reader, ddl_connection(catalog) as watcher:
        reader.execute("BEGIN")
        reader.execute("SELECT zoid FROM pgcatalog_objects LIMIT 1")
        watcher.autocommit = True

        def end_after_a_wait():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                waiting = watcher.execute(
                    "SELECT 1 FROM pg_locks WHERE NOT granted"
                    " AND relation = 'pgcatalog_objects'::regclass"
                ).fetchone()
                if waiting:
                    time.sleep(2.0)
                    break
                time.sleep(0.05)
            reader.rollback()

        ending = threading.Thread(target=end_after_a_wait)
        ending.start()
        try:
            yield
        finally:
            ending.join()


def test_a_drop_waits_out_a_short_lock(pg_layer, caplog):
    # Autovacuum, or a request ending: a lock held for a moment does not
    # leave the drop undone until the next start.
    from plone_pgcatalog.store import schema
    from plone_pgcatalog.store.connection import ddl_connection

    catalog = pg_layer["portal"].portal_catalog
    assert _typed_column(catalog, "portal_type") == ("text", True)
    try:
        with _reading_until_a_drop_waited(catalog):
            catalog.delIndex("portal_type")
            with caplog.at_level("INFO", "plone_pgcatalog"):
                transaction.commit()
        assert _typed_column(catalog, "portal_type") is None
        [waited] = [r.getMessage() for r in caplog.records if "waits" in r.message]
        assert waited.startswith("plone_pgcatalog: index portal_type waits for its")
        assert "lock timeout" in waited
        assert "; held by pid " in waited and "idle in transaction" in waited
    finally:
        catalog.addIndex("portal_type", FieldIndex("portal_type"))
        transaction.commit()
        with ddl_connection(catalog) as conn:
            schema.create_index(conn, "portal_type", "FieldIndex", "30s")


def test_an_index_added_again_after_a_drop_that_missed_its_locks_is_created(
    pg_layer, monkeypatch, caplog
):
    # The drop gave up for now (a long transaction); the index is added
    # again meanwhile: its creation runs (zodb-pgjsonb's record of its
    # earlier creation forgotten) and the drop's later try is not queued
    # after it.
    from plone_pgcatalog.store import ddl
    from plone_pgcatalog.store import schema
    from plone_pgcatalog.store.connection import ddl_connection

    monkeypatch.setattr(ddl, "LOCK_PAUSES", (0.0,))
    monkeypatch.setattr(ddl, "RETRY_DELAYS", (0.5,))
    catalog = pg_layer["portal"].portal_catalog
    try:
        with _reading_the_catalog(catalog):
            catalog.delIndex("portal_type")
            with caplog.at_level("INFO", "plone_pgcatalog"):
                transaction.commit()
            assert _typed_column(catalog, "portal_type") == ("text", False)
            catalog.addIndex("portal_type", FieldIndex("portal_type"))
        with caplog.at_level("INFO", "plone_pgcatalog"):
            transaction.commit()
            assert _typed_column(catalog, "portal_type") == ("text", True)
            time.sleep(1.0)  # the drop's try, were it queued
            catalog._p_jar.sync()
        assert _typed_column(catalog, "portal_type") == ("text", True)
        messages = [r.getMessage() for r in caplog.records]
        [not_done] = [m for m in messages if "not done" in m]
        assert "; held by pid " in not_done
        assert not_done.startswith("plone_pgcatalog: index portal_type not done (")
        assert (
            "plone_pgcatalog: index portal_type not tried again:"
            " a newer change of it is queued"
        ) in messages
    finally:
        with ddl_connection(catalog) as conn:
            schema.create_index(conn, "portal_type", "FieldIndex", "30s")


def test_deleting_an_unknown_index_raises_catalog_error(pg_layer):
    from Products.ZCatalog.Catalog import CatalogError

    with pytest.raises(CatalogError, match="'no_such_index'"):
        pg_layer["portal"].portal_catalog.delIndex("no_such_index")


def test_an_add_on_index_type_brings_its_sql_index_and_its_view(
    pg_layer, initial_translator
):
    from plone_pgcatalog.store import schema
    from plone_pgcatalog.store.connection import ddl_connection

    catalog = _initials_of_three_pages(pg_layer["portal"])

    name = schema.sql_index_name("title_initial")
    try:
        with ddl_connection(catalog) as conn:
            definition = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (name,)
            ).fetchone()
        assert definition is not None
        assert "(idx -> 'title_initial'::text)" in definition[0]
        # Answered from SQL by the view the translator names; the site
        # itself ("Plone site") is cataloged too.
        view = catalog.Indexes["title_initial"]
        assert sorted(view.uniqueValues()) == ["a", "b", "p"]
        assert view.numObjects() == 4
        # Its objects of one value (``_index.get``): the translator has no
        # typed column and no ``equals`` of a FieldTranslator.
        apple, avocado = (
            catalog.getrid(brain.getPath())
            for brain in api.content.find(title_initial="a", sort_on="sortable_title")
        )
        assert sorted(view._index.get("a")) == sorted([apple, avocado])
        assert view._index.get("z") is None
    finally:
        # Tests share the database's DDL (each restores rows only): the
        # deletion drops the SQL index when the next commit begins.
        catalog.delIndex("title_initial")
        transaction.commit()
