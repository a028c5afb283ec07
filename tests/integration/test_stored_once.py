"""Keyword lists stored once (``columns.stored_once``, schema 14): a ready
keywords column holds a row's list of strings, and ``idx`` no longer holds
it too; a list the column cannot give back stays in ``idx``.  Through the
real commit (``store.processor``) on a real site: what is stored, what
every reader of whole values sees (searches, the overlay of pending
changes, the index views), the writes that name a key and those that do
not, a dropped column, and the upgrade step 14 -> 15.
"""

from __future__ import annotations

from plone import api
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import processor
from plone_pgcatalog.store import schema
from tests.integration.test_keyed_trigger import _column
from tests.integration.test_keyed_trigger import _drifted
from tests.integration.test_typed_columns import _next_transaction
from tests.integration.test_typed_columns import _site
from tests.integration.test_typed_columns import _site_with_index
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import pytest
import transaction

KEYWORDS = ("Subject", "allowedRolesAndUsers", "object_provides")


def _in_idx(dsn: str, path: str) -> dict:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT idx FROM pgcatalog_objects WHERE path = %s", (path,)
        ).fetchone()[0]


def _paths(portal, **query) -> list[str]:
    return sorted(b.getPath() for b in portal.portal_catalog(**query))


def test_a_list_of_strings_is_in_its_column_only(pg_layer):
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    idx = _in_idx(dsn, "/plone/page-0")
    assert not set(KEYWORDS) & set(idx)
    assert idx["portal_type"] == "Document"  # other kinds: in idx too
    assert _column(dsn, "Subject", "/plone/page-0") == ["red", "tag-0"]
    assert "IDocument" in str(_column(dsn, "object_provides", "/plone/page-0"))
    # Every reader sees the lists: searches, index views, the row's data.
    catalog = portal.portal_catalog
    assert _paths(portal, Subject="red") == [f"/plone/page-{n}" for n in range(3)]
    # ``not`` alone: UnIndex keeps the objects without a value, unless no
    # object has the value left out: then those with a value.
    assert _paths(portal, Subject={"not": "tag-0"}) == [
        "/plone",
        "/plone/page-1",
        "/plone/page-2",
    ]
    assert _paths(portal, Subject={"not": "nobody"}) == [
        f"/plone/page-{n}" for n in range(3)
    ]
    assert _paths(portal, Subject={"query": "tag-1", "range": "min"}) == [
        "/plone/page-1",
        "/plone/page-2",
    ]
    assert _paths(
        portal,
        Subject={"query": ["red", "tag-0"], "range": "min:max", "operator": "and"},
    ) == ["/plone/page-0"]
    assert set(catalog.uniqueValuesFor("Subject")) == {"red", "tag-0", "tag-1", "tag-2"}
    index = catalog.Indexes["Subject"]
    assert index.numObjects() == 3
    assert sorted(index.uniqueValues(withLengths=True))[0] == ("red", 3)
    rid = catalog(path="/plone/page-0")[0].getRID()
    assert index.getEntryForObject(rid) == ["red", "tag-0"]
    data = catalog.getIndexDataForRID(rid)
    assert data["Subject"] == ["red", "tag-0"]
    assert "Anonymous" not in data["allowedRolesAndUsers"]  # a private page
    assert _drifted(dsn) == []


def _by_hand(pg_layer, idx: str) -> str:
    """A site of one page whose ``idx`` is set to ``idx`` (SQL) by a write
    that names no key (written by hand): the trigger derives the columns
    of the keys whose value it changes.  The database's address."""
    _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            f"UPDATE pgcatalog_objects SET idx = {idx} WHERE path = '/plone/page-0'"
        )
    return dsn


def test_a_list_the_column_cannot_give_back_stays_in_idx(pg_layer):
    dsn = _by_hand(pg_layer, 'idx || \'{"Subject": ["a", 5]}\'')
    assert _in_idx(dsn, "/plone/page-0")["Subject"] == ["a", 5]
    assert _column(dsn, "Subject", "/plone/page-0") == ["a"]
    assert _drifted(dsn) == []


def test_a_write_that_does_not_change_a_list_keeps_its_column(pg_layer):
    dsn = _by_hand(pg_layer, "jsonb_set(idx, '{getObjPositionInParent}', '7')")
    assert _column(dsn, "getObjPositionInParent", "/plone/page-0") == 7
    assert _column(dsn, "Subject", "/plone/page-0") == ["red", "tag-0"]
    assert "Subject" not in _in_idx(dsn, "/plone/page-0")


def test_a_whole_row_without_its_list_empties_the_column(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    page = portal["page-0"]
    page.setSubject([])
    page.reindexObject()
    transaction.commit()
    assert _column(dsn, "Subject", "/plone/page-0") is None
    assert "Subject" not in _in_idx(dsn, "/plone/page-0")
    assert _paths(portal, Subject="red") == ["/plone/page-1"]


def test_patches_of_other_indexes_in_the_same_commit(pg_layer):
    """One commit patches ``Subject`` of one row and another index of
    another: each row's lists stay what they are (one statement per set
    of keys: a row whose patch does not give a list stored once has it in
    its column only)."""
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    portal["page-0"].setSubject(["blue"])
    portal["page-0"].reindexObject(idxs=["Subject"])
    portal["page-1"].reindexObject(idxs=["getId"])
    transaction.commit()
    assert _column(dsn, "Subject", "/plone/page-0") == ["blue"]
    assert _column(dsn, "Subject", "/plone/page-1") == ["red", "tag-1"]
    assert _paths(portal, Subject="tag-1") == ["/plone/page-1"]
    assert _drifted(dsn) == []


@pytest.fixture
def written_once(monkeypatch) -> set[int]:
    """The zoids of the rows whose patched lists the commits write straight
    into their columns (``processor._write_once``)."""
    written: set[int] = set()
    write_once = processor._write_once

    def recorded(*args):
        done = write_once(*args)
        written.update(done)
        return done

    monkeypatch.setattr(processor, "_write_once", recorded)
    return written


def _shared_folder(pg_layer):
    """A private folder of two private pages; the folder's row number of
    each path."""
    portal = _site(pg_layer, count=1)
    folder = api.content.create(container=portal, type="Folder", id="shared")
    for number in range(2):
        api.content.create(container=folder, type="Document", id=f"doc-{number}")
    transaction.commit()
    found = portal.portal_catalog.unrestrictedSearchResults(path="/plone/shared")
    return portal, folder, {b.getPath(): b.getRID() for b in found}


def _number_of(dsn: str, path: str) -> tuple[int, list[str]]:
    """The row's list number and the list it numbers."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            'SELECT s."allowedRolesAndUsers:set", k.terms FROM pgcatalog_objects AS s'
            " JOIN pgcatalog_keyword_sets AS k"
            ' ON k.id = s."allowedRolesAndUsers:set" WHERE s.path = %s',
            (path,),
        ).fetchone()


def test_a_sharing_change_writes_the_lists_in_their_columns(pg_layer, written_once):
    """A sharing change's commit sets each descendant's list and its
    number, ``idx`` untouched (``columns.once_patch``): searches by the
    new term find them, and the columns are what the trigger derives."""
    portal, folder, rids = _shared_folder(pg_layer)
    dsn = pg_layer["pgcatalog_dsn"]
    folder.manage_setLocalRoles("sharer", ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    assert written_once == set(rids.values())
    for path in rids:
        assert "allowedRolesAndUsers" not in _in_idx(dsn, path)
        column = _column(dsn, "allowedRolesAndUsers", path)
        assert "user:sharer" in column
        assert _number_of(dsn, path)[1] == column
    catalog = portal.portal_catalog
    assert sorted(
        b.getPath()
        for b in catalog.unrestrictedSearchResults(allowedRolesAndUsers="user:sharer")
    ) == sorted(rids)
    assert _drifted(dsn) == []
    folder.manage_delLocalRoles(["sharer"])
    folder.reindexObjectSecurity()
    transaction.commit()
    assert not catalog.unrestrictedSearchResults(allowedRolesAndUsers="user:sharer")
    assert _drifted(dsn) == []


def test_a_list_its_column_cannot_hold_is_written_through_idx(pg_layer, written_once):
    """A principal id longer than a typed column holds (``TEXT_KEPT``):
    the list stays in ``idx`` too, written there; when it fits again, the
    write through ``idx`` takes it out (the row's ``idx`` holds the key)."""
    portal, folder, rids = _shared_folder(pg_layer)
    dsn = pg_layer["pgcatalog_dsn"]
    long_id = "x" * (columns.TEXT_KEPT + 20)
    folder.manage_setLocalRoles(long_id, ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    path = "/plone/shared/doc-0"
    catalog = portal.portal_catalog
    found = catalog.unrestrictedSearchResults(allowedRolesAndUsers=f"user:{long_id}")
    assert sorted(b.getPath() for b in found) == sorted(rids)
    assert f"user:{long_id}" in _in_idx(dsn, path)["allowedRolesAndUsers"]
    assert _drifted(dsn) == []
    assert written_once == set()
    folder.manage_delLocalRoles([long_id])
    folder.reindexObjectSecurity()
    transaction.commit()
    assert written_once == set()
    assert "allowedRolesAndUsers" not in _in_idx(dsn, path)
    assert not catalog.unrestrictedSearchResults(allowedRolesAndUsers=f"user:{long_id}")
    # Written in their columns again from now on.
    folder.manage_setLocalRoles("sharer", ["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    assert written_once == set(rids.values())
    assert _drifted(dsn) == []


def test_pending_changes_see_the_stored_lists(pg_layer):
    """Read-your-writes: the overlay derives the columns of patched,
    moved and reordered rows from their whole values."""
    portal = _site(pg_layer, count=3)
    folder = api.content.create(container=portal, type="Folder", id="f")
    for number in range(2):
        api.content.create(
            container=folder, type="Document", id=f"d{number}", subject=["green"]
        )
    transaction.commit()
    # A patch of another index, pending.
    portal["page-0"].reindexObject(idxs=["getId"])
    assert _paths(portal, Subject="tag-0") == ["/plone/page-0"]
    # Items reordered, pending.
    folder.moveObjectsToTop(["d1"])
    assert _paths(portal, Subject="green") == ["/plone/f/d0", "/plone/f/d1"]
    transaction.commit()
    # A subtree moved, pending.
    api.content.rename(obj=folder, new_id="g")
    assert _paths(portal, Subject="green") == ["/plone/g/d0", "/plone/g/d1"]
    transaction.commit()
    assert _paths(portal, Subject="green") == ["/plone/g/d0", "/plone/g/d1"]
    assert _paths(portal, Subject="tag-0") == ["/plone/page-0"]


def test_a_dropped_column_gives_its_lists_back_to_idx(pg_layer):
    """``delIndex``: the lists go back into ``idx`` before the column goes
    (``columns.drop_column``); the index added again fills its column from
    them, and they are stored once again."""
    portal, dsn, catalog = _site_with_index(pg_layer, "pgc_tags", "KeywordIndex", 3)
    try:
        for number, tags in enumerate((["a", "b"], ["a"], ["a", 5])):
            portal[f"page-{number}"].pgc_tags = tags
            portal[f"page-{number}"].reindexObject(idxs=["pgc_tags"])
        transaction.commit()
        assert "pgc_tags" not in _in_idx(dsn, "/plone/page-0")
        assert _in_idx(dsn, "/plone/page-2")["pgc_tags"] == ["a", 5]
        assert _paths(portal, pgc_tags="a") == [f"/plone/page-{n}" for n in range(3)]
        catalog.delIndex("pgc_tags")
        _next_transaction(portal)
        assert _in_idx(dsn, "/plone/page-0")["pgc_tags"] == ["a", "b"]
        assert _in_idx(dsn, "/plone/page-2")["pgc_tags"] == ["a", 5]
        # Added again: filled from ``idx``, and stored once again.
        catalog.addIndex("pgc_tags", "KeywordIndex")
        _next_transaction(portal)
        assert _column(dsn, "pgc_tags", "/plone/page-1") == ["a"]
        assert "pgc_tags" not in _in_idx(dsn, "/plone/page-0")
        assert _paths(portal, pgc_tags="b") == ["/plone/page-0"]
        assert _paths(portal, pgc_tags=5) == ["/plone/page-2"]
    finally:
        transaction.abort()
        catalog.delIndex("pgc_tags")
        _next_transaction(portal)


def _as_schema_13_left_it(dsn: str) -> None:
    """Every list in ``idx`` too, and the trigger as schema 13 made it
    (no key taken out)."""
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        known = columns.registered(cur)
        typed = {name: kind for name, (kind, _) in known.items()}
        ready = {name: kind for name, (kind, ok) in known.items() if ok}
        # The trigger's form of schemas 12-13: every column derived, or, for
        # an ``UPDATE`` naming its keys, theirs.
        by_key: dict[str, list[str]] = {}
        for name in sorted(typed):
            by_key.setdefault(columns.source_key(name), []).append(name)
        named = " ".join(
            f"IF patched ? '{key}' THEN "
            + columns._derive_into(names, typed).as_string(conn)
            + " END IF;"
            for key, names in sorted(by_key.items())
        )
        body = (
            "DECLARE patched jsonb := NULLIF(current_setting("
            f"'{columns.PATCHED_KEYS}', true), '')::jsonb; BEGIN"
            " IF TG_OP = 'INSERT' OR patched IS NULL THEN "
            + columns._derive_into(sorted(typed), typed).as_string(conn)
            + f" ELSE {named} END IF; RETURN NEW; END"
        )
        cur.execute(
            psycopg.sql.SQL(
                "CREATE OR REPLACE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql AS {}"
            ).format(psycopg.sql.Identifier(columns.TRIGGER), psycopg.sql.Literal(body))
        )
        cur.execute(
            psycopg.sql.SQL("UPDATE pgcatalog_objects AS o SET idx = {}").format(
                columns.whole_idx(psycopg.sql.SQL("o"), ready)
            )
        )
        cur.execute(
            "UPDATE pgcatalog_state SET value = 13 WHERE key = 'schema_version'"
        )


def test_14_to_15_stores_the_lists_once(pg_layer):
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    try:
        _as_schema_13_left_it(dsn)
        assert _in_idx(dsn, "/plone/page-0")["Subject"] == ["red", "tag-0"]
        # This version writes through schema 13's trigger until the step
        # has run: whole rows and patches derive their columns.
        portal["page-2"].setSubject(["red", "blue"])
        portal["page-2"].reindexObject()
        portal["page-1"].setSubject(["red"])
        portal["page-1"].reindexObject(idxs=["Subject"])
        transaction.commit()
        assert _column(dsn, "Subject", "/plone/page-2") == ["blue", "red"]
        assert _column(dsn, "Subject", "/plone/page-1") == ["red"]
        assert _drifted(dsn) == []
        before = _paths(portal, Subject="red")
        assert _paths(portal, Subject="blue") == ["/plone/page-2"]
        _upgrade_from(portal, "14")
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
            ).fetchone() == (schema.SCHEMA_VERSION,)
            (left,) = conn.execute(
                "SELECT count(*) FROM pgcatalog_objects"
                " WHERE idx ?| ARRAY['Subject', 'object_provides',"
                " 'allowedRolesAndUsers']"
            ).fetchone()
        assert left == 0
        assert _column(dsn, "Subject", "/plone/page-0") == ["red", "tag-0"]
        assert _paths(portal, Subject="red") == before
        assert _paths(portal, Subject="tag-1") == []
        assert _drifted(dsn) == []
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            columns.rebuild_trigger(conn)


def test_a_hand_written_update_that_would_empty_idx_is_refused(pg_layer):
    """``jsonb_set(idx, '{Subject}', f(idx -> 'Subject'))`` of a list stored
    in its column only gives NULL: the trigger refuses it, naming the row
    and why; nothing is written."""
    _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn) as conn:
        try:
            conn.execute(
                "UPDATE pgcatalog_objects SET idx = jsonb_set(idx, '{Subject}',"
                " (idx -> 'Subject') || '[\"x\"]') WHERE path = '/plone/page-0'"
            )
        except psycopg.errors.NotNullViolation as error:
            assert "idx of the row" in str(error)
            assert "typed column only" in error.diag.message_hint
        else:
            raise AssertionError("the update was not refused")
    assert _column(dsn, "Subject", "/plone/page-0") == ["red", "tag-0"]
    assert _in_idx(dsn, "/plone/page-0")["portal_type"] == "Document"
