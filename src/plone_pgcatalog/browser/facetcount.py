"""plone.restapi's ``@facet-count``, answered by SQL (issue 18).

The endpoint the open plone.restapi proposal "Add facet count endpoint"
(pull request 1637) defines, and Volto's search block with its facet counts
(Volto pull request 5812) calls: ``POST <site>/++api++/@facet-count`` with
the body of ``@querystring-search`` (``query``: a list of ``{"i", "o",
"v"}`` criteria, ``sort_on``, ``sort_order``, ...) and the facet's index
name in ``facet``; the answer::

    {"@id": "<site>/@facet-count",
     "facets": {"<facet>": {"count": <results with a value>,
                            "data": [{"value": <value>, "count": <n>}, ...]}}}

each facet counted without its own criteria, for the results the user may
see.  Beyond the proposal: ``facets``, a list, counts several in the same
round trip; values without results are left out.  A facet of ``facets`` is
an index name, or an object as ``portal_catalog.facet_counts`` takes it:
``{"index": "path", "depth": 1, "root": "/plone/news", "name": "sections"}``
(the folders at a depth), ``{"index": "effective", "ranges": {"this year":
{"min": "2026-01-01"}, ...}}`` (date ranges, both ends included).

Registered for sites with this catalog only (the ``IPGCatalogLayer``
browser layer).  Bad input (an unknown facet, criteria that are not a
list) answers 400 with a message naming it.
"""

from __future__ import annotations

from plone.app.querystring.queryparser import parseFormquery
from plone.restapi.deserializer import json_body
from plone.restapi.serializer.converters import json_compatible
from plone.restapi.services import Service
from plone_pgcatalog.errors import QueryError
from Products.CMFCore.utils import getToolByName


class FacetCount(Service):
    def reply(self):
        try:
            body = json_body(self.request)
            facets, query = _read(body)
            parsed = parseFormquery(
                self.context, query, body.get("sort_on"), body.get("sort_order")
            )
            catalog = getToolByName(self.context, "portal_catalog")
            counted = catalog._facet_totals(parsed, facets)
        except (QueryError, ValueError) as error:
            self.request.response.setStatus(400)
            return {"error": {"type": "BadRequest", "message": str(error)}}
        return {
            "@id": f"{self.context.absolute_url()}/@facet-count",
            "facets": {
                name: {
                    "count": total,
                    "data": [
                        {"value": json_compatible(value), "count": count}
                        for value, count in values.items()
                    ],
                }
                for name, (total, values) in counted.items()
            },
        }


def _read(body) -> tuple[list, list]:
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    facets = body.get("facets")
    if facets is None:
        facet = body.get("facet")
        facets = [facet] if facet else []
    if not isinstance(facets, list) or not all(
        isinstance(f, (str, dict)) for f in facets
    ):
        raise ValueError(
            f"facets: {facets!r} is not a list of facets (index names, or"
            " objects with 'index')"
        )
    if not facets:
        raise ValueError("no facet given: 'facet' (an index name) or 'facets'")
    query = body.get("query") or []
    if not isinstance(query, list) or not all(
        isinstance(criterion, dict) and "i" in criterion for criterion in query
    ):
        raise ValueError(
            "query: a list of criteria {'i': index, 'o': operation, 'v': value}"
            " is needed"
        )
    # Each facet is counted without its own criteria (``faceting``).
    return facets, query
