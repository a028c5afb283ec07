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

The FieldIndex is tested twice: with its typed column, and under a name
longer than a column's may be (63 bytes), where a B-tree on the value as
the column would hold it serves it (``columns.held_value``; until schema
17, B-trees on its JSON value and text, which failed the commit).
"""

from __future__ import annotations

from functools import partial
from plone import api
from plone.app.testing import login
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog.store.columns import column_name
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


#: The FieldIndex's names: with a typed column, and one too long for a
#: column (its B-tree is on an expression of ``idx``).
COLUMNED = "pgc_long"
UNCOLUMNED = "pgc_long_" + "without_a_column_" * 4
assert column_name(COLUMNED) and not column_name(UNCOLUMNED)


def _renamed(query: dict, index: str) -> dict:
    """``query`` with the FieldIndex ``pgc_long`` named ``index``."""
    renamed = {
        index if key == "pgc_long" else key: value for key, value in query.items()
    }
    if renamed.get("sort_on") == "pgc_long":
        renamed["sort_on"] = index
    return renamed


def _outcomes(catalog, index: str) -> dict:
    queries = [
        (name, _renamed(query, index), ordered) for name, query, ordered in QUERIES
    ]
    found = ids_found(catalog, queries)
    found["unique values"] = list(catalog.uniqueValuesFor(index))
    found["unique keywords"] = sorted(catalog.uniqueValuesFor("Subject"))
    found["with lengths"] = sorted(
        catalog.Indexes[index].uniqueValues(withLengths=True)
    )
    # Facet counts: ZCatalog's, one search per value (as ``test_facets``);
    # this catalog's ``facet_counts``.
    if hasattr(catalog, "facet_counts"):
        counts = catalog.facet_counts(
            {"portal_type": "Document"}, facets=(index, "Subject")
        )
    else:
        counts = {
            name: {
                value: len(
                    catalog.searchResults(portal_type="Document", **{name: value})
                )
                for value in catalog.uniqueValuesFor(name)
            }
            for name in (index, "Subject")
        }
    for name, values in counts.items():
        found[f"{'pgc_long' if name == index else name} facet"] = sorted(values.items())
    # The user's own search: Plone's security terms, the long one among
    # them.
    login(api.portal.get(), USER)
    found["as the user"] = sorted(b.getId for b in catalog(portal_type="Document"))
    login(api.portal.get(), TEST_USER_NAME)
    return found


def _run(index: str, layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")
    catalog.addIndex(index, "FieldIndex")
    transaction.commit()
    with api.env.adopt_roles(["Manager"]):
        for page_id, value, keywords in PAGES:
            page = api.content.create(
                container=portal, type="Document", id=page_id, subject=keywords
            )
            setattr(page, index, value)
            page.reindexObject()
        portal.acl_users.source_users.addUser(USER, USER, "secret-Pw1!")
        portal["p0"].manage_setLocalRoles(USER, ["Reader"])
        portal["p0"].reindexObjectSecurity()
    return before_and_after_commit(lambda: _outcomes(catalog, index))


@pytest.fixture(scope="module", params=[COLUMNED, UNCOLUMNED], ids=["column", "none"])
def outcomes(request):
    run = partial(_run, request.param)
    return collect_in("zcatalog", run), collect_in("pg", run)


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
