"""The walking skeleton, end to end, on a real Plone site on PostgreSQL."""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from Products.ZCTextIndex.ParseTree import ParseError

import psycopg
import pytest
import transaction


def create_pages(portal, count=20, published=10):
    """``count`` pages with distinct titles, the first ``published`` public."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(count):
        page = api.content.create(
            container=portal,
            type="Document",
            id=f"page-{number:02d}",
            # Titles whose order differs from the ids' order.
            title=f"{chr(ord('a') + (number * 7) % 26)}{'Z' if number % 3 else 'b'}"
            f" page {number}",
        )
        if number < published:
            api.content.transition(obj=page, transition="publish")
    transaction.commit()


def test_manager_finds_all_pages(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    assert len(api.content.find(portal_type="Document")) == 20


def test_anonymous_finds_only_published_pages(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    logout()
    brains = api.content.find(portal_type="Document")
    assert len(brains) == 10
    assert {brain.review_state for brain in brains} == {"published"}


def test_review_state_private_finds_the_rest(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    brains = api.content.find(portal_type="Document", review_state="private")
    assert sorted(brain.getId for brain in brains) == [
        f"page-{n:02d}" for n in range(10, 20)
    ]


def test_rows_are_visible_with_plain_sql(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    with psycopg.connect(pg_layer["pgcatalog_dsn"]) as conn:
        count = conn.execute(
            "SELECT count(*) FROM pgcatalog_objects WHERE idx->>'portal_type' = %s",
            ("Document",),
        ).fetchone()[0]
        titles = conn.execute(
            "SELECT meta->>'Title' FROM pgcatalog_objects"
            " WHERE path = '/plone/page-03'"
        ).fetchall()
    assert count == 20
    assert titles == [("vb page 3",)]


def test_deleted_page_leaves_the_results(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    api.content.delete(obj=portal["page-05"])
    transaction.commit()
    paths = [brain.getPath() for brain in api.content.find(portal_type="Document")]
    assert len(paths) == 19
    assert "/plone/page-05" not in paths


def test_renamed_page_has_its_new_path(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal)
    api.content.rename(obj=portal["page-05"], new_id="renamed")
    transaction.commit()
    brains = api.content.find(id="renamed")
    assert [brain.getPath() for brain in brains] == ["/plone/renamed"]
    assert len(api.content.find(id="page-05")) == 0
    assert brains[0].getObject() is not None


def test_aborted_transaction_leaves_no_trace(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal, count=2, published=0)
    with psycopg.connect(pg_layer["pgcatalog_dsn"]) as conn:
        before = conn.execute(
            "SELECT zoid, path, idx, meta FROM pgcatalog_objects" " ORDER BY zoid"
        ).fetchall()
    api.content.create(container=portal, type="Document", id="never", title="Never")
    api.content.delete(obj=portal["page-00"])
    portal["page-01"].title = "Changed"
    portal["page-01"].reindexObject()
    transaction.abort()
    with psycopg.connect(pg_layer["pgcatalog_dsn"]) as conn:
        after = conn.execute(
            "SELECT zoid, path, idx, meta FROM pgcatalog_objects" " ORDER BY zoid"
        ).fetchall()
    assert after == before
    assert len(api.content.find(portal_type="Document")) == 2


def test_brains_give_zcatalog_metadata_types(pg_layer):
    from DateTime import DateTime

    import Missing

    portal = pg_layer["portal"]
    create_pages(portal, count=1, published=1)
    brain = api.content.find(id="page-00")[0]
    page = portal["page-00"]
    assert isinstance(brain.modified, DateTime)
    assert brain.modified == page.modified()
    assert brain.Title == page.Title()
    assert brain.UID == api.content.get_uuid(page)
    assert brain.review_state == "published"
    assert brain.getURL() == page.absolute_url()
    assert brain.getRID() == brain.data_record_id_
    assert brain.getObject().aq_base is page.aq_base
    assert isinstance(brain.Subject, tuple)
    assert brain.getIcon is Missing.Value or isinstance(brain.getIcon, str)


def test_searchable_text_finds_words_and_prefixes(pg_layer):
    portal = pg_layer["portal"]
    create_pages(portal, count=3, published=3)
    api.content.create(
        container=portal,
        type="Document",
        id="cafe",
        title="Café Müller",
        description="Where the catalogue lives",
    )
    transaction.commit()
    assert [b.getId for b in api.content.find(SearchableText="cafe")] == ["cafe"]
    assert [b.getId for b in api.content.find(SearchableText="MÜLL*")] == ["cafe"]
    assert [b.getId for b in api.content.find(SearchableText="catalogue lives")] == [
        "cafe"
    ]
    assert len(api.content.find(SearchableText="catalogue NOT lives")) == 0
    # Stray syntax around words is dropped; a string without a word to
    # search raises ZCTextIndex's ParseError, as with ZCatalog.
    assert len(api.content.find(SearchableText="x' OR 1=1 --")) == 0
    for text in ("AND", '"', "(((", "*"):
        with pytest.raises(ParseError):
            api.content.find(SearchableText=text)
