"""Upgrade steps, each tested from the previous version."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import schema
from plone_pgcatalog.testing import PGCATALOG_PROFILE

import transaction


def _database(portal):
    from plone_pgcatalog.connection import ddl_connection

    return ddl_connection(portal.portal_catalog)


def test_profile_version_follows_the_schema_version(pg_layer):
    setup = pg_layer["portal"].portal_setup
    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (
        str(schema.SCHEMA_VERSION),
    )


def test_1_to_2_rewrites_searchable_text_of_version_1_rows(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="d", title="Lighthouses")
    transaction.commit()
    # What version 1 wrote: unweighted words.
    with _database(portal) as conn:
        conn.execute(
            "UPDATE object_state SET searchable_text = to_tsvector('simple', 'lighthouses')"
            " WHERE path = '/plone/d'"
        )
    portal._p_jar.sync()
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "1")
    assert len(api.content.find(SearchableText="lighthouses")) == 0

    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == ("2",)
    for word in ("lighthouses", "lighthouse"):
        assert [b.getPath() for b in api.content.find(SearchableText=word)] == [
            "/plone/d"
        ], word
