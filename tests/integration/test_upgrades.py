"""Upgrade steps, each tested from the previous version."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.store import schema
from plone_pgcatalog.testing import PGCATALOG_PROFILE
from psycopg import sql

import transaction


def _database(portal):
    from plone_pgcatalog.store.connection import ddl_connection

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
            "UPDATE object_state"
            " SET searchable_text = to_tsvector('simple', 'lighthouses')"
            " WHERE path = '/plone/d'"
        )
    portal._p_jar.sync()
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "1")
    assert len(api.content.find(SearchableText="lighthouses")) == 0

    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (
        str(schema.SCHEMA_VERSION),
    )
    for word in ("lighthouses", "lighthouse"):
        assert [b.getPath() for b in api.content.find(SearchableText=word)] == [
            "/plone/d"
        ], word


def _idx_storage(conn) -> tuple[str, str]:
    return conn.execute(
        "SELECT attstorage, attcompression FROM pg_attribute"
        " WHERE attrelid = 'object_state'::regclass AND attname = 'idx'"
    ).fetchone()


def test_idx_is_kept_in_the_row_with_lz4(pg_layer):
    with _database(pg_layer["portal"]) as conn:
        storage, compression = _idx_storage(conn)
        # The server's build decides: lz4 is a choice of this setting
        # only where PostgreSQL was built with it.
        has_lz4 = conn.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
            " WHERE name = 'default_toast_compression'"
        ).fetchone()[0]
    assert storage == "m"
    assert compression == ("l" if has_lz4 else "")


def test_2_to_3_rewrites_idx_in_the_new_form(pg_layer):
    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    setRoles(portal, TEST_USER_ID, ["Manager"])
    # What version 2 wrote: idx compressed with pglz, out of the row.  DDL
    # waits for a write transaction, outside the test's read snapshot.
    catalog._defer_ddl(
        sql.SQL(
            "ALTER TABLE object_state ALTER COLUMN idx SET STORAGE EXTENDED;"
            " ALTER TABLE object_state ALTER COLUMN idx SET COMPRESSION pglz"
        ),
        "test: the form of version 2",
    )
    api.content.create(
        container=portal, type="Document", id="d3", title="Harbour " * 400
    )
    transaction.commit()
    with _database(portal) as conn:
        assert _compression_of(conn, "/plone/d3") == "pglz"
    catalog._defer_ddl(sql.SQL(schema.BASE_DDL), "test: version 3 again")
    api.content.create(container=portal, type="Document", id="d4")
    transaction.commit()
    with _database(portal) as conn:
        _storage, compression = _idx_storage(conn)
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "2")

    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (
        str(schema.SCHEMA_VERSION),
    )
    with _database(portal) as conn:
        written = _compression_of(conn, "/plone/d3")
    assert written == ("lz4" if compression == "l" else "pglz")
    assert [b.getPath() for b in api.content.find(Title="harbour")] == ["/plone/d3"]


def _compression_of(conn, path: str) -> str:
    return conn.execute(
        "SELECT pg_column_compression(idx) FROM object_state WHERE path = %s",
        (path,),
    ).fetchone()[0]


def _blocks_read(conn, expression: str, zoid: int) -> int:
    """Buffers one row's ``expression`` reads (index, heap and TOAST)."""
    [[explained]] = conn.execute(
        sql.SQL(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)"
            " SELECT {} FROM object_state WHERE zoid = %s"
        ).format(sql.SQL(expression)),
        (zoid,),
    ).fetchall()
    plan = explained[0]["Plan"]
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]


def test_a_cataloged_row_is_read_without_toast(pg_layer):
    """``idx``, the path and zodb-pgjsonb's own small columns stay in the
    row: reading them costs no block more than finding the row."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal,
        type="Document",
        id="wide",
        title="Wide",
        description="harbour lighthouse " * 60,
        subject=[f"tag{number}" for number in range(20)],
    )
    transaction.commit()
    zoid = int.from_bytes(page._p_oid, "big")
    with _database(portal) as conn:
        assert (
            conn.execute(
                "SELECT octet_length(idx::text) FROM object_state WHERE zoid = %s",
                (zoid,),
            ).fetchone()[0]
            > 3000
        )
        columns = (
            "length(path), length(parent_path), length(class_mod),"
            " cardinality(refs), idx -> 'portal_type'"
        )
        _blocks_read(conn, columns, zoid)  # first reads may set hint bits
        found = _blocks_read(conn, "zoid", zoid)
        read = _blocks_read(conn, columns, zoid)
    # Out of the row (TOAST), these values cost about 30 blocks.
    assert read <= found


def _meta_type(portal) -> str:
    with _database(portal) as conn:
        return schema.meta_type(conn)


def _titles(portal, *ids) -> dict:
    found = api.content.find(context=portal, id=list(ids))
    return {brain.getId: (brain.Title, brain.review_state) for brain in found}


def test_meta_is_a_json_column(pg_layer):
    assert _meta_type(pg_layer["portal"]) == "json"


def test_3_to_4_makes_meta_json_and_version_3_rows_stay_readable(pg_layer):
    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    setRoles(portal, TEST_USER_ID, ["Manager"])
    # What version 3 had: meta as jsonb.  DDL waits for a write transaction.
    catalog._defer_ddl(
        sql.SQL("ALTER TABLE object_state ALTER COLUMN meta TYPE jsonb"),
        "test: meta of version 3",
    )
    try:
        first = api.content.create(
            container=portal, type="Document", id="m1", title="Quay"
        )
        transaction.commit()
        assert _meta_type(portal) == "jsonb"

        # Until the step runs, every kind of write works on the jsonb
        # column: an INSERT with the object's state (new object), a
        # catalog-only row (reindex of an unchanged object) and patches
        # with and without metadata.
        second = api.content.create(
            container=portal, type="Document", id="m2", title="Jetty"
        )
        transaction.commit()
        catalog.reindexObject(first)
        first.title = "Quay west"
        catalog.reindexObject(first, idxs=["Title"], update_metadata=1)
        second.title = "Jetty east"
        catalog.reindexObject(second, idxs=["Title"], update_metadata=0)
        transaction.commit()
        expected = {"m1": ("Quay west", "private"), "m2": ("Jetty", "private")}
        assert _titles(portal, "m1", "m2") == expected

        setup = portal.portal_setup
        setup.setLastVersionForProfile(PGCATALOG_PROFILE, "3")
        setup.upgradeProfile(PGCATALOG_PROFILE)
        assert _meta_type(portal) == "jsonb"  # not before the commit
        transaction.commit()
        portal._p_jar.sync()  # the next transaction begins: the change runs

        assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (
            str(schema.SCHEMA_VERSION),
        )
        assert _meta_type(portal) == "json"
        assert _titles(portal, "m1", "m2") == expected
    finally:
        if _meta_type(portal) != "json":
            catalog._defer_ddl(
                sql.SQL(schema.BASE_DDL)
                + sql.SQL("; ALTER TABLE object_state ALTER COLUMN meta TYPE json"),
                "test: meta back to json",
            )
            api.content.create(container=portal, type="Document", id="m3")
            transaction.commit()
        api.content.delete(
            objects=[portal[i] for i in ("m1", "m2", "m3") if i in portal]
        )
        transaction.commit()
