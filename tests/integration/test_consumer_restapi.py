"""The catalog through plone.restapi's ``@search``, over the real publisher.

Owns the ``@search`` probes: each one is an HTTP GET with
``Accept: application/json`` through zope.testbrowser and Zope's WSGI
publisher (traversal, authentication, plone.rest dispatch, restapi's query
parsing by index type, its batching and serializers), on the ZCatalog
oracle site and on the plone_pgcatalog site with the same content.  The
JSON answers must be equal, once values that differ between any two sites
(creation times, UIDs) are masked.

Must not import plone_pgcatalog internals.
"""

from __future__ import annotations

from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import compare
from tests.integration.test_real_consumers import observe_both
from tests.integration.test_real_consumers import oracle
from urllib.parse import urlencode

import json
import pytest

#: Values that differ between two sites built from the same script.
VARYING = frozenset(
    {"UID", "created", "modified", "CreationDate", "ModificationDate", "Date"}
)


def masked(value):
    """``value`` with every ``VARYING`` key's value replaced by a marker."""
    if isinstance(value, dict):
        return {
            key: "<varies>" if key in VARYING else masked(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value


def get_json(layer, url: str, anonymous: bool = False):
    user = {"user": None} if anonymous else {}
    with browser_for(layer, **user) as browser:
        browser.addHeader("Accept", "application/json")
        browser.open(url)
        return masked(json.loads(browser.contents))


def search(params: list, context: str = "/plone", anonymous: bool = False):
    url = f"http://nohost{context}/@search?{urlencode(params, doseq=True)}"

    def probe(layer):
        return get_json(layer, url, anonymous)

    return probe


def titles(answer) -> list:
    return [item["title"] for item in answer["items"]]


PROBES = {
    "metadata_fields": search(
        [
            ("portal_type", "Document"),
            ("sort_on", "sortable_title"),
            ("metadata_fields", "Title"),
            ("metadata_fields", "Subject"),
            ("metadata_fields", "effective"),
            ("metadata_fields", "review_state"),
        ]
    ),
    "metadata_fields _all": search(
        [
            ("path.query", "/plone/docs/guide"),
            ("path.depth", "1"),
            ("sort_on", "getObjPositionInParent"),
            ("metadata_fields", "_all"),
        ]
    ),
    "fullobjects": search(
        [
            ("portal_type", "Document"),
            ("sort_on", "sortable_title"),
            ("fullobjects", "1"),
            ("b_size", "3"),
        ]
    ),
    "batch, second page": search(
        [
            ("sort_on", "sortable_title"),
            ("b_size", "4"),
            ("b_start", "4"),
        ]
    ),
    "batch, last page": search(
        [
            ("sort_on", "sortable_title"),
            ("b_size", "4"),
            ("b_start", "12"),
        ]
    ),
    "sort_order descending": search(
        [
            ("portal_type", "Document"),
            ("sort_on", "effective"),
            ("sort_order", "descending"),
            ("metadata_fields", "effective"),
        ]
    ),
    "SearchableText": search(
        [("SearchableText", "lighthouse"), ("sort_on", "sortable_title")]
    ),
    "SearchableText prefix": search(
        [("SearchableText", "lighth*"), ("sort_on", "sortable_title")]
    ),
    "path.depth": search(
        [
            ("path.query", "/plone/docs"),
            ("path.depth", "2"),
            ("sort_on", "sortable_title"),
        ]
    ),
    "context constrains path": search(
        [("sort_on", "sortable_title")], context="/plone/news"
    ),
    "Subject and": search(
        [
            ("Subject.query", "alpha"),
            ("Subject.query", "beta"),
            ("Subject.operator", "and"),
        ]
    ),
    "Subject non-ascii": search([("Subject", "Délta")]),
    "effective range from a string": search(
        [
            ("effective.query", "2020-06-01"),
            ("effective.range", "min"),
            ("sort_on", "effective"),
        ]
    ),
    "is_folderish from a string": search(
        [
            ("is_folderish", "true"),
            ("sort_on", "sortable_title"),
        ]
    ),
    # Sorted: by relevance alone, ZCatalog orders equal scores by its
    # random record ids (test_real_consumers checks the ranking itself).
    "site search settings": search(
        [
            ("SearchableText", "lighthouse"),
            ("use_site_search_settings", "1"),
            ("sort_on", "sortable_title"),
        ]
    ),
    "anonymous asking for Manager's items": search(
        [("allowedRolesAndUsers", "Manager"), ("sort_on", "sortable_title")],
        anonymous=True,
    ),
    "anonymous asking for private items": search(
        [("review_state", "private"), ("allowedRolesAndUsers:list", "Manager")],
        anonymous=True,
    ),
}


@pytest.fixture(scope="module")
def observed():
    return observe_both(PROBES)


@pytest.mark.parametrize("name", list(PROBES))
def test_restapi_search_answers_as_with_zcatalog(observed, name):
    compare(observed, name)


# Pins: the oracle must answer what the content implies, or a probe that
# asks the wrong question would pass on both sites.


def test_restapi_search_metadata_fields_are_serialized(observed):
    items = oracle(observed, "metadata_fields")["items"]
    assert [item["title"] for item in items] == [
        "About the harbour",
        "Expired notice",
        "FAQ",
        "Hidden page",
        "Introduction",
        "Secret but published",
        "Tips and tricks",
    ]
    assert items[0]["Subject"] == ["alpha"]
    assert items[0]["effective"] == "2020-01-01T09:00:00+00:00"
    assert items[2]["review_state"] == "private"
    compare(observed, "metadata_fields")


def test_restapi_search_batches_with_links(observed):
    answer = oracle(observed, "batch, second page")
    # The fifteen items and the site root, which Plone 6 catalogs too.
    assert answer["items_total"] == 16
    assert len(answer["items"]) == 4
    assert set(answer["batching"]) == {"@id", "first", "last", "next", "prev"}
    assert "b_start=8" in answer["batching"]["next"]
    compare(observed, "batch, second page")


def test_restapi_search_as_anonymous_hides_private_items(observed):
    name = "anonymous asking for Manager's items"
    assert titles(oracle(observed, name)) == [
        "About the harbour",
        "Advanced",
        "Documentation",
        "Guide",
        "Harbour opens",
        "Hidden page",
        "Introduction",
        "News",
        "Plone site",
        "Secret but published",
        "Tips and tricks",
    ]
    compare(observed, name)
    assert oracle(observed, "anonymous asking for private items")["items"] == []
    compare(observed, "anonymous asking for private items")


def test_restapi_search_fullobjects_serializes_content(observed):
    items = oracle(observed, "fullobjects")["items"]
    assert [item["id"] for item in items] == ["about", "expired", "faq"]
    assert items[0]["description"] == "Who keeps the lighthouse"
    compare(observed, "fullobjects")
