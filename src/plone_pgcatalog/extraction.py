"""Extraction: one object in, one catalog row out.

Owns: reading every index value and metadata column of an object in one
pass, through the same indexable wrapper (plone.indexer, CMF workflow
variables) that ZCatalog would see, into a JSON-ready ``CatalogRow``.

Must not touch SQL or connections.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from plone.indexer.interfaces import IIndexableObject
from plone_pgcatalog import metadata
from plone_pgcatalog.fulltext import text_config
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.paths import path_depth
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.registry import TextTranslator
from plone_pgcatalog.store.layout import nul_free
from Products.CMFCore.CatalogTool import IndexableObjectWrapper
from Products.ZCatalog.Catalog import safe_callable
from zope.component import queryMultiAdapter

import logging
import Missing

logger = logging.getLogger(__name__)


def indexable(obj, catalog):
    """``obj`` as ZCatalog's indexes see it in ``catalog``: plone.indexer's
    wrapper (an ``IIndexableObject`` adapter), else CMF's, unless ``obj``
    is one already."""
    if IIndexableObject.providedBy(obj):
        return obj
    wrapped = queryMultiAdapter((obj, catalog), IIndexableObject)
    return wrapped if wrapped is not None else IndexableObjectWrapper(obj, catalog)


class _SourceText:
    """The text a row or patch gives snippets (``store.processor`` writes
    it where ``text_given``)."""

    searchable_text: str | None

    @property
    def text_source(self) -> str | None:
        """The text SearchableText's words were taken from, as snippets show
        it (``fulltext.IndexedText``), or None."""
        return getattr(self.searchable_text, "source", None)


@dataclass(frozen=True)
class CatalogRow(_SourceText):
    """What the catalog stores for one object, ready for PostgreSQL."""

    zoid: int
    path: str
    idx: dict
    meta: dict
    searchable_text: str | None
    #: text search configuration that stems the words of this object
    text_config: str = "simple"
    #: text indexes whose attributes gave no string (``texts_kept``): the
    #: object's stored row keeps their words, as ZCTextIndex's
    #: ``index_object`` leaves them; a new object has none
    kept: tuple[str, ...] = ()

    @property
    def text_given(self) -> bool:
        """Whether the row gives SearchableText (its words, or none)."""
        return "SearchableText" not in self.kept

    @property
    def parent_path(self) -> str:
        parent = self.path.rsplit("/", 1)[0]
        return parent or "/"

    def after(self, earlier: CatalogRow | CatalogPatch) -> CatalogRow:
        """This row cataloged after ``earlier``, a row or patch of the same
        object pending in the transaction: each kept index takes what
        ``earlier`` gives it (a value, or none), where it gives one."""
        if isinstance(earlier, CatalogRow):
            values = earlier.idx
            decided = [name for name in self.kept if name not in earlier.kept]
        else:
            values = earlier.values
            decided = [
                name
                for name in self.kept
                if name in earlier.values or name in earlier.removed
            ]
        text = "SearchableText" in self.kept and earlier.text_given
        if not (decided or text):
            return self
        return replace(
            self,
            idx={
                **self.idx,
                **{name: values[name] for name in decided if name in values},
            },
            kept=tuple(
                name
                for name in self.kept
                if name not in decided and not (text and name == "SearchableText")
            ),
            searchable_text=earlier.searchable_text if text else self.searchable_text,
            text_config=earlier.text_config if text else self.text_config,
        )

    @property
    def path_depth(self) -> int:
        return path_depth(self.path)

    def as_json(self) -> dict:
        """The row as query overlays read it (``overlay.Overlay``)."""
        return {
            "zoid": self.zoid,
            "path": self.path,
            "parent_path": self.parent_path,
            "path_depth": self.path_depth,
            "idx": self.idx,
            "searchable_text": self.searchable_text,
            "text_config": self.text_config,
        }


def texts_kept(indexes: dict, values: dict, only: set[str] | None = None) -> tuple:
    """The text indexes (of ``only``) without a value in ``values``: their
    attributes gave no string.  ZCTextIndex's ``index_object`` then returns
    without unindexing: an object cataloged again keeps its words."""
    return tuple(
        sorted(
            name
            for name, index in indexes.items()
            if name not in values
            and (only is None or name in only)
            and isinstance(get_translator(index.meta_type), TextTranslator)
        )
    )


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
        value = index_value(translator, index, wrapped)
        if value is not MISSING:
            values[name] = value
    return values


def index_value(translator, index, wrapped):
    """One index's JSON value of ``wrapped`` as the catalog stores it
    (``layout.nul_free``), or ``MISSING``: what ``translator`` extracts."""
    value = translator.extract(index, wrapped)
    return value if value is MISSING else nul_free(value)


def metadata_values(columns, wrapped) -> dict:
    """``{column: JSON value}``, computed as ZCatalog's ``recordify`` does."""
    values = {}
    for column in columns:
        value = getattr(wrapped, column, Missing.Value)
        if value is not Missing.Value and safe_callable(value):
            value = value()
        values[column] = metadata.encode(value)
    return values


@dataclass(frozen=True)
class CatalogPatch(_SourceText):
    """A partial reindex (``idxs``): some index values, merged at commit
    into the stored row with a JSONB merge, without storing the object."""

    zoid: int
    path: str
    #: new values of the reindexed indexes that have one
    values: dict
    #: reindexed indexes without a value now (their keys are removed)
    removed: tuple[str, ...]
    #: metadata: written when ``update_metadata`` or the row is new
    meta: dict
    update_metadata: bool
    #: SearchableText was reindexed: its words and their configuration
    text_given: bool = False
    searchable_text: str | None = None
    text_config: str = "simple"

    @property
    def parent_path(self) -> str:
        return self.path.rsplit("/", 1)[0] or "/"

    @property
    def path_depth(self) -> int:
        return path_depth(self.path)

    @classmethod
    def removing(cls, zoid: int, path: str, name: str) -> CatalogPatch:
        """The patch that takes index ``name``'s value out of a row (its
        words, for SearchableText)."""
        text = name == "SearchableText"
        return cls(
            zoid=zoid,
            path=path,
            values={},
            removed=() if text else (name,),
            meta={},
            update_metadata=False,
            text_given=text,
        )

    def as_new_row(self) -> CatalogRow:
        """The row of an object that has none: this patch's values only."""
        return CatalogRow(
            zoid=self.zoid,
            path=self.path,
            idx=dict(self.values),
            meta=self.meta,
            searchable_text=self.searchable_text if self.text_given else None,
            text_config=self.text_config if self.text_given else "simple",
        )

    def merged_into(self, row: CatalogRow) -> CatalogRow:
        """``row`` with this patch applied (for a row still pending)."""
        idx = {k: v for k, v in row.idx.items() if k not in self.removed}
        idx.update(self.values)
        return replace(
            row,
            idx=idx,
            meta=self.meta if self.update_metadata else row.meta,
            searchable_text=(
                self.searchable_text if self.text_given else row.searchable_text
            ),
            text_config=self.text_config if self.text_given else row.text_config,
            kept=tuple(
                name
                for name in row.kept
                if name not in self.values
                and name not in self.removed
                and not (self.text_given and name == "SearchableText")
            ),
        )

    def then(self, later: CatalogPatch) -> CatalogPatch:
        """This patch followed by ``later`` as one patch."""
        values = {k: v for k, v in self.values.items() if k not in later.removed}
        values.update(later.values)
        removed = (set(self.removed) - set(later.values)) | set(later.removed)
        return replace(
            later,
            values=values,
            removed=tuple(sorted(removed)),
            meta=later.meta if later.update_metadata else self.meta,
            update_metadata=self.update_metadata or later.update_metadata,
            text_given=self.text_given or later.text_given,
            searchable_text=(
                later.searchable_text if later.text_given else self.searchable_text
            ),
            text_config=later.text_config if later.text_given else self.text_config,
        )

    def changes_any(self, names) -> bool:
        """Whether the patch changes the value of one of the indexes
        ``names`` (a search that reads none of them finds what the stored
        row gives)."""
        if self.text_given and "SearchableText" in names:
            return True
        return any(name in names for name in (*self.values, *self.removed))

    def as_json(self) -> dict:
        """The patch as query overlays read it (``overlay.Overlay``)."""
        return {
            "zoid": self.zoid,
            "vals": self.values,
            "removed": list(self.removed),
            "text_given": self.text_given,
            "searchable_text": self.searchable_text,
            "text_config": self.text_config,
        }


def extract_patch(
    zoid: int,
    path: str,
    indexes: dict,
    only: set[str],
    columns,
    wrapped,
    update_metadata: bool,
    default_language: str = "",
    read_metadata: bool | None = None,
) -> CatalogPatch:
    """The values of the indexes ``only`` (and the metadata) of one object.

    The metadata is read when ``read_metadata`` (by default: when it is
    to be written); a row that is not cataloged yet needs it either way,
    which the caller knows.
    """
    if read_metadata is None:
        read_metadata = update_metadata
    values = index_values(indexes, wrapped, only)
    # A text index without a string keeps its words (``texts_kept``): the
    # patch neither gives nor removes them.
    kept = texts_kept(indexes, values, only)
    text_given = (
        "SearchableText" in only
        and "SearchableText" in indexes
        and "SearchableText" not in kept
    )
    searchable_text = values.pop("SearchableText", None)
    removed = tuple(
        sorted(
            name
            for name in only
            if name in indexes and name not in values and name not in kept
        )
    )
    return CatalogPatch(
        zoid=zoid,
        path=path,
        values=values,
        removed=tuple(name for name in removed if name != "SearchableText"),
        # Not read when it will not be written (ZCatalog does not either):
        # reindexObjectSecurity asks for that, on every object of a subtree.
        meta=metadata_values(columns, wrapped) if read_metadata else {},
        update_metadata=bool(update_metadata),
        text_given=text_given,
        searchable_text=searchable_text,
        text_config=text_config(_language(wrapped) or default_language),
    )


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
    kept = texts_kept(indexes, idx)
    searchable_text = idx.pop("SearchableText", None)
    return CatalogRow(
        zoid=zoid,
        path=path,
        idx=idx,
        meta=metadata_values(columns, wrapped),
        searchable_text=searchable_text,
        text_config=text_config(_language(wrapped) or default_language),
        kept=kept,
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
