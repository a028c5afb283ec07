"""The catalog through Plone's navigation and folder listings.

Owns the probes of:

- the navigation trees Plone builds from catalog queries: ``buildFolderTree``
  with CMFPlone's ``NavtreeQueryBuilder`` (an ExtendedPathIndex ``navtree``
  query), the navigation portlet's renderer (``navtree`` with
  ``navtree_start``), the classic global navigation rendered in a page
  (``path`` with ``depth``, ``is_folderish``, ``exclude_from_nav``), the
  sitemap page, and plone.restapi's ``@navigation`` (depth 3),
  ``@contextnavigation`` and ``@breadcrumbs`` over the publisher;
- folder listings: the ``listing_view`` page of a Folder (as Manager and as
  Anonymous) and plone.app.contentlisting's ``@@folderListing`` with
  batching and sorting.

Must not import plone_pgcatalog internals.
"""

from __future__ import annotations

from plone.app.layout.navigation.navtree import buildFolderTree
from plone.app.layout.navigation.navtree import NavtreeStrategyBase
from tests.integration.test_real_consumers import as_anonymous
from tests.integration.test_real_consumers import browser_for
from tests.integration.test_real_consumers import compare
from tests.integration.test_real_consumers import observe_both
from tests.integration.test_real_consumers import oracle
from tests.integration.test_real_consumers import path_set

import json
import lxml.html
import pytest

TIPS = "docs/guide/advanced/tips"


def tree_of(node) -> list:
    """A navtree node's children as nested ``(path, flags, children)``."""
    return [
        (
            child["item"].getPath(),
            bool(child.get("currentItem")),
            bool(child.get("currentParent")),
            tree_of(child),
        )
        for child in node.get("children", [])
    ]


def folder_tree(context_path: str):
    def probe(layer):
        from Products.CMFPlone.browser.navtree import NavtreeQueryBuilder

        context = layer["portal"].unrestrictedTraverse(context_path)
        query = NavtreeQueryBuilder(context)()
        return tree_of(
            buildFolderTree(
                context, obj=context, query=query, strategy=NavtreeStrategyBase()
            )
        )

    return probe


def portlet_tree(context_path: str, **settings):
    def probe(layer):
        from plone.app.portlets.portlets import navigation

        context = layer["portal"].unrestrictedTraverse(context_path)
        renderer = navigation.Renderer(
            context, layer["request"], None, None, navigation.Assignment(**settings)
        )
        return tree_of(renderer.getNavTree())

    return probe


def nested_links(element) -> list:
    """Links below ``element`` as ``(href, depth)``; depth counts lists."""
    return [
        (link.get("href"), len(link.xpath("ancestor::ul")))
        for link in element.xpath(".//a[@href]")
    ]


def page_part(url: str, selector: str, anonymous: bool = False):
    def probe(layer):
        user = {"user": None} if anonymous else {}
        with browser_for(layer, **user) as browser:
            browser.open(url)
            page = lxml.html.fromstring(browser.contents)
        (part,) = page.cssselect(selector)
        return nested_links(part)

    return probe


def listing_links(url: str, anonymous: bool = False):
    def probe(layer):
        user = {"user": None} if anonymous else {}
        with browser_for(layer, **user) as browser:
            browser.open(url)
            page = lxml.html.fromstring(browser.contents)
        return page.xpath(
            "//article//a[contains(concat(' ', @class, ' '), ' url ')]/@href"
        )

    return probe


def restapi(url: str):
    def probe(layer):
        with browser_for(layer) as browser:
            browser.addHeader("Accept", "application/json")
            browser.open(url)
            return json.loads(browser.contents)

    return probe


def folder_listing(context_path: str, **options):
    def probe(layer):
        context = layer["portal"].unrestrictedTraverse(context_path)
        listing = context.restrictedTraverse("@@folderListing")(**options)
        return [item.getPath() for item in listing]

    return probe


def navtree_catalog_query(layer):
    # The raw query the navigation portlet sends, for a precise diagnosis
    # when the trees above differ.
    # Unsorted: positions tie across folders, so no order is defined.
    catalog = layer["portal"].portal_catalog
    return path_set(catalog(path={"query": f"/plone/{TIPS}", "navtree": 1}))


def navtree_start_catalog_query(layer):
    catalog = layer["portal"].portal_catalog
    return path_set(
        catalog(path={"query": f"/plone/{TIPS}", "navtree": 1, "navtree_start": 2})
    )


PROBES = {
    "navtree query": navtree_catalog_query,
    "navtree query with navtree_start": navtree_start_catalog_query,
    "buildFolderTree at a deep page": folder_tree(TIPS),
    "buildFolderTree at the site": folder_tree(""),
    "navigation portlet": portlet_tree(TIPS, topLevel=0),
    "navigation portlet from level 2": portlet_tree(TIPS, topLevel=2),
    "navigation portlet as anonymous": as_anonymous(portlet_tree("news")),
    "global navigation in a page": page_part(
        f"http://nohost/plone/{TIPS}", "#portal-globalnav"
    ),
    "global navigation as anonymous": page_part(
        "http://nohost/plone", "#portal-globalnav", anonymous=True
    ),
    "sitemap": page_part("http://nohost/plone/sitemap", "#portal-sitemap"),
    "restapi @navigation depth 3": restapi(
        f"http://nohost/plone/{TIPS}/@navigation?expand.navigation.depth=3"
    ),
    "restapi @contextnavigation": restapi(
        f"http://nohost/plone/{TIPS}/@contextnavigation"
    ),
    "restapi @contextnavigation from level 1": restapi(
        f"http://nohost/plone/{TIPS}/@contextnavigation"
        "?expand.contextnavigation.topLevel=1"
    ),
    "restapi @breadcrumbs": restapi(f"http://nohost/plone/{TIPS}/@breadcrumbs"),
    "listing_view of a folder": listing_links("http://nohost/plone/docs"),
    "listing_view as anonymous": listing_links(
        "http://nohost/plone/news/listing_view", anonymous=True
    ),
    "listing_view of a folder with a default page": listing_links(
        "http://nohost/plone/docs/guide/listing_view"
    ),
    "folderListing in position order": folder_listing("docs/guide"),
    "folderListing sorted, batched": folder_listing(
        "", sort_on="sortable_title", batch=True, b_size=2, b_start=1
    ),
}


@pytest.fixture(scope="module")
def observed():
    return observe_both(PROBES)


@pytest.mark.parametrize("name", list(PROBES))
def test_navigation_and_listings_give_what_zcatalog_gives(observed, name):
    compare(observed, name)


# Pins: the oracle must answer what the content implies.


def test_navtree_query_finds_the_ancestors_and_their_children(observed):
    # The site root, and each ancestor of the page with its children.
    compare(
        observed,
        "navtree query",
        [
            "/plone",
            "/plone/about",
            "/plone/docs",
            "/plone/docs/expired",
            "/plone/docs/faq",
            "/plone/docs/guide",
            "/plone/docs/guide/advanced",
            "/plone/docs/guide/advanced/tips",
            "/plone/docs/guide/hidden",
            "/plone/docs/guide/intro",
            "/plone/news",
            "/plone/private-folder",
        ],
    )
    compare(
        observed,
        "navtree query with navtree_start",
        [
            "/plone/docs/expired",
            "/plone/docs/faq",
            "/plone/docs/guide",
            "/plone/docs/guide/advanced",
            "/plone/docs/guide/advanced/tips",
            "/plone/docs/guide/hidden",
            "/plone/docs/guide/intro",
        ],
    )


def test_navigation_portlet_tree_marks_the_current_item(observed):
    tree = oracle(observed, "navigation portlet")
    docs = next(node for node in tree if node[0] == "/plone/docs")
    assert docs[2] is True  # docs is a parent of the current item
    guide = next(node for node in docs[3] if node[0] == "/plone/docs/guide")
    advanced = next(node for node in guide[3] if node[0].endswith("/advanced"))
    assert advanced[3] == [("/plone/docs/guide/advanced/tips", True, False, [])]
    compare(observed, "navigation portlet")


def test_folder_listing_lists_children_in_position_order(observed):
    compare(
        observed,
        "folderListing in position order",
        [
            "/plone/docs/guide/intro",
            "/plone/docs/guide/advanced",
            "/plone/docs/guide/hidden",
        ],
    )
    compare(
        observed,
        "listing_view as anonymous",
        [
            "http://nohost/plone/news/harbour-opens",
        ],
    )
