"""The oracle of ``test_undo``'s undone tool settings: the same steps on a
Plone site with stock ZCatalog on a FileStorage (undoable), whose undo
restores the catalog's BTrees with the tool."""

from __future__ import annotations

from plone import api
from plone_pgcatalog import testing
from tests.conftest import _set_up
from tests.integration.test_undo import plone_site
from ZODB.DB import DB
from ZODB.FileStorage import FileStorage

import pytest
import transaction


@pytest.fixture
def zsite(tmp_path):
    _set_up(testing.PGCATALOG_FIXTURE)  # the configuration only
    db = DB(FileStorage(str(tmp_path / "Data.fs")))
    with plone_site(db, testing.EXTENSION_PROFILES) as portal:
        assert portal.portal_catalog.meta_type != "PGCatalogTool"
        yield portal


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


def test_zcatalog_an_undone_rename_brings_back_kept_words(zsite):
    """A Link without a URL: plone.app.contenttypes' SearchableText gives
    None, ZCTextIndex keeps the words it had; the rename catalogs it anew,
    without them; the undo restores the record that had them
    (``test_undo.test_an_undone_rename_leaves_kept_words_gone``)."""
    portal = zsite
    link = api.content.create(container=portal, type="Link", id="link", title="L")
    link.remoteUrl = "http://harbour.example"
    link.reindexObject()
    transaction.get().note("create")
    transaction.commit()
    link.remoteUrl = ""
    link.reindexObject()
    transaction.get().note("no url")
    transaction.commit()
    assert _paths(SearchableText="harbour") == ["/plone/link"]
    api.content.rename(obj=link, new_id="renamed")
    transaction.get().note("rename")
    transaction.commit()
    assert _paths(SearchableText="harbour") == []
    _undo(portal, "rename")
    assert _paths(SearchableText="harbour") == ["/plone/link"]
