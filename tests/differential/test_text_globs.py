"""Differential: ``?`` and wildcards inside a word, ZCatalog as the oracle.

ZCTextIndex reads a word with ``*`` or ``?`` as a glob over its lexicon
(``Lexicon.globToWordIds``): ``*`` any characters, ``?`` exactly one, the
pattern matching the whole word.  A tsquery knows only prefixes, and
``renovatio?`` found "renovations" too.  Now such a glob tests the
prefix (an index answers it) and then the words of each candidate
(``fulltext.like_pattern``), inside the query's ``AND``/``OR``/``NOT``.
Plone's search form strips ``?`` (``plone.base.utils``); plone.restapi's
``@search``, ``plone.api.content.find`` and code pass it on.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import collect_in

import pytest
import transaction

#: (id, title, description): the words a glob may or may not match.
PAGES = [
    ("p1", "Gardens reopen", "The renovation of the gardens ends in spring"),
    ("p2", "Two renovations", "Renovations of the museum and the library"),
    ("p3", "The renovator", "A renovator of old houses, festival guest"),
    ("p4", "Relocation", "The relocation of the festival office"),
    ("p5", "A reaction", "The reaction of the festival visitors"),
    ("p6", "Red door", "A red door at the festival"),
    ("p7", "Rénovation", "La rénovation du musée, festival"),
    ("p8", "Nothing here", "Plain words only: festival renovated"),
]

#: (name, index, query)
QUERIES = [
    ("one character", "SearchableText", "renovatio?"),
    ("one character, upper case", "SearchableText", "RENOVATIO?"),
    ("one character, accented", "SearchableText", "rénovatio?"),
    ("one character inside", "SearchableText", "renovat?r"),
    ("one character at the end of a word", "SearchableText", "renovation?"),
    ("two single characters", "SearchableText", "fe??ival"),
    ("a wildcard inside", "SearchableText", "re*tion"),
    ("a wildcard inside, plural", "SearchableText", "re*tions"),
    ("a wildcard and one character", "SearchableText", "re*?"),
    ("a wildcard and one character inside", "SearchableText", "re*t?on"),
    ("with a word", "SearchableText", "renovatio? festival"),
    ("or a word", "SearchableText", "renovatio? OR reaction"),
    ("negated", "SearchableText", "festival -renovatio?"),
    ("and not", "SearchableText", "festival AND NOT re*tion"),
    ("negated group", "SearchableText", "festival AND NOT (red OR renovat?r)"),
    ("or a negated group", "SearchableText", "renovation? OR (festival -re*tion)"),
    ("two globs", "SearchableText", "renovat?r OR re*tions"),
    ("a prefix and a glob", "SearchableText", "reloc* OR renovatio?"),
    ("matching nothing", "SearchableText", "renovatio??????"),
    ("Title", "Title", "renovatio?"),
    ("Title, inside", "Title", "re*tion"),
    ("Title, negated", "Title", "red OR reaction -re*tion"),
    ("Description", "Description", "re*tions OR red"),
]


def _run(layer) -> dict:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    catalog = api.portal.get_tool("portal_catalog")

    def found() -> dict:
        return {
            name: sorted(b.getId for b in catalog(**{index: text}))
            for name, index, text in QUERIES
        }

    with api.env.adopt_roles(["Manager"]):
        for id_, title, description in PAGES:
            api.content.create(
                container=portal,
                type="Document",
                id=id_,
                title=title,
                description=description,
            )
    pending = found()
    transaction.commit()
    return {"pending": pending, "stored": found()}


@pytest.fixture(scope="module")
def outcomes():
    return collect_in("zcatalog", _run), collect_in("pg", _run)


@pytest.mark.parametrize("name", [name for name, _, _ in QUERIES])
@pytest.mark.parametrize("when", ["pending", "stored"])
def test_as_zcatalog(outcomes, name, when):
    zcatalog, pgcatalog = outcomes
    if name != "matching nothing":
        assert zcatalog["stored"][name], "the test's own premise: ZCatalog finds some"
    assert zcatalog[when][name] == zcatalog["stored"][name]
    assert pgcatalog[when][name] == zcatalog["stored"][name]


def test_a_glob_finds_fewer_than_its_prefix(outcomes):
    """The premise that makes the cases above tell: the prefix alone
    (what a glob found before) finds more than ZCatalog's glob."""
    zcatalog, _ = outcomes
    assert zcatalog["stored"]["one character"] == ["p1", "p7"]
    assert zcatalog["stored"]["one character inside"] == ["p3"]
