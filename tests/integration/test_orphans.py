"""Catalog rows go with their objects' states.

The catalog's table has a foreign key on zodb-pgjsonb's ``object_state``
with ``ON DELETE CASCADE``: when the storage deletes an object's state
(its packer and undo of a creation run ``DELETE FROM object_state``), the
catalog row goes in the same statement, also when the catalog was never
told (an object removed with ``suppress_events``).  A Plone object is
rarely unreachable (its intid keeps a reference), so the test deletes the
state as the packer does.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from ZODB.utils import u64

import psycopg
import transaction


def _cataloged(dsn: str, zoid: int) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pgcatalog_objects WHERE zoid = %s)", (zoid,)
        ).fetchone()[0]


def test_a_deleted_state_takes_its_catalog_row_along(pg_layer):
    portal = pg_layer["portal"]
    dsn = pg_layer["pgcatalog_dsn"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    kept = api.content.create(container=portal, type="Document", id="kept")
    gone = api.content.create(container=portal, type="Document", id="gone")
    transaction.commit()
    kept_zoid, gone_zoid = u64(kept._p_oid), u64(gone._p_oid)
    portal._delObject("gone", suppress_events=True)  # the catalog is not told
    transaction.commit()
    assert _cataloged(dsn, gone_zoid)  # a row without a place in the site

    with psycopg.connect(dsn) as conn:  # what zodb-pgjsonb's packer runs
        conn.execute("DELETE FROM object_state WHERE zoid = ANY(%s)", ([gone_zoid],))

    assert not _cataloged(dsn, gone_zoid)
    assert _cataloged(dsn, kept_zoid)
    transaction.begin()  # a new snapshot
    assert [b.getId for b in api.content.find(id=["kept", "gone"])] == ["kept"]
