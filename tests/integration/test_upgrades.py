"""Upgrade steps, each tested from the previous version."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import upgrades
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import schema
from plone_pgcatalog.store import search
from plone_pgcatalog.testing import PGCATALOG_PROFILE
from plone_pgcatalog.upgrades import PROFILE_VERSION
from psycopg import sql

import psycopg
import transaction


def _database(portal):
    from plone_pgcatalog.store.connection import ddl_connection

    return ddl_connection(portal.portal_catalog)


def test_a_new_site_has_the_latest_profile_version(pg_layer):
    setup = pg_layer["portal"].portal_setup
    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (str(PROFILE_VERSION),)


def test_1_to_2_rewrites_searchable_text_of_version_1_rows(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="d", title="Lighthouses")
    transaction.commit()
    # What version 1 wrote: unweighted words.
    with _database(portal) as conn:
        conn.execute(
            "UPDATE pgcatalog_objects"
            " SET searchable_text = to_tsvector('simple', 'lighthouses')"
            " WHERE path = '/plone/d'"
        )
    portal._p_jar.sync()
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "1")
    assert len(api.content.find(SearchableText="lighthouses")) == 0

    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (str(PROFILE_VERSION),)
    for word in ("lighthouses", "lighthouse"):
        assert [b.getPath() for b in api.content.find(SearchableText=word)] == [
            "/plone/d"
        ], word


def _idx_storage(conn) -> tuple[str, str]:
    return conn.execute(
        "SELECT attstorage, attcompression FROM pg_attribute"
        " WHERE attrelid = 'pgcatalog_objects'::regclass AND attname = 'idx'"
    ).fetchone()


def test_idx_is_compressed_out_of_the_row_with_lz4(pg_layer):
    with _database(pg_layer["portal"]) as conn:
        storage, compression = _idx_storage(conn)
        # The server's build decides: lz4 is a choice of this setting
        # only where PostgreSQL was built with it.
        has_lz4 = conn.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
            " WHERE name = 'default_toast_compression'"
        ).fetchone()[0]
    assert storage == "x"  # EXTENDED: compressed, moved out of a wide row
    assert compression == ("l" if has_lz4 else "")


def test_2_to_3_rewrites_idx_in_the_new_form(pg_layer):
    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    setRoles(portal, TEST_USER_ID, ["Manager"])
    # What version 2 wrote: idx compressed with pglz, out of the row.  DDL
    # waits for a write transaction, outside the test's read snapshot.
    catalog._defer_ddl(
        sql.SQL(
            "ALTER TABLE pgcatalog_objects ALTER COLUMN idx SET STORAGE EXTENDED;"
            " ALTER TABLE pgcatalog_objects ALTER COLUMN idx SET COMPRESSION pglz"
        ),
        "test: the form of version 2",
    )
    api.content.create(
        container=portal, type="Document", id="d3", title="Harbour " * 400
    )
    transaction.commit()
    with _database(portal) as conn:
        assert _compression_of(conn, "/plone/d3") == "pglz"
    catalog._defer_ddl(
        sql.SQL(
            "ALTER TABLE pgcatalog_objects ALTER COLUMN idx SET STORAGE MAIN;"
            " ALTER TABLE pgcatalog_objects ALTER COLUMN idx SET COMPRESSION DEFAULT"
        )
        + sql.SQL(schema.BASE_DDL),
        "test: version 3 again",
    )
    api.content.create(container=portal, type="Document", id="d4")
    transaction.commit()
    with _database(portal) as conn:
        _storage, compression = _idx_storage(conn)
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, "2")

    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()

    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (str(PROFILE_VERSION),)
    with _database(portal) as conn:
        written = _compression_of(conn, "/plone/d3")
    assert written == ("lz4" if compression == "l" else "pglz")
    assert [b.getPath() for b in api.content.find(Title="harbour")] == ["/plone/d3"]


def _compression_of(conn, path: str) -> str:
    return conn.execute(
        "SELECT pg_column_compression(idx) FROM pgcatalog_objects WHERE path = %s",
        (path,),
    ).fetchone()[0]


def _blocks_read(conn, expression: str, zoid: int) -> int:
    """Buffers one row's ``expression`` reads (index, heap and TOAST)."""
    [[explained]] = conn.execute(
        sql.SQL(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)"
            " SELECT {} FROM pgcatalog_objects WHERE zoid = %s"
        ).format(sql.SQL(expression)),
        (zoid,),
    ).fetchall()
    plan = explained[0]["Plan"]
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]


def test_a_searched_row_is_narrow_and_read_without_toast(pg_layer):
    """The typed columns and the paths stay in the row: testing them costs
    no block more than finding the row; ``idx``, wide, is out of it."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal,
        type="Document",
        id="wide",
        title="Wide",
        # Wide in ``idx`` (the keyword lists are in their columns only).
        description=" ".join(f"harbour{number} lighthouse" for number in range(160)),
        subject=[f"tag{number}" for number in range(20)],
    )
    transaction.commit()
    zoid = int.from_bytes(page._p_oid, "big")
    with _database(portal) as conn:
        assert (
            conn.execute(
                "SELECT octet_length(idx::text) FROM pgcatalog_objects"
                " WHERE zoid = %s",
                (zoid,),
            ).fetchone()[0]
            > 3000
        )
        columns = (
            'length(path), length(parent_path), portal_type, "allowedRolesAndUsers",'
            ' "Subject", "effectiveRange", modified'
        )
        _blocks_read(conn, columns, zoid)  # first reads may set hint bits
        found = _blocks_read(conn, "zoid", zoid)
        read = _blocks_read(conn, columns, zoid)
        wide = _blocks_read(conn, "idx -> 'portal_type'", zoid)
    assert read <= found
    assert wide > found  # TOAST


def _storage(conn, column: str) -> str:
    """The storage of a column of the table: ``m`` in the row, ``x`` out."""
    return conn.execute(
        "SELECT attstorage FROM pg_attribute"
        " WHERE attrelid = 'pgcatalog_objects'::regclass AND attname = %s",
        (column,),
    ).fetchone()[0]


def _out_of_the_row(conn, column: str, zoid: int) -> bool:
    """Whether reading text array ``column`` of a row reads TOAST blocks
    (its elements counted: EXPLAIN does not read what it would send)."""
    expression = f'cardinality("{column}")'
    _blocks_read(conn, expression, zoid)  # first reads may set hint bits
    return _blocks_read(conn, expression, zoid) > _blocks_read(conn, "zoid", zoid)


def _page(portal, id: str):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(container=portal, type="Document", id=id, title=id)
    transaction.commit()
    return int.from_bytes(page._p_oid, "big")


_DOCUMENTS = "plone.app.contenttypes.interfaces.IDocument"


def test_wide_typed_values_are_out_of_the_row_on_a_new_site(pg_layer):
    """``object_provides`` (some 60 interface names) goes out of the row
    with ``idx`` even where the catalog was empty when its column was made:
    a Plone page's row stays about 0.5 KB (1.2 with it)."""
    portal = pg_layer["portal"]
    zoid = _page(portal, "narrow")
    with _database(portal) as conn:
        assert _storage(conn, "object_provides") == "x"
        assert _storage(conn, "allowedRolesAndUsers") == "m"
        assert _out_of_the_row(conn, "object_provides", zoid)
        assert not _out_of_the_row(conn, "allowedRolesAndUsers", zoid)
    found = api.content.find(object_provides=_DOCUMENTS, id="narrow")
    assert [brain.getPath() for brain in found] == ["/plone/narrow"]


def _upgrade_from(portal, version: str) -> None:
    """Run the upgrade steps from ``version`` and their changes after the
    commit; the profile is then at the latest version."""
    setup = portal.portal_setup
    setup.setLastVersionForProfile(PGCATALOG_PROFILE, version)
    setup.upgradeProfile(PGCATALOG_PROFILE)
    transaction.commit()
    portal._p_jar.sync()  # the steps' changes run
    assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (str(PROFILE_VERSION),)


def _as_schema_6_left_it(conn) -> None:
    """``object_provides`` as schema 6 left a new site: the column kept in
    the row, and its values in it."""
    conn.execute(
        "ALTER TABLE pgcatalog_objects ALTER COLUMN object_provides SET STORAGE MAIN"
    )
    conn.execute(
        "UPDATE pgcatalog_objects SET object_provides ="
        " array_cat(object_provides, '{}')"
    )


def test_6_to_7_moves_wide_values_out_of_rows_schema_6_made(pg_layer):
    portal = pg_layer["portal"]
    zoids = [_page(portal, f"kept-{number}") for number in range(3)]
    with _database(portal) as conn:
        _as_schema_6_left_it(conn)
        conn.execute(
            "UPDATE pgcatalog_state SET value = 6 WHERE key = 'schema_version'"
        )
        assert not _out_of_the_row(conn, "object_provides", zoids[0])
    transaction.begin()
    before = sorted(b.getPath() for b in api.content.find(object_provides=_DOCUMENTS))
    _upgrade_from(portal, "6")

    with _database(portal) as conn:
        assert _storage(conn, "object_provides") == "x"
        assert _storage(conn, "portal_type") == "m"
        for zoid in zoids:
            assert _out_of_the_row(conn, "object_provides", zoid)
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
        ).fetchone() == (schema.SCHEMA_VERSION,)
    transaction.begin()
    after = sorted(b.getPath() for b in api.content.find(object_provides=_DOCUMENTS))
    assert after == before
    assert {f"/plone/kept-{number}" for number in range(3)} <= set(after)


#: Twelve words: a description's ``tsvector`` of about 300 bytes (each
#: word exact and stemmed), as a news item's or a short page's.
_SHORT = "glacier moraine crevasse serac icefall cirque tarn esker drumlin fjord"
_SHORT += " nunatak bergschrund"


def _text_page(portal, id: str, description: str) -> int:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal, type="Document", id=id, title=id, description=description
    )
    transaction.commit()
    return int.from_bytes(page._p_oid, "big")


def _text_out_of_the_row(conn, zoid: int) -> bool:
    """Whether reading a row's ``tsvector`` reads TOAST blocks."""
    expression = "length(searchable_text)"
    _blocks_read(conn, expression, zoid)  # first reads may set hint bits
    return _blocks_read(conn, expression, zoid) > _blocks_read(conn, "zoid", zoid)


def test_a_short_text_is_in_the_row_and_a_long_one_out_of_it(pg_layer):
    """Schema 8: a full-text search reads a short text's ``tsvector`` in
    the row; a long text's goes out of line, and the row stays narrow."""
    portal = pg_layer["portal"]
    short = _text_page(portal, "short-text", _SHORT)
    words = " ".join(f"word{number}x" for number in range(300))
    long = _text_page(portal, "long-text", words)
    with _database(portal) as conn:
        assert not _text_out_of_the_row(conn, short)
        assert _text_out_of_the_row(conn, long)
        [[options]] = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'pgcatalog_objects'::regclass"
        ).fetchall()
    assert options == [f"toast_tuple_target={schema.TOAST_TUPLE_TARGET}"]
    found = api.content.find(SearchableText="moraine")
    assert [brain.getPath() for brain in found] == ["/plone/short-text"]


def test_8_to_9_brings_short_texts_into_rows_schema_7_made(pg_layer):
    portal = pg_layer["portal"]
    zoids = [_text_page(portal, f"text-{number}", _SHORT) for number in range(3)]
    with _database(portal) as conn:
        # As schema 7 left them: a target of 512 bytes, the ``tsvector``
        # out of every row of a page.
        conn.execute("ALTER TABLE pgcatalog_objects SET (toast_tuple_target = 512)")
        conn.execute(
            "UPDATE pgcatalog_objects SET searchable_text ="
            " searchable_text || ''::tsvector"
        )
        conn.execute(
            "UPDATE pgcatalog_state SET value = 7 WHERE key = 'schema_version'"
        )
        assert all(_text_out_of_the_row(conn, zoid) for zoid in zoids)
    transaction.begin()
    before = [(b.getPath(), b.data_record_score_) for b in _glacier(portal)]
    _upgrade_from(portal, "8")

    with _database(portal) as conn:
        for zoid in zoids:
            assert not _text_out_of_the_row(conn, zoid)
        # (then the steps after it: the latest schema)
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
        ).fetchone() == (schema.SCHEMA_VERSION,)
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'texts_in_row'"
        ).fetchone() == (2**63 - 1,)
    transaction.begin()
    after = [(b.getPath(), b.data_record_score_) for b in _glacier(portal)]
    assert after == before
    assert {f"/plone/text-{number}" for number in range(3)} <= {p for p, _ in after}


def _glacier(portal):
    return api.content.find(context=portal, SearchableText="glacier crevasse")


def _titles(portal, *ids) -> dict:
    found = api.content.find(context=portal, id=list(ids))
    return {brain.getId: (brain.Title, brain.review_state) for brain in found}


def test_meta_is_a_json_column(pg_layer):
    with _database(pg_layer["portal"]) as conn:
        assert conn.execute(
            "SELECT atttypid::regtype::text FROM pg_attribute"
            " WHERE attrelid = 'pgcatalog_objects'::regclass AND attname = 'meta'"
        ).fetchone() == ("json",)


# -- 4 -> 5 --------------------------------------------------------------------------

#: Schema 4 as its ``BASE_DDL`` left it, made from a schema-5 database with
#: its rows: the catalog columns and partial indexes on ``object_state``
#: (``meta`` as ``jsonb``, as schema 3 had it: the upgrade to 5 converts).
_TO_SCHEMA_4 = """\
SELECT pg_advisory_xact_lock(0);
ALTER TABLE object_state
    ADD COLUMN path text COLLATE "C", ADD COLUMN parent_path text COLLATE "C",
    ADD COLUMN path_depth integer, ADD COLUMN idx jsonb, ADD COLUMN meta jsonb,
    ADD COLUMN searchable_text tsvector;
UPDATE object_state AS o SET path = c.path, parent_path = c.parent_path,
    path_depth = c.path_depth, idx = {idx}, meta = c.meta::jsonb,
    searchable_text = c.searchable_text
    FROM pgcatalog_objects AS c WHERE o.zoid = c.zoid;
DROP TABLE pgcatalog_objects;
CREATE INDEX pgcatalog_path ON object_state (path) WHERE idx IS NOT NULL;
CREATE INDEX pgcatalog_parent_path ON object_state (parent_path)
    WHERE idx IS NOT NULL;
CREATE INDEX pgcatalog_idx ON object_state USING gin (idx jsonb_path_ops)
    WHERE idx IS NOT NULL;
CREATE INDEX pgcatalog_searchable_text ON object_state USING gin (searchable_text)
    WHERE idx IS NOT NULL;
CREATE INDEX pgcatalog_path_depth ON object_state (path_depth, path)
    WHERE idx IS NOT NULL;
CREATE INDEX pgcatalog_path_elements
    ON object_state USING gin (string_to_array(path, '/')) WHERE idx IS NOT NULL;
UPDATE pgcatalog_state SET value = 4 WHERE key = 'schema_version';
"""


def _relkind(portal) -> str:
    with _database(portal) as conn:
        return conn.execute(
            "SELECT relkind FROM pg_class WHERE oid = to_regclass('pgcatalog_objects')"
        ).fetchone()[0]


def _indexes_of(portal, table: str) -> set[str]:
    with _database(portal) as conn:
        return {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s", (table,)
            )
        }


def _legacy_rows(dsn) -> dict:
    with psycopg.connect(dsn) as conn:
        return dict(
            conn.execute(
                "SELECT path, meta ->> 'Title' FROM object_state"
                " WHERE idx IS NOT NULL AND path LIKE '/plone/u%'"
            ).fetchall()
        )


def test_4_to_5_builds_the_table_beside_and_switches_to_it(
    pg_layer, monkeypatch, caplog
):
    """From schema-4 rows on ``object_state``: the catalog works through the
    view until the upgrade; writes made during the copy (by another
    process, on the columns of schema 4) reach the new table; then
    ``object_state`` carries nothing of the catalog."""
    from plone_pgcatalog.store import upgrade5

    portal = pg_layer["portal"]
    catalog = portal.portal_catalog
    dsn = pg_layer["pgcatalog_dsn"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(6):
        api.content.create(
            container=portal, type="Document", id=f"u{number}", title=f"Upper {number}"
        )
    transaction.commit()
    indexes = [(n, i.meta_type) for n, i in catalog.getIndexDefinitions().items()]
    legacy_indexes = [
        schema.expression_ddl(name, meta_type, legacy=True)
        for name, meta_type in indexes
    ]
    # Another site of the database has an index of its own.
    legacy_indexes.append(
        schema.expression_ddl("other_site_field", "FieldIndex", legacy=True)
    )
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        # Schema 4 kept every value in ``idx``, the lists stored once too.
        ready = {n: k for n, (k, ok) in columns.registered(cur).items() if ok}
    whole = columns.whole_idx(sql.SQL("c"), ready)
    catalog._defer_ddl(
        sql.SQL(_TO_SCHEMA_4.replace("{idx}", whole.as_string(None)))
        + sql.SQL("; ".join(ddl for ddl in legacy_indexes if ddl))
        + sql.SQL(";\n" + schema.BASE_DDL),
        "test: schema 4",
    )
    readers = []  # closed at the end, whatever fails before they come
    try:
        api.content.create(container=portal, type="Document", id="u6", title="Upper 6")
        transaction.commit()
        assert _relkind(portal) == "v"

        # Schema 4: this version reads and writes through the view.
        portal["u1"].title = "Upper one"
        portal["u1"].reindexObject()
        catalog.reindexObject(portal["u2"], idxs=["Title"], update_metadata=0)
        api.content.delete(obj=portal["u3"])
        api.content.create(container=portal, type="Document", id="u7", title="Upper 7")
        transaction.commit()
        expected = {f"u{n}": f"Upper {n}" for n in (0, 2, 4, 5, 6, 7)}
        expected["u1"] = "Upper one"
        found = {b.getId: b.Title for b in api.content.find(Title="upper")}
        assert found == expected
        assert set(_legacy_rows(dsn)) == {f"/plone/{i}" for i in expected}
        # An index added now gets its SQL index where schema 4 keeps the
        # values (and on the new table with the upgrade).
        catalog.addIndex("probe_field", "FieldIndex")
        transaction.commit()
        portal._p_jar.sync()
        probe = schema.sql_index_name("probe_field", "h")
        assert probe in _indexes_of(portal, "object_state")

        # During the copy, one row at a time, another process changes rows
        # on the columns of schema 4: once u4 is copied, it changes the
        # metadata of u0 (copied), uncatalogs u4 (copied) and u7 (not yet).
        with psycopg.connect(dsn) as conn:
            zoids = dict(
                conn.execute(
                    "SELECT path, zoid FROM object_state WHERE path LIKE '/plone/u%'"
                ).fetchall()
            )
        assert zoids["/plone/u0"] < zoids["/plone/u4"] < zoids["/plone/u7"]
        copy, progress, written = upgrade5.copy, [], []

        def copying(conn, lock_timeout, batch=upgrade5.BATCH, report=None):
            def write_meanwhile(copied, estimate):
                progress.append(copied)
                if written:
                    return
                with psycopg.connect(dsn, autocommit=True) as other:
                    built = {
                        row[0]
                        for row in other.execute(
                            "SELECT zoid FROM pgcatalog_objects_build"
                            " WHERE zoid = ANY(%s)",
                            (list(zoids.values()),),
                        )
                    }
                    if zoids["/plone/u4"] not in built:
                        return
                    assert zoids["/plone/u7"] not in built  # one row a batch
                    other.execute(
                        "UPDATE object_state SET meta = meta || %s::jsonb"
                        " WHERE zoid = %s",
                        ('{"Title": "Changed meanwhile"}', zoids["/plone/u0"]),
                    )
                    other.execute(
                        "UPDATE object_state SET idx = NULL, path = NULL"
                        " WHERE zoid = ANY(%s)",
                        ([zoids["/plone/u7"], zoids["/plone/u4"]],),
                    )
                    written.append(copied)
                # A request under way: its snapshot is older than the end of
                # the copy, the switch must wait for it.
                reader = psycopg.connect(dsn, autocommit=True)
                reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                reader.execute("SELECT 1")
                readers.append(reader)

            return copy(conn, lock_timeout, 1, write_meanwhile)

        monkeypatch.setattr(upgrade5, "copy", copying)
        monkeypatch.setattr(ddl, "RETRY_DELAYS", (0.0,))
        monkeypatch.setattr(ddl, "LOCK_PAUSES", ())
        # A pooled connection whose brains' metadata statement psycopg has
        # prepared on the view (meta is jsonb there, json in the table).
        metadata = psycopg.connect(dsn, autocommit=True)
        readers.append(metadata)
        for _ in range(6):
            search.load_metadata(metadata, [zoids["/plone/u1"]])

        setup = portal.portal_setup
        setup.setLastVersionForProfile(PGCATALOG_PROFILE, "4")
        setup.upgradeProfile(PGCATALOG_PROFILE)
        transaction.commit()
        portal._p_jar.sync()  # the next transaction begins: the upgrade runs
        # Copied, not switched: the request under way holds an older
        # snapshot.  Once it has ended, the next try switches (without
        # copying again).
        assert _relkind(portal) == "v" and len(readers) == 2
        # The log names the session the switch waits for.
        assert f"pid {readers[-1].info.backend_pid} (" in caplog.text, caplog.text
        readers.pop().close()
        copied = len(progress)
        portal._p_jar.sync()
        assert len(progress) == copied  # not copied again

        assert setup.getLastVersionForProfile(PGCATALOG_PROFILE) == (
            str(PROFILE_VERSION),
        )
        assert written and progress[0] == 1 and len(progress) > written[0]
        assert _relkind(portal) == "r", caplog.text  # names any session waited for
        with _database(portal) as conn:
            assert schema.legacy_columns(conn.cursor()) == []
            assert conn.execute(
                "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
            ).fetchone() == (schema.SCHEMA_VERSION,)
        names = _indexes_of(portal, "pgcatalog_objects")
        assert {"pgcatalog_path", "pgcatalog_idx"} <= names
        # Its keys are named as a new install names them.
        with _database(portal) as conn:
            keys = conn.execute(
                "SELECT conname, contype FROM pg_constraint"
                " WHERE conrelid = 'pgcatalog_objects'::regclass"
                " AND contype IN ('p', 'f')"
            ).fetchall()
        assert sorted(keys) == [
            ("pgcatalog_objects_pkey", "p"),
            ("pgcatalog_objects_zoid_fkey", "f"),
        ]
        assert "pgcatalog_objects_pkey" in names
        # The index added on schema 4 has its typed column now.
        assert probe not in names
        assert schema.sql_index_name("probe_field", "c") in names
        assert schema.sql_index_name("other_site_field", "h") in names
        loaded = search.load_metadata(metadata, [zoids["/plone/u1"]])
        assert loaded[zoids["/plone/u1"]]["Title"] == "Upper one"
        assert schema.sql_index_name("Title") in names
        assert not {n for n in _indexes_of(portal, "object_state") if "pgcatalog" in n}
        del expected["u4"], expected["u7"]
        expected["u0"] = "Changed meanwhile"
        found = {b.getId: b.Title for b in api.content.find(Title="upper")}
        assert found == expected
        # And writes go on, into the table.
        portal["u5"].title = "Upper five"
        portal["u5"].reindexObject()
        transaction.commit()
        assert api.content.find(Title="five")[0].getId == "u5"

        # The step again, as another site of the database runs it: nothing
        # is left to move; the SQL indexes its catalog needs are created.
        title = schema.sql_index_name("Title")
        catalog._defer_ddl(sql.SQL(f'DROP INDEX "{title}"'), "test: another site")
        api.content.create(container=portal, type="Document", id="u9")
        transaction.commit()
        assert title not in _indexes_of(portal, "pgcatalog_objects")
        upgrades.to_5(portal.portal_setup)
        transaction.commit()
        portal._p_jar.sync()
        assert title in _indexes_of(portal, "pgcatalog_objects")
        assert _relkind(portal) == "r", caplog.text  # names any session waited for
    finally:
        # The next tests need schema 5: a failure above may have left 4.
        transaction.abort()
        monkeypatch.undo()
        for reader in readers:
            reader.close()
        if _relkind(portal) == "v":
            from plone_pgcatalog import setuphandlers

            setuphandlers.change_schema_after_commit(
                portal,
                "test: back to schema 5",
                lambda conn: upgrade5.upgrade(conn, indexes, "30s"),
                "",
            )
            transaction.commit()
            portal._p_jar.sync()


def test_moving_wide_values_out_goes_on_where_it_stopped(pg_layer):
    """A 6 -> 7 step tried again after a failure: the rows written before
    it stopped (its progress in ``pgcatalog_state``) are not written
    again, and a column done is skipped."""
    portal = pg_layer["portal"]
    zoids = sorted(_page(portal, f"resumed-{number}") for number in range(3))
    with _database(portal) as conn:
        _as_schema_6_left_it(conn)
        # Stopped after the batch that ended at the second page.
        conn.execute(
            "INSERT INTO pgcatalog_state (key, value)"
            " VALUES ('wide_out:object_provides', %s)",
            (zoids[1],),
        )
        assert columns.move_wide_out(conn, "5s") == ["object_provides"]
        assert not _out_of_the_row(conn, "object_provides", zoids[0])
        assert not _out_of_the_row(conn, "object_provides", zoids[1])
        assert _out_of_the_row(conn, "object_provides", zoids[2])
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'wide_out:object_provides'"
        ).fetchone() == (2**63 - 1,)
        assert columns.move_wide_out(conn, "5s") == []  # done: nothing again
