"""``POST @facet-count`` (issue 18): the request and response of the
plone.restapi proposal (pull request 1637), answered by SQL, through Zope's
publisher and plone.rest's dispatch."""

from __future__ import annotations

from tests.integration.test_facets import _content
from tests.integration.test_real_consumers import browser_for

import json
import pytest
import transaction
import urllib.error

ANY = "plone.app.querystring.operation.selection.any"


def _post(layer, body, user: dict | None = None, site: str = "plone"):
    with browser_for(layer, **(user or {})) as browser:
        browser.handleErrors = True
        browser.raiseHttpErrors = False
        browser.addHeader("Accept", "application/json")
        browser.post(
            f"http://nohost/{site}/@facet-count", json.dumps(body), "application/json"
        )
        return int(browser.headers["status"].split()[0]), json.loads(
            browser.contents or "null"
        )


def test_the_proposals_request_and_answer(pg_layer):
    _content(pg_layer["portal"])
    status, answer = _post(
        pg_layer,
        {
            "query": [
                {"i": "portal_type", "o": ANY, "v": ["Document"]},
                {"i": "review_state", "o": ANY, "v": ["published"]},
            ],
            "facet": "portal_type",
            "sort_on": "sortable_title",
        },
    )
    assert status == 200, answer
    assert answer["@id"] == "http://nohost/plone/@facet-count"
    # portal_type without its own criterion: every published type.
    assert answer["facets"] == {
        "portal_type": {"count": 3, "data": [{"value": "Document", "count": 3}]}
    }


def test_several_facets_at_once_with_keyword_totals(pg_layer):
    _content(pg_layer["portal"])
    status, answer = _post(
        pg_layer,
        {
            "query": [{"i": "portal_type", "o": ANY, "v": ["Document", "News Item"]}],
            "facets": ["Subject", "review_state"],
        },
    )
    assert status == 200, answer
    subject = answer["facets"]["Subject"]
    # Six items have subjects; "sea" and "tide" are 8 values among them.
    assert subject == {
        "count": 6,
        "data": [{"value": "sea", "count": 6}, {"value": "tide", "count": 2}],
    }
    assert answer["facets"]["review_state"]["count"] == 6


def test_anonymous_counts_what_it_may_see(pg_layer):
    portal = pg_layer["portal"]
    _content(portal)
    # As a site that lets visitors use the REST API (Volto's) grants it.
    portal.manage_permission(
        "plone.restapi: Use REST API", ["Anonymous", "Authenticated"], acquire=True
    )
    transaction.commit()
    status, answer = _post(
        pg_layer, {"query": [], "facet": "review_state"}, user={"user": None}
    )
    assert status == 200, answer
    assert answer["facets"]["review_state"]["data"] == [
        {"value": "published", "count": 3}
    ]


def test_path_and_date_facets(pg_layer):
    _content(pg_layer["portal"])
    status, answer = _post(
        pg_layer,
        {
            "query": [{"i": "portal_type", "o": ANY, "v": ["Document"]}],
            "facets": [
                {"index": "path", "name": "sections"},
                {
                    "index": "created",
                    "ranges": {
                        "before 2000": {"max": "1999-12-31T23:59:00+00:00"},
                        "since 2000": {"min": "2000-01-01T00:00:00+00:00"},
                    },
                },
            ],
        },
    )
    assert status == 200, answer
    assert answer["facets"] == {
        "sections": {
            "count": 4,
            "data": [
                {"value": "/plone/f", "count": 2},
                {"value": "/plone/p0", "count": 1},
                {"value": "/plone/p2", "count": 1},
            ],
        },
        "created": {"count": 4, "data": [{"value": "since 2000", "count": 4}]},
    }


@pytest.mark.parametrize(
    "body, message",
    [
        ({"facet": "nope"}, "facet 'nope' is not an index"),
        ({}, "no facet given"),
        ({"facet": "Subject", "query": "portal_type"}, "query: a list of criteria"),
        ({"facets": "Subject"}, "facets: 'Subject' is not a list of facets"),
        (
            {"facets": [{"index": "created"}]},
            "facet 'created': a date index is counted in ranges",
        ),
    ],
)
def test_bad_input_answers_400_naming_it(pg_layer, body, message):
    _content(pg_layer["portal"])
    status, answer = _post(pg_layer, body)
    assert status == 400
    assert message in answer["error"]["message"]


def test_not_there_without_this_catalog(zcatalog_layer):
    transaction.commit()
    with pytest.raises(urllib.error.HTTPError) as raised:
        with browser_for(zcatalog_layer) as browser:
            browser.addHeader("Accept", "application/json")
            browser.handleErrors = True
            browser.post(
                "http://nohost/plone/@facet-count",
                json.dumps({"facet": "portal_type"}),
                "application/json",
            )
    assert raised.value.code == 404
