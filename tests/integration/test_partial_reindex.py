"""``reindexObject(idxs=[...])``: a JSONB merge at commit, no object stored.

As in ZCatalog, only the named indexes are read again; the others keep
what they had, and the metadata is updated unless ``update_metadata`` is
false.
"""

from __future__ import annotations

from DateTime import DateTime
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog import maintenance
from plone_pgcatalog.pending import PendingCatalog
from plone_pgcatalog.store.connection import ddl_connection
from tests.conftest import collect_in

import pytest
import transaction


def _page(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal, type="Document", id="p", title="Old title", subject=("a",)
    )
    transaction.commit()
    return page


def _objects_stored_by_last_commit(catalog) -> int:
    with ddl_connection(catalog) as conn:
        return conn.execute(
            "SELECT count(*) FROM object_state"
            " WHERE tid = (SELECT max(tid) FROM transaction_log)"
        ).fetchone()[0]


def _find(**query) -> list[str]:
    return [brain.getId for brain in api.content.find(**query)]


def test_a_partial_reindex_stores_no_object(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    # Changed and stored, but not reindexed...
    page.setSubject(("b",))
    transaction.commit()
    assert _find(Subject="b") == []
    # ...then reindexed alone: only the catalog changes.
    page.reindexObject(idxs=["Subject"])
    transaction.commit()
    assert _objects_stored_by_last_commit(portal.portal_catalog) == 0
    assert _find(Subject="b") == ["p"]
    assert _find(Subject="a") == []
    assert api.content.find(Subject="b")[0].Subject == ("b",)


def test_only_the_named_indexes_change_metadata_follows(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.title = "New title"
    page.setSubject(("b",))
    page.reindexObject(idxs=["Subject"])
    transaction.commit()
    # Title index untouched (as ZCatalog), metadata updated (update_metadata).
    assert _find(Title="Old") == ["p"]
    assert _find(Title="New") == []
    brain = api.content.find(Subject="b")[0]
    assert brain.Title == "New title"


def test_without_update_metadata_the_metadata_stays(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.setSubject(("b",))
    page.title = "New title"
    portal.portal_catalog.catalog_object(page, idxs=["Subject"], update_metadata=0)
    transaction.commit()
    brain = api.content.find(Subject="b")[0]
    assert brain.Title == "Old title" and brain.Subject == ("a",)


def test_an_index_without_value_loses_its_key(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.setSubject(())
    page.reindexObject(idxs=["Subject"])
    transaction.commit()
    assert _find(Subject="a") == []
    idx, _ = portal.portal_catalog._row_data(api.content.find(id="p")[0].getRID())
    assert "Subject" not in idx and idx["Title"]


def test_searchable_text_can_be_reindexed_alone(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.title = "Lighthouse keeper"
    page.reindexObject(idxs=["SearchableText"])
    transaction.commit()
    assert _find(SearchableText="lighthouse") == ["p"]


def test_a_search_sees_a_partial_reindex_before_commit(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.setSubject(("b",))
    page.title = "Lighthouse"
    page.reindexObject(idxs=["Subject", "SearchableText"])
    assert _find(Subject="b") == ["p"]
    assert _find(SearchableText="lighthouse", Subject="b") == ["p"]
    assert api.content.find(Subject="b")[0].Title == "Lighthouse"


def test_a_search_lays_over_only_the_partial_reindexes_it_reads(
    pg_layer, searches, monkeypatch
):
    """A search that neither tests nor sorts on a reindexed index finds
    what the stored row gives: the patch is not merged for it (after a
    ``reindexIndex`` of thousands of objects each such merge cost every
    search of the transaction).  Its brains' metadata is the pending one."""
    portal = pg_layer["portal"]
    page = _page(portal)
    page.setSubject(("b",))
    page.title = "Lighthouse"
    page.reindexObject(idxs=["Subject"])

    def merged(**query) -> tuple[list[str], bool]:
        del searches[:]
        found = api.content.find(**query)
        ids = [brain.getId for brain in found]
        return ids, any("jsonb_to_recordset" in s.statement for s in searches)

    assert merged(portal_type="Document") == (["p"], False)
    assert api.content.find(portal_type="Document")[0].Title == "Lighthouse"
    assert merged(portal_type="Document", sort_on="sortable_title") == (["p"], False)
    # Tested, sorted on, or under its query name: merged.
    assert merged(Subject="b") == (["p"], True)
    assert merged(Subject="a") == ([], True)
    page.reindexObject(idxs=["sortable_title"])
    assert merged(portal_type="Document", sort_on="sortable_title") == (["p"], True)
    page.reindexObject(idxs=["effective", "effectiveRange"])
    assert merged(effectiveRange=DateTime())[1]
    assert merged(portal_type="Document") == (["p"], False)
    # An index view reads its own index only: the patch of Subject is
    # merged for the view of Subject, not for that of portal_type.
    laid = []
    overlay = PendingCatalog.overlay

    def recording(self, reads=None):
        found = overlay(self, reads)
        laid.append((reads, len(found.patches)))
        return found

    monkeypatch.setattr(PendingCatalog, "overlay", recording)
    catalog = portal.portal_catalog
    assert set(catalog.uniqueValuesFor("Subject")) == {"b"}
    assert "Document" in catalog.uniqueValuesFor("portal_type")
    assert laid == [({"Subject"}, 1), ({"portal_type"}, 0)]
    transaction.commit()
    assert _find(Subject="b") == ["p"]


def test_a_patch_left_out_keeps_its_row_below_a_kept_subtree(pg_layer):
    """A rebuild in one transaction forgets, at commit, the rows its walk
    did not write, but keeps those of objects reindexed meanwhile: a
    search before the commit sees the same rows, also one that leaves the
    partial reindex out (it does not read its index)."""
    portal = pg_layer["portal"]
    page = _page(portal)
    api.content.create(container=portal, type="Document", id="q", title="Q")
    transaction.commit()
    catalog = portal.portal_catalog
    site = catalog.site_path()
    # As a rebuild whose walk wrote q only.
    q_rid = catalog.getrid(f"{site}/q")
    catalog.pending_changes().keep_only(
        site, [q_rid], maintenance._snapshot_tid(catalog)
    )
    page.setSubject(("b",))
    page.reindexObject(idxs=["Subject"])

    def seen() -> dict:
        return {
            "Subject": _find(Subject="b"),
            "portal_type": sorted(_find(portal_type="Document")),
            "path": _find(path=f"{site}/p"),
            "len": len(catalog),
            "rid": catalog.getrid(f"{site}/p") is not None,
        }

    before = seen()
    transaction.commit()
    assert (
        before
        == seen()
        == {
            "Subject": ["p"],
            "portal_type": ["p", "q"],
            "path": ["p"],
            "len": 2,
            "rid": True,
        }
    )


def test_a_partial_reindex_after_a_full_one_merges_into_it(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    page.title = "Newer"
    page.reindexObject()
    page.setSubject(("c",))
    page.reindexObject(idxs=["Subject"])
    transaction.commit()
    assert _find(Subject="c", Title="Newer") == ["p"]


def test_savepoint_rollback_forgets_a_partial_reindex(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    savepoint = transaction.savepoint()
    page.setSubject(("b",))
    page.reindexObject(idxs=["Subject"])
    assert _find(Subject="b") == ["p"]
    savepoint.rollback()
    assert _find(Subject="b") == []
    transaction.commit()
    assert _find(Subject="a") == ["p"]


def test_an_unknown_index_name_raises_as_in_zcatalog(pg_layer):
    portal = pg_layer["portal"]
    page = _page(portal)
    with pytest.raises(KeyError):
        portal.portal_catalog.catalog_object(page, idxs=["no_such_index"])


def test_a_local_role_on_a_folder_reaches_its_subtree(pg_layer):
    from plone.app.testing import login

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.user.create(
        email="reader@example.org", username="reader", password="secret-Pw-1"
    )
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    api.content.create(container=folder, type="Document", id="d", title="D")
    transaction.commit()
    api.user.grant_roles(username="reader", obj=folder, roles=["Reader"])
    folder.reindexObjectSecurity()
    transaction.commit()
    login(portal, "reader")
    assert sorted(_find(path="/plone/f")) == ["d", "f"]


def test_a_security_reindex_reads_no_metadata(pg_layer, monkeypatch):
    """CMFCore's ``reindexObjectSecurity`` passes ``update_metadata=0``:
    as ZCatalog, the metadata is neither read nor written."""
    from plone_pgcatalog import extraction

    portal = pg_layer["portal"]
    page = _page(portal)
    calls = []
    real = extraction.metadata_values

    def counting(columns, wrapped):
        calls.append(wrapped)
        return real(columns, wrapped)

    monkeypatch.setattr(extraction, "metadata_values", counting)
    page.title = "Not reindexed"
    page.manage_setLocalRoles("someone", ["Reader"])
    page.reindexObjectSecurity()
    transaction.commit()
    assert calls == []
    brain = portal.portal_catalog.unrestrictedSearchResults(
        allowedRolesAndUsers="user:someone"
    )[0]
    assert brain.Title == "Old title"


def test_a_new_row_gets_its_metadata_without_update_metadata(pg_layer):
    """ZCatalog gives an object it did not hold its metadata even when
    ``update_metadata`` is false."""
    portal = pg_layer["portal"]
    page = _page(portal)
    catalog = portal.portal_catalog
    catalog.uncatalog_object("/plone/p")
    transaction.commit()
    assert _find(Subject="a") == []
    catalog.catalog_object(page, idxs=["Subject"], update_metadata=0)
    transaction.commit()
    # Only Subject is indexed (no security terms): unrestricted, as ZCatalog.
    brain = catalog.unrestrictedSearchResults(Subject="a")[0]
    assert brain.Title == "Old title" and brain.Subject == ("a",)


def test_patches_of_rows_and_of_objects_without_one_commit_together(pg_layer):
    """One commit: patches of stored rows (two sets of keys) are merged
    into them, a patch of an object without a row makes its row, with its
    metadata (``processor._write_rows``: only those are sent twice)."""
    portal = pg_layer["portal"]
    page = _page(portal)
    other = api.content.create(
        container=portal, type="Document", id="q", title="Q", subject=("q",)
    )
    third = api.content.create(
        container=portal, type="Document", id="r", title="R", subject=("r",)
    )
    transaction.commit()
    catalog = portal.portal_catalog
    catalog.uncatalog_object("/plone/q")
    transaction.commit()
    page.title = "New title"
    page.reindexObject(idxs=["Title"])
    third.setSubject(("r2",))
    third.reindexObject(idxs=["Subject"])
    catalog.catalog_object(other, idxs=["Subject"], update_metadata=0)
    transaction.commit()
    find = catalog.unrestrictedSearchResults
    assert [b.getId for b in find(Title="new")] == ["p"]
    assert [b.getId for b in find(Subject="r2")] == ["r"]
    (brain,) = find(Subject="q")
    assert (brain.getId, brain.Title) == ("q", "Q")
    assert [b.getId for b in find(portal_type="Document", sort_on="id")] == [
        "p",
        "r",
    ]


def _uncatalog_then_reindex_some(layer) -> dict:
    """In one transaction: uncatalog a page, then catalog it with one index
    (and no metadata update), as code that re-adds an object might."""
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = portal.portal_catalog
    page = api.content.create(
        container=portal, type="Document", id="u", title="Old title", subject=("a",)
    )
    transaction.commit()
    page.title = "New title"
    page.setSubject(("b",))  # changed, not reindexed
    transaction.commit()
    path = "/".join(page.getPhysicalPath())
    catalog.uncatalog_object(path)
    catalog.catalog_object(page, path, idxs=["Subject"], update_metadata=0)
    transaction.commit()
    # Unrestricted: the new record has no allowedRolesAndUsers either.
    find = catalog.unrestrictedSearchResults
    return {
        "Subject=b": [brain.getPath() for brain in find(Subject="b")],
        "Subject=a": [brain.getPath() for brain in find(Subject="a")],
        "by type": [b.getPath() for b in find(portal_type="Document", id="u")],
        "metadata": [(brain.Title, brain.Subject) for brain in find(Subject="b")],
    }


def test_a_partial_reindex_after_uncatalog_catalogs_only_those_indexes():
    # ZCatalog makes a new record with only the named indexes, and its
    # metadata read now.  The row used to keep its stored values instead
    # (the patch merged into it, and the removal skipped it).
    expected = collect_in("zcatalog", _uncatalog_then_reindex_some)
    actual = collect_in("pg", _uncatalog_then_reindex_some)
    assert expected["Subject=b"] == ["/plone/u"]
    assert expected["by type"] == []
    assert actual == expected
