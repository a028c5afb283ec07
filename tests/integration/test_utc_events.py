"""Recurring events in UTC, loaded again from the database (issue 13).

zodb-pgjsonb stores ``pytz.utc`` as a plain ``+00:00`` offset and its codec
builds ``datetime.timezone.utc`` from it; plone.event's recurrence calls
``localize`` on the zone, which only pytz zones have.  The events are
created on a database opened anew, in a thread of its own; the test's own
database has never seen them, so it loads them from PostgreSQL, as a later
request of a running site (or a restarted one) finds them.  On them: an
edit through plone.restapi, a workflow transition, a rename and a
cut/paste of the folder holding them, rebuilds.

Must not import plone_pgcatalog internals but ``testing``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from datetime import timedelta
from DateTime import DateTime
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone.testing.zope import addRequestContainer
from plone_pgcatalog.testing import open_db
from plone_pgcatalog.testing import SITE_ID
from tests.conftest import committed_site
from tests.conftest import run_from
from tests.integration.test_real_consumers import browser_for
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import base64
import pytest
import pytz
import transaction

UTC_START = pytz.utc.localize(datetime(2030, 3, 4, 10, 0))
VIENNA = pytz.timezone("Europe/Vienna")
VIENNA_START = VIENNA.localize(datetime(2030, 3, 5, 10, 0))
#: The four Mondays of the weekly UTC event.
OCCURRENCES = [UTC_START + timedelta(weeks=week) for week in range(4)]


def _on_a_new_database(layer, work) -> None:
    """``work(portal)`` on a ZODB database opened anew, in a thread of its
    own (its own transaction and request); commits."""

    def run():
        db = open_db(layer["pgcatalog_dsn"])
        conn = db.open()
        app = addRequestContainer(conn.root()["Application"])
        try:
            setRequest(app.REQUEST)
            portal = app[SITE_ID]
            setSite(portal)
            login(portal, TEST_USER_NAME)
            work(portal)
            transaction.commit()
        finally:
            transaction.abort()
            logout()
            setSite(None)
            setRequest(None)
            app.REQUEST.close()  # its cleanups load objects
            conn.close()
            db.close()

    with ThreadPoolExecutor(1) as executor:
        executor.submit(run).result()


def _create_events(portal) -> None:
    calendar = api.content.create(
        container=portal, type="Folder", id="calendar", title="Calendar"
    )
    api.content.create(
        container=calendar,
        type="Event",
        id="weekly",
        title="Weekly meeting",
        start=UTC_START,
        end=UTC_START + timedelta(hours=1),
        recurrence="RRULE:FREQ=WEEKLY;COUNT=4",
    )
    api.content.create(
        container=calendar,
        type="Event",
        id="once",
        title="Opening",
        start=UTC_START,
        end=UTC_START + timedelta(hours=2),
    )
    api.content.create(
        container=calendar,
        type="Event",
        id="vienna",
        title="Vienna meeting",
        start=VIENNA_START,
        end=VIENNA_START + timedelta(hours=1),
        recurrence="RRULE:FREQ=DAILY;COUNT=2",
    )
    api.content.create(container=portal, type="Folder", id="archive", title="Archive")


def _events_created(layer) -> None:
    setRoles(layer["portal"], TEST_USER_ID, ["Manager"])
    transaction.commit()
    _on_a_new_database(layer, _create_events)


@pytest.fixture(scope="module")
def events_committed():
    """The site with the events (created on a database opened anew), the
    test user a Manager: committed once for the module."""
    return committed_site(_events_created)


@pytest.fixture
def events(events_committed):
    """The test layer, whose database has not loaded the events yet: each
    test's database is opened anew once the rows are restored."""
    yield from run_from(events_committed)


def _occurrences(portal, path: str = "/plone") -> dict[str, str]:
    """Title -> path of the events below ``path`` with an occurrence in
    March 2030 (committed rows: read after the commit)."""
    brains = portal.portal_catalog.unrestrictedSearchResults(
        path=path,
        portal_type="Event",
        start={
            "query": [DateTime("2030/03/01 00:00 UTC"), DateTime("2030/04/01 UTC")],
            "range": "min:max",
        },
    )
    return {brain.Title: brain.getPath() for brain in brains}


def test_a_utc_event_loads_with_pytz_utc_and_other_zones_unchanged(events):
    calendar = events["portal"]["calendar"]

    assert calendar["weekly"].start.tzinfo is pytz.utc
    assert calendar["once"].end.tzinfo is pytz.utc
    assert calendar["vienna"].start.tzinfo.zone == "Europe/Vienna"
    assert calendar["vienna"].start == VIENNA_START


def test_the_occurrences_of_a_loaded_utc_event_are_computed(events):
    from plone.event.recurrence import recurrence_sequence_ical

    weekly = events["portal"]["calendar"]["weekly"]

    starts = recurrence_sequence_ical(weekly.start, recrule=weekly.recurrence)

    assert list(starts) == OCCURRENCES


def test_editing_a_loaded_utc_event_through_restapi(events):
    credentials = f"{SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}".encode()
    with browser_for(events, user=None) as browser:
        response = browser.testapp.patch_json(
            "http://nohost/plone/calendar/weekly",
            {"title": "Weekly review"},
            headers={
                "Accept": "application/json",
                "Authorization": "Basic " + base64.b64encode(credentials).decode(),
            },
        )
    transaction.begin()

    assert response.status_int == 204
    assert _occurrences(events["portal"])["Weekly review"] == "/plone/calendar/weekly"
    assert "Weekly meeting" not in _occurrences(events["portal"])


def test_a_workflow_transition_of_a_loaded_utc_event(events):
    api.content.transition(events["portal"]["calendar"]["weekly"], transition="publish")
    transaction.commit()

    brains = events["portal"].portal_catalog.unrestrictedSearchResults(
        review_state="published", portal_type="Event"
    )
    assert [brain.getPath() for brain in brains] == ["/plone/calendar/weekly"]


def test_renaming_the_folder_of_a_loaded_utc_event(events):
    api.content.rename(obj=events["portal"]["calendar"], new_id="agenda")
    transaction.commit()

    assert _occurrences(events["portal"]) == {
        "Weekly meeting": "/plone/agenda/weekly",
        "Opening": "/plone/agenda/once",
        "Vienna meeting": "/plone/agenda/vienna",
    }


def test_cut_and_paste_of_the_folder_of_a_loaded_utc_event(events):
    events["portal"]["archive"].manage_pasteObjects(
        events["portal"].manage_cutObjects(["calendar"])
    )
    transaction.commit()

    assert _occurrences(events["portal"]) == {
        "Weekly meeting": "/plone/archive/calendar/weekly",
        "Opening": "/plone/archive/calendar/once",
        "Vienna meeting": "/plone/archive/calendar/vienna",
    }


def test_clear_find_and_rebuild_with_a_loaded_utc_event(events):
    events["portal"].portal_catalog.clearFindAndRebuild()
    transaction.commit()

    assert _occurrences(events["portal"]) == {
        "Weekly meeting": "/plone/calendar/weekly",
        "Opening": "/plone/calendar/once",
        "Vienna meeting": "/plone/calendar/vienna",
    }


def test_a_batched_rebuild_with_a_loaded_utc_event(events):
    events["portal"].portal_catalog.rebuild(batch_size=2)

    assert _occurrences(events["portal"]) == {
        "Weekly meeting": "/plone/calendar/weekly",
        "Opening": "/plone/calendar/once",
        "Vienna meeting": "/plone/calendar/vienna",
    }
