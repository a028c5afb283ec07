"""Differential: index values longer than an SQL index entry may be,
ZCatalog as the oracle.

A B-tree entry holds at most 2,704 bytes, a GIN key 2,712: a page with a
longer value in an index with a typed column (a tag pasted from a text,
an add-on's FieldIndex of URLs or of a long text) failed its commit
(``ProgramLimitExceeded``).  The typed columns hold such a string by its
first characters (text) or leave it to ``idx`` (keywords)
(``columns.TEXT_KEPT``).  Searches for short and long values, ranges,
sorting, ``uniqueValues`` and facet counts must give what ZCatalog gives,
before the commit and after it.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import login
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog.store.columns import TEXT_KEPT
from tests.conftest import collect_in
from tests.differential.searched import before_and_after_commit
from tests.differential.searched import ids_found

import pytest
import random
import string
import transaction


def _text(seed: int, length: int) -> str:
    chance = random.Random(seed)
    return "".join(chance.choice(string.ascii_lowercase) for _ in range(length))


#: Two long strings with the same first ``TEXT_KEPT`` characters, that
#: differ after them; one of 20,000 characters; one of exactly the length
#: a column holds whole; short ones.
SHARED = _text(1, TEXT_KEPT)
LONG_A = "m" + SHARED + "a" + _text(2, 3000)
LONG_B = "m" + SHARED + "b"
HUGE = "q" + _text(3, 20_000)
WHOLE = "k" + _text(4, TEXT_KEPT - 1)
URL = "https://example.org/?" + "&".join(f"p{n}={_text(n, 40)}" for n in range(80))
#: A user id longer than a column holds whole (an id from an external
#: directory); the user may view ``p0`` by a local role.
USER = "u" + _text(5, 600)

#: (page id, FieldIndex value, keywords)
PAGES = [
    ("p0", LONG_A, ("short", LONG_A)),
    ("p1", LONG_B, ("short", "other")),
    ("p2", HUGE, (HUGE,)),
    ("p3", WHOLE, ("other",)),
    ("p4", "a short one", ("short",)),
    ("p5", URL, (URL, "other")),
    ("p6", "z", ()),
]

#: (name, query, ordered?)
QUERIES = [
    ("long value", {"pgc_long": LONG_A}, False),
    ("long value with its twin's start", {"pgc_long": LONG_B}, False),
    ("huge value", {"pgc_long": HUGE}, False),
    ("value held whole", {"pgc_long": WHOLE}, False),
    ("a short value", {"pgc_long": "a short one"}, False),
    ("the start of a long value", {"pgc_long": "m" + SHARED}, False),
    ("values, long and short", {"pgc_long": [HUGE, "z"]}, False),
    (
        "not a long value",
        {"pgc_long": {"not": LONG_A}, "portal_type": "Document"},
        False,
    ),
    ("from a short bound", {"pgc_long": {"query": "m", "range": "min"}}, False),
    ("up to a long bound", {"pgc_long": {"query": LONG_B, "range": "max"}}, False),
    (
        "between",
        {"pgc_long": {"query": ["l", "n"], "range": "min:max"}},
        False,
    ),
    ("sorted", {"portal_type": "Document", "sort_on": "pgc_long"}, True),
    (
        "sorted, reverse, limit",
        {
            "portal_type": "Document",
            "sort_on": "pgc_long",
            "sort_order": "reverse",
            "sort_limit": 4,
        },
        True,
    ),
    ("a long keyword", {"Subject": LONG_A}, False),
    ("a short keyword", {"Subject": "short"}, False),
    ("keywords, long or short", {"Subject": [URL, "short"]}, False),
    (
        "keywords, long and short",
        {"Subject": {"query": [URL, "other"], "operator": "and"}},
        False,
    ),
    ("a huge keyword", {"Subject": HUGE}, False),
    ("a long security term", {"allowedRolesAndUsers": f"user:{USER}"}, False),
]


def _outcomes(catalog) -> dict:
    found = ids_found(catalog, QUERIES)
    found["unique values"] = list(catalog.uniqueValuesFor("pgc_long"))
    found["unique keywords"] = sorted(catalog.uniqueValuesFor("Subject"))
    found["with lengths"] = sorted(
        catalog.Indexes["pgc_long"].uniqueValues(withLengths=True)
    )
    # Facet counts: ZCatalog's, one search per value (as ``test_facets``);
    # this catalog's ``facet_counts``.
    if hasattr(catalog, "facet_counts"):
        counts = catalog.facet_counts(
            {"portal_type": "Document"}, facets=("pgc_long", "Subject")
        )
    else:
        counts = {
            name: {
                value: len(
                    catalog.searchResults(portal_type="Document", **{name: value})
                )
                for value in catalog.uniqueValuesFor(name)
            }
            for name in ("pgc_long", "Subject")
        }
    for name, values in counts.items():
        found[f"{name} facet"] = sorted(values.items())
    # The user's own search: Plone's security terms, the long one among
    # them.
    login(api.portal.get(), USER)
    found["as the user"] = sorted(b.getId for b in catalog(portal_type="Document"))
    login(api.portal.get(), TEST_USER_NAME)
    return found


def _run(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    catalog.addIndex("pgc_long", "FieldIndex")
    transaction.commit()
    with api.env.adopt_roles(["Manager"]):
        for page_id, value, keywords in PAGES:
            page = api.content.create(
                container=portal, type="Document", id=page_id, subject=keywords
            )
            page.pgc_long = value
            page.reindexObject()
        portal.acl_users.source_users.addUser(USER, USER, "secret-Pw1!")
        portal["p0"].manage_setLocalRoles(USER, ["Reader"])
        portal["p0"].reindexObjectSecurity()
    return before_and_after_commit(lambda: _outcomes(catalog))


@pytest.fixture(scope="module")
def outcomes():
    return collect_in("zcatalog", _run), collect_in("pg", _run)


NAMES = [query[0] for query in QUERIES] + [
    "unique values",
    "unique keywords",
    "with lengths",
    "pgc_long facet",
    "Subject facet",
    "as the user",
]
CASES = [(when, name) for when in ("pending", "committed") for name in NAMES]


#: Queries that find nothing in ZCatalog, on purpose: a long value's first
#: characters, as its column holds them, are not the value.
NOTHING = {"the start of a long value"}

#: The two pages whose values share their first ``TEXT_KEPT + 1``
#: characters: sorted among themselves by record id (README, "Where
#: results differ from ZCatalog").
TWINS = {"p0", "p1"}


@pytest.mark.parametrize("when,name", CASES, ids=[f"{w}: {n}" for w, n in CASES])
def test_as_zcatalog(outcomes, when, name):
    zcatalog, pgcatalog = outcomes
    expected, actual = zcatalog[when][name], pgcatalog[when][name]
    assert bool(expected) != (name in NOTHING), "the test's own premise"
    if name.startswith("sorted"):
        # The twins next to each other, where ZCatalog has them.
        expected = ["twin" if i in TWINS else i for i in expected]
        actual = ["twin" if i in TWINS else i for i in actual]
    assert actual == expected
