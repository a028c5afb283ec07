"""The trigger that derives the typed columns from ``idx``, for an
``UPDATE`` that names the keys it changes (``columns.PATCHED_KEYS``):
a partial reindex and a sharing change set the columns of their indexes
only, through the real commit (``store.processor``), on a real site.

How the tests see which columns the trigger set: a column set by hand to
a value its ``idx`` does not hold (which no write of the catalog does)
stays as it is when a patch of another index is written, and is derived
again by a patch of its own index or a row written in full.  With a
trigger that derives every column (schema 11), it would be put right by
any write.
"""

from __future__ import annotations

from plone import api
from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import reports
from plone_pgcatalog.store import schema
from tests.integration.test_numbered_lists import _misnumbered
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import pytest
import random
import re
import string
import transaction

DRIFTED = "set by hand"


def _column(dsn: str, name: str, path: str):
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            psycopg.sql.SQL("SELECT {} FROM pgcatalog_objects WHERE path = %s").format(
                psycopg.sql.Identifier(name)
            ),
            (path,),
        ).fetchone()[0]


def _drift(dsn: str, path: str) -> None:
    """``review_state``'s column of ``path`` set to what ``idx`` does not
    hold (the trigger fires on writes of ``idx`` only)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "UPDATE pgcatalog_objects SET review_state = %s WHERE path = %s",
            (DRIFTED, path),
        )


def _drifted(dsn: str) -> list[tuple[str, list[str]]]:
    """``(path, names)`` of the rows whose typed columns are not what their
    ``idx`` derives (``reports.typed_drift``, as ``verify`` checks)."""
    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            typed = {name: kind for name, (kind, _) in columns.registered(cur).items()}
        found = conn.execute(
            psycopg.sql.SQL(
                "SELECT s.path, {} AS names FROM pgcatalog_objects AS s"
            ).format(reports.typed_drift(typed))
        ).fetchall()
    return sorted((path, names) for path, names in found if names)


def _function_source(dsn: str, name: str) -> str:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT prosrc FROM pg_proc WHERE proname = %s", (name,)
        ).fetchone()[0]


def _trigger_source(dsn: str) -> str:
    return _function_source(dsn, columns.TRIGGER)


def test_a_partial_reindex_derives_the_columns_of_its_indexes_only(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    _drift(dsn, "/plone/page-0")
    page = portal["page-0"]
    page.setSubject(["blue"])
    page.reindexObject(idxs=["Subject"])
    transaction.commit()
    assert _column(dsn, "Subject", "/plone/page-0") == ["blue"]
    # Not a key of the patch: its column was not derived again.
    assert _column(dsn, "review_state", "/plone/page-0") == DRIFTED
    assert _drifted(dsn) == [("/plone/page-0", ["review_state"])]
    # Its own index's patch derives it.
    page.reindexObject(idxs=["review_state"])
    transaction.commit()
    assert _column(dsn, "review_state", "/plone/page-0") == "private"
    assert _drifted(dsn) == []
    # A row written in full derives every column.
    _drift(dsn, "/plone/page-1")
    portal["page-1"].reindexObject()
    transaction.commit()
    assert _column(dsn, "review_state", "/plone/page-1") == "published"
    assert _drifted(dsn) == []


def test_a_patch_that_removes_a_value_empties_its_column(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    page = portal["page-1"]
    catalog = portal.portal_catalog
    zoid = int.from_bytes(page._p_oid, "big")
    catalog.pending_changes().patch(
        CatalogPatch(
            zoid=zoid,
            path="/plone/page-1",
            values={"Subject": ["green"]},
            removed=("review_state",),
            meta={},
            update_metadata=False,
        )
    )
    transaction.commit()
    assert _column(dsn, "review_state", "/plone/page-1") is None
    assert _column(dsn, "Subject", "/plone/page-1") == ["green"]
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT idx ? 'review_state' FROM pgcatalog_objects WHERE zoid = %s",
            (zoid,),
        ).fetchone() == (False,)
    assert _drifted(dsn) == []


def test_a_sharing_change_gives_every_row_its_list_and_its_number(pg_layer):
    portal = pg_layer["portal"]
    dsn = pg_layer["pgcatalog_dsn"]
    with api.env.adopt_roles(["Manager"]):
        folder = api.content.create(portal, "Folder", id="shared", title="Shared")
        for number in range(12):
            api.content.create(folder, "Document", id=f"doc-{number}", title="Doc")
    transaction.commit()
    _drift(dsn, "/plone/shared/doc-3")
    folder.manage_setLocalRoles("someone", ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    paths = ["/plone/shared", *(f"/plone/shared/doc-{n}" for n in range(12))]
    for path in paths:
        assert "user:someone" in _column(dsn, "allowedRolesAndUsers", path), path
    assert _misnumbered(dsn) == 0
    # Only the security index's columns were derived again.
    assert _drifted(dsn) == [("/plone/shared/doc-3", ["review_state"])]
    transaction.begin()
    found = {
        brain.getPath()
        for brain in portal.portal_catalog.unrestrictedSearchResults(
            allowedRolesAndUsers="user:someone"
        )
    }
    assert found == set(paths)


def _as_schema_left_it(dsn: str, version: int, source: str) -> None:
    """The trigger's function with ``source``, as schema ``version`` made
    it, and that schema's version recorded."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            psycopg.sql.SQL(
                "CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS {}"
            ).format(
                psycopg.sql.Identifier(columns.TRIGGER), psycopg.sql.Literal(source)
            )
        )
        conn.execute(
            "UPDATE pgcatalog_state SET value = %s WHERE key = 'schema_version'",
            (version,),
        )


def _as_schema_11_left_it(dsn: str) -> None:
    """The trigger in the form of schema 11: every column derived for
    every write of ``idx``."""
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        typed = {name: kind for name, (kind, _) in columns.registered(cur).items()}
        body = columns._derive_into(sorted(typed), typed).as_string(conn)
    _as_schema_left_it(dsn, 11, "BEGIN " + body + " RETURN NEW; END")


def test_12_to_13_makes_the_trigger_keyed(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    _as_schema_11_left_it(dsn)
    try:
        assert columns.PATCHED_KEYS not in _trigger_source(dsn)
        # Before the upgrade the commit's keys are ignored: every column is
        # derived, as before.
        _drift(dsn, "/plone/page-0")
        portal["page-0"].reindexObject(idxs=["Subject"])
        transaction.commit()
        assert _column(dsn, "review_state", "/plone/page-0") == "private"
        _upgrade_from(portal, "12")
        assert columns.PATCHED_KEYS in _trigger_source(dsn)
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
            ).fetchone() == (schema.SCHEMA_VERSION,)
        _drift(dsn, "/plone/page-0")
        portal["page-0"].reindexObject(idxs=["Subject"])
        transaction.commit()
        assert _column(dsn, "review_state", "/plone/page-0") == DRIFTED
    finally:
        # Tests share the database's DDL (each restores rows only).
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.rebuild_trigger(conn)


def _as_schema_14_left_it(dsn: str) -> None:
    """The trigger in the form of schema 14: each list stored once compared
    with its column whatever ``idx`` holds, each named key tested alone
    (its groups' tests made true)."""
    source = _trigger_source(dsn)
    old = re.sub(r"IF NEW\.idx \? ('[^']+') AND ", "IF ", source)
    old = re.sub(r"IF patched \?\| '\{[^}]*\}'::text\[\] THEN", "IF true THEN", old)
    assert "?|" not in old and old != source
    _as_schema_left_it(dsn, 14, old)
    # The function that numbers lists, without the last list remembered.
    numbering = re.sub(
        r"    last := .*?END IF;\n|    PERFORM set_config.*?\n",
        "",
        columns.SET_FUNCTION,
        flags=re.S,
    )
    assert columns.LAST_LIST not in numbering
    with psycopg.connect(dsn) as conn:
        conn.execute(numbering)


def test_14_to_15_makes_the_trigger_lighter(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    _as_schema_14_left_it(dsn)
    try:
        page = portal["page-0"]
        page.setSubject(["blue"])
        page.reindexObject(idxs=["Subject"])
        transaction.commit()
        assert _column(dsn, "Subject", "/plone/page-0") == ["blue"]
        _upgrade_from(portal, "15")
        source = _trigger_source(dsn)
        assert "IF patched ?| " in source
        assert columns.LAST_LIST in _function_source(dsn, "pgcatalog_keyword_set")
        assert "IF NEW.idx ? 'Subject' AND NEW.\"Subject\" IS NOT NULL" in source
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
            ).fetchone() == (schema.SCHEMA_VERSION,)
        # A partial reindex and a sharing change, through the new form.
        _drift(dsn, "/plone/page-0")
        page.setSubject(["green", "blue"])
        page.reindexObject(idxs=["Subject"])
        page.manage_setLocalRoles("pgc-reader", ["Reader"])
        page.reindexObjectSecurity()
        transaction.commit()
        assert _column(dsn, "Subject", "/plone/page-0") == ["blue", "green"]
        assert _column(dsn, "review_state", "/plone/page-0") == DRIFTED
        assert "user:pgc-reader" in _column(
            dsn, "allowedRolesAndUsers", "/plone/page-0"
        )
        assert _drifted(dsn) == [("/plone/page-0", ["review_state"])]
        with psycopg.connect(dsn) as conn:
            # Neither list is in ``idx``: each is stored once.
            assert conn.execute(
                "SELECT idx ?| ARRAY['Subject', 'allowedRolesAndUsers']"
                " FROM pgcatalog_objects WHERE path = '/plone/page-0'"
            ).fetchone() == (False,)
    finally:
        # Tests share the database's DDL (each restores rows only).
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.rebuild_trigger(conn)


def _as_schema_15_left_it(dsn: str) -> None:
    """The trigger in the form of schema 15: strings derived whole, however
    long."""
    source = _trigger_source(dsn)
    old = re.sub(
        rf"left\((.*?), {columns.TEXT_KEPT + 1}\)",
        r"\1",
        source,
    )
    assert "left(" not in old and old != source
    _as_schema_left_it(dsn, 15, old)


def test_15_to_16_lets_the_typed_columns_hold_long_strings(pg_layer):
    portal = _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    # Random letters: a repeated one compresses into an index entry.
    chance = random.Random(15)
    tag = "".join(chance.choice(string.ascii_letters) for _ in range(3000))
    _as_schema_15_left_it(dsn)
    try:
        page = portal["page-0"]
        page.setSubject([tag, "blue"])
        page.reindexObject(idxs=["Subject"])
        with pytest.raises(psycopg.errors.ProgramLimitExceeded):
            transaction.commit()
        transaction.abort()
        _upgrade_from(portal, "16")
        assert "left(" in _trigger_source(dsn)
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
            ).fetchone() == (schema.SCHEMA_VERSION,)
        page = portal["page-0"]
        page.setSubject([tag, "blue"])
        page.reindexObject(idxs=["Subject"])
        transaction.commit()
        assert sorted(_column(dsn, "Subject", "/plone/page-0")) == sorted(
            ["blue", tag[: columns.TEXT_KEPT + 1]]
        )
        catalog = portal.portal_catalog
        assert [b.getPath() for b in catalog(Subject=tag)] == ["/plone/page-0"]
        assert [b.getPath() for b in catalog(Subject="blue")] == ["/plone/page-0"]
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.rebuild_trigger(conn)
