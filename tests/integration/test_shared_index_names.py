"""Two sites in one database whose indexes of the same name are of
different types.

The table has one typed column per name, of the kind of the first site's
index (``schema.create_index``); the other site's index of that name is
served by ``idx`` (``test_typed_columns``: the DDL).  These tests write and
search both sites: each finds, sorts and reports its own values as
ZCatalog would, whatever the column of the name holds for the other.  The
column's trigger derives it from every row, the other site's too, and a
value of another type leaves it NULL (``columns.KINDS``); a list of
strings of the other site is not taken out of ``idx`` into a column of
lists that its index does not read.

An object of one site changed while another site is the current one
(CMFCore then hands its change to the current site's catalog) is indexed
by its own site's catalog, with its site's definitions and language.
"""

from __future__ import annotations

from DateTime import DateTime
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.testing import add_second_site
from tests.integration.test_typed_columns import _next_transaction
from tests.integration.test_typed_columns import _query
from tests.integration.test_typed_columns import _registered

import pytest
import transaction


def _paths(brains) -> list[str]:
    return [brain.getPath() for brain in brains]


@pytest.fixture
def two_sites(pg_layer):
    """``plone`` with ``pgc_when`` a DateIndex and ``pgc_tags`` a
    KeywordIndex (made first: the typed columns are theirs) and
    ``pgc_first_only`` a FieldIndex that the other lacks, ``second``
    with ``pgc_when`` a KeywordIndex and ``pgc_tags`` a FieldIndex; three
    pages in each, the indexes' values set."""
    from zope.component.hooks import setSite

    app = pg_layer["app"]
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    first = portal.portal_catalog
    first.addIndex("pgc_when", "DateIndex")
    first.addIndex("pgc_tags", "KeywordIndex")
    first.addIndex("pgc_first_only", "FieldIndex")
    _next_transaction(portal)
    second = add_second_site(app)
    other = second.portal_catalog
    other.addIndex("pgc_when", "KeywordIndex")
    other.addIndex("pgc_tags", "FieldIndex")
    _next_transaction(second)
    with api.env.adopt_roles(["Manager"]):
        for number, (when, tags) in enumerate(
            [(["b", "c"], "solo"), (["a"], "pair"), (["c"], "solo")]
        ):
            page = api.content.create(
                container=second, type="Document", id=f"page-{number}"
            )
            page.pgc_when = when
            page.pgc_tags = tags
            page.reindexObject()
    transaction.commit()
    setSite(portal)
    for number, (day, tags) in enumerate(
        [("2026/03/02", ["red", "blue"]), ("2026/01/05", ["red"]), ("2026/02/07", [])]
    ):
        page = api.content.create(
            container=portal, type="Document", id=f"page-{number}"
        )
        page.pgc_when = DateTime(f"{day} 10:00 UTC")
        page.pgc_tags = tags
        page.reindexObject()
    transaction.commit()
    try:
        yield portal, second
    finally:
        transaction.abort()
        setSite(portal)


def test_the_first_sites_indexes_have_the_typed_columns(pg_layer, two_sites):
    registered = _registered(pg_layer["pgcatalog_dsn"])
    assert registered["pgc_when"] == ("integer", True)
    assert registered["pgc_tags"] == ("keywords", True)


def test_each_site_searches_its_own_index_type(two_sites):
    portal, second = two_sites
    first, other = portal.portal_catalog, second.portal_catalog
    # The DateIndex: a range, a sort both ways.
    since = DateTime("2026/02/01 00:00 UTC")
    assert _paths(
        first.unrestrictedSearchResults(
            pgc_when={"query": since, "range": "min"}, sort_on="pgc_when"
        )
    ) == ["/plone/page-2", "/plone/page-0"]
    assert _paths(
        first.unrestrictedSearchResults(
            portal_type="Document", sort_on="pgc_when", sort_order="reverse"
        )
    ) == ["/plone/page-0", "/plone/page-2", "/plone/page-1"]
    # The KeywordIndex of the first site: its column.
    assert _paths(first.unrestrictedSearchResults(pgc_tags="red", sort_on="id")) == [
        "/plone/page-0",
        "/plone/page-1",
    ]
    assert _paths(
        first.unrestrictedSearchResults(
            pgc_tags={"query": ["red", "blue"], "operator": "and"}
        )
    ) == ["/plone/page-0"]
    # The same names in the second site: a KeywordIndex and a FieldIndex,
    # from ``idx``.
    assert _paths(other.unrestrictedSearchResults(pgc_when="c", sort_on="id")) == [
        "/second/page-0",
        "/second/page-2",
    ]
    assert _paths(
        other.unrestrictedSearchResults(
            pgc_when={"query": ["a", "b"], "operator": "or"}, sort_on="id"
        )
    ) == ["/second/page-0", "/second/page-1"]
    assert _paths(other.unrestrictedSearchResults(pgc_tags="solo", sort_on="id")) == [
        "/second/page-0",
        "/second/page-2",
    ]
    assert _paths(
        other.unrestrictedSearchResults(
            portal_type="Document", sort_on=("pgc_tags", "id")
        )
    ) == ["/second/page-1", "/second/page-0", "/second/page-2"]


def test_each_site_reports_its_own_values(two_sites):
    portal, second = two_sites
    first, other = portal.portal_catalog, second.portal_catalog
    assert sorted(other.uniqueValuesFor("pgc_when")) == ["a", "b", "c"]
    assert sorted(other.uniqueValuesFor("pgc_tags")) == ["pair", "solo"]
    assert sorted(first.uniqueValuesFor("pgc_tags")) == ["blue", "red"]
    assert len(first.uniqueValuesFor("pgc_when")) == 3
    data = other.getIndexDataForUID("/second/page-0")
    assert sorted(data["pgc_when"]) == ["b", "c"]
    assert data["pgc_tags"] == "solo"
    data = first.getIndexDataForUID("/plone/page-0")
    assert sorted(data["pgc_tags"]) == ["blue", "red"]


def test_a_change_of_the_second_sites_values_is_found(two_sites):
    from zope.component.hooks import setSite

    portal, second = two_sites
    setSite(second)
    other = second.portal_catalog
    page = second["page-1"]
    page.pgc_when = ["d"]
    page.pgc_tags = "solo"
    page.reindexObject(idxs=["pgc_when", "pgc_tags"])
    # Read-your-writes, then committed.
    assert _paths(other.unrestrictedSearchResults(pgc_when="d")) == ["/second/page-1"]
    transaction.commit()
    assert _paths(other.unrestrictedSearchResults(pgc_when="d")) == ["/second/page-1"]
    assert _paths(other.unrestrictedSearchResults(pgc_when="a")) == []
    assert _paths(other.unrestrictedSearchResults(pgc_tags="solo", sort_on="id")) == [
        "/second/page-0",
        "/second/page-1",
        "/second/page-2",
    ]
    # The first site's searches of the names never see the second's rows.
    assert (
        _paths(portal.portal_catalog.unrestrictedSearchResults(pgc_tags="solo")) == []
    )


def test_an_object_changed_while_another_site_is_current_keeps_its_sites_indexes(
    two_sites,
):
    """CMFCore gives the current site's catalog (``getToolByName``): the
    first site's catalog is asked to reindex the second site's page.  Its
    own site's catalog indexes it (``PGCatalogTool._catalog_of_its_site``):
    with the first site's definitions its ``pgc_when`` (a DateIndex there)
    would have been dropped from the row, and its words stemmed in English
    instead of its site's German."""
    from zope.component.hooks import setSite

    portal, second = two_sites
    other = second.portal_catalog
    page = second["page-1"]
    page.pgc_when = ["d"]
    page.title = "Die Häuser am Hafen"
    page.reindexObject()
    assert _paths(other.unrestrictedSearchResults(pgc_when="d")) == ["/second/page-1"]
    transaction.commit()
    assert _paths(other.unrestrictedSearchResults(pgc_when="d")) == ["/second/page-1"]
    assert sorted(other.getIndexDataForUID("/second/page-1")["pgc_when"]) == ["d"]
    # German stems ("Häuser", "Häusern" and "Haus" are "haus"; English
    # leaves "häusern" whole), also for the words searched while the first
    # site is the current one.
    for word in ("Haus", "Häusern"):
        assert _paths(other.unrestrictedSearchResults(SearchableText=word)) == [
            "/second/page-1"
        ], word
    setSite(second)
    assert _paths(other.unrestrictedSearchResults(SearchableText="Häusern")) == [
        "/second/page-1"
    ]
    # A partial reindex too.
    setSite(portal)
    page.pgc_when = ["e"]
    page.reindexObject(idxs=["pgc_when"])
    transaction.commit()
    assert _paths(other.unrestrictedSearchResults(pgc_when="e")) == ["/second/page-1"]
    assert _paths(portal.portal_catalog.unrestrictedSearchResults(path="/second")) == []


def test_a_folder_moved_to_the_other_site_takes_that_sites_indexes(pg_layer, two_sites):
    """A moved folder's descendants keep their rows, at their new paths.
    Moved within a site, they have only the indexes that a move may change
    read again (``moves``); into another site, all of them, by the
    definitions of that site (here ``pgc_when``: a KeywordIndex in the
    second site, a DateIndex in the first; ``pgc_only`` the second site's
    alone): their rows keep nothing of the other site's.  Neither site's
    searches, before the commit or after, find them where they were."""
    from zope.component.hooks import setSite

    portal, second = two_sites
    setSite(second)
    second.portal_catalog.addIndex("pgc_only", "FieldIndex")
    _next_transaction(second)
    with api.env.adopt_roles(["Manager"]):
        folder = api.content.create(container=second, type="Folder", id="moving")
        inner = api.content.create(
            container=folder, type="Document", id="inner", title="Neue Häuser"
        )
    inner.pgc_when = ["x"]
    inner.pgc_tags = "solo"
    inner.pgc_only = "left behind"
    inner.reindexObject()
    transaction.commit()
    first, other = portal.portal_catalog, second.portal_catalog
    assert _paths(other.unrestrictedSearchResults(pgc_when="x")) == [
        "/second/moving/inner"
    ]
    # Pasted into the first site, from a request of the first site.
    setSite(portal)
    inner.pgc_when = DateTime("2026/04/01 10:00 UTC")
    inner.pgc_tags = ["green"]
    with api.env.adopt_roles(["Manager"]):
        api.content.move(source=second["moving"], target=portal)

    def found():
        return (
            _paths(
                first.unrestrictedSearchResults(path="/plone/moving", sort_on="path")
            ),
            _paths(first.unrestrictedSearchResults(pgc_tags="green")),
            _paths(
                first.unrestrictedSearchResults(
                    pgc_when={"query": DateTime("2026/03/31"), "range": "min"}
                )
            ),
            _paths(other.unrestrictedSearchResults(path="/second/moving")),
            _paths(other.unrestrictedSearchResults(pgc_when="x")),
        )

    expected = (
        ["/plone/moving", "/plone/moving/inner"],
        ["/plone/moving/inner"],
        ["/plone/moving/inner"],
        [],
        [],
    )
    assert found() == expected  # read-your-writes
    transaction.commit()
    assert found() == expected
    data = first.getIndexDataForUID("/plone/moving/inner")
    assert data["pgc_tags"] == ["green"]
    [(keys,)] = _query(
        pg_layer["pgcatalog_dsn"],
        "SELECT array(SELECT jsonb_object_keys(idx)) FROM pgcatalog_objects"
        " WHERE path = '/plone/moving/inner'",
    )
    assert "pgc_only" not in keys
    assert "pgc_when" in keys  # a DateIndex's value: not stored once


def test_the_second_sites_changes_made_while_the_first_is_current(two_sites):
    """With the first site current, CMFCore hands every change of the
    second site's objects to the first site's catalog: a partial reindex
    that names the first site's indexes, a move within the second site (a
    partial reindex of the descendants by the indexes a move may change:
    the first site's ``pgc_first_only`` among them), a sharing change.
    Each is the second site's catalog's, by its own indexes (the names it
    does not have are left out, as CMFCore does): before, the names were
    filtered by the first site's indexes and checked by the second's, and
    the commit failed with a KeyError; and the move's partial reindex was
    of the first site's indexes, without the second's ``pgc_only``.  (The
    sharing change's values are the same by either catalog: the security
    indexes are Plone's in both.)"""

    portal, second = two_sites
    other = second.portal_catalog
    page = second["page-0"]
    page.pgc_tags = "duo"
    page.reindexObject(idxs=["pgc_first_only", "pgc_tags"])
    transaction.commit()
    assert _paths(other.unrestrictedSearchResults(pgc_tags="duo")) == ["/second/page-0"]
    other.addIndex("pgc_only", "FieldIndex")
    _next_transaction(second)
    with api.env.adopt_roles(["Manager"]):
        shelf = api.content.create(container=second, type="Folder", id="shelf")
        box = api.content.create(container=second, type="Folder", id="box")
        api.content.move(source=second["page-2"], target=box)
    box["page-2"].pgc_only = "before"
    box["page-2"].reindexObject()
    transaction.commit()
    # Changed without a reindex: the move reads the add-on's index again.
    box["page-2"].pgc_only = "moved"
    with api.env.adopt_roles(["Manager"]):
        api.content.move(source=box, target=shelf)
    transaction.commit()
    moved = ["/second/shelf/box", "/second/shelf/box/page-2"]
    found = other.unrestrictedSearchResults(path="/second/shelf/box", sort_on="path")
    assert _paths(found) == moved
    found = other.unrestrictedSearchResults(pgc_only="moved")
    assert _paths(found) == ["/second/shelf/box/page-2"]
    box = shelf["box"]
    box.manage_setLocalRoles("pgc-reader", ["Reader"])
    box.reindexObjectSecurity()
    transaction.commit()
    found = other.unrestrictedSearchResults(
        allowedRolesAndUsers="user:pgc-reader", sort_on="path"
    )
    assert _paths(found) == moved


def test_a_catalog_used_without_a_current_site_has_its_sites_languages(two_sites):
    """A script at the Zope root that catalogs and searches through a
    site's catalog, no site being the current one: the words are stemmed
    in the site's language (before: in none, the component registry
    outside a site has no Plone settings)."""
    from zope.component.hooks import setSite

    portal, second = two_sites
    other = second.portal_catalog
    setSite(None)
    page = second["page-0"]
    page.title = "Die Häuser am Hafen"
    other.catalog_object(page)
    transaction.commit()
    found = other.unrestrictedSearchResults(SearchableText="Häusern")
    assert _paths(found) == ["/second/page-0"]
