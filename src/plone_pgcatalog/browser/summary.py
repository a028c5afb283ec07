"""plone.restapi's summaries of search results may hold ``snippet``.

``@search`` and ``@querystring-search`` give, per result, the fields named
in ``metadata_fields`` that are catalog metadata columns or attributes
that plone.restapi is told of (``IJSONSummarySerializerMetadata``):
``snippet``, a brain's marked passage of its text (``brains.PGCatalogBrain
.snippet``), is such an attribute; asked for, each result of a search for
words gets it (``null`` where there is none).
"""

from __future__ import annotations

from plone.restapi.interfaces import IJSONSummarySerializerMetadata
from zope.interface import implementer


@implementer(IJSONSummarySerializerMetadata)
class SnippetSummaryMetadata:
    def non_metadata_attributes(self) -> set[str]:
        return {"snippet"}
