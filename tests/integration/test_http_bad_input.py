"""Bad input over the publisher (issue 16, part 5): generated malformed
parameters for plone.restapi's ``@search`` and the classic ``@@search``
page, as Anonymous and as a member.

Each request goes through Zope's WSGI publisher (zope.testbrowser:
traversal, form marshalling with ``:list``/``:record``/``:int``
converters, authentication, plone.rest dispatch, restapi's query parsing)
to the plone_pgcatalog site with ``test_real_consumers``' content.  What
must hold for every request, whatever it answers:

- no PostgreSQL error anywhere in what it raised (a bad query is refused
  by the catalog's translation or by the consumers, before SQL);
- no item the user may not see: ``@search``'s items are among those the
  same user finds with no filter, and the classic page names no URL of
  the others;
- the PostgreSQL connections are where they were, and a good request
  afterwards answers as before.

The parameters are generated once, deterministically (hypothesis,
``derandomize``, no example database): a list depends on this file only.

Values with a NUL character (``%00``, which bots send), refused until
0.2.0, are answered as with ZCatalog: tests/integration/test_http_nul.py
asks both sites.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import settings
from hypothesis import strategies as st
from plone import api
from tests.conftest import run_in
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import build_content
from urllib.parse import urlencode

import json
import psycopg
import pytest
import re
import transaction

#: Indexes of a Plone 6.2 site, and names no site has.
INDEXES = [
    "Creator",
    "Date",
    "Description",
    "SearchableText",
    "Subject",
    "Title",
    "Type",
    "UID",
    "allowedRolesAndUsers",
    "created",
    "effective",
    "effectiveRange",
    "end",
    "expires",
    "getId",
    "getObjPositionInParent",
    "getRawRelatedItems",
    "id",
    "is_default_page",
    "is_folderish",
    "exclude_from_nav",
    "modified",
    "object_provides",
    "path",
    "portal_type",
    "review_state",
    "sortable_title",
    "start",
    "sync_uid",
    "no_such_index",
]
SPECIAL = [
    "sort_on",
    "sort_order",
    "sort_limit",
    "b_size",
    "b_start",
    "metadata_fields",
    "fullobjects",
    "use_site_search_settings",
]
#: Dotted keys are restapi's query options; ``:`` ones Zope's converters.
SUFFIXES = [
    "",
    ".query",
    ".range",
    ".operator",
    ".depth",
    ".not",
    ".query.query",
    ":list",
    ":int",
    ":float",
    ":boolean",
    ":date",
    ":record",
    ":tokens",
    ".query:record:list",
]
NASTY = [
    "\x00",
    "a\x00b",
    "(",
    ")",
    '"',
    "'",
    "((((((((((lighthouse",
    "lighthouse AND",
    "NOT",
    "OR OR AND",
    "*",
    "**",
    "?",
    "-1",
    "9" * 40,
    "-" + "9" * 40,
    "1e309",
    "nan",
    "inf",
    "2021-13-45",
    "99999-01-01",
    "0000-00-00",
    "x" * 5000,
    "lighthouse " * 500,
    "{}",
    "[]",
    '{"query": {"query": {"query": 1}}}',
    "/",
    "//",
    "../..",
    "/plone/../..",
    "%",
    "_",
    "\\",
    "';DROP TABLE object_state;--",
    "$1",
    "%s",
    "\u202e",
    "\ud7ff",
    "🙂",
    "min:max",
    "Manager",
    "user:admin",
    "private",
    "True",
    "ascending",
    "reverse",
]

_PARAMETER = st.tuples(
    st.one_of(
        st.tuples(st.sampled_from(INDEXES), st.sampled_from(SUFFIXES)),
        st.tuples(st.sampled_from(SPECIAL), st.sampled_from(["", ":int", ":list"])),
    ).map("".join),
    st.one_of(
        st.sampled_from(NASTY),
        st.text(max_size=12),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
    ),
)

#: How many parameter lists each endpoint gets (each asked by both users).
COUNT = 60


def _generated(strategy, count: int) -> list:
    found = []

    @settings(
        derandomize=True,
        database=None,
        max_examples=count,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value):
        found.append(value)

    collect()
    return found[:count]


QUERIES = _generated(st.lists(_PARAMETER, min_size=1, max_size=4), COUNT)

MEMBER, PASSWORD = "member", "member-password-1"
USERS = {"anonymous": None, "member": MEMBER}


def _psycopg_error(error: BaseException | None) -> BaseException | None:
    """The PostgreSQL error in ``error``'s chain, if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, psycopg.Error):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _connections(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()[0]


def _request(layer, user: str | None, url: str, as_json: bool):
    """``(error or None, answer)``: the JSON, or the page's text."""
    login = {"user": None} if user is None else {"user": user, "password": PASSWORD}
    try:
        with browser_for(layer, **login) as browser:
            if as_json:
                browser.addHeader("Accept", "application/json")
            browser.open(url)
            text = browser.contents
        return None, json.loads(text) if as_json else text
    except Exception as error:  # what the publisher let through
        return error, None
    finally:
        transaction.abort()


def _search_url(params) -> str:
    return f"http://nohost/plone/@search?{urlencode(params)}"


def _page_url(params) -> str:
    return f"http://nohost/plone/@@search?{urlencode(_as_form(params))}"


def _as_form(params) -> list:
    """The parameters as a classic form sends them: an index's query
    options as a record (``created.query:record:date``)."""
    form = []
    for key, value in params:
        name, colon, converters = key.partition(":")
        if "." in name and "record" not in converters.split(":"):
            converters = ":".join(["record", *filter(None, converters.split(":"))])
            colon = ":"
        form.append((name + colon + converters, value))
    return form


#: The link of one result of the classic search page (its "Located in"
#: breadcrumbs may name containers the user may not see, as with ZCatalog).
_RESULT_LINK = re.compile(r'class="result-title">\s*<a href="http://nohost([^"]+)"')


def _results(page: str) -> set[str]:
    """The paths of the results the classic search page lists."""
    return {path.removesuffix("/view") for path in _RESULT_LINK.findall(page)}


def _paths(answer) -> set[str]:
    return {item["@id"].removeprefix("http://nohost") for item in answer["items"]}


@pytest.fixture(scope="module")
def outcomes():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING

    runner = run_in(PGCATALOG_FUNCTIONAL_TESTING)
    layer = next(runner)
    try:
        portal = layer["portal"]
        build_content(portal)
        api.user.create(email="member@example.org", username=MEMBER, password=PASSWORD)
        transaction.commit()
        everything = {
            brain.getPath()
            for brain in portal.portal_catalog.unrestrictedSearchResults(path="/plone")
        }
        dsn = layer["pgcatalog_dsn"]
        visible, good = {}, {}
        for name, user in USERS.items():
            error, answer = _request(layer, user, _search_url({"b_size": 1000}), True)
            assert error is None, error
            visible[name] = _paths(answer)
        asked, connections = [], None
        for number, params in enumerate(QUERIES):
            if number == COUNT // 4:
                # Past the pools' warm-up: from here the count must hold.
                connections = _connections(dsn)
            for name, user in USERS.items():
                asked.append(
                    (
                        "@search",
                        name,
                        params,
                        *_request(layer, user, _search_url(params), True),
                    )
                )
                asked.append(
                    (
                        "@@search",
                        name,
                        params,
                        *_request(layer, user, _page_url(params), False),
                    )
                )
        after = _connections(dsn)
        for name, user in USERS.items():
            error, answer = _request(layer, user, _search_url({"b_size": 1000}), True)
            good[name] = (error, answer and _paths(answer))
        yield {
            "everything": everything,
            "visible": visible,
            "asked": asked,
            "connections": (connections, after),
            "good": good,
        }
    finally:
        runner.close()


def test_the_users_see_different_things(outcomes):
    """The check of what each user may see has something to catch."""
    visible = outcomes["visible"]
    assert "/plone/news/draft" in outcomes["everything"]
    for name in USERS:
        assert "/plone/news/draft" not in visible[name]
        assert "/plone/docs/guide/intro" in visible[name]


def test_the_requests_reach_the_catalog(outcomes):
    """Many requests are answered with results, on both endpoints: the
    battery is not refused wholesale before the catalog."""
    answered = [entry for entry in outcomes["asked"] if entry[3] is None]
    found = [e for e in answered if e[0] == "@search" and e[4]["items_total"]]
    assert len(found) >= COUNT // 4
    # The classic page searches only with words or a known index name.
    listed = [e for e in answered if e[0] == "@@search" and _results(e[4])]
    assert len(listed) >= COUNT // 10


def _through_the_catalog(error: BaseException) -> bool:
    """Whether plone_pgcatalog's code is on the stack ``error`` was raised
    through."""
    frame = error.__traceback__
    while frame is not None:
        if "/plone_pgcatalog/" in frame.tb_frame.f_code.co_filename:
            return True
        frame = frame.tb_next
    return False


def test_what_the_catalog_refuses_it_refuses_as_bad_input(outcomes):
    """An error raised through the catalog is one of bad input (the
    catalog's ``QueryError``, a ``ValueError``, a ``CatalogError``), never a
    program error such as ``TypeError``.  Plone's search page, restapi and
    Zope's converters raise their own on some of these inputs (``int()`` of
    a list for ``b_start:list``, DateTime's ``TimeError``), as they do on
    ZCatalog: those are theirs."""
    from Products.ZCatalog.Catalog import CatalogError

    refused = 0
    for endpoint, user, params, error, _answer in outcomes["asked"]:
        if error is not None and _through_the_catalog(error):
            refused += 1
            assert isinstance(error, (ValueError, CatalogError)), (
                endpoint,
                user,
                params,
                repr(error),
            )
    # The catalog sees bad values: 12 requests of this list.  Values with
    # a NUL character (hypothesis' text draws many) are answered as with
    # ZCatalog since 0.2.0; 28 requests were refused before.
    assert refused >= COUNT // 6


@pytest.mark.parametrize("number", range(COUNT))
def test_no_request_fails_in_postgresql(outcomes, number):
    for endpoint, user, params, error, _answer in outcomes["asked"]:
        if params is not QUERIES[number]:
            continue
        assert _psycopg_error(error) is None, (endpoint, user, params, error)


@pytest.mark.parametrize("number", range(COUNT))
def test_no_request_finds_what_its_user_may_not_see(outcomes, number):
    for endpoint, user, params, error, answer in outcomes["asked"]:
        if params is not QUERIES[number] or error is not None:
            continue
        if endpoint == "@search":
            assert _paths(answer) <= outcomes["visible"][user], (user, params)
        else:
            assert _results(answer) <= outcomes["visible"][user], (user, params)


def test_connections_are_where_they_were_and_good_requests_answer(outcomes):
    """No connection more after the last three quarters of the requests
    than after the first (the pools open theirs in the first), and good
    requests answer as before the battery."""
    before, after = outcomes["connections"]
    assert after == before
    for name in USERS:
        error, paths = outcomes["good"][name]
        assert error is None
        assert paths == outcomes["visible"][name]
