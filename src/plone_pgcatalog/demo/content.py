"""Deterministic sample content for the demo site and for tests.

Owns: the plan of the sample content (``sample_items``: 50 folders, pages,
news items and events with searchable words, Subject tags and a mix of
published and private items) and ``create_sample_content``, which builds
that plan inside a Plone site through plone.api.

Must not import Zope startup code, the demo instance module, or the
catalog internals of this package: it only talks to Plone through plone.api,
so the same content can be created by ``make run`` and by any test fixture,
whatever catalog is installed.

The caller owns the transaction (this module never commits) and the
security context (it must be allowed to add and publish content, e.g. a
Manager).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytz

# A word that occurs in published sample content, for the printed REST
# example and for tests that want a non-empty anonymous search result.
EXAMPLE_SEARCH_WORD = "lighthouse"

# Events are placed relative to this fixed moment rather than "now" so that
# every run (and every test) sees the same dates; it lies years ahead so the
# demo's events stay "upcoming" in event listings.  pytz, not zoneinfo:
# plone.app.event reads ``tzinfo.zone``, which only pytz zones have.  Most
# are in a named zone; the weekly reading group is in UTC, Plone's default
# zone (zodb-pgjsonb stores pytz.utc as a plain offset, which
# ``plone_pgcatalog.timezones`` gives back as pytz.utc).
_EVENT_BASE = pytz.timezone("Europe/Vienna").localize(datetime(2030, 3, 4, 18, 0))
_UTC_EVENT_START = pytz.utc.localize(datetime(2030, 3, 6, 17, 0))
# Publishing dates of published items, one day apart in plan order.  A
# workflow transition through plone.api sets no publishing date (only the
# edit form does), and dates in the past keep items visible to anonymous.
_EFFECTIVE_BASE = pytz.utc.localize(datetime(2025, 1, 6, 9, 0))


@dataclass(frozen=True)
class SampleItem:
    """One piece of sample content, as plain data."""

    container: str  # id of a folder at the site root, "" for the root itself
    id: str
    portal_type: str
    title: str
    description: str
    subjects: tuple[str, ...] = ()
    text: str | None = None  # HTML body; Folders have none
    publish: bool = False  # True: 'publish' transition; False: stays private
    effective: datetime | None = None  # publishing date, published items only
    start: datetime | None = None  # Events only
    end: datetime | None = None
    whole_day: bool = False
    recurrence: str | None = None  # an RFC 5545 RRULE, Events only

    @property
    def path(self) -> str:
        """Path relative to the site root, e.g. ``news/orchard-news``."""
        return f"{self.container}/{self.id}" if self.container else self.id


@dataclass(frozen=True)
class _Topic:
    keyword: str  # single searchable word, used in ids and titles
    blurb: str  # what the topic is about, for descriptions
    headline: str  # News Item title
    tags: tuple[str, str]


# Each topic contributes five items (handbook page, project page, news item,
# event, private internal note); the distinct keywords make full-text
# searches with predictable hits.
_TOPICS: tuple[_Topic, ...] = (
    _Topic(
        "lighthouse",
        "keepers, lamps and foghorns along the rocky northern shore",
        "Restored lighthouse lamp shines again",
        ("maritime", "history"),
    ),
    _Topic(
        "orchard",
        "pruning, grafting and picking heritage apple trees",
        "Orchard harvest breaks the village record",
        ("gardening", "outdoors"),
    ),
    _Topic(
        "telescope",
        "mirrors, mounts and dark skies for watching the planets",
        "New telescope opens its dome to the public",
        ("astronomy", "science"),
    ),
    _Topic(
        "glacier",
        "ice flow, meltwater and measurements in the high valleys",
        "Glacier survey finds faster melting",
        ("climate", "science"),
    ),
    _Topic(
        "violin",
        "spruce tops, varnish and strings from the luthier's bench",
        "Student orchestra premieres a violin concerto",
        ("music", "craft"),
    ),
    _Topic(
        "bicycle",
        "routes, repairs and long distance touring by bicycle",
        "Bicycle lanes extended across the city",
        ("cycling", "outdoors"),
    ),
    _Topic(
        "volcano",
        "eruptions, lava fields and hot springs",
        "Volcano observatory publishes an eruption forecast",
        ("geology", "science"),
    ),
    _Topic(
        "sourdough",
        "starters, rye flour and slow fermentation in the bakery",
        "Sourdough workshop sells out in a day",
        ("baking", "craft"),
    ),
)


def _html(*paragraphs: str) -> str:
    return "".join(f"<p>{p}</p>" for p in paragraphs)


def _folders() -> list[SampleItem]:
    def folder(id_: str, title: str, description: str, publish: bool = True):
        return SampleItem("", id_, "Folder", title, description, publish=publish)

    return [
        folder("about", "About us", "Who runs this demo site and how to reach us"),
        folder("library", "Library", "Handbooks and guides for every topic"),
        folder("news", "News", "Announcements and press releases"),
        folder("events", "Events", "Meetups, workshops and festivals"),
        folder("projects", "Projects", "Plans and progress of our projects"),
        folder(
            "internal",
            "Internal",
            "Private notes for the editorial team only",
            publish=False,
        ),
    ]


def _topic_items(index: int, topic: _Topic) -> list[SampleItem]:
    kw = topic.keyword
    tags = topic.tags
    start = _EVENT_BASE + timedelta(days=7 * index)
    items = [
        SampleItem(
            "library",
            f"{kw}-handbook",
            "Document",
            f"The {kw} handbook",
            f"A practical guide to the {kw}: {topic.blurb}.",
            tags,
            _html(
                f"This handbook collects everything about the {kw}: {topic.blurb}.",
                f"Chapters on {tags[0]} and {tags[1]} follow.",
            ),
        ),
        SampleItem(
            "projects",
            f"{kw}-project-plan",
            "Document",
            f"{kw.capitalize()} project plan",
            f"Goals, budget and milestones of the {kw} project.",
            (tags[0], "planning"),
            _html(
                f"The {kw} project runs for two years.",
                "Milestones are reviewed every quarter by the steering group.",
            ),
        ),
        SampleItem(
            "news",
            f"{kw}-news",
            "News Item",
            topic.headline,
            f"Latest news about the {kw}: {topic.blurb}.",
            (tags[1], "press"),
            _html(topic.headline + ".", f"Read more in the {kw} handbook."),
        ),
        SampleItem(
            "events",
            f"{kw}-meetup",
            "Event",
            f"{kw.capitalize()} meetup",
            f"An evening of talks about the {kw} and {tags[0]}.",
            (tags[0], "meetup"),
            _html(f"Speakers from the {kw} community share their work."),
            start=start,
            end=start + timedelta(hours=2),
        ),
        SampleItem(
            "internal",
            f"{kw}-internal-notes",
            "Document",
            f"Internal notes on the {kw}",
            f"Editorial notes about the {kw} pages, not for the public.",
            ("internal",),
            _html(f"Remember to update the {kw} handbook before the meetup."),
        ),
    ]
    # Alternate published/private inside each topic and across topics, so
    # every type and every folder has both states; internal notes always
    # stay private (their folder is private too).
    return [
        replace(item, publish=item.container != "internal" and (index + j) % 2 == 0)
        for j, item in enumerate(items)
    ]


def _extras() -> list[SampleItem]:
    festival = _EVENT_BASE + timedelta(days=200)
    return [
        SampleItem(
            "",
            "welcome",
            "Document",
            "Welcome to the catalog demo",
            "A Plone site whose catalog is PostgreSQL: search for lighthouse, "
            "orchard, telescope or volcano.",
            ("demo",),
            _html(
                "Every search on this site is answered by SQL over JSONB.",
                "Try the search box with words like glacier or sourdough.",
            ),
            publish=True,
        ),
        SampleItem(
            "about",
            "contact",
            "Document",
            "Contact",
            "How to reach the editorial team by mail or telephone.",
            ("contact",),
            _html("Write to the editors; we answer within a week."),
            publish=True,
        ),
        SampleItem(
            "about",
            "team",
            "Document",
            "Editorial team",
            "The people who write and review the pages of this site.",
            ("internal",),
            _html("Draft: list of editors and their topics."),
            publish=False,
        ),
        SampleItem(
            "events",
            "harvest-festival",
            "Event",
            "Autumn harvest festival",
            "A whole day of orchard tours, cider and sourdough bread.",
            ("outdoors", "baking", "festival"),
            _html("Music, markets and a bicycle parade through the orchard."),
            publish=True,
            start=festival,
            end=festival,
            whole_day=True,
        ),
        SampleItem(
            "events",
            "reading-group",
            "Event",
            "Weekly reading group",
            "Every Wednesday evening: a chapter of a lighthouse history, read aloud.",
            ("books", "meetup"),
            _html("Six evenings in spring, in UTC like Plone's default zone."),
            publish=True,
            start=_UTC_EVENT_START,
            end=_UTC_EVENT_START + timedelta(hours=1, minutes=30),
            recurrence="RRULE:FREQ=WEEKLY;COUNT=6",
        ),
    ]


def sample_items() -> list[SampleItem]:
    """The full plan, containers before their contents (50 items)."""
    items = _folders()
    for index, topic in enumerate(_TOPICS):
        items.extend(_topic_items(index, topic))
    items.extend(_extras())
    published = [i for i, item in enumerate(items) if item.publish]
    for day, i in enumerate(published):
        items[i] = replace(items[i], effective=_EFFECTIVE_BASE + timedelta(days=day))
    return items


def create_sample_content(portal: Any) -> int:
    """Create the sample items missing in ``portal``; return how many.

    Items whose id already exists in their container are left alone, so a
    second call creates nothing and returns 0.  Does not commit.
    """
    # Imported here, not at module level, so that reading the plan
    # (``sample_items``) works without Plone being set up.
    from DateTime import DateTime
    from plone import api
    from plone.app.textfield.value import RichTextValue

    created = 0
    for item in sample_items():
        container = portal[item.container] if item.container else portal
        if item.id in container.objectIds():
            continue
        fields: dict[str, Any] = {"subjects": item.subjects}
        if item.text is not None:
            fields["text"] = RichTextValue(item.text, "text/html", "text/x-html-safe")
        if item.start is not None:
            fields.update(
                start=item.start,
                end=item.end,
                whole_day=item.whole_day,
                recurrence=item.recurrence,
            )
        obj = api.content.create(
            container=container,
            type=item.portal_type,
            id=item.id,
            title=item.title,
            description=item.description,
            **fields,
        )
        if item.effective is not None:
            # The publication date (``effective_date``: ``EffectiveDate``,
            # ``Date``, the ``effective`` index); ``api.content.create``
            # would set a plain attribute ``effective``, hiding the method.
            obj.setEffectiveDate(DateTime(item.effective))
        if item.publish:
            api.content.transition(obj=obj, transition="publish")
        created += 1
    return created
