"""A FieldIndex or UUIDIndex without its typed column, on a real site.

Such an index has no column when its name cannot be one (over 63 bytes),
when another site of the database has an index of another type so named,
or while its column waits for its lock.  Schema 17 serves it by a B-tree
on the value its column would hold, computed from ``idx``
(``columns.held_value``), which searches compare as they compare the
column (``columns.typed_value``).  Until then B-trees on its JSON value
and on its text served it, and a string longer than a B-tree entry
(2,704 bytes) failed the commit.  The differential side (every search
form against ZCatalog, long values) is ``test_long_values``.
"""

from __future__ import annotations

from plone_pgcatalog.store import columns
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import schema
from psycopg.rows import tuple_row
from tests.integration.test_explain import _record
from tests.integration.test_typed_columns import _next_transaction
from tests.integration.test_typed_columns import _query
from tests.integration.test_typed_columns import _query_commit
from tests.integration.test_typed_columns import _site
from tests.integration.test_typed_columns import _sql_indexes
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import pytest
import random
import string
import transaction


def _names(tag: str) -> tuple[str, str]:
    """A FieldIndex's and a UUIDIndex's names, too long for a column's,
    of their own for each test: a long value an earlier test stored under
    a name stays in the table as a dead row version for a while, which a
    B-tree of schema 16 built on that name (``_as_schema_16_left_it``)
    cannot take."""
    tail = "without_a_column_" * 4
    return f"pgc_{tag}field_{tail}", f"pgc_{tag}uid_{tail}"


def _random(seed: int, length: int) -> str:
    # Random letters: a repeated one compresses into an index entry.
    chance = random.Random(seed)
    return "".join(chance.choice(string.ascii_letters) for _ in range(length))


def _with_indexes(pg_layer, tag: str):
    """The site with the indexes ``_names(tag)``; and the DSN."""
    portal = _site(pg_layer, count=3)
    catalog = portal.portal_catalog
    field, uid = _names(tag)
    catalog.addIndex(field, "FieldIndex")
    catalog.addIndex(uid, "UUIDIndex")
    _next_transaction(portal)
    return portal, pg_layer["pgcatalog_dsn"]


def _plan(portal, query: dict) -> str:
    """The plan of the search's statement, sequential and plain index
    scans off: whether an SQL index can serve its conditions at all (a
    plan on three rows proves nothing else; the primary key's scan in
    ``zoid`` order, with the conditions as a filter, costs about as much
    there, and PostgreSQL 15 took one or the other from run to run)."""
    catalog = portal.portal_catalog
    recorded = _record(catalog, query, "dict")
    assert recorded.error is None, recorded.error
    ((statement, params),) = recorded.statements()[:1]
    conn = connection.read_connection(catalog)
    with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("SET LOCAL enable_indexscan = off")
        cur.execute(b"EXPLAIN " + statement.as_bytes(conn), params)
        return "\n".join(row[0] for row in cur.fetchall())


def test_its_btree_is_on_the_value_as_a_column_holds_it(pg_layer):
    portal, dsn = _with_indexes(pg_layer, "")
    field, uid = _names("")
    indexes = _sql_indexes(dsn)
    for name in (field, uid):
        assert columns.column_name(name) is None
        assert schema.sql_index_name(name, "h") in indexes, name
        for kind in schema.UNHELD_KINDS:
            assert schema.sql_index_name(name, kind) not in indexes, name
    held = schema.sql_index_name(field, "h")
    for query in (
        {field: "a value"},
        {field: ["a", "b"]},
        {field: {"query": ["a", "m"], "range": "min:max"}},
        {field: {"query": "m", "range": "min"}, "sort_on": field},
    ):
        assert held in _plan(portal, query), query
    assert schema.sql_index_name(uid, "h") in _plan(portal, {uid: "a-uid"})


def test_a_long_value_is_saved_and_found(pg_layer):
    portal, dsn = _with_indexes(pg_layer, "saved_")
    field, uid = _names("saved_")
    long_value, long_uid = _random(1, 4000), _random(2, 3000)
    page = portal["page-0"]
    setattr(page, field, long_value)
    setattr(page, uid, long_uid)
    page.reindexObject()
    setattr(portal["page-1"], field, long_value[: columns.TEXT_KEPT + 1])
    portal["page-1"].reindexObject()
    transaction.commit()
    catalog = portal.portal_catalog
    assert [b.getPath() for b in catalog({field: long_value})] == ["/plone/page-0"]
    assert [b.getPath() for b in catalog({uid: long_uid})] == ["/plone/page-0"]
    assert [b.getPath() for b in catalog({field: long_value[:501]})] == [
        "/plone/page-1"
    ]
    # plone.app.uuid's lookup
    (brain,) = catalog({uid: long_uid})
    assert catalog.Indexes[uid]._index.get(long_uid) == brain.getRID()
    assert sorted(catalog.uniqueValuesFor(field)) == sorted(
        [long_value, long_value[:501]]
    )


def _as_schema_16_left_it(dsn: str, names) -> None:
    """The SQL indexes of ``names`` as schema 16 made them for an index
    without its column (B-trees on the JSON value and its text), and that
    schema's version recorded."""
    with psycopg.connect(dsn) as conn:
        for name in names:
            key = psycopg.sql.Literal(name)
            conn.execute(
                psycopg.sql.SQL("DROP INDEX {}").format(
                    psycopg.sql.Identifier(schema.sql_index_name(name, "h"))
                )
            )
            conn.execute(
                psycopg.sql.SQL(
                    "CREATE INDEX {} ON pgcatalog_objects USING btree ((idx -> {}))"
                ).format(psycopg.sql.Identifier(schema.sql_index_name(name)), key)
            )
            conn.execute(
                psycopg.sql.SQL(
                    "CREATE INDEX {} ON pgcatalog_objects"
                    ' USING btree (((idx ->> {}) COLLATE "C"))'
                ).format(psycopg.sql.Identifier(schema.sql_index_name(name, "t")), key)
            )
        conn.execute(
            "UPDATE pgcatalog_state SET value = 16 WHERE key = 'schema_version'"
        )


def test_17_to_18_lets_it_hold_a_long_value(pg_layer):
    portal, dsn = _with_indexes(pg_layer, "upgraded_")
    field, uid = _names("upgraded_")
    _as_schema_16_left_it(dsn, (field, uid))
    long_value = _random(3, 4000)
    page = portal["page-2"]
    setattr(page, field, long_value)
    page.reindexObject()
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        transaction.commit()
    transaction.abort()

    _upgrade_from(portal, "17")
    indexes = _sql_indexes(dsn)
    for name in (field, uid):
        assert schema.sql_index_name(name, "h") in indexes, name
        for kind in schema.UNHELD_KINDS:
            assert schema.sql_index_name(name, kind) not in indexes, name
    assert _query(
        dsn, "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
    ) == [(schema.SCHEMA_VERSION,)]
    page = portal["page-2"]
    setattr(page, field, long_value)
    page.reindexObject()
    transaction.commit()
    catalog = portal.portal_catalog
    assert [b.getPath() for b in catalog({field: long_value})] == ["/plone/page-2"]


def test_17_to_18_leaves_another_types_index_of_the_name(pg_layer):
    """A DateIndex's B-tree on its JSON value has the name a FieldIndex's
    had: only a pair (with the text's B-tree, which no other type makes)
    is taken for the FieldIndex's."""
    portal, dsn = _with_indexes(pg_layer, "paired_")
    field = _names("paired_")[0]
    _as_schema_16_left_it(dsn, (field,))
    other = "pgc_date_" + "without_a_column_" * 4
    _query_commit(
        dsn,
        psycopg.sql.SQL(
            "CREATE INDEX {} ON pgcatalog_objects USING btree ((idx -> {}))"
        ).format(
            psycopg.sql.Identifier(schema.sql_index_name(other)),
            psycopg.sql.Literal(other),
        ),
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        dropped = schema.drop_unheld_indexes(
            conn, "1s", [(other, "FieldIndex"), (field, "FieldIndex")]
        )
    assert dropped == [field]
    indexes = _sql_indexes(dsn)
    assert schema.sql_index_name(other) in indexes
    for kind in schema.UNHELD_KINDS:
        assert schema.sql_index_name(field, kind) not in indexes
