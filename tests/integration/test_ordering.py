"""Positions in folders stay what the folders say, as ZCatalog's GopipIndex
reads them live: after reordering, removal, cut and paste."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID

import transaction


def _folder_with_pages(portal, id="f", count=5):
    folder = api.content.create(container=portal, type="Folder", id=id, title=id)
    for number in range(count):
        api.content.create(
            container=folder, type="Document", id=f"p{number}", title=f"P{number}"
        )
    return folder


def _catalog_order(folder) -> list[str]:
    path = "/".join(folder.getPhysicalPath())
    brains = api.content.find(
        path={"query": path, "depth": 1}, sort_on="getObjPositionInParent"
    )
    return [brain.getId for brain in brains]


def _stored_positions(folder) -> dict[str, int]:
    catalog = api.portal.get_tool("portal_catalog")
    path = "/".join(folder.getPhysicalPath())
    return {
        # What the catalog stores (ZCatalog's GopipIndex stores nothing).
        brain.getId: catalog._row_data(brain.getRID())[0]["getObjPositionInParent"]
        for brain in catalog.unrestrictedSearchResults(path={"query": path, "depth": 1})
    }


def _live_positions(folder) -> dict[str, int]:
    return {id: folder.getObjectPosition(id) for id in folder.objectIds()}


def test_reordering_rewrites_positions(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = _folder_with_pages(portal)
    transaction.commit()
    folder.moveObjectsToTop(["p3"])
    folder.moveObjectsByDelta(["p0"], 2)
    transaction.commit()
    assert _catalog_order(folder) == list(folder.objectIds())
    assert _stored_positions(folder) == _live_positions(folder)


def test_removal_moves_later_siblings_up(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = _folder_with_pages(portal)
    transaction.commit()
    api.content.delete(obj=folder["p1"])
    transaction.commit()
    assert _stored_positions(folder) == _live_positions(folder)


def test_cut_and_paste_between_folders(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    source = _folder_with_pages(portal, "source")
    target = _folder_with_pages(portal, "target", 2)
    transaction.commit()
    api.content.move(source=source["p0"], target=target)
    transaction.commit()
    assert _stored_positions(source) == _live_positions(source)
    assert _stored_positions(target) == _live_positions(target)
    assert _catalog_order(target) == list(target.objectIds())


def test_adding_an_item_writes_no_sibling(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = _folder_with_pages(portal)
    transaction.commit()
    api.content.create(container=folder, type="Document", id="late", title="Late")
    pending = portal.portal_catalog.pending_changes()
    assert pending.reordered == {}
    transaction.commit()
    assert _stored_positions(folder) == _live_positions(folder)


def test_a_rolled_back_reorder_is_forgotten(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = _folder_with_pages(portal)
    transaction.commit()
    savepoint = transaction.savepoint()
    folder.moveObjectsToTop(["p4"])
    assert portal.portal_catalog.pending_changes().reordered
    savepoint.rollback()
    assert portal.portal_catalog.pending_changes().reordered == {}
    transaction.commit()
    assert _stored_positions(folder) == _live_positions(folder)


def test_a_query_on_the_position_index_finds_nothing_as_in_zcatalog(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    _folder_with_pages(portal)
    transaction.commit()
    assert len(api.content.find(getObjPositionInParent=1)) == 0


def test_a_reorder_is_seen_before_commit(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = _folder_with_pages(portal)
    transaction.commit()
    folder.moveObjectsToTop(["p3"])
    api.content.create(container=folder, type="Document", id="late", title="Late")
    folder.moveObjectsByDelta(["late"], -2)
    assert _catalog_order(folder) == list(folder.objectIds())


def test_creating_a_user_adds_no_position_work(pg_layer):
    # plone.app.portlets adds dashboard containers that are not folders.
    user = api.user.create(email="new@example.com", username="newuser")
    assert user.getId() == "newuser"
    transaction.commit()


def _reordered_quietly(layer) -> list:
    """plone.folder's reorders that notify nothing, as scripts and add-ons
    make them; the order searched before and after each commit."""
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    for number, title in enumerate(["Charlie", "Alpha", "Bravo", "Delta"]):
        api.content.create(
            container=folder, type="Document", id=f"p{number}", title=title
        )
    transaction.commit()
    found = [_catalog_order(folder)]
    for reorder in (
        lambda: folder.orderObjects("title"),
        lambda: folder.orderObjects(reverse=True),
        lambda: folder.moveObjectsByDelta(["p1"], -2, suppress_events=True),
        lambda: folder.moveObjectToPosition("p2", 0, suppress_events=True),
        lambda: folder.getOrdering().orderObjects("getId"),
    ):
        reorder()
        found.append(_catalog_order(folder))
        transaction.commit()
        found.append(_catalog_order(folder))
    return found


def test_reorders_without_an_event_are_seen_as_in_zcatalog():
    """``orderObjects`` sends no event, nor do moves with
    ``suppress_events``: ZCatalog reads the new order, this catalog's
    stored positions stayed as they were (found by a helper's probe)."""
    from tests.conftest import collect_in

    expected = collect_in("zcatalog", _reordered_quietly)
    assert expected[1] == ["p1", "p2", "p0", "p3"]  # by title
    assert collect_in("pg", _reordered_quietly) == expected
