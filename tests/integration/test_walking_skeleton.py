"""The walking skeleton, end to end, on a real Plone site on PostgreSQL."""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID

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
            title=f"{chr(ord('a') + (number * 7) % 26)}{'Z' if number % 3 else 'b'} page {number}",
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
