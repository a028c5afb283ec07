"""The content set of the differential query-language suite.

Owns: the plan of ~250 items (``ITEMS``: plain data, no Zope objects) and
``build_content``, which builds exactly that plan in a Plone site through
Plone's own APIs (plone.api, the workflow, local roles, ordering, default
pages), so that a stock ZCatalog site and a plone_pgcatalog site hold the same
content.  ``change_without_commit`` makes the uncommitted changes that the
read-your-writes queries look at.

Deterministic: no randomness, no "now".  Every date that a query can see is
set explicitly (creation, modification, effective, expiration dates, event
dates in Europe/Vienna) after the workflow ran, so the two sites, built
seconds apart, index the same values.  UIDs are derived from paths
(``uid_of``) so that queries can name them.

Must not import plone_pgcatalog: the same code builds the oracle's site.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from datetime import timedelta
from DateTime import DateTime

import hashlib
import pytz

SITE = "/plone"
MEMBER = "member1"
MEMBER_PASSWORD = "member1-Secret!"

VIENNA = pytz.timezone("Europe/Vienna")


def event_zone(i: int):
    """Events of one topic in three are in UTC, Plone's default zone (which
    zodb-pgjsonb stores as a plain offset: ``plone_pgcatalog.timezones``),
    recurring ones among them; the others in a named zone with summer time.
    """
    return pytz.utc if i % 3 == 1 else VIENNA


#: Keyword pool for Subject, with non-ASCII keywords.
SUBJECTS = (
    "Küste",
    "Natur",
    "Kultur",
    "Café",
    "Übersicht",
    "travel",
    "history",
    "family",
    "Straße",
    "outdoor",
)


@dataclass(frozen=True)
class Topic:
    slug: str
    en: str  # English singular
    en_plural: str
    de: str  # German singular
    de_plural: str


#: One topic per row: each gives nine items.  English singular and plural
#: (and German singular and plural) go to different items, so stemming
#: queries ("lighthouses" finds "lighthouse") have items that only stemming
#: finds.
TOPICS = (
    Topic("lighthouse", "lighthouse", "lighthouses", "Leuchtturm", "Leuchttürme"),
    Topic("garden", "garden", "gardens", "Garten", "Gärten"),
    Topic("bridge", "bridge", "bridges", "Brücke", "Brücken"),
    Topic("harbour", "harbour", "harbours", "Hafen", "Häfen"),
    Topic("library", "library", "libraries", "Bibliothek", "Bibliotheken"),
    Topic("museum", "museum", "museums", "Museum", "Museen"),
    Topic("market", "market", "markets", "Markt", "Märkte"),
    Topic("castle", "castle", "castles", "Burg", "Burgen"),
    Topic("mountain", "mountain", "mountains", "Berg", "Berge"),
    Topic("river", "river", "rivers", "Fluss", "Flüsse"),
    Topic("cafe", "café", "cafés", "Café", "Cafés"),
    Topic("island", "island", "islands", "Insel", "Inseln"),
    Topic("forest", "forest", "forests", "Wald", "Wälder"),
    Topic("station", "station", "stations", "Bahnhof", "Bahnhöfe"),
    Topic("concert", "concert", "concerts", "Konzert", "Konzerte"),
    Topic("tower", "tower", "towers", "Turm", "Türme"),
    Topic("village", "village", "villages", "Dorf", "Dörfer"),
    Topic("beach", "beach", "beaches", "Strand", "Strände"),
    Topic("school", "school", "schools", "Schule", "Schulen"),
    Topic("theatre", "theatre", "theatres", "Theater", "Theaterbühnen"),
    Topic("church", "church", "churches", "Kirche", "Kirchen"),
    Topic("lake", "lake", "lakes", "Teich", "Teiche"),
    Topic("valley", "valley", "valleys", "Tal", "Täler"),
    Topic("meadow", "meadow", "meadows", "Wiese", "Wiesen"),
)


@dataclass(frozen=True)
class Item:
    """One object of the plan; ``path`` is relative to the site."""

    path: str
    portal_type: str
    title: str
    description: str = ""
    text: str | None = None  # HTML
    language: str = "en"
    subjects: tuple[str, ...] = ()
    state: str = "private"  # private | pending | published
    creator: str | None = None  # None: the test user who creates it
    effective: DateTime | None = None
    expires: DateTime | None = None
    exclude_from_nav: bool = False
    remote_url: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    whole_day: bool = False
    open_end: bool = False
    recurrence: str | None = None

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""


def uid_of(path: str) -> str:
    """The UID the plan gives ``path`` (site-relative or absolute)."""
    relative = path.removeprefix(SITE + "/").strip("/")
    return hashlib.md5(relative.encode("utf-8")).hexdigest()


def _html(*paragraphs: str) -> str:
    return "".join(f"<p>{p}</p>" for p in paragraphs)


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]


EN_DOC_FOLDERS = (
    "en/guides",
    "en/guides/coast",
    "en/guides/coast/north",
    "en/guides/coast/north/cliffs",
)
DE_DOC_FOLDERS = (
    "de/anleitungen",
    "de/anleitungen/kueste",
    "de/anleitungen/kueste/norden",
    "de/anleitungen/kueste/norden/klippen",
)
TEAM_FOLDERS = (
    "team",
    "team/projects",
    "team/projects/alpha",
    "team/projects/alpha/notes",
)

#: Recurrence rules of some events (topic index -> RRULE).  Event 2 starts on
#: 2030-03-07 and recurs across the switch to summer time (2030-03-31).
RECURRENCES = {
    0: "RRULE:FREQ=WEEKLY;COUNT=5",
    2: "RRULE:FREQ=WEEKLY;COUNT=5",
    4: "RRULE:FREQ=MONTHLY;COUNT=4",
    6: "RRULE:FREQ=DAILY;INTERVAL=2;COUNT=3",
    9: "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6",
    13: "RRULE:FREQ=YEARLY;COUNT=3",
    14: "RRULE:FREQ=WEEKLY;UNTIL=20301231T000000Z",
    19: "RRULE:FREQ=WEEKLY;COUNT=5",
}


def _folders() -> list[Item]:
    def folder(path, title, description, language="en", state="published", **kw):
        return Item(
            path, "Folder", title, description, language=language, state=state, **kw
        )

    return [
        folder("en", "English section", "Travel notes in English for the coast."),
        folder("en/guides", "Travel handbook", "Handbook pages about places."),
        folder("en/guides/coast", "Coast", "Places along the coast."),
        folder("en/guides/coast/north", "North coast", "The northern shore."),
        folder("en/guides/coast/north/cliffs", "Cliffs", "Steep cliffs and caves."),
        folder("en/news", "Newsroom", "Announcements from the region."),
        folder("en/events", "Calendar", "Celebrations and gatherings."),
        folder(
            "en/links", "Weblinks", "Pointers to other websites.", exclude_from_nav=True
        ),
        folder(
            "en/drafts",
            "Drafts",
            "Unfinished plans.",
            state="private",
            exclude_from_nav=True,
        ),
        folder(
            "de", "Deutscher Bereich", "Eine Übersicht über die Küste.", language="de"
        ),
        folder(
            "de/anleitungen",
            "Anleitungen",
            "Ausflugsziele im Überblick.",
            language="de",
        ),
        folder("de/anleitungen/kueste", "Küste", "Orte an der Küste.", language="de"),
        folder(
            "de/anleitungen/kueste/norden",
            "Norden",
            "Die nördliche Küste.",
            language="de",
        ),
        folder(
            "de/anleitungen/kueste/norden/klippen",
            "Klippen",
            "Steile Felsen und Höhlen.",
            language="de",
        ),
        folder(
            "de/nachrichten", "Nachrichten", "Meldungen aus der Region.", language="de"
        ),
        folder(
            "de/veranstaltungen", "Veranstaltungen", "Feste und Treffen.", language="de"
        ),
        folder("team", "Team room", "Internal workspace.", state="private"),
        folder("team/projects", "Projects", "Ongoing internal work.", state="private"),
        folder("team/projects/alpha", "Alpha", "Project alpha.", state="private"),
        folder(
            "team/projects/alpha/notes", "Notebook", "Meeting minutes.", state="private"
        ),
        folder("archive", "Archive", "Old and upcoming reports."),
        folder("archive/2001", "Year 2001", "Reports of the year 2001."),
    ]


def _pages() -> list[Item]:
    return [
        Item(
            "front-page",
            "Document",
            "Welcome to the coast",
            "Start here: travel notes, news and a calendar.",
            _html(
                "Welcome! This website collects travel notes about the coast.",
                'Read the <a href="en">English section</a> or the German one.',
            ),
            state="published",
            subjects=("travel",),
        ),
        Item(
            "about",
            "Document",
            "About this website",
            "Who writes these notes.",
            _html("Written by volunteers who love the seaside."),
            state="published",
        ),
        Item(
            "contact",
            "Document",
            "Contact form",
            "How to reach the editors.",
            _html("Send an e-mail to editors@example.org (C++ & 50% faster)."),
            state="private",
        ),
        Item(
            "impressum",
            "Document",
            "Impressum",
            "Angaben gemäß Telemediengesetz.",
            _html("Verantwortlich für den Inhalt: die Redaktion, Straße 1, Wien."),
            language="de",
            state="published",
            subjects=("Straße",),
        ),
        Item(
            "en/overview",
            "Document",
            "English overview",
            "An overview of the English section.",
            _html("This overview lists every place: harbours, cliffs and more."),
            state="published",
        ),
        Item(
            "de/uebersicht",
            "Document",
            "Übersicht",
            "Übersicht über den deutschen Bereich.",
            _html("Diese Übersicht nennt jeden Ort an der Küste."),
            language="de",
            state="published",
            subjects=("Übersicht",),
        ),
    ]


def _topic_items(i: int, t: Topic) -> list[Item]:
    en_subjects = tuple(dict.fromkeys((SUBJECTS[i % 10], SUBJECTS[(i * 3 + 1) % 10])))
    de_subjects = (SUBJECTS[(i + 5) % 10],)
    zone = event_zone(i)
    start = zone.localize(datetime(2030, 1 + i % 12, 5 + i, 10 + i % 6, 15 * (i % 4)))
    whole_day = i % 5 == 2
    if whole_day:
        start = zone.localize(datetime(start.year, start.month, start.day))
        end = start + timedelta(hours=23, minutes=59, seconds=59)
    else:
        end = start + timedelta(hours=1 + i % 3)
    n = i + 1
    items = [
        # English page: the singular only.
        Item(
            f"{EN_DOC_FOLDERS[i // 6]}/{t.slug}-guide",
            "Document",
            f"{_cap(t.en)} guide",
            f"A practical guide to the {t.en} for visitors.",
            _html(
                f"This page describes the {t.en} in detail.",
                f"The best time to visit the {t.en} is early morning.",
            ),
            subjects=en_subjects,
            state="published" if i % 4 else "pending",
        ),
        # German page: the German singular only.
        Item(
            f"{DE_DOC_FOLDERS[i // 6]}/{t.slug}-anleitung",
            "Document",
            f"{t.de} – Anleitung",
            f"Eine kurze Anleitung für Besucher: {t.de} und Umgebung.",
            _html(
                f"Diese Seite beschreibt {t.de} ausführlich.",
                "Die beste Zeit für einen Besuch: der frühe Morgen.",
            ),
            language="de",
            subjects=de_subjects,
            state="published" if i % 3 else "private",
        ),
        # English news: the plural.
        Item(
            f"en/news/{t.slug}-news",
            "News Item",
            f"{_cap(t.en_plural)} reopen after renovation",
            f"All {t.en_plural} of the region reopen this spring.",
            _html(
                f"The {t.en_plural} were closed for two years.",
                f"Tourists can explore the {t.en_plural} again.",
            ),
            subjects=en_subjects[:1],
            state="private" if i % 8 == 7 else "published",
        ),
        # German news: the German plural.
        Item(
            f"de/nachrichten/{t.slug}-nachricht",
            "News Item",
            f"Neuigkeiten: {t.de_plural} wieder geöffnet",
            f"Sämtliche {t.de_plural} der Region öffnen im Frühling.",
            _html(f"Nach zwei Jahren sind die {t.de_plural} wieder geöffnet."),
            language="de",
            subjects=de_subjects,
            state="pending" if i % 8 == 3 else "published",
        ),
        # Event, English for even topics, German for odd ones.
        Item(
            (
                f"en/events/{t.slug}-festival"
                if i % 2 == 0
                else f"de/veranstaltungen/{t.slug}-fest"
            ),
            "Event",
            f"{_cap(t.en)} festival" if i % 2 == 0 else f"Fest: {t.de}",
            (
                f"A festival at the {t.en} with music and food."
                if i % 2 == 0
                else f"Ein Fest am Ort {t.de} mit Musik."
            ),
            _html(
                (
                    "Bring friends; entry is free."
                    if i % 4 == 0
                    else "Tickets at the door."
                )
                if i % 2 == 0
                else "Eintritt frei, bitte Freunde mitbringen."
            ),
            language="en" if i % 2 == 0 else "de",
            subjects=(SUBJECTS[(i * 7) % 10],) if i % 3 else (),
            state="private" if i % 5 == 4 else "published",
            start=start,
            end=end,
            whole_day=whole_day,
            open_end=i % 7 == 3,
            recurrence=RECURRENCES.get(i),
        ),
        # Link: no body text.
        Item(
            f"en/links/{t.slug}-link",
            "Link",
            f"{_cap(t.en)} website",
            f"Official website of the {t.en}.",
            remote_url=f"https://example.org/{t.slug}",
            state="published",
            exclude_from_nav=i % 2 == 0,
        ),
        # Internal note in the team room; member1 is Editor there.
        Item(
            f"{TEAM_FOLDERS[i % 4]}/{t.slug}-notes",
            "Document",
            f"Internal notes {n}: {t.en}",
            "Confidential minutes.",
            _html(f"Budget for the {t.en}: confidential."),
            creator="member1" if i % 2 == 0 else None,
            subjects=("family",) if i % 3 == 0 else (),
            state={0: "pending", 1: "published"}.get(i % 6, "private"),
        ),
        # Archive: expired (even) or effective only in 2099 (odd).
        Item(
            f"{'archive' if i < 12 else 'archive/2001'}/report-{n}",
            "Document",
            (
                f"Archive report {n}: {t.en}"
                if i % 2 == 0
                else f"Announcement {n}: {t.en}"
            ),
            "Expired report." if i % 2 == 0 else "Announced for the future.",
            _html(f"Report number {n} about the {t.en}."),
            subjects=("history",),
            state="published",
            effective=(
                DateTime("2000/01/01 10:00:00 GMT+1") + i
                if i % 2 == 0
                else DateTime("2099/01/01 10:00:00 GMT+1") + i
            ),
            expires=DateTime("2001/01/01 10:00:00 GMT+1") + i if i % 2 == 0 else None,
        ),
        # Drafts: the English plural, pending or private.
        Item(
            f"en/drafts/{t.slug}-draft",
            "Document",
            f"Draft plan {n} for new {t.en_plural}",
            "Unfinished.",
            _html(f"Plans for new {t.en_plural} near the coast."),
            state="private" if i % 3 == 0 else "pending",
        ),
    ]
    return items


def _negation_items() -> list[Item]:
    """Pages for negated full text (``python -zope``) on a bilingual site.

    A word's stem differs between the languages ("zope" in English, "zop"
    in German; "plone" / "plon"; "Café": "cafe", without its "e" in German),
    so a German page that contains a negated word has no English stem of
    it: negation must exclude the word in every form, not per language.
    Their words occur nowhere else in the content.  Last in the plan, so
    that the other items keep their positions (and their dates).
    """
    return [
        Item(
            "de/plone-konferenz",
            "Document",
            "Plone-Konferenz in Wien",
            "Vorträge über Python und Zope.",
            _html("Die Plone-Konferenz zeigt Python, Zope und Volto."),
            language="de",
            state="published",
        ),
        Item(
            "de/python-kurs",
            "Document",
            "Python-Kurs",
            "Python lernen für Einsteiger.",
            _html("Wir treffen uns im Café Zentral."),
            language="de",
            state="published",
        ),
        Item(
            "en/python-sprint",
            "Document",
            "Python sprint",
            "Programmers meet for a sprint.",
            _html("No slides, only pair programming."),
            state="published",
        ),
        Item(
            "en/zope-history",
            "Document",
            "ZOPE and Python",
            "Where Zope came from.",
            _html("Zope was the first Python application server."),
            state="published",
        ),
    ]


def _plan() -> tuple[Item, ...]:
    items = _folders() + _pages()
    for i, topic in enumerate(TOPICS):
        items += _topic_items(i, topic)
    items += _negation_items()
    # Parents before children; otherwise plan order, which is also the
    # order of creation and so of getObjPositionInParent.
    depth = {item.path: item.path.count("/") for item in items}
    return tuple(
        sorted(
            items,
            key=lambda item: depth[item.path] if item.portal_type == "Folder" else 99,
        )
    )


ITEMS: tuple[Item, ...] = _plan()
BY_PATH = {item.path: item for item in ITEMS}

#: Explicit order in two folders: (folder, method, ids, argument).
REORDERINGS = (
    ("en/news", "moveObjectsToTop", ["meadow-news"], None),
    ("en/news", "moveObjectsByDelta", ["garden-news"], 3),
    ("en/news", "moveObjectsToBottom", ["lighthouse-news"], None),
    (
        "de/nachrichten",
        "moveObjectsByDelta",
        ["bridge-nachricht", "cafe-nachricht"],
        -2,
    ),
    ("de/nachrichten", "moveObjectsToTop", ["valley-nachricht"], None),
    ("en/guides", "moveObjectsToTop", ["market-guide"], None),
)

#: Folder -> its default page.
DEFAULT_PAGES = (("en", "overview"), ("de", "uebersicht"))

#: Index removed from both catalogs: queries on it must be ignored.
DELETED_INDEX = "in_reply_to"


def _dates(position: int, item: Item) -> dict:
    """Creation/modification/effective/expiration dates of one item.

    Unique to the minute for every item (DateIndex resolution), so that
    sorting on them is a total order.  Multiplying by a number prime to the
    modulus (97 mod 1009, 53 mod 1013) permutes positions without repeats.
    """
    created = DateTime("2020/01/01 08:00:00 GMT+1") + position / 4.0
    modified = DateTime("2022/01/01 08:00:00 GMT+1") + ((position * 97) % 1009) / 4.0
    effective = item.effective
    if effective is None and item.state == "published":
        effective = (
            DateTime("2021/01/01 09:00:00 GMT+1") + ((position * 53) % 1013) / 4.0
        )
    return {
        "created": created,
        "modified": modified,
        "effective": effective,
        "expires": item.expires,
    }


def dates_of(path: str) -> dict:
    """The dates ``build_content`` gives the item at ``path``."""
    relative = path.removeprefix(SITE + "/")
    for position, item in enumerate(ITEMS):
        if item.path == relative:
            return _dates(position, item)
    raise KeyError(path)


def build_content(portal) -> None:
    """Build ``ITEMS`` in ``portal`` as the test user (made Manager).

    Four transactions, as four requests would be: create, workflow and
    local roles, dates, then everything is committed.
    """
    from plone import api
    from plone.app.testing import setRoles
    from plone.app.testing import TEST_USER_ID
    from plone.app.textfield.value import RichTextValue
    from plone.uuid.interfaces import IMutableUUID

    import transaction

    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.user.create(
        email="member1@example.org", username=MEMBER, password=MEMBER_PASSWORD
    )

    # A bilingual site declares both languages (stemming follows them).
    api.portal.set_registry_record("plone.available_languages", ["en", "de"])

    # 1. Create.  The site root gets a planned UID too (UID range queries
    # would otherwise depend on the random one each site was born with).
    IMutableUUID(portal).set(uid_of(""))
    portal.reindexObject(idxs=["UID"])
    for item in ITEMS:
        container = portal.unrestrictedTraverse(item.parent) if item.parent else portal
        fields = {
            "title": item.title,
            "description": item.description,
            "language": item.language,
            "subject": item.subjects,
            "exclude_from_nav": item.exclude_from_nav,
        }
        if item.text is not None:
            fields["text"] = RichTextValue(item.text, "text/html", "text/x-html-safe")
        if item.remote_url is not None:
            fields["remoteUrl"] = item.remote_url
        if item.portal_type == "Event":
            fields.update(
                start=item.start,
                end=item.end,
                whole_day=item.whole_day,
                open_end=item.open_end,
                recurrence=item.recurrence,
            )
        obj = api.content.create(
            container=container,
            type=item.portal_type,
            id=item.id,
            safe_id=False,
            **fields,
        )
        assert obj.getId() == item.id, (obj.getId(), item.id)
        IMutableUUID(obj).set(uid_of(item.path))
        if item.creator:
            obj.setCreators((item.creator,))
    for folder, method, ids, argument in REORDERINGS:
        target = portal.unrestrictedTraverse(folder)
        if argument is None:
            getattr(target, method)(ids)
        else:
            getattr(target, method)(ids, argument)
    for folder, page in DEFAULT_PAGES:
        portal.unrestrictedTraverse(folder).setDefaultPage(page)
    portal.portal_catalog.delIndex(DELETED_INDEX)
    transaction.commit()

    # 2. Workflow, then local roles (two ways: plone.api and the OFS API).
    apply_states(portal, ITEMS)
    transaction.commit()
    api.user.grant_roles(username=MEMBER, obj=portal.team, roles=["Editor"])
    anleitungen = portal.unrestrictedTraverse("de/anleitungen")
    anleitungen.manage_setLocalRoles(MEMBER, ["Reader"])
    anleitungen.reindexObjectSecurity()
    transaction.commit()

    # 3. Dates last: the steps above may touch modification dates.  A
    # reindex that names every index does not set a new modification date.
    names = list(portal.portal_catalog.indexes())
    for position, item in enumerate(ITEMS):
        obj = portal.unrestrictedTraverse(item.path)
        dates = _dates(position, item)
        obj.creation_date = dates["created"]
        obj.setModificationDate(dates["modified"])
        obj.setEffectiveDate(dates["effective"])
        obj.setExpirationDate(dates["expires"])
        obj.reindexObject(idxs=names)
    # The site root too: it was created when its site was, not by the plan.
    portal.creation_date = DateTime("2019/12/31 08:00:00 GMT+1")
    portal.setModificationDate(DateTime("2021/12/31 08:00:00 GMT+1"))
    portal.reindexObject(idxs=names)
    transaction.commit()


#: What ``change_without_commit`` does, for the read-your-writes queries.
RYW_NEW = "en/guides/fresh-page"
RYW_RETITLED = "en/news/garden-news"
RYW_DELETED = "en/links/bridge-link"
RYW_MOVED_FROM = "en/guides/harbour-guide"
RYW_MOVED_TO = "de/anleitungen/harbour-guide"
RYW_RENAMED_FROM = "de/nachrichten/market-nachricht"
RYW_RENAMED_TO = "de/nachrichten/markt-nachricht"
RYW_SHARED = "en/drafts"


def change_without_commit(portal) -> None:
    """Change content in the current transaction and do not commit.

    A new published page, a new title, a deletion, a move, a rename and a
    new local role for member1, each done as a Plone request would do it.
    """
    from plone import api
    from plone.app.testing import setRoles
    from plone.app.testing import TEST_USER_ID
    from plone.app.textfield.value import RichTextValue

    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal.unrestrictedTraverse("en/guides"),
        type="Document",
        id="fresh-page",
        title="Freshly written page",
        description="Written a moment ago.",
        language="en",
        text=RichTextValue(
            _html("Kingfisher sighted."), "text/html", "text/x-html-safe"
        ),
    )
    api.content.transition(obj=page, transition="publish")
    news = portal.unrestrictedTraverse(RYW_RETITLED)
    news.title = "Gardens bloom (edited)"
    news.reindexObject()
    api.content.delete(obj=portal.unrestrictedTraverse(RYW_DELETED))
    api.content.move(
        source=portal.unrestrictedTraverse(RYW_MOVED_FROM),
        target=portal.unrestrictedTraverse("de/anleitungen"),
    )
    api.content.rename(
        obj=portal.unrestrictedTraverse(RYW_RENAMED_FROM),
        new_id=RYW_RENAMED_TO.rsplit("/", 1)[1],
    )
    api.user.grant_roles(
        username=MEMBER, obj=portal.unrestrictedTraverse(RYW_SHARED), roles=["Reader"]
    )


def become(portal, user: str) -> None:
    """Log in as one of the suite's users: manager, member or anonymous."""
    from plone.app.testing import login
    from plone.app.testing import logout
    from plone.app.testing import setRoles
    from plone.app.testing import TEST_USER_ID
    from plone.app.testing import TEST_USER_NAME

    if user == "manager":
        login(portal, TEST_USER_NAME)
        setRoles(portal, TEST_USER_ID, ["Manager"])
    elif user == "member":
        login(portal, MEMBER)
    else:
        logout()


def apply_states(portal, items) -> None:
    """Move each item (with ``path`` and ``state``) to its workflow state
    through simple_publication_workflow's transitions."""
    from plone import api

    for item in items:
        obj = portal.unrestrictedTraverse(item.path)
        if item.state == "published":
            api.content.transition(obj=obj, transition="publish")
        elif item.state == "pending":
            api.content.transition(obj=obj, transition="submit")
