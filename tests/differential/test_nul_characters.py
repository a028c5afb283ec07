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

A query value with a NUL character (a URL with ``%00``, which bots send
to the search pages) is mapped as the stored values are: it finds the
objects whose value is that string, in every index type, and a string
date with one is refused as DateTime refuses it in ZCatalog.
"""

from __future__ import annotations

from plone import api
from plone.uuid.interfaces import IMutableUUID
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
    ("e", "bravo then alpha", "ray x", ("s\x00", "t")),
]

#: ``{id: (creator, UID)}`` set after the pages are made (None: as made).
#: Creator is a FieldIndex, UID a UUIDIndex: values with NUL, around it
#: (U+0001 stands for NUL as stored: U+0002 must stay above it).
OWNERS = {
    "a": ("a", None),
    "b": ("a\x00b", "u\x00id"),
    "c": ("a\x00", None),
    "d": ("a\x02", None),
    "e": ("a\x00b", None),
}

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


#: (name, query, found?): query values holding a NUL character, each index
#: type; ``found``: whether ZCatalog finds something (the premise), or
#: "raises" when it raises (pgcatalog must raise the same class).
NUL_QUERIES = [
    ("field", {"Creator": "a\x00b"}, True),
    ("field, several", {"Creator": ["a\x00", "nobody\x00"]}, True),
    ("field, none", {"Creator": "a\x00c"}, False),
    ("field, not", {"portal_type": "Document", "Creator": {"not": "a\x00b"}}, True),
    ("field, only not", {"Creator": {"not": ["a\x00b", "a\x00"]}}, True),
    ("field, from", {"Creator": {"query": "a\x00", "range": "min"}}, True),
    ("field, up to", {"Creator": {"query": "a\x00", "range": "max"}}, True),
    (
        "field, between",
        {"Creator": {"query": ["a\x00a", "a\x00z"], "range": "min:max"}},
        True,
    ),
    # Plone's sortable_title drops NUL (``alphabravo``): around "alpha".
    ("title, from", {"sortable_title": {"query": "alpha\x00", "range": "min"}}, True),
    ("keyword", {"Subject": "s\x00t"}, True),
    ("keyword, the character alone", {"Subject": ["\x00"]}, True),
    ("keyword, none", {"Subject": "s\x00u"}, False),
    (
        "keyword, and",
        {"Subject": {"query": ["s\x00t", "plain"], "operator": "and"}},
        True,
    ),
    ("keyword, not", {"portal_type": "Document", "Subject": {"not": "s\x00t"}}, True),
    ("keyword, from", {"Subject": {"query": "s\x00", "range": "min"}}, True),
    (
        "keyword, between",
        {"Subject": {"query": ["\x00", "s\x00"], "range": "min:max"}},
        True,
    ),
    ("uid", {"UID": "u\x00id"}, True),
    ("uid, none", {"UID": "x\x00"}, False),
    ("uid, not", {"portal_type": "Document", "UID": {"not": "u\x00id"}}, True),
    ("boolean", {"portal_type": "Document", "is_folderish": "\x00"}, False),
    ("date", {"created": "2024-01-01\x00"}, "raises"),
    ("date range", {"created": {"query": "2024\x00", "range": "min"}}, "raises"),
    ("path", {"path": "/plone/a\x00"}, False),
    ("path, depth 0", {"path": {"query": "/plone/a\x00", "depth": 0}}, False),
    ("path, among others", {"path": {"query": ["/plone/b", "/plone\x00"]}}, True),
    ("text, a phrase", {"SearchableText": "alpha\x00bravo"}, True),
    ("text, words not adjacent", {"SearchableText": "bravo\x00alpha"}, False),
    ("title, a phrase", {"Title": "alpha\x00bravo"}, True),
    ("description, a phrase", {"Description": "x\x00ray"}, True),
    ("description, another order", {"Description": "ray\x00x"}, True),
    ("description, another phrase", {"Description": "ray\x00charlie"}, True),
    ("description, no such phrase", {"Description": "charlie\x00ray"}, False),
    ("text, only the character", {"SearchableText": "\x00"}, "raises"),
    ("sort on", {"portal_type": "Document", "sort_on": "sortable_title\x00"}, "raises"),
]


def _outcome(catalog, query: dict):
    """Sorted ids, or ``("raised", the exception's class)``."""
    try:
        return sorted(b.getId for b in catalog.unrestrictedSearchResults(**query))
    except Exception as exc:  # the outcome to compare
        return ("raised", type(exc))


def _given_owners(portal) -> None:
    for page_id, (creator, uid) in OWNERS.items():
        page = portal[page_id]
        page.setCreators((creator,))
        if uid is not None:
            IMutableUUID(page).set(uid)
        page.reindexObject()


def _looked_up(catalog) -> dict:
    """What an index's own mapping (``_index``) gives for a value with
    NUL, as paths: the lookups of plone.app.uuid and of add-ons."""
    indexes = catalog._catalog.indexes
    found = {}
    for name, value in (("UID", "u\x00id"), ("Subject", "s\x00t")):
        try:
            rids = indexes[name]._index.get(value)
        except Exception as exc:  # the outcome to compare
            found[name] = ("raised", type(exc))
            continue
        rids = [rids] if isinstance(rids, int) else list(rids or ())
        found[name] = sorted(catalog.getpath(rid) for rid in rids)
    return found


def _outcomes(catalog) -> dict:
    found = ids_found(catalog, QUERIES)
    for name, query, _expected in NUL_QUERIES:
        found[f"query: {name}"] = _outcome(catalog, query)
    found["index lookups"] = _looked_up(catalog)
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
    _given_owners(layer["portal"])
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


NUL_CASES = [
    (when, name, expected)
    for when in ("pending", "committed")
    for name, _query, expected in NUL_QUERIES
]


@pytest.mark.parametrize(
    "when,name,expected", NUL_CASES, ids=[f"{w}: {n}" for w, n, _ in NUL_CASES]
)
def test_a_query_value_with_a_nul_as_zcatalog(outcomes, when, name, expected):
    zcatalog, pgcatalog = outcomes
    wanted, actual = zcatalog[when][f"query: {name}"], pgcatalog[when][f"query: {name}"]
    if expected == "raises":
        assert wanted[0] == "raised", "the test's own premise: ZCatalog raises"
        assert actual[0] == "raised", f"ZCatalog raises {wanted[1]}, pg gives {actual}"
        assert issubclass(actual[1], wanted[1])
        return
    assert "raised" not in wanted, f"the test's own premise: ZCatalog raised {wanted}"
    assert bool(wanted) is expected, f"the test's own premise: ZCatalog finds {wanted}"
    assert actual == wanted


@pytest.mark.parametrize("when", ["pending", "committed"])
def test_an_index_lookup_of_a_value_with_a_nul_as_zcatalog(outcomes, when):
    zcatalog, pgcatalog = outcomes
    assert zcatalog[when]["index lookups"] == {
        "UID": ["/plone/b"],
        "Subject": ["/plone/b"],
    }
    assert pgcatalog[when]["index lookups"] == zcatalog[when]["index lookups"]


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


def _uncaught(call):
    """``call()``, or the class of what it raised."""
    try:
        return call()
    except Exception as exc:  # the outcome to compare
        return ("raised", type(exc))


def _a_path_with_a_nul(layer) -> dict:
    """A path with a NUL character given where ZCatalog takes a path (its
    ``uid``): ``getIndexDataForUID`` (the ZMI's object information, a
    script) finds no object there and raises ``KeyError``;
    ``uncatalog_object`` (the ZMI's Catalog tab, a script) has nothing to
    remove, and the transaction's searches and its commit go on."""
    from plone.app.testing import setRoles
    from plone.app.testing import TEST_USER_ID

    import transaction

    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Document", id="p", title="p")
    transaction.commit()
    catalog = api.portal.get_tool("portal_catalog")

    def documents():
        return sorted(b.getPath() for b in catalog(portal_type="Document"))

    outcomes = {
        "getIndexDataForUID": _uncaught(
            lambda: catalog.getIndexDataForUID("/plone/p\x00")
        ),
        "uncatalog_object": _uncaught(lambda: catalog.uncatalog_object("/plone/p\x00")),
        "searched after it": _uncaught(documents),
        "commit": _uncaught(transaction.commit),
    }
    transaction.abort()
    outcomes["committed"] = documents()
    return outcomes


def test_a_path_with_a_nul_as_zcatalog():
    expected = collect_in("zcatalog", _a_path_with_a_nul)
    assert expected["getIndexDataForUID"] == ("raised", KeyError)
    assert expected["searched after it"] == ["/plone/p"]
    assert collect_in("pg", _a_path_with_a_nul) == expected
