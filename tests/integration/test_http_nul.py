"""Values with a NUL character over the publisher, ZCatalog as the oracle.

Bots send ``%00`` in the query strings of plone.restapi's ``@search``
and of the classic ``@@search`` page.  Each request of ``REQUESTS``
goes through Zope's WSGI publisher (as tests/integration/
test_http_bad_input.py's, as Anonymous) to the ZCatalog oracle site and
to the plone_pgcatalog site with ``test_real_consumers``' content: the
answers must be equal (restapi's JSON, masked as test_consumer_restapi
masks it; the results the page lists), or both must raise, pgcatalog an
error of the class ZCatalog's site raises.

Must not import plone_pgcatalog internals.
"""

from __future__ import annotations

from tests.integration.test_consumer_restapi import masked
from tests.integration.test_http_bad_input import _page_url
from tests.integration.test_http_bad_input import _request
from tests.integration.test_http_bad_input import _results
from tests.integration.test_http_bad_input import _search_url
from tests.integration.test_real_consumers import observe_both

import pytest


def _probe(url: str, as_json: bool):
    """A probe of ``test_real_consumers.observe``: the JSON (masked), the
    paths the classic page lists, or ``("raised", the error's class)``."""

    def probe(layer):
        error, answer = _request(layer, None, url, as_json)
        if error is not None:
            return ("raised", type(error))
        return masked(answer) if as_json else sorted(_results(answer))

    return probe


#: (name, parameters, what ZCatalog's site gives: "found" (something),
#: "nothing", or "raises"); the name tells the endpoint.  The texts are
#: phrases of ``test_real_consumers.CONTENT`` and their words the other way
#: round (found anywhere while a NUL was made a space).
REQUESTS = [
    ("@search portal_type", [("portal_type", "Document\x00")], "nothing"),
    ("@search Subject", [("Subject", "alpha\x00")], "nothing"),
    (
        "@search Subject among others",
        [("Subject:list", "alpha"), ("Subject:list", "\x00")],
        "found",
    ),
    ("@search UID", [("UID", "\x00")], "nothing"),
    ("@search path", [("path.query", "/plone/news\x00")], "nothing"),
    ("@search a text's phrase", [("SearchableText", "lighthouse\x00guide")], "found"),
    ("@search a text's words", [("SearchableText", "guide\x00lighthouse")], "nothing"),
    ("@search a title's phrase", [("Title", "harbour\x00opens")], "found"),
    ("@search words not adjacent", [("Title", "opens\x00harbour")], "nothing"),
    # restapi parses a date itself, for both sites.
    (
        "@search a date",
        [("created.query", "2020-01-01\x00"), ("created.range", "min")],
        "raises",
    ),
    ("@@search a text's phrase", [("SearchableText", "lighthouse\x00guide")], "found"),
    (
        "@@search words not adjacent",
        [("SearchableText", "guide\x00lighthouse")],
        "nothing",
    ),
    # The page keeps the friendly types of portal_type: Subject is passed on.
    (
        "@@search Subject",
        [("SearchableText", "lighthouse"), ("Subject", "gamma\x00")],
        "nothing",
    ),
    (
        "@@search Subject among others",
        [
            ("SearchableText", "lighthouse"),
            ("Subject:list", "gamma"),
            ("Subject:list", "\x00"),
        ],
        "found",
    ),
]

PROBES = {
    name: _probe(
        (_search_url if name.startswith("@search") else _page_url)(params),
        name.startswith("@search"),
    )
    for name, params, _expected in REQUESTS
}


@pytest.fixture(scope="module")
def answers():
    return observe_both(PROBES)


@pytest.mark.parametrize(
    "name,expected",
    [(name, expected) for name, _params, expected in REQUESTS],
    ids=[name for name, _params, _expected in REQUESTS],
)
def test_a_value_with_a_nul_answers_as_with_zcatalog(answers, name, expected):
    wanted, actual = answers["zcatalog"][name], answers["pg"][name]
    if expected == "raises":
        assert wanted[0] == "raised", f"the test's own premise: ZCatalog gave {wanted}"
        assert actual[0] == "raised", f"ZCatalog raised {wanted[1]}, pg gave {actual}"
        assert issubclass(actual[1], wanted[1])
        return
    assert "raised" not in wanted, f"the test's own premise: ZCatalog raised {wanted}"
    found = wanted["items"] if isinstance(wanted, dict) else wanted
    assert bool(found) is (expected == "found"), f"the premise: ZCatalog gave {found}"
    assert actual == wanted
