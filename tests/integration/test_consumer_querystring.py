"""The catalog through Collections, plone.app.querystring and vocabularies.

Owns the probes of:

- Collections (plone.app.contenttypes) whose criteria use the querystring
  operations editors pick: selection any/all/none, relative and absolute
  (UID) paths with depth, dates (before today, larger than, between),
  full text, booleans, the current user, sort and limit;
- plone.app.querystring's ``querybuilderresults`` view called directly, and
  its ``querybuilder_html_results`` and ``querybuildernumberofresults`` views
  over the publisher (what the Collection edit form shows live);
- the ``plone.app.vocabularies.Keywords`` vocabulary (the Subject index's
  ``_index``, and with ``plone.subjects_of_navigation_root`` the path and
  keyword indexes' ``_apply_index`` and ``uniqueValues``);
- ``@@getVocabulary`` with ``plone.app.vocabularies.Catalog``: the JSON that
  the folder contents view (pat-structure) and the related-items widget
  fetch.

Must not import plone_pgcatalog internals.
"""

from __future__ import annotations

from plone import api
from plone.base.interfaces import INavigationRoot
from tests.integration.test_real_consumers import as_anonymous
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import build_content
from tests.integration.test_real_consumers import compare
from tests.integration.test_real_consumers import observe_both
from tests.integration.test_real_consumers import oracle
from tests.integration.test_real_consumers import paths
from urllib.parse import urlencode
from zope.component import getMultiAdapter
from zope.component import getUtility
from zope.interface import alsoProvides
from zope.schema.interfaces import IVocabularyFactory

import json
import lxml.html
import pytest
import transaction

OP = "plone.app.querystring.operation."

#: id: (criteria, sort_on, sort_reversed, limit); values that name content
#: by UID are filled in at build time, as the edit form stores them.
COLLECTIONS = {
    "typed": (
        [
            {
                "i": "portal_type",
                "o": OP + "selection.any",
                "v": ["Document", "News Item"],
            },
            {"i": "review_state", "o": OP + "selection.any", "v": ["published"]},
        ],
        "sortable_title",
        False,
        0,
    ),
    "siblings": (
        [{"i": "path", "o": OP + "string.relativePath", "v": "..::1"}],
        "getObjPositionInParent",
        False,
        0,
    ),
    "subjects-any": (
        [{"i": "Subject", "o": OP + "selection.any", "v": ["alpha", "Délta"]}],
        "effective",
        True,
        0,
    ),
    "subjects-all": (
        [{"i": "Subject", "o": OP + "selection.all", "v": ["alpha", "beta"]}],
        "sortable_title",
        False,
        0,
    ),
    "before-today": (
        [
            {"i": "effective", "o": OP + "date.beforeToday", "v": ""},
            {"i": "portal_type", "o": OP + "selection.any", "v": ["Document"]},
        ],
        "effective",
        False,
        0,
    ),
    "larger-than": (
        [{"i": "effective", "o": OP + "date.largerThan", "v": "2020-06-01"}],
        "sortable_title",
        False,
        0,
    ),
    "between": (
        [
            {
                "i": "effective",
                "o": OP + "date.between",
                "v": ["2020-01-01", "2021-12-31"],
            }
        ],
        "effective",
        False,
        0,
    ),
    "not-private": (
        [
            {"i": "review_state", "o": OP + "selection.none", "v": ["private"]},
            {"i": "portal_type", "o": OP + "selection.any", "v": ["Document"]},
        ],
        "sortable_title",
        False,
        0,
    ),
    "docs-by-uid": (
        [{"i": "path", "o": OP + "string.absolutePath", "v": "{uid:docs}::1"}],
        "sortable_title",
        False,
        0,
    ),
    "text": (
        [{"i": "SearchableText", "o": OP + "string.contains", "v": "lighthouse"}],
        "sortable_title",
        False,
        0,
    ),
    "folderish": (
        [{"i": "is_folderish", "o": OP + "boolean.isTrue", "v": ""}],
        "sortable_title",
        False,
        0,
    ),
    "mine": (
        [
            {"i": "Creator", "o": OP + "string.currentUser", "v": ""},
            {"i": "portal_type", "o": OP + "selection.any", "v": ["News Item"]},
        ],
        "sortable_title",
        False,
        0,
    ),
    "limited": (
        [{"i": "portal_type", "o": OP + "selection.any", "v": ["Document"]}],
        "sortable_title",
        False,
        3,
    ),
}


def build(portal) -> None:
    """The shared content, and the Collections in ``/plone/docs/guide``."""
    build_content(portal)
    guide = portal["docs"]["guide"]
    for id_, (criteria, sort_on, reversed_, limit) in COLLECTIONS.items():
        criteria = [
            (
                dict(
                    row,
                    v=row["v"].replace(
                        "{uid:docs}", api.content.get_uuid(portal["docs"])
                    ),
                )
                if isinstance(row["v"], str)
                else row
            )
            for row in criteria
        ]
        api.content.create(
            container=guide,
            type="Collection",
            id=id_,
            title=f"Collection {id_}",
            query=criteria,
            sort_on=sort_on,
            sort_reversed=reversed_,
            limit=limit,
        )
    transaction.commit()


def collection(id_: str):
    def probe(layer):
        coll = layer["portal"]["docs"]["guide"][id_]
        return [item.getPath() for item in coll.results(batch=False)]

    return probe


def batched_collection(layer):
    coll = layer["portal"]["docs"]["guide"]["typed"]
    batch = coll.results(batch=True, b_size=2, b_start=2)
    return [item.getPath() for item in batch], batch.sequence_length


def querybuilder(query, **options):
    def probe(layer):
        view = getMultiAdapter(
            (layer["portal"], layer["request"]), name="querybuilderresults"
        )
        results = view(query=query, brains=True, **options)
        return paths(results), getattr(results, "actual_result_count", len(results))

    return probe


def html_results(layer):
    params = urlencode(
        [
            ("query.i:records", "portal_type"),
            ("query.o:records", OP + "selection.any"),
            ("query.v:records:list", "Document"),
            ("query.v:records:list", "News Item"),
            ("sort_on", "sortable_title"),
        ]
    )
    with browser_for(layer) as browser:
        browser.open(f"http://nohost/plone/@@querybuilder_html_results?{params}")
        page = lxml.html.fromstring(browser.contents)
        links = page.xpath("//a/@href")
        browser.open(f"http://nohost/plone/@@querybuildernumberofresults?{params}")
        count = browser.contents.strip()
    return links, count


def keywords(context_path: str = "", query=None, of_navigation_root=False):
    def probe(layer):
        portal = layer["portal"]
        context = portal.unrestrictedTraverse(context_path) if context_path else portal
        if of_navigation_root:
            api.portal.set_registry_record("plone.subjects_of_navigation_root", True)
            alsoProvides(portal["docs"]["guide"], INavigationRoot)
        factory = getUtility(IVocabularyFactory, "plone.app.vocabularies.Keywords")
        vocabulary = factory(context, query) if query else factory(context)
        return [(term.value, term.token, term.title) for term in vocabulary]

    return probe


#: What the folder contents view asks for (plone.app.content's
#: FolderContentsView.get_options and its default columns).
FOLDER_CONTENTS_ATTRIBUTES = [
    "Title",
    "path",
    "getURL",
    "getIcon",
    "getMimeIcon",
    "portal_type",
    "review_state",
    "ModificationDate",
    "EffectiveDate",
    "CreationDate",
    "ExpirationDate",
    "Subject",
    "Type",
    "is_folderish",
    "exclude_from_nav",
    "getObjSize",
    "id",
    "UID",
    "Creator",
]

#: Values that differ between any two sites built from the same script.
VARYING = {"UID", "ModificationDate", "CreationDate"}


def get_vocabulary(query, batch=None, context="/plone", anonymous=False):
    params = [
        ("name", "plone.app.vocabularies.Catalog"),
        ("query", query if isinstance(query, str) else json.dumps(query)),
        ("attributes", json.dumps(FOLDER_CONTENTS_ATTRIBUTES)),
    ]
    if batch:
        params.append(("batch", json.dumps(batch)))
    url = f"http://nohost{context}/@@getVocabulary?{urlencode(params)}"

    def probe(layer):
        user = {"user": None} if anonymous else {}
        with browser_for(layer, **user) as browser:
            browser.open(url)
            answer = json.loads(browser.contents)
        for item in answer.get("results", []):
            for key in VARYING & set(item):
                item[key] = "<varies>"
        return answer

    return probe


def folder_contents_query(path: str, *extra) -> dict:
    return {
        "criteria": [{"i": "path", "o": OP + "string.path", "v": f"{path}::1"}, *extra],
        "sort_on": "getObjPositionInParent",
        "sort_order": "ascending",
    }


PROBES = {
    **{f"collection {id_}": collection(id_) for id_ in COLLECTIONS},
    "collection batched": batched_collection,
    "collection as anonymous": as_anonymous(collection("typed")),
    "querybuilder sort and limit": querybuilder(
        [{"i": "portal_type", "o": OP + "selection.any", "v": ["Document"]}],
        sort_on="effective",
        sort_order="descending",
        limit=2,
    ),
    "querybuilder no criteria": querybuilder([]),
    "querybuilder custom query": querybuilder(
        [{"i": "Subject", "o": OP + "selection.any", "v": ["alpha"]}],
        sort_on="sortable_title",
        custom_query={"portal_type": "Document"},
    ),
    "querybuilder navigation path": querybuilder(
        [{"i": "path", "o": OP + "string.path", "v": "/news"}],
        sort_on="sortable_title",
    ),
    "querybuilder html results": html_results,
    "Keywords all": keywords(),
    "Keywords filtered": keywords(query="et"),
    "Keywords of navigation root": keywords(
        "docs/guide/intro", of_navigation_root=True
    ),
    "folder contents": get_vocabulary(
        folder_contents_query("/docs/guide"), batch={"page": 1, "size": 15}
    ),
    "folder contents second page": get_vocabulary(
        folder_contents_query("/docs/guide"), batch={"page": 2, "size": 4}
    ),
    "folder contents filtered": get_vocabulary(
        folder_contents_query(
            "/docs/guide",
            {"i": "SearchableText", "o": OP + "string.contains", "v": "lighth*"},
        )
    ),
    "folder contents of the site": get_vocabulary(folder_contents_query("")),
    "related items search": get_vocabulary(
        {
            "criteria": [
                {"i": "SearchableText", "o": OP + "string.contains", "v": "lighthouse*"}
            ],
            "sort_on": "sortable_title",
        }
    ),
}


@pytest.fixture(scope="module")
def observed():
    return observe_both(PROBES, build)


@pytest.mark.parametrize("name", list(PROBES))
def test_querystring_consumers_give_what_zcatalog_gives(observed, name):
    compare(observed, name)


# Pins: each checks that the oracle answers what the content implies.


def test_collection_criteria_select_the_expected_items(observed):
    expected = {
        # A Manager also sees expired items (Access inactive portal content).
        "collection typed": [
            "/plone/about",
            "/plone/docs/expired",
            "/plone/news/future-harbour",
            "/plone/news/harbour-opens",
            "/plone/docs/guide/hidden",
            "/plone/docs/guide/intro",
            "/plone/private-folder/secret",
            "/plone/docs/guide/advanced/tips",
        ],
        "collection subjects-all": ["/plone/news/harbour-opens"],
        # faq has no effective date: it sorts first, as the floor date.
        "collection before-today": [
            "/plone/docs/faq",
            "/plone/docs/expired",
            "/plone/docs/guide/intro",
            "/plone/about",
            "/plone/docs/guide/hidden",
            "/plone/private-folder/secret",
            "/plone/docs/guide/advanced/tips",
        ],
        "collection docs-by-uid": [
            "/plone/docs/expired",
            "/plone/docs/faq",
            "/plone/docs/guide",
        ],
        "collection limited": [
            "/plone/about",
            "/plone/docs/expired",
            "/plone/docs/faq",
        ],
    }
    for name, paths_ in expected.items():
        compare(observed, name, paths_)


def test_collection_relative_path_lists_the_siblings_in_order(observed):
    compare(
        observed,
        "collection siblings",
        [
            "/plone/docs/guide/intro",
            "/plone/docs/guide/advanced",
            "/plone/docs/guide/hidden",
            *(f"/plone/docs/guide/{id_}" for id_ in COLLECTIONS),
        ],
    )


def test_querybuilder_without_criteria_finds_nothing(observed):
    compare(observed, "querybuilder no criteria", ([], 0))


def test_keywords_vocabulary_lists_every_subject(observed):
    values = [value for value, _, _ in oracle(observed, "Keywords all")]
    assert sorted(values) == sorted(["alpha", "beta", "gamma", "Délta"])
    compare(observed, "Keywords all")


def test_keywords_vocabulary_of_a_navigation_root_lists_its_subjects(observed):
    # The guide is the navigation root: beta is used only outside it.
    name = "Keywords of navigation root"
    below = [value for value, _, _ in oracle(observed, name)]
    assert sorted(below) == sorted(["alpha", "gamma", "Délta"])
    compare(observed, name)


def test_folder_contents_lists_children_in_position_order(observed):
    answer = oracle(observed, "folder contents")
    assert answer["total"] == 3 + len(COLLECTIONS)
    assert [item["id"] for item in answer["results"][:3]] == [
        "intro",
        "advanced",
        "hidden",
    ]
    compare(observed, "folder contents")
