"""Index definitions and metadata columns, as catalog.xml and the ZMI declare them.

Owns ``CatalogDefinitions`` (the tool's ``_catalog``: ZCatalog's index
objects kept as configuration only, and the metadata column names; they
never hold data) and ``IndexesView`` (``portal_catalog.Indexes``).  Stored
in the ZODB with the tool: ``tool`` keeps the name ``CatalogDefinitions``
importable where existing databases recorded it.

Must not touch SQL or connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from Acquisition import Implicit
from Persistence import PersistentMapping
from persistent import Persistent
from plone_pgcatalog.errors import PGCatalogError
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.indexes import IndexMapping


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
