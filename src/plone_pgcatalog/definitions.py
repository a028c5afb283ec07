"""Index definitions and metadata columns, as catalog.xml and the ZMI declare them.

Owns ``CatalogDefinitions`` (the tool's ``_catalog``: ZCatalog's index
objects kept as configuration only, and the metadata column names; they
never hold data) and ``IndexesView`` (``portal_catalog.Indexes``).  Stored
in the ZODB with the tool: ``tool`` keeps the name ``CatalogDefinitions``
importable where existing databases recorded it.  ``_catalog`` also
answers ZCatalog's ``Catalog`` data API (``_catalog[rid]``,
``searchResults``, ``uids``...) by asking the tool it belongs to.

Must not touch SQL or connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from Acquisition import Explicit
from Acquisition import Implicit
from Persistence import PersistentMapping
from persistent import Persistent
from plone_pgcatalog.errors import PGCatalogError
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.indexes import IndexMapping
from ZPublisher import zpublish


class CatalogDefinitions(Persistent, Implicit):
    """Index definitions and metadata columns: ZCatalog's ``_catalog`` API.

    ``indexes`` maps names to ZCatalog's plug-in index objects, used as
    definitions (meta_type, indexed attributes, options) and as the objects
    that GenericSetup and add-ons inspect; they stay empty.
    """

    def __init__(self):
        self.indexes = PersistentMapping()
        self.schema = PersistentMapping()  # column name -> position
        self.names = ()

    @property
    def indexes(self) -> IndexMapping:
        """Index views for readers (``indexes.IndexMapping``); the stored
        attribute stays the persistent mapping of definitions."""
        self._p_activate()
        return IndexMapping(self.__dict__["indexes"], self)

    @indexes.setter
    def indexes(self, definitions: PersistentMapping) -> None:
        self.__dict__["indexes"] = definitions
        self._p_changed = True

    def getIndex(self, name: str):
        """The index ``name`` as add-ons read it: a view answering from
        PostgreSQL (KeyError if there is no such index, as in ZCatalog)."""
        return self.indexes[name]

    def addIndex(self, name: str, index) -> None:
        if name in self.indexes:
            raise PGCatalogError(f"the index {name!r} already exists")
        if not name or name.startswith("_"):
            raise PGCatalogError(f"{name!r} is not a valid index name")
        self.indexes[name] = aq_base(index)

    def delIndex(self, name: str) -> None:
        if name not in self.indexes:
            raise UnknownIndexError(f"the index {name!r} does not exist")
        del self.indexes[name]

    def addColumn(self, name: str) -> None:
        if name in self.schema:
            raise PGCatalogError(f"the column {name!r} already exists")
        if not name or name.startswith("_"):
            raise PGCatalogError(f"{name!r} is not a valid metadata column name")
        self.names = self.names + (name,)
        self.schema[name] = len(self.names) - 1

    def delColumn(self, name: str) -> None:
        if name not in self.schema:
            raise PGCatalogError(f"the column {name!r} does not exist")
        self.names = tuple(n for n in self.names if n != name)
        self.schema.clear()
        self.schema.update({n: i for i, n in enumerate(self.names)})

    # -- the rest of ZCatalog's ``Catalog`` API ---------------------------------
    # ZCatalog's ``Catalog`` holds the data; here the catalog tool this
    # object belongs to reads it, so each of these asks the tool.

    def _tool(self):
        tool = aq_parent(aq_inner(self))
        if tool is None:
            raise PGCatalogError(
                "_catalog holds no data of its own: reach it through its"
                " catalog (portal_catalog._catalog)"
            )
        return tool

    def __bool__(self) -> bool:
        # Not its number of rows (``__len__``): no round trip for a test.
        return True

    def __len__(self) -> int:
        return len(self._tool())

    def __getitem__(self, index):
        """The brain of record id ``index``, or of ``(normalized score,
        score, rid)`` (``Catalog.mergeResults``); KeyError if the site has
        no such row."""
        if isinstance(index, tuple):
            normalized, score, rid = index
        else:
            normalized, score, rid = 1, 1, index
        brain = self._tool().brain_of(rid)
        brain.data_record_score_ = score
        brain.data_record_normalized_score_ = normalized
        return brain

    def searchResults(self, query=None, _merge=True, **kw):
        """ZCatalog's ``Catalog.searchResults``: no security terms (the
        tool's ``unrestrictedSearchResults``); ``_merge`` false gives the
        raw form of ``search``."""
        tool = self._tool()
        if _merge:
            return tool._unrestrictedSearchResults(query, **kw)
        merged = dict(query) if isinstance(query, dict) else {}
        merged.update(kw)
        return tool._unrestricted_unmerged(merged)

    __call__ = searchResults

    def search(self, query, sort_index=None, reverse=False, limit=None, merge=True):
        """ZCatalog's ``Catalog.search``: no security terms; ``sort_index``
        an index (as ``getIndex`` gives it) or a list of them."""
        if isinstance(sort_index, (list, tuple)):
            sort_index = [_index_name(index) for index in sort_index]
        elif sort_index is not None:
            sort_index = _index_name(sort_index)
        return self._tool()._search(query, sort_index, reverse, limit, merge)

    def hasuid(self, uid: str):
        """The record id of the object cataloged at path ``uid``, or None."""
        return self._tool().getrid(uid)

    # Set on the class below: they ask the tool through acquisition.
    uids: CatalogedPaths
    paths: RecordPaths

    def getIndexDataForRID(self, rid: int) -> dict:
        return self._tool().getIndexDataForRID(rid)

    def getMetadataForRID(self, rid: int) -> dict:
        return self._tool().getMetadataForRID(rid)

    def uniqueValuesFor(self, name: str) -> tuple:
        return self._tool().uniqueValuesFor(name)

    def catalogObject(
        self, object, uid, threshold=None, idxs=None, update_metadata=True
    ) -> int:
        """Catalog ``object`` under ``uid`` as it is: its own attributes,
        without plone.indexer's indexers (which the tool's
        ``catalog_object`` applies), as ZCatalog's ``Catalog`` does.
        ``threshold`` is ZCatalog's, for subtransactions, which this
        catalog does not make.  Returns 0, not ZCatalog's number of indexes
        whose entry changed: the values are compared at commit, in SQL."""
        self._tool()._catalog_object(object, uid, idxs, update_metadata, plain=True)
        return 0

    def uncatalogObject(self, uid: str) -> None:
        self._tool().uncatalog_object(uid)

    def clear(self) -> None:
        """Remove every row of the site (at commit)."""
        self._tool()._clear()


def _index_name(index) -> str:
    """The name of ``index`` (an index as ``getIndex`` gives it, or a name)."""
    return index if isinstance(index, str) else index.getId()


class CatalogedPaths(Explicit):
    """``_catalog.uids``: path → record id, read from the tool's rows.

    One object on the class, acquisition-wrapped in the ``_catalog`` it is
    reached through (explicitly: no name of the tool's is found on it),
    which asks its tool (``CatalogDefinitions._tool``):
    reached on a ``_catalog`` without its tool, each use raises that
    method's error naming the way in."""

    __allow_access_to_unprotected_subobjects__ = True

    def _tool(self):
        return aq_parent(aq_inner(self))._tool()

    def get(self, path: str, default=None):
        return self._tool().getrid(path, default)

    def __getitem__(self, path: str) -> int:
        rid = self.get(path)
        if rid is None:
            raise KeyError(path)
        return rid

    def __contains__(self, path) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    has_key = __contains__

    def items(self) -> list[tuple[str, int]]:
        """In the order of the paths, as ZCatalog's BTree gives them."""
        return sorted((b.getPath(), b.getRID()) for b in self._tool().searchAll())

    def keys(self) -> list:
        return [key for key, _ in self.items()]

    def values(self) -> list:
        return [value for _, value in self.items()]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._tool())


class RecordPaths(CatalogedPaths):
    """``_catalog.paths``: record id → path, read from the tool's rows."""

    def get(self, rid, default=None):
        try:
            return self._tool().getpath(rid)
        except (KeyError, TypeError, ValueError):
            return default

    def __getitem__(self, rid) -> str:
        path = self.get(rid)
        if path is None:
            raise KeyError(rid)
        return path

    def __contains__(self, rid) -> bool:
        return self.get(rid) is not None

    has_key = __contains__

    def items(self) -> list[tuple[int, str]]:
        """In the order of the record ids, as ZCatalog's BTree gives them."""
        return sorted((rid, path) for path, rid in super().items())


#: ``{path: record id}`` and ``{record id: path}`` of the cataloged
#: objects, read-only.
CatalogDefinitions.uids = CatalogedPaths()
CatalogDefinitions.paths = RecordPaths()


class IndexesView(Implicit):
    """``portal_catalog.Indexes``: the index views by name (``indexes.py``)."""

    __allow_access_to_unprotected_subobjects__ = True

    def __init__(self, definitions: CatalogDefinitions):
        self._definitions = definitions

    def _indexes(self):
        # Through the tool it is wrapped in, so that the views find their site.
        tool = aq_parent(aq_inner(self))
        catalog = tool._catalog if tool is not None else self._definitions
        return catalog.indexes

    def __getitem__(self, name: str):
        return self._indexes()[name]

    def get(self, name: str, default=None):
        return self._indexes().get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self._definitions.indexes

    def keys(self):
        return list(self._definitions.indexes.keys())

    @zpublish(False)  # as ZCatalog's Indexes: no URL lists them
    def objectIds(self, spec=None):
        """Index names, of the given meta_type(s) if ``spec`` is given."""
        if spec is None:
            return self.keys()
        if isinstance(spec, str):
            spec = [spec]
        definitions = self._definitions.indexes.definitions()
        return [name for name, index in definitions.items() if index.meta_type in spec]

    def objectValues(self):
        return self._indexes().values()

    def objectItems(self):
        return self._indexes().items()
