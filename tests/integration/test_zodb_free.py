"""No catalog data in the ZODB: content writes store no catalog object.

zodb-pgjsonb records, for every stored object, its class and the oids its
state refers to (``object_state.refs``).  After each write the test reads
what the commit stored and checks that none of it belongs to the catalog:
no object reachable from ``portal_catalog`` (its definitions, lexicons and
their empty BTrees) and no class of ZCatalog's index or lexicon modules.
Folders still store their own BTree buckets; those are the folder's.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.store.connection import ddl_connection
from ZODB.utils import u64

import transaction

_CATALOG_MODULES = (
    "Products.ZCatalog",
    "Products.PluginIndexes",
    "Products.ZCTextIndex",
    "Products.ExtendedPathIndex",
    "Products.DateRecurringIndex",
    "plone_pgcatalog",
)

_LAST_COMMIT = (
    "SELECT zoid, class_mod, class_name FROM object_state"
    " WHERE tid = (SELECT max(tid) FROM transaction_log)"
)

_REACHABLE = (
    "WITH RECURSIVE reach(zoid) AS ("
    " SELECT %s::bigint"
    " UNION SELECT unnest(o.refs) FROM object_state o JOIN reach r ON o.zoid = r.zoid"
    ") SELECT zoid FROM reach"
)


def _stored_catalog_objects(catalog) -> list[tuple]:
    """Objects of the last commit that belong to the catalog."""
    with ddl_connection(catalog) as conn:
        stored = conn.execute(_LAST_COMMIT).fetchall()
        reachable = {row[0] for row in conn.execute(_REACHABLE, (u64(catalog._p_oid),))}
    return [
        row
        for row in stored
        if row[0] in reachable or row[1].startswith(_CATALOG_MODULES)
    ]


def test_creating_editing_moving_and_deleting_store_no_catalog_object(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    # The catalog's own persistent objects exist (definitions, lexicons).
    with ddl_connection(catalog) as conn:
        assert len(conn.execute(_REACHABLE, (u64(catalog._p_oid),)).fetchall()) > 10

    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    api.content.create(container=folder, type="Document", id="d", title="Page")
    transaction.commit()
    assert _stored_catalog_objects(catalog) == []

    page = folder["d"]
    page.title = "Edited"
    page.reindexObject()
    api.content.transition(obj=page, transition="publish")
    transaction.commit()
    assert _stored_catalog_objects(catalog) == []

    api.content.rename(obj=folder, new_id="g")
    transaction.commit()
    assert _stored_catalog_objects(catalog) == []

    api.content.delete(obj=portal["g"])
    transaction.commit()
    assert _stored_catalog_objects(catalog) == []
    assert len(api.content.find(portal_type="Document")) == 0


def test_the_check_sees_catalog_objects_when_they_are_stored(pg_layer):
    # Changing a definition stores the catalog's own objects: the check
    # above would notice a write path that did the same.
    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    catalog.addColumn("extra_column")
    transaction.commit()
    assert _stored_catalog_objects(catalog)
