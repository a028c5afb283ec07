"""What of ``portal_catalog`` a URL reaches: what ZCatalog's does, no more.

ZPublisher publishes a method that has a docstring unless it is marked
``zpublish(False)``.  Plone's and ZCatalog's search and index data methods
are not published; "Search ZCatalog" is Anonymous's permission, so a
published ``getIndexDataForRID`` let anyone read the words and metadata
of any private object by its record id (found by a helper's security
probe).  Compared with Plone's ``CatalogTool`` method by method, and over
HTTP as Anonymous in both sites.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.tool import PGCatalogTool
from Products.CMFPlone.CatalogTool import CatalogTool
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import observe_both
from ZPublisher import zpublish_mark

import pytest
import transaction

SECRET_WORDS = ("secret", "confidential", "salary")


def _publishable(cls, name: str) -> bool:
    method = getattr(cls, name)
    mark = zpublish_mark(method)
    if mark is not None:
        return bool(mark)
    return bool(getattr(method, "__doc__", None))


def _roles(cls, name: str):
    return getattr(cls, f"{name}__roles__", "undeclared")


def _names() -> list[str]:
    return [
        name
        for name in dir(PGCatalogTool)
        if (not name.startswith("_") or name == "__call__")
        and callable(getattr(PGCatalogTool, name, None))
        and not isinstance(getattr(PGCatalogTool, name), type)
        and _roles(PGCatalogTool, name) != ()  # private: never reached
    ]


@pytest.mark.parametrize("name", [n for n in _names() if hasattr(CatalogTool, n)])
def test_a_method_plone_does_not_publish_is_not_published(name):
    if not _publishable(CatalogTool, name):
        assert not _publishable(PGCatalogTool, name)
    assert _roles(PGCatalogTool, name) is not None or _roles(CatalogTool, name) is None


@pytest.mark.parametrize("name", [n for n in _names() if not hasattr(CatalogTool, n)])
def test_a_method_of_its_own_is_published_only_to_managers(name):
    """The ZMI's pages and forms of this catalog, behind a Manage
    permission; ``facet_counts`` is reached through ``@facet-count``."""
    if _publishable(PGCatalogTool, name):
        roles = _roles(PGCatalogTool, name)
        assert getattr(roles, "__name__", "").startswith("Manage "), (name, roles)


def _build(portal) -> None:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    page = api.content.create(
        container=portal, type="Document", id="secret", title="Top secret title"
    )
    page.description = "confidential salary list"
    page.reindexObject()
    transaction.commit()


def _anonymous_gets(layer) -> dict[str, str]:
    portal = layer["portal"]
    rid = portal.portal_catalog.unrestrictedSearchResults(id="secret")[0].getRID()
    base = "http://nohost/plone/portal_catalog"
    urls = {
        "catalog": base,
        "call": f"{base}/__call__",
        "searchResults": f"{base}/searchResults?portal_type=Document",
        "searchAll": f"{base}/searchAll",
        "getAllBrains": f"{base}/getAllBrains",
        "getpath": f"{base}/getpath?rid:int={rid}",
        "getIndexDataForRID": f"{base}/getIndexDataForRID?rid:int={rid}",
        "getIndexDataForUID": f"{base}/getIndexDataForUID?uid=/plone/secret",
        "getMetadataForRID": f"{base}/getMetadataForRID?rid:int={rid}",
        "getMetadataForUID": f"{base}/getMetadataForUID?uid=/plone/secret",
        "uniqueValuesFor": f"{base}/uniqueValuesFor?name=Title",
        "facet_counts": f"{base}/facet_counts?facets:list=getId"
        "&include_zero:boolean=True",
        "valid_roles": f"{base}/valid_roles",
        "Indexes/objectIds": f"{base}/Indexes/objectIds",
    }
    answers = {}
    with browser_for(layer, user=None) as browser:
        browser.handleErrors = True
        browser.raiseHttpErrors = False
        for name, url in urls.items():
            browser.open(url)
            body = browser.contents
            if isinstance(body, bytes):
                body = body.decode("utf-8", "replace")
            answers[name] = (browser.headers["status"], body)
    return answers


@pytest.fixture(scope="module")
def answered():
    return observe_both({"anonymous": _anonymous_gets}, build=_build)


def test_anonymous_reaches_no_catalog_data_as_with_zcatalog(answered):
    zcatalog = answered["zcatalog"]["anonymous"]
    pg = answered["pg"]["anonymous"]
    for name, (status, body) in pg.items():
        assert not any(word in body.lower() for word in SECRET_WORDS), (name, body)
        assert not status.startswith("200"), (name, status)
        if name in zcatalog:  # facet_counts is this catalog's own
            assert status == zcatalog[name][0], (name, status, zcatalog[name][0])
