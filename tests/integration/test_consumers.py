"""The catalog through its consumers: plone.restapi, plone.app.event."""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID

import pytz
import transaction


def test_restapi_search_serializes_results(pg_layer):
    from plone.restapi.search.handler import SearchHandler

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for number in range(3):
        api.content.create(
            container=portal,
            type="Document",
            id=f"doc-{number}",
            title=f"Lighthouse {number}",
        )
    api.content.create(container=portal, type="Document", id="other", title="Other")
    transaction.commit()
    result = SearchHandler(portal, pg_layer["request"]).search(
        {
            "SearchableText": "lighthouse",
            "sort_on": "sortable_title",
            "metadata_fields": ["UID", "review_state"],
        }
    )
    assert result["items_total"] == 3
    assert [item["title"] for item in result["items"]] == [
        "Lighthouse 0",
        "Lighthouse 1",
        "Lighthouse 2",
    ]
    assert all(item["review_state"] == "private" for item in result["items"])


def test_event_occurrences_are_indexed_and_queried(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    start = datetime(2030, 3, 2, 10, 0, tzinfo=pytz.utc)
    event = api.content.create(
        container=portal,
        type="Event",
        id="weekly",
        title="Weekly",
        start=start,
        end=start + timedelta(hours=1),
        recurrence="RRULE:FREQ=WEEKLY;COUNT=3",
    )
    transaction.commit()
    catalog = api.portal.get_tool("portal_catalog")
    brain = catalog(portal_type="Event")[0]
    data = catalog.getIndexDataForRID(brain.getRID())
    assert len(data["start"]) == 3
    # The third occurrence, two weeks later, is found by a range query.
    window = {
        "query": [start + timedelta(days=14), start + timedelta(days=15)],
        "range": "min:max",
    }
    assert [b.getId for b in catalog(start=window)] == ["weekly"]
    outside = {
        "query": [start + timedelta(days=30), start + timedelta(days=31)],
        "range": "min:max",
    }
    assert len(catalog(start=outside)) == 0
    assert event.getId() == "weekly"


def test_classic_search_view_lists_results(pg_layer):
    from plone.app.contentlisting.interfaces import IContentListing

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="doc", title="Lighthouse")
    transaction.commit()
    listing = IContentListing(api.content.find(SearchableText="lighthouse"))
    assert [item.Title() for item in listing] == ["Lighthouse"]
    view = api.content.get_view("search", portal, pg_layer["request"])
    pg_layer["request"].form["SearchableText"] = "lighthouse"
    assert [item.getId() for item in view.results(b_start=0)] == ["doc"]


def test_event_brain_dates_keep_their_timezone(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    tz = pytz.timezone("Europe/Vienna")
    start = tz.localize(datetime(2030, 3, 2, 10, 0))
    api.content.create(
        container=portal,
        type="Event",
        id="concert",
        title="Concert",
        start=start,
        end=start + timedelta(hours=2),
        timezone="Europe/Vienna",
    )
    transaction.commit()
    brain = api.content.find(portal_type="Event")[0]
    assert brain.start == portal["concert"].start
    assert hasattr(brain.start.tzinfo, "localize")
