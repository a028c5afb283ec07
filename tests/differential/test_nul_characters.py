"""Differential: content whose texts hold a NUL character, ZCatalog as
the oracle.

Text pasted from another program or imported from an old site can hold
NUL characters.  ZCatalog stores them; PostgreSQL's ``text`` and
``jsonb`` cannot hold one, and a row with one made the commit fail (the
edit could not be saved).  Index values keep the character's place as
U+0001 (it sorts where NUL sorts against any other character), the
metadata keeps it, the words are split at it as ZCTextIndex splits them.
Each page is searched and sorted as ZCatalog does, before its commit
(the pending rows) and after it.
"""

from __future__ import annotations

from plone import api
from tests.conftest import collect_in
from tests.differential.pages import add_documents
from tests.differential.searched import before_and_after_commit
from tests.differential.searched import ids_found

import pytest

#: (id, title, description, subjects)
PAGES = [
    ("a", "alpha", "plain words", ("plain",)),
    ("b", "alpha\x00bravo", "x\x00ray charlie", ("s\x00t", "plain")),
    ("c", "alphabet", "delta", ("s",)),
    ("d", "\x00", "", ("\x00",)),
]

#: (name, query, ordered?)
QUERIES = [
    ("sorted by title", {"portal_type": "Document", "sort_on": "sortable_title"}, True),
    (
        "sorted by title, reverse",
        {
            "portal_type": "Document",
            "sort_on": "sortable_title",
            "sort_order": "reverse",
        },
        True,
    ),
    ("a keyword", {"Subject": "plain"}, False),
    ("a word after the character", {"SearchableText": "bravo"}, False),
    ("a word before it", {"SearchableText": "alpha"}, False),
    ("a word of the description", {"Description": "ray"}, False),
    ("titles from", {"sortable_title": {"query": "alpha", "range": "min"}}, False),
]


def _outcomes(catalog) -> dict:
    found = ids_found(catalog, QUERIES)
    brains = catalog.unrestrictedSearchResults(portal_type="Document", sort_on="id")
    found["metadata"] = [
        (b.getId, b.Title, b.Description, tuple(b.Subject)) for b in brains
    ]
    return found


def _run(layer) -> dict:
    add_documents(
        layer["portal"],
        {
            page_id: {"title": title, "description": description, "subject": subjects}
            for page_id, title, description, subjects in PAGES
        },
    )
    catalog = api.portal.get_tool("portal_catalog")
    return before_and_after_commit(lambda: _outcomes(catalog))


@pytest.fixture(scope="module")
def outcomes():
    return collect_in("zcatalog", _run), collect_in("pg", _run)


CASES = [
    (when, name)
    for when in ("pending", "committed")
    for name in [q[0] for q in QUERIES] + ["metadata"]
]


@pytest.mark.parametrize("when,name", CASES, ids=[f"{w}: {n}" for w, n in CASES])
def test_as_zcatalog(outcomes, when, name):
    zcatalog, pgcatalog = outcomes
    assert zcatalog[when][name], "the test's own premise: ZCatalog finds some"
    assert pgcatalog[when][name] == zcatalog[when][name]


def _local_role_for_a_principal_with_a_nul(layer) -> dict:
    """A local role given to a principal id with a NUL character (a script,
    an import) and the subtree's security reindexed, as Plone's sharing
    does: the commit failed on the descendants' rows."""
    from plone.app.testing import setRoles
    from plone.app.testing import TEST_USER_ID

    import transaction

    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="f")
    api.content.create(container=folder, type="Document", id="d", title="d")
    transaction.commit()
    folder.manage_setLocalRoles("odd\x00id", ["Reader"])
    folder.reindexObjectSecurity()
    catalog = api.portal.get_tool("portal_catalog")

    def found() -> dict:
        return {
            "items": [b.getPath() for b in catalog(path="/plone/f", sort_on="path")],
            "terms": sorted(
                term.replace("\x01", "\x00")  # stored so (README)
                for term in catalog.getIndexDataForUID("/plone/f/d")[
                    "allowedRolesAndUsers"
                ]
            ),
        }

    return before_and_after_commit(found)


def test_a_local_role_of_a_principal_id_with_a_nul_is_committed():
    expected = collect_in("zcatalog", _local_role_for_a_principal_with_a_nul)
    assert "user:odd\x00id" in expected["committed"]["terms"]
    assert collect_in("pg", _local_role_for_a_principal_with_a_nul) == expected
