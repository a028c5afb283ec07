"""Plone's classic search page with facet counts (issue 18).

Owns ``PGCatalogSearch``, Plone's ``@@search`` view (``Products.CMFPlone.
browser.search.Search``) for sites with this catalog (the browser layer
``IPGCatalogLayer``): its "Filter the results" shows, beside each item
type, how many results the search has of that type, whichever types are
ticked (``portal_catalog.facet_counts``: the type criterion is left out of
its own counts).  The template is Plone's with the counts added
(``search.pt``); the counts also travel in the results that the page's
script replaces, so they follow a search changed without reloading.  A
result of a search for words shows its snippet (the passage where they
matched, marked: ``PGCatalogBrain.snippet``) instead of its description.
"""

from __future__ import annotations

from plone.memoize.view import memoize
from Products.CMFCore.utils import getToolByName
from Products.CMFPlone.browser.search import Search
from Products.ZCTextIndex.ParseTree import ParseError

import json


class PGCatalogSearch(Search):
    @memoize
    def type_counts(self) -> dict[str, int]:
        """Results per item type of this search (types ticked or not)."""
        query = self.filter_query({})
        if query is None:
            return {}
        catalog = getToolByName(self.context, "portal_catalog")
        try:
            counts = catalog.facet_counts(query, facets=["portal_type"])
        except ParseError:
            return {}  # as Plone's ``results``: a search string without words
        return counts["portal_type"]

    def type_counts_json(self) -> str:
        return json.dumps(self.type_counts())
