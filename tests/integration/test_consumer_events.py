"""The catalog through plone.app.event: event listings and recurrences.

Owns the probes of ``plone.app.event.base.get_events`` (brains, expanded
occurrences, reverse order and limits, time windows) and of the
``@@event_listing`` page over the publisher in its ``day``, ``week``,
``month``, ``future``, ``past`` and ``all`` modes, on events in a named
zone (Europe/Vienna: zodb-pgjsonb stores ``pytz.utc`` as
``datetime.timezone.utc``, which plone.app.event cannot localize), with
weekly and monthly RRULEs, one crossing the 2030 daylight-saving change,
a multi-day whole-day event and a private one.  Events lie in 2001 and
2030, so ``future`` and ``past`` are stable until 2030.

Must not import plone_pgcatalog internals.
"""

from __future__ import annotations

from datetime import datetime
from datetime import timedelta
from plone import api
from plone.app.event.base import get_events
from plone.app.event.base import RET_MODE_ACCESSORS
from plone.app.event.base import RET_MODE_BRAINS
from tests.integration.test_real_consumers import as_anonymous
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import build_content
from tests.integration.test_real_consumers import compare
from tests.integration.test_real_consumers import observe_both
from tests.integration.test_real_consumers import paths
from tests.integration.test_real_consumers import ZONE
from urllib.parse import urlparse

import lxml.html
import pytest
import pytz
import transaction

TZ = pytz.timezone(ZONE)


def local(*args) -> datetime:
    return TZ.localize(datetime(*args))


#: id: (start, duration, recurrence, published, extra fields)
EVENTS = {
    "concert": (local(2030, 3, 2, 19, 0), timedelta(hours=2), None, True, {}),
    "weekly": (
        local(2030, 3, 4, 10, 0),
        timedelta(hours=1),
        "RRULE:FREQ=WEEKLY;COUNT=4",
        True,
        {},
    ),
    "past-monthly": (
        local(2001, 1, 10, 9, 0),
        timedelta(hours=1),
        "RRULE:FREQ=MONTHLY;COUNT=3",
        True,
        {},
    ),
    # Sundays 24 and 31 March, 7 April 2030: summer time begins on the 31st.
    "across-dst": (
        local(2030, 3, 24, 10, 0),
        timedelta(hours=1),
        "RRULE:FREQ=WEEKLY;COUNT=3",
        True,
        {},
    ),
    "fair": (
        local(2030, 2, 28, 0, 0),
        timedelta(days=5, hours=23, minutes=59),
        None,
        True,
        {"whole_day": True},
    ),
    "rehearsal": (local(2030, 3, 3, 18, 0), timedelta(hours=3), None, False, {}),
}


def build(portal) -> None:
    build_content(portal)
    folder = api.content.create(
        container=portal, type="Folder", id="events", title="Events"
    )
    api.content.transition(obj=folder, transition="publish")
    for id_, (start, duration, recurrence, published, extra) in EVENTS.items():
        event = api.content.create(
            container=folder,
            type="Event",
            id=id_,
            title=id_.replace("-", " ").title(),
            start=start,
            end=start + duration,
            timezone=ZONE,
            recurrence=recurrence,
            **extra,
        )
        if published:
            api.content.transition(obj=event, transition="publish")
    transaction.commit()


def occurrences(items) -> list:
    # Paths, not URLs: the two layers' test requests name different hosts.
    return [
        (urlparse(item.url).path, item.start.isoformat(), item.end.isoformat())
        for item in items
    ]


def events_in(start=None, end=None, expand=False, **options):
    def probe(layer):
        portal = layer["portal"]
        if expand:
            return occurrences(
                get_events(
                    portal,
                    start=start,
                    end=end,
                    ret_mode=RET_MODE_ACCESSORS,
                    expand=True,
                    **options,
                )
            )
        return paths(
            get_events(
                portal, start=start, end=end, ret_mode=RET_MODE_BRAINS, **options
            )
        )

    return probe


def event_listing(query: str, anonymous: bool = False):
    def probe(layer):
        user = {"user": None} if anonymous else {}
        with browser_for(layer, **user) as browser:
            browser.open(f"http://nohost/plone/@@event_listing?{query}")
            page = lxml.html.fromstring(browser.contents)
        return [
            (
                article.xpath(".//a[contains(@class, 'url')]/@href")[0],
                article.xpath("string(.//li[@class='dtstart'])").strip(),
                article.xpath("string(.//li[@class='dtend'])").strip(),
            )
            for article in page.cssselect("article.vevent")
        ]

    return probe


MARCH = (local(2030, 3, 1), local(2030, 3, 31, 23, 59))

PROBES = {
    "brains in March": events_in(*MARCH),
    "brains, all": events_in(),
    "brains, end before": events_in(end=local(2030, 3, 3)),
    "brains sorted by end, reversed": events_in(*MARCH, sort="end", sort_reverse=True),
    "occurrences in March": events_in(*MARCH, expand=True),
    "occurrences in March, reversed, limit 3": events_in(
        *MARCH, expand=True, sort_reverse=True, limit=3
    ),
    "occurrences across summer time": events_in(
        local(2030, 3, 20), local(2030, 4, 10), expand=True
    ),
    "occurrences in 2001": events_in(
        local(2001, 1, 1), local(2001, 12, 31), expand=True
    ),
    "occurrences as anonymous": as_anonymous(events_in(*MARCH, expand=True)),
    "event_listing day": event_listing("mode=day&date=2030-03-04"),
    "event_listing week": event_listing("mode=week&date=2030-03-04"),
    "event_listing month": event_listing("mode=month&date=2030-03-15&b_size=50"),
    "event_listing future": event_listing("mode=future&b_size=50"),
    "event_listing past": event_listing("mode=past&b_size=50"),
    "event_listing all, second batch": event_listing("mode=all&b_size=4&b_start=4"),
    "event_listing as anonymous": event_listing(
        "mode=future&b_size=50", anonymous=True
    ),
}


@pytest.fixture(scope="module")
def observed():
    return observe_both(PROBES, build)


@pytest.mark.parametrize("name", list(PROBES))
def test_event_listings_give_what_zcatalog_gives(observed, name):
    compare(observed, name)


# Pins: the oracle must answer what the content implies.
EVENTS_URL = "http://nohost/plone/events"


def test_weekly_occurrences_keep_local_time_across_summer_time(observed):
    compare(
        observed,
        "occurrences across summer time",
        [
            (
                "/plone/events/across-dst",
                "2030-03-24T10:00:00+01:00",
                "2030-03-24T11:00:00+01:00",
            ),
            (
                "/plone/events/weekly/2030-03-25",
                "2030-03-25T10:00:00+01:00",
                "2030-03-25T11:00:00+01:00",
            ),
            (
                "/plone/events/across-dst/2030-03-31",
                "2030-03-31T10:00:00+02:00",
                "2030-03-31T11:00:00+02:00",
            ),
            (
                "/plone/events/across-dst/2030-04-07",
                "2030-04-07T10:00:00+02:00",
                "2030-04-07T11:00:00+02:00",
            ),
        ],
    )


def test_event_listing_day_shows_the_days_occurrences(observed):
    compare(
        observed,
        "event_listing day",
        [
            (
                f"{EVENTS_URL}/fair",
                "2030-02-28T00:00:00+01:00",
                "2030-03-05T23:59:59+01:00",
            ),
            (
                f"{EVENTS_URL}/weekly",
                "2030-03-04T10:00:00+01:00",
                "2030-03-04T11:00:00+01:00",
            ),
        ],
    )


def test_past_recurrences_are_listed_in_2001(observed):
    compare(
        observed,
        "occurrences in 2001",
        [
            (
                "/plone/events/past-monthly",
                "2001-01-10T09:00:00+01:00",
                "2001-01-10T10:00:00+01:00",
            ),
            (
                "/plone/events/past-monthly/2001-02-10",
                "2001-02-10T09:00:00+01:00",
                "2001-02-10T10:00:00+01:00",
            ),
            (
                "/plone/events/past-monthly/2001-03-10",
                "2001-03-10T09:00:00+01:00",
                "2001-03-10T10:00:00+01:00",
            ),
        ],
    )
