"""The oracle of ``test_undo``'s undone tool settings: the same steps on a
Plone site with stock ZCatalog on a FileStorage (undoable), whose undo
restores the catalog's BTrees with the tool."""

from __future__ import annotations

from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.testing.zope import addRequestContainer
from plone.testing.zope import login
from plone_pgcatalog import testing
from tests.conftest import _set_up
from ZODB.DB import DB
from ZODB.FileStorage import FileStorage
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import pytest
import transaction


@pytest.fixture
def zsite(tmp_path):
    _set_up(testing.PGCATALOG_FIXTURE)  # the configuration only
    db = DB(FileStorage(str(tmp_path / "Data.fs")))
    conn = db.open()
    try:
        from OFS.Application import AppInitializer
        from OFS.Application import Application

        root = conn.root()
        root["Application"] = Application()
        transaction.commit()
        app = addRequestContainer(root["Application"])
        AppInitializer(app).initialize()
        transaction.commit()
        testing.create_site(app, testing.EXTENSION_PROFILES)
        transaction.commit()
        request = app.REQUEST
        request["PARENTS"] = [app]
        setRequest(request)
        portal = app[testing.SITE_ID]
        setSite(portal)
        login(app["acl_users"], SITE_OWNER_NAME)
        assert portal.portal_catalog.meta_type != "PGCatalogTool"
        yield portal
    finally:
        transaction.abort()
        setSite(None)
        setRequest(None)
        conn.close()
        db.close()


def _undo(portal, note):
    db = portal._p_jar.db()
    [tid] = [i["id"] for i in db.undoInfo(0, 50) if i["description"] == note]
    db.undo(tid)
    transaction.commit()


def _paths(**query):
    catalog = api.portal.get_tool("portal_catalog")
    return sorted(b.getPath() for b in catalog.unrestrictedSearchResults(**query))


def test_zcatalog_an_undone_workflow_chain_change(zsite):
    portal = zsite
    workflow = portal.portal_workflow
    workflow.setChainForPortalTypes(("Document",), ("simple_publication_workflow",))
    page = api.content.create(container=portal, type="Document", id="p", title="P")
    transaction.get().note("create")
    transaction.commit()
    workflow.setChainForPortalTypes(("Document",), ("one_state_workflow",))
    page.reindexObject(idxs=["review_state"])
    transaction.get().note("chain")
    transaction.commit()
    assert _paths(review_state="published", portal_type="Document") == ["/plone/p"]
    _undo(portal, "chain")
    assert _paths(review_state="private", portal_type="Document") == ["/plone/p"]
    assert _paths(review_state="published", portal_type="Document") == []


def test_zcatalog_an_undone_type_title_change(zsite):
    portal = zsite
    api.content.create(container=portal, type="Document", id="p", title="P")
    transaction.get().note("create")
    transaction.commit()
    fti = portal.portal_types["Document"]
    old = fti.title
    fti.title = "Article"
    portal["p"].reindexObject(idxs=["Type"])
    transaction.get().note("type title")
    transaction.commit()
    assert _paths(Type="Article") == ["/plone/p"]
    _undo(portal, "type title")
    assert _paths(Type="Article") == []
    assert _paths(Type=old) == ["/plone/p"]
