"""The catalog through Plone's real consumers: shared site and plone.api.

Owns the content every ``test_consumer_*`` module builds (the same tree in
the ZCatalog oracle site and in the plone_pgcatalog site), the harness that
runs named probes in both sites, and the probes of ``plone.api.content.find``
and of read-your-writes as plone.api users rely on it.

A probe is a function of the active layer that returns plain, comparable
data (paths, titles, JSON).  Each probe runs in its own transaction, which
is aborted afterwards, so probes that write do not leak into the next one.
A probe that raises is recorded as a ``Failure`` with its traceback, so one
broken consumer does not hide the others.

Must not import plone_pgcatalog internals (only its test layers): consumers
see only Plone's API.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from DateTime import DateTime
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone.app.testing import TEST_USER_PASSWORD
from plone.app.textfield.value import RichTextValue
from Products.CMFCore.interfaces import IFolderish
from tests.conftest import run_in
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import pytest
import traceback
import transaction

ZONE = "Europe/Vienna"


def when(text: str) -> DateTime:
    """A fixed DateTime in a named zone (never UTC, see plone.app.event)."""
    return DateTime(f"{text} {ZONE}")


# (container path below the portal, type, id, title, subjects, state,
#  effective, extra attributes)
# fmt: off
CONTENT = [
    ("", "Document", "about", "About the harbour", ("alpha",), "published",
     "2020/01/01 10:00", {"description": "Who keeps the lighthouse"}),
    ("", "Folder", "news", "News", (), "published", "2020/01/02 10:00", {}),
    ("news", "News Item", "harbour-opens", "Harbour opens", ("alpha", "beta"),
     "published", "2021/05/01 10:00", {}),
    # Published, but not effective before 2099: hidden from Anonymous.
    ("news", "News Item", "future-harbour", "Future harbour", ("beta",),
     "published", "2099/01/01 10:00", {}),
    ("news", "News Item", "draft", "Draft about the lighthouse", ("gamma",),
     "private", None, {}),
    ("", "Folder", "docs", "Documentation", (), "published", "2020/01/03 10:00", {}),
    ("docs", "Folder", "guide", "Guide", ("alpha",), "published",
     "2020/01/04 10:00", {}),
    ("docs/guide", "Document", "intro", "Introduction", ("alpha", "gamma"),
     "published", "2019/03/03 10:00",
     {"text": "<p>Welcome to the lighthouse guide</p>"}),
    ("docs/guide", "Folder", "advanced", "Advanced", (), "published",
     "2020/01/05 10:00", {}),
    ("docs/guide/advanced", "Document", "tips", "Tips and tricks", ("Délta",),
     "published", "2022/02/02 10:00", {"text": "<p>Keeping a lighthouse lit</p>"}),
    ("docs/guide", "Document", "hidden", "Hidden page", (), "published",
     "2020/01/06 10:00", {"exclude_from_nav": True}),
    ("docs", "Document", "faq", "FAQ", ("beta",), "private", None, {}),
    # Expired in 2020: only users who may see inactive content find it.
    ("docs", "Document", "expired", "Expired notice", ("beta",), "published",
     "2019/01/01 10:00", {"expires": "2020/01/01 10:00"}),
    ("", "Folder", "private-folder", "Private folder", (), "private", None, {}),
    ("private-folder", "Document", "secret", "Secret but published", ("alpha",),
     "published", "2020/01/07 10:00", {}),
]
# fmt: on


def build_content(portal) -> None:
    """Build ``CONTENT`` as the test user with Manager role, and commit."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.portal.set_registry_record("plone.portal_timezone", ZONE)
    # What plone.restapi's profile grants, so Anonymous may call @search.
    portal.manage_permission(
        "plone.restapi: Use REST API", ["Anonymous", "Authenticated"], acquire=True
    )
    for parent, portal_type, id_, title, subjects, state, effective, extra in CONTENT:
        container = portal.unrestrictedTraverse(parent) if parent else portal
        extra = dict(extra)
        expires = extra.pop("expires", None)
        text = extra.pop("text", None)
        if text is not None:
            extra["text"] = RichTextValue(text, "text/html", "text/x-html-safe")
        obj = api.content.create(
            container=container,
            type=portal_type,
            id=id_,
            title=title,
            subject=subjects,
            **extra,
        )
        if effective:
            obj.setEffectiveDate(when(effective))
        if expires:
            obj.setExpirationDate(when(expires))
        if state == "published":
            api.content.transition(obj=obj, transition="publish")
        obj.reindexObject()
    guide = portal["docs"]["guide"]
    guide.setDefaultPage("intro")
    guide["intro"].reindexObject()
    # Reordering must be seen by getObjPositionInParent.
    portal.moveObjectsToTop(["docs"])
    transaction.commit()


@dataclass(frozen=True)
class Failure:
    """A probe that raised: its error and traceback, for the report."""

    error: str
    trace: str


def as_anonymous(probe: Callable) -> Callable:
    """Run ``probe`` logged out."""

    def anonymous(layer):
        logout()
        return probe(layer)

    anonymous.__name__ = probe.__name__
    return anonymous


def _run_probe(layer, probe: Callable):
    try:
        return probe(layer)
    except Exception as exc:
        return Failure(f"{type(exc).__name__}: {exc}", traceback.format_exc())
    finally:
        transaction.abort()
        # A publisher call or a probe may have changed the thread's site,
        # request and user: restore what the layer gave.
        setSite(layer["portal"])
        setRequest(layer["request"])
        login(layer["portal"], TEST_USER_NAME)


def _layer(layer_name: str):
    from plone_pgcatalog import testing

    return {
        "pg": testing.PGCATALOG_FUNCTIONAL_TESTING,
        "zcatalog": testing.ZCATALOG_FUNCTIONAL_TESTING,
    }[layer_name]


@contextmanager
def restapi_in_zcatalog_site():
    """Make plone.restapi's components visible to the ZCatalog oracle site.

    The pg fixture loads plone.restapi's ZCML into the global registry it
    pushes before creating its site; the ZCatalog fixture loads none, and
    its site's persistent component registry names its base registry, which
    unpickling resolves with ``plone.testing.zca.loadRegistry`` (the newest
    registry of that name).  So, for the time of the oracle's observation,
    a registry of that name is pushed, based on the pg fixture's registry
    (which has restapi): connections opened meanwhile (the test's and the
    publisher's) see restapi in the oracle site as in the pg site.  ZCML is
    not loaded twice (restapi also registers a PAS plugin class globally,
    which fails a second time).  Popping restores the previous registry.
    """
    from plone.testing import zca
    from zope.component import globalregistry

    # The pg fixture must be set up first: its registry is the one to base on.
    runner = run_in(_layer("pg"))
    next(runner)
    runner.close()
    runner = run_in(_layer("zcatalog"))
    try:
        base_name = next(runner)["portal"].getSiteManager().__bases__[0].__name__
    finally:
        runner.close()
    zca.pushGlobalRegistry(
        globalregistry.BaseGlobalComponents(
            name=base_name, bases=(globalregistry.base,)
        )
    )
    try:
        yield
    finally:
        zca.popGlobalRegistry()


def observe(
    layer_name: str,
    probes: dict[str, Callable],
    build: Callable = build_content,
) -> dict:
    """Build the content in one site, run every probe there, return outcomes."""
    if layer_name == "zcatalog":
        with restapi_in_zcatalog_site():
            return _observe(_layer(layer_name), probes, build)
    return _observe(_layer(layer_name), probes, build)


def _observe(layer, probes: dict[str, Callable], build: Callable) -> dict:
    runner = run_in(layer)
    active = next(runner)
    try:
        build(active["portal"])
        return {name: _run_probe(active, probe) for name, probe in probes.items()}
    finally:
        runner.close()


def observe_both(probes: dict[str, Callable], build: Callable = build_content) -> dict:
    return {
        "zcatalog": observe("zcatalog", probes, build),
        "pg": observe("pg", probes, build),
    }


def oracle(observed: dict, name: str):
    """What ZCatalog's site answered to probe ``name``, for pins."""
    answer = observed["zcatalog"][name]
    assert not isinstance(answer, Failure), f"probe broken on ZCatalog:\n{answer.trace}"
    return answer


def compare(observed: dict, name: str, expected=None) -> None:
    """pg must give what ZCatalog gives; ``expected`` pins the oracle too.

    Pinning the oracle keeps a probe honest: a probe that returned nothing
    on both sites would otherwise pass without proving anything.
    """
    expected_by_zcatalog = oracle(observed, name)
    if expected is not None:
        assert expected_by_zcatalog == expected, "probe misses what the content implies"
    actual = observed["pg"][name]
    assert not isinstance(actual, Failure), f"pg raised:\n{actual.trace}"
    assert actual == expected_by_zcatalog


@contextmanager
def browser_for(layer, user: str | None = TEST_USER_NAME, password=TEST_USER_PASSWORD):
    """A zope.testbrowser publishing through Zope to ``layer``'s database.

    The pg layer's database is not the one plone.testing's startup layer
    publishes to; shadowing its ``zodbDB`` resource for the duration points
    Zope's database facade at it, so requests go through the real publisher
    (traversal, authentication, plone.rest dispatch, transaction) to the
    plone_pgcatalog site.
    """
    from plone.testing.zope import Browser

    shadow = "pgdb" in layer
    if shadow:
        layer["zodbDB"] = layer["pgdb"]
    try:
        browser = Browser(layer["app"])
        browser.handleErrors = False
        if user is not None:
            browser.addHeader("Authorization", f"Basic {user}:{password}")
        yield browser
    finally:
        if shadow:
            del layer["zodbDB"]


def paths(brains) -> list[str]:
    return [brain.getPath() for brain in brains]


def path_set(brains) -> list[str]:
    return sorted(paths(brains))


# -- plone.api.content.find ------------------------------------------------

FIND_PROBES = {
    "portal_type": lambda layer: path_set(api.content.find(portal_type="Document")),
    "types sorted by title": lambda layer: paths(
        api.content.find(portal_type=["News Item", "Folder"], sort_on="sortable_title")
    ),
    "context": lambda layer: path_set(
        api.content.find(context=layer["portal"]["docs"])
    ),
    "context depth 1": lambda layer: path_set(
        api.content.find(context=layer["portal"]["docs"], depth=1)
    ),
    "path depth 2": lambda layer: path_set(
        api.content.find(path="/plone/docs", depth=2)
    ),
    "portal depth 1 in position order": lambda layer: paths(
        api.content.find(depth=1, sort_on="getObjPositionInParent")
    ),
    "two paths depth 1": lambda layer: path_set(
        api.content.find(
            path={"query": ["/plone/news", "/plone/private-folder"], "depth": 1}
        )
    ),
    "subject": lambda layer: path_set(api.content.find(Subject="alpha")),
    "subject any with non-ascii": lambda layer: path_set(
        api.content.find(Subject=["beta", "Délta"])
    ),
    "subject all": lambda layer: path_set(
        api.content.find(Subject={"query": ["alpha", "beta"], "operator": "and"})
    ),
    "review_state sorted": lambda layer: paths(
        api.content.find(review_state="private", sort_on="sortable_title")
    ),
    "effective descending": lambda layer: paths(
        api.content.find(
            portal_type="Document", sort_on="effective", sort_order="descending"
        )
    ),
    "object_provides interface": lambda layer: path_set(
        api.content.find(object_provides=IFolderish)
    ),
    "SearchableText": lambda layer: path_set(
        api.content.find(SearchableText="lighthouse")
    ),
    "Title words": lambda layer: path_set(api.content.find(Title="harbour")),
    "no criteria": lambda layer: list(api.content.find()),
    "only sort_on": lambda layer: list(api.content.find(sort_on="sortable_title")),
    "only unknown key": lambda layer: list(api.content.find(no_such_index="x")),
    "anonymous documents": as_anonymous(
        lambda layer: path_set(api.content.find(portal_type="Document"))
    ),
    "anonymous news": as_anonymous(
        lambda layer: path_set(api.content.find(context=layer["portal"]["news"]))
    ),
    "anonymous unrestricted": as_anonymous(
        lambda layer: path_set(
            api.content.find(portal_type="News Item", unrestricted=True)
        )
    ),
}


def _ranked(layer):
    brains = api.content.find(SearchableText="lighthouse")
    return [(brain.getPath(), brain.data_record_score_) for brain in brains]


FIND_EXPECTED = {
    "portal_type": [
        "/plone/about",
        "/plone/docs/expired",
        "/plone/docs/faq",
        "/plone/docs/guide/advanced/tips",
        "/plone/docs/guide/hidden",
        "/plone/docs/guide/intro",
        "/plone/private-folder/secret",
    ],
    "context depth 1": [
        "/plone/docs/expired",
        "/plone/docs/faq",
        "/plone/docs/guide",
    ],
    "portal depth 1 in position order": [
        "/plone/docs",
        "/plone/about",
        "/plone/news",
        "/plone/private-folder",
    ],
    "subject all": ["/plone/news/harbour-opens"],
    "subject any with non-ascii": [
        "/plone/docs/expired",
        "/plone/docs/faq",
        "/plone/docs/guide/advanced/tips",
        "/plone/news/future-harbour",
        "/plone/news/harbour-opens",
    ],
    "SearchableText": [
        "/plone/about",
        "/plone/docs/guide/advanced/tips",
        "/plone/docs/guide/intro",
        "/plone/news/draft",
    ],
    "no criteria": [],
    "only sort_on": [],
    "only unknown key": [],
    "anonymous documents": [
        "/plone/about",
        "/plone/docs/guide/advanced/tips",
        "/plone/docs/guide/hidden",
        "/plone/docs/guide/intro",
        "/plone/private-folder/secret",
    ],
    "anonymous news": ["/plone/news", "/plone/news/harbour-opens"],
    "anonymous unrestricted": [
        "/plone/news/draft",
        "/plone/news/future-harbour",
        "/plone/news/harbour-opens",
    ],
}


# -- read-your-writes, as code built on plone.api relies on it ---------------


def _created_then_found(layer):
    docs = layer["portal"]["docs"]
    api.content.create(container=docs, type="Document", id="fresh", title="Fresh")
    return path_set(api.content.find(context=docs, depth=1))


def _renamed_then_found(layer):
    api.content.rename(obj=layer["portal"]["about"], new_id="about-us")
    return path_set(api.content.find(Subject="alpha", portal_type="Document"))


def _moved_then_found(layer):
    portal = layer["portal"]
    api.content.move(source=portal["docs"]["guide"], target=portal["news"])
    return path_set(api.content.find(path="/plone/news"))


def _deleted_then_not_found(layer):
    api.content.delete(obj=layer["portal"]["news"]["harbour-opens"])
    return path_set(api.content.find(portal_type="News Item"))


def _transition_then_found(layer):
    api.content.transition(obj=layer["portal"]["docs"]["faq"], transition="publish")
    return path_set(api.content.find(review_state="published", Subject="beta"))


def _retitled_then_sorted(layer):
    about = layer["portal"]["about"]
    about.title = "Zebra crossing"
    about.reindexObject()
    brains = api.content.find(portal_type="Document", sort_on="sortable_title")
    return [(brain.getPath(), brain.Title) for brain in brains]


def _reordered_then_listed(layer):
    docs = layer["portal"]["docs"]
    docs.moveObjectsToTop(["faq"])
    listing = docs.restrictedTraverse("@@folderListing")()
    return [item.getPath() for item in listing]


def _local_role_then_found(layer):
    # Plone reindexes the security of the subtree it just shared, and the
    # user sees the private items below at once.  (Not the test user: it
    # owns, and so sees, everything it created.)
    portal = layer["portal"]
    api.user.create(
        email="reader@example.org", username="reader", password="reader-secret"
    )
    api.user.grant_roles(username="reader", obj=portal["docs"], roles=["Reader"])
    # What the sharing view does after changing local roles.
    portal["docs"].reindexObjectSecurity()
    login(portal, "reader")
    return path_set(api.content.find(review_state="private"))


WRITE_PROBES = {
    "created": _created_then_found,
    "renamed": _renamed_then_found,
    "moved subtree": _moved_then_found,
    "deleted": _deleted_then_not_found,
    "transition": _transition_then_found,
    "retitled": _retitled_then_sorted,
    "reordered": _reordered_then_listed,
    "shared with a local role": _local_role_then_found,
}

WRITE_EXPECTED = {
    "reordered": ["/plone/docs/faq", "/plone/docs/guide", "/plone/docs/expired"],
    "shared with a local role": ["/plone/docs/faq"],
    "created": [
        "/plone/docs/expired",
        "/plone/docs/faq",
        "/plone/docs/fresh",
        "/plone/docs/guide",
    ],
    "moved subtree": [
        "/plone/news",
        "/plone/news/draft",
        "/plone/news/future-harbour",
        "/plone/news/guide",
        "/plone/news/guide/advanced",
        "/plone/news/guide/advanced/tips",
        "/plone/news/guide/hidden",
        "/plone/news/guide/intro",
        "/plone/news/harbour-opens",
    ],
    "deleted": ["/plone/news/draft", "/plone/news/future-harbour"],
}


@pytest.fixture(scope="module")
def observed():
    return observe_both({**FIND_PROBES, **WRITE_PROBES, "ranked": _ranked})


@pytest.mark.parametrize("name", list(FIND_PROBES))
def test_api_content_find_gives_what_zcatalog_gives(observed, name):
    compare(observed, name, FIND_EXPECTED.get(name))


def test_api_content_find_ranks_full_text_matches_as_zcatalog(observed):
    # Without sort_on, ZCatalog orders by score (Okapi BM25: with one
    # occurrence each, the shortest text ranks first) and equal scores by
    # its random record ids: pg must give the score tiers in the same order,
    # in any order within a tier.
    ranked = oracle(observed, "ranked")
    tiers: list[set] = []
    for index, (path, score) in enumerate(ranked):
        if index and score == ranked[index - 1][1]:
            tiers[-1].add(path)
        else:
            tiers.append({path})
    assert tiers[0] == {"/plone/news/draft"}
    assert len(tiers) > 1, "the ranking would not tell anything"
    actual = observed["pg"]["ranked"]
    assert not isinstance(actual, Failure), f"pg raised:\n{actual.trace}"
    found = [path for path, _ in actual]
    start = 0
    for tier in tiers:
        assert set(found[start : start + len(tier)]) == tier, (ranked, actual)
        start += len(tier)
    assert start == len(found)


@pytest.mark.parametrize("name", list(WRITE_PROBES))
def test_api_content_find_sees_the_transactions_own_writes(observed, name):
    compare(observed, name, WRITE_EXPECTED.get(name))


def test_savepoint_rollback_forgets_what_find_saw(pg_layer):
    # Not differential: on the DemoStorage oracle, rolling back a savepoint
    # taken after the indexing queue joined leaves ZCatalog's path index
    # without the rows indexed afterwards ("kept" below disappears there,
    # and later transactions lose new rows too), so the semantics are
    # asserted directly: what was indexed before the savepoint stays.
    portal = pg_layer["portal"]
    build_content(portal)
    docs = portal["docs"]
    api.content.create(container=docs, type="Document", id="kept", title="Kept")
    savepoint = transaction.savepoint()
    api.content.create(container=docs, type="Document", id="fleeting", title="Gone")
    seen = path_set(api.content.find(context=docs, depth=1, portal_type="Document"))
    savepoint.rollback()
    after = path_set(api.content.find(context=docs, depth=1, portal_type="Document"))
    assert seen == [
        "/plone/docs/expired",
        "/plone/docs/faq",
        "/plone/docs/fleeting",
        "/plone/docs/kept",
    ]
    assert after == ["/plone/docs/expired", "/plone/docs/faq", "/plone/docs/kept"]
