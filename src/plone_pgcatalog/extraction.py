"""Extraction: one object in, one catalog row out.

Owns: reading every index value and metadata column of an object in one
pass, through the same indexable wrapper (plone.indexer, CMF workflow
variables) that ZCatalog would see, into a JSON-ready ``CatalogRow``.

Must not touch SQL or connections.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog import metadata
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.fulltext import text_config
from plone_pgcatalog.paths import path_depth
from Products.ZCatalog.Catalog import safe_callable

import logging
import Missing


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogRow:
    """What the catalog stores for one object, ready for PostgreSQL."""

    zoid: int
    path: str
    idx: dict
    meta: dict
    searchable_text: str | None
    #: text search configuration that stems the words of this object
    text_config: str = "simple"

    @property
    def parent_path(self) -> str:
        parent = self.path.rsplit("/", 1)[0]
        return parent or "/"

    @property
    def path_depth(self) -> int:
        return path_depth(self.path)

    def as_json(self) -> dict:
        """The row as query overlays read it (``query.Overlay``)."""
        return {
            "zoid": self.zoid,
            "path": self.path,
            "parent_path": self.parent_path,
            "path_depth": self.path_depth,
            "idx": self.idx,
            "searchable_text": self.searchable_text,
            "text_config": self.text_config,
        }


def index_values(indexes: dict, wrapped, only: set[str] | None = None) -> dict:
    """``{index name: JSON value}`` of ``wrapped`` for the given indexes."""
    values = {}
    for name, index in indexes.items():
        if only is not None and name not in only:
            continue
        translator = get_translator(index.meta_type)
        if translator is None:
            logger.warning(
                "index %r: no translator for meta_type %r, not indexed",
                name,
                index.meta_type,
            )
            continue
        value = translator.extract(index, wrapped)
        if value is not MISSING:
            values[name] = value
    return values


def metadata_values(columns, wrapped) -> dict:
    """``{column: JSON value}``, computed as ZCatalog's ``recordify`` does."""
    values = {}
    for column in columns:
        value = getattr(wrapped, column, Missing.Value)
        if value is not Missing.Value and safe_callable(value):
            value = value()
        values[column] = metadata.encode(value)
    return values


def extract_row(
    zoid: int,
    path: str,
    indexes: dict,
    columns,
    wrapped,
    default_language: str = "",
) -> CatalogRow:
    """Build the complete catalog row of one object.

    Words are stemmed in the object's language, or in ``default_language``
    (the site's) when it has none, as most content of a one-language site.
    """
    idx = index_values(indexes, wrapped)
    searchable_text = idx.pop("SearchableText", None)
    return CatalogRow(
        zoid=zoid,
        path=path,
        idx=idx,
        meta=metadata_values(columns, wrapped),
        searchable_text=searchable_text,
        text_config=text_config(_language(wrapped) or default_language),
    )


def _language(wrapped) -> str | None:
    """The object's language code, as Plone's ``Language`` index reads it."""
    language = getattr(wrapped, "Language", None)
    if safe_callable(language):
        try:
            language = language()
        except (AttributeError, TypeError):
            return None
    return language if isinstance(language, str) else None
