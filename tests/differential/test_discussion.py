"""Differential: comments (plone.app.discussion), ZCatalog as the oracle.

Comments are cataloged as objects of their own ("Discussion Item", at
``<page>/++conversation++default/<id>``) and kept in an annotation of
their page, where no walk of the site meets them.  The same comments are
written in both sites, then each phase's searches must find the same:
after the comments are added, after their folder is renamed
(plone.app.discussion moves their rows itself), after one is deleted, and
after ``clearFindAndRebuild``, which Plone makes catalog every comment of
every object it walks, and after ``refreshCatalog``.  Here, the batched
``rebuild`` too, and the health check (``pgcatalog verify``) walks them as
content.

A comment's id is the time it was added: paths are compared with each
comment's text in place of its id.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in

import pytest
import re
import transaction

#: (page, text, the text of the comment it answers or None)
COMMENTS = [
    ("news/talk", "harbour lights at dusk", None),
    ("news/talk", "the ferry was late", None),
    ("news/talk", "late ferries again", "the ferry was late"),
    ("page", "a quiet page", None),
]

#: (name, query)
QUERIES = [
    ("comments", {"portal_type": "Discussion Item"}),
    ("under the folder", {"portal_type": "Discussion Item", "path": "/plone/FOLDER"}),
    (
        "a page's comments, in order",
        {
            "portal_type": "Discussion Item",
            "path": "/plone/FOLDER/talk",
            "sort_on": "created",
        },
    ),
    ("words", {"SearchableText": "lights"}),
    ("by a creator", {"portal_type": "Discussion Item", "Creator": TEST_USER_ID}),
    ("pages with three comments", {"total_comments": 3}),
    ("commented by the user", {"commentators": TEST_USER_ID}),
]


def _add_comments(portal) -> None:
    from plone.app.discussion.interfaces import IConversation
    from zope.component import createObject

    ids: dict[str, str] = {}
    for page, text, answered in COMMENTS:
        comment = createObject("plone.Comment")
        comment.text = text
        comment.creator = TEST_USER_ID
        comment.author_username = TEST_USER_ID
        if answered is not None:
            comment.in_reply_to = ids[answered]
        conversation = IConversation(portal.unrestrictedTraverse(page))
        ids[text] = conversation.addComment(comment)


def _readable(catalog, brain) -> str:
    """The brain's path with a comment's id replaced by its text."""
    path = brain.getPath()
    match = re.search(r"/\+\+conversation\+\+default/(\d+)$", path)
    if match is None:
        return path
    text = brain._unrestrictedGetObject().text
    return f"{path[: match.start()]}/comment: {text}"


def _searches(catalog, folder: str) -> dict:
    found = {}
    for name, query in QUERIES:
        query = {
            key: (value.replace("FOLDER", folder) if isinstance(value, str) else value)
            for key, value in query.items()
        }
        brains = catalog.unrestrictedSearchResults(**query)
        paths = [_readable(catalog, brain) for brain in brains]
        found[name] = paths if "sort_on" in query else sorted(paths)
    return found


def _timezone_upgrade(portal, catalog) -> tuple:
    """plone.app.discussion's upgrade step that gives comment dates a zone:
    it finds them with ``portal_catalog.search`` (an AttributeError here,
    before this catalog had it).  The dates as a site upgraded from
    before it has them (naive), then the step; what it made of them."""
    from plone.app.discussion.upgrades import set_timezone_on_dates

    comments = catalog.unrestrictedSearchResults(portal_type="Discussion Item")
    for brain in comments:
        comment = brain._unrestrictedGetObject()
        comment.creation_date = comment.creation_date.replace(tzinfo=None)
    try:
        set_timezone_on_dates(portal)
    except Exception as exc:  # the outcome to compare
        outcome = ("raised", type(exc).__name__)
    else:
        outcome = ("done",)
    zones = sorted(
        (
            b._unrestrictedGetObject().text,
            b._unrestrictedGetObject().creation_date.tzname(),
        )
        for b in comments
    )
    transaction.abort()
    return outcome, zones


def _phases(layer, batched: bool = False) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    with api.env.adopt_roles(["Manager"]):
        folder = api.content.create(container=portal, type="Folder", id="news")
        talk = api.content.create(container=folder, type="Document", id="talk")
        page = api.content.create(container=portal, type="Document", id="page")
        # Published: a page counts the comments Anonymous may see.
        for obj in (folder, talk, page):
            api.content.transition(obj=obj, transition="publish")
    transaction.commit()
    _add_comments(portal)
    transaction.commit()
    phases = {"added": _searches(catalog, "news")}
    phases["timezone upgrade step"] = _timezone_upgrade(portal, catalog)

    with api.env.adopt_roles(["Manager"]):
        api.content.rename(obj=portal["news"], new_id="press")
    transaction.commit()
    phases["folder renamed"] = _searches(catalog, "press")

    from plone.app.discussion.interfaces import IConversation

    conversation = IConversation(portal["page"])
    del conversation[next(iter(conversation.keys()))]
    transaction.commit()
    phases["one deleted"] = _searches(catalog, "press")
    if batched:  # this catalog's
        from plone_pgcatalog import health

        found = health.verify(catalog)
        phases["verified"] = (found.missing, found.orphan, found.stale, found.rows)

    catalog.clearFindAndRebuild()
    transaction.commit()
    phases["rebuilt"] = _searches(catalog, "press")

    catalog.refreshCatalog(clear=1)
    transaction.commit()
    phases["refreshed"] = _searches(catalog, "press")

    if batched:
        catalog.rebuild(batch_size=2)
        phases["rebuilt in batches"] = _searches(catalog, "press")
    return phases


@pytest.fixture(scope="module")
def phases():
    return (
        collect_in("zcatalog discussion", _phases),
        collect_in("pg discussion", lambda layer: _phases(layer, batched=True)),
    )


PHASES = ["added", "folder renamed", "one deleted", "rebuilt", "refreshed"]
CASES = [(phase, name) for phase in PHASES for name, _ in QUERIES]


@pytest.mark.parametrize("phase,name", CASES, ids=[f"{p}: {n}" for p, n in CASES])
def test_as_zcatalog(phases, phase, name):
    zcatalog, pgcatalog = phases
    assert zcatalog[phase][name], "the test's own premise: ZCatalog finds some"
    assert pgcatalog[phase][name] == zcatalog[phase][name]


@pytest.mark.parametrize("name", [name for name, _ in QUERIES])
def test_a_batched_rebuild_keeps_the_comments(phases, name):
    _, pgcatalog = phases
    assert pgcatalog["rebuilt in batches"][name] == pgcatalog["rebuilt"][name]


def test_the_health_check_counts_comments_as_content(phases):
    """``pgcatalog verify`` walks what a rebuild catalogs: the comments'
    rows are not orphans (its repair would delete them)."""
    _, pgcatalog = phases
    missing, orphan, stale, rows = pgcatalog["verified"]
    assert (missing, orphan, stale) == ([], [], [])
    assert rows >= 3 + len(COMMENTS) - 1


def test_the_timezone_upgrade_step_finds_the_comments_as_on_zcatalog(phases):
    """plone.app.discussion's ``set_timezone_on_dates`` reads the catalog
    with ``search``: it runs as on ZCatalog and dates every comment."""
    zcatalog, pgcatalog = phases
    outcome, zones = pgcatalog["timezone upgrade step"]
    assert (outcome, zones) == zcatalog["timezone upgrade step"]
    assert outcome == ("done",) and len(zones) == len(COMMENTS)
    assert {zone for _, zone in zones} == {"UTC"}
