"""``PGCatalogTool``: Plone's ``portal_catalog`` over PostgreSQL.

Owns: the catalog API that Plone, CMF, the ZMI and add-ons call, as a
facade over the steps of the data flow:

- definitions: ``definitions.CatalogDefinitions`` (the tool's ``_catalog``;
  existing databases recorded it as ``plone_pgcatalog.tool``'s, which the
  import here keeps resolvable), SQL indexes queued through ``store.ddl``;
- write: ``catalog_object`` → ``extraction`` → ``pending`` (the processor
  writes it during the ZODB commit; ``conflicts`` checks what it replaces);
- query: ``searchResults`` → security terms → ``results.search_results``
  (translation, one round trip, ``brains.LazyResults``);
- maintenance: ``maintenance`` (rebuild, refresh, reindex) and the ZMI
  buttons.

For the CLI and other modules of this package: ``site_path()``,
``site_languages()``, ``pending_changes()``.  Nothing of the catalog's
data is stored in the ZODB.
"""

from __future__ import annotations

from AccessControl import ClassSecurityInfo
from AccessControl.class_init import InitializeClass
from AccessControl.Permissions import manage_zcatalog_entries
from AccessControl.Permissions import manage_zcatalog_indexes
from AccessControl.Permissions import search_zcatalog
from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from DateTime import DateTime
from OFS.Folder import Folder
from OFS.ObjectManager import ObjectManager
from plone_pgcatalog import faceting
from plone_pgcatalog import maintenance
from plone_pgcatalog import metadata
from plone_pgcatalog import moves
from plone_pgcatalog import results
from plone_pgcatalog import slowlog
from plone_pgcatalog import snapshots
from plone_pgcatalog.conflicts import found_by_searches
from plone_pgcatalog.conflicts import read_current
from plone_pgcatalog.conflicts import read_current_order
from plone_pgcatalog.conflicts import read_replaced_paths
from plone_pgcatalog.definitions import CatalogDefinitions
from plone_pgcatalog.definitions import IndexesView
from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import extract_patch
from plone_pgcatalog.extraction import extract_row
from plone_pgcatalog.extraction import indexable
from plone_pgcatalog.indexes import index_data
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.ordering import catalog_of
from plone_pgcatalog.paths import in_subtree
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.pending import pending_changes
from plone_pgcatalog.query import sort_attr
from plone_pgcatalog.results import search_results
from plone_pgcatalog.results import site_languages
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import processor
from plone_pgcatalog.store import schema
from plone_pgcatalog.store import search
from plone_pgcatalog.store.ddl import SchemaChange
from plone_pgcatalog.store.layout import nul_free
from plone_pgcatalog.store.relocation import relocate
from plone_pgcatalog.zmi import CatalogManagement
from plone_pgcatalog.zmi import check_if_published
from Products.CMFCore.CatalogTool import CatalogTool as CMFCatalogTool
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import _getAuthenticatedUser
from Products.CMFCore.utils import UniqueObject
from Products.CMFPlone.CatalogTool import CatalogTool as PloneCatalogTool
from Products.PluginIndexes.interfaces import IPluggableIndex
from Products.ZCatalog.interfaces import IZCatalog
from Products.ZCatalog.ZCatalog import ZCatalog
from urllib.parse import quote
from zExceptions import BadRequest
from zope.interface import implementer
from ZPublisher import zpublish

import functools
import hashlib
import logging
import math
import psycopg
import time

logger = logging.getLogger(__name__)


@implementer(IPGCatalogTool, ICatalogTool, IZCatalog)
class PGCatalogTool(CatalogManagement, UniqueObject, Folder):
    """``portal_catalog`` whose data lives in PostgreSQL (see module)."""

    id = "portal_catalog"
    meta_type = "PGCatalog Tool"
    zmi_icon = "fas fa-search"
    title = "Catalog on PostgreSQL"
    #: searches slower than this many milliseconds go to the slow-query
    #: log (``slowlog``; -1: off, 0: every search); a property, so it
    #: changes without a restart (ZMI Properties, Query Report, control panel)
    slow_query_ms = slowlog.DEFAULT_THRESHOLD_MS
    _properties = Folder._properties + (
        {"id": "slow_query_ms", "type": "int", "mode": "w"},
    )

    security = ClassSecurityInfo()

    def __init__(self, id: str = "portal_catalog"):
        self.id = id
        self._catalog = CatalogDefinitions()

    # -- definitions ------------------------------------------------------------

    @security.protected(search_zcatalog)
    def indexes(self) -> list[str]:
        return list(self._catalog.indexes.keys())

    @security.protected(search_zcatalog)
    def schema(self) -> list[str]:
        return list(self._catalog.schema.keys())

    @security.protected(search_zcatalog)
    def index_objects(self):
        return list(self._catalog.indexes.values())

    @security.protected(manage_zcatalog_indexes)
    def getIndexObjects(self):
        return [self._catalog.getIndex(name) for name in self.indexes()]

    @security.private
    def getIndexDefinitions(self):
        """The ZCatalog index objects that define each index (no views), as
        a read-only mapping (``indexes.Definitions``)."""
        return self._catalog.indexes.definitions()

    @property
    def Indexes(self):
        """``portal_catalog.Indexes['name']``, as ZCatalog offers it."""
        return IndexesView(self._catalog).__of__(self)

    @security.protected(manage_zcatalog_indexes)
    def addIndex(self, name: str, type, extra=None) -> None:
        if IPluggableIndex.providedBy(type):
            index = type
        else:
            index = self._new_index(name, type, extra)
        self._catalog.addIndex(name, index)
        self._queue_at_commit(
            self._index_creation(name, index.meta_type),
            undo=self._index_drop(name, index.meta_type),
            wanted=lambda: self._has_index(name, index.meta_type),
        )

    def _new_index(self, name: str, meta_type: str, extra):
        # ZCatalog's way: the product registry knows each index class.
        for info in ObjectManager.all_meta_types(self, interfaces=(IPluggableIndex,)):
            if info["name"] == meta_type:
                factory = info["instance"]
                break
        else:
            known = sorted(
                info["name"]
                for info in ObjectManager.all_meta_types(
                    self, interfaces=(IPluggableIndex,)
                )
            )
            raise ValueError(
                f"index {name!r}: type {meta_type!r} is not known; known types: "
                + ", ".join(known)
            )
        arguments = factory.__init__.__code__.co_varnames
        if "extra" in arguments:
            return factory(name, extra=extra, caller=self)
        if "caller" in arguments:
            return factory(name, caller=self)
        return factory(name)

    @security.protected(manage_zcatalog_indexes)
    def delIndex(self, name: str) -> None:
        index = self._catalog.indexes.get(name)
        self._catalog.delIndex(name)  # UnknownIndexError (CatalogError) first
        self._queue_at_commit(
            self._index_drop(name, index.meta_type),
            undo=self._index_creation(name, index.meta_type),
            wanted=lambda: not self._has_index(name, index.meta_type),
        )

    @security.protected(manage_zcatalog_indexes)
    def manage_addIndex(
        self, name, type, extra=None, REQUEST=None, RESPONSE=None, URL1=None
    ):
        """Add an index (ZMI and Plone's API)."""
        self.addIndex(name, type, extra)

    @security.protected(manage_zcatalog_indexes)
    def manage_delIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        """Delete indexes (ZMI and Plone's API)."""
        if isinstance(ids, str):
            ids = [ids]
        for name in ids or ():
            self.delIndex(name)

    @security.protected(manage_zcatalog_indexes)
    def addColumn(self, name: str, default_value=None) -> None:
        self._catalog.addColumn(name)

    @security.protected(manage_zcatalog_indexes)
    def delColumn(self, name: str) -> None:
        self._catalog.delColumn(name)

    @security.protected(manage_zcatalog_indexes)
    def manage_addColumn(
        self, name, default_value=None, REQUEST=None, RESPONSE=None, URL1=None
    ):
        """Add a metadata column (ZMI)."""
        self.addColumn(name, default_value)

    @security.protected(manage_zcatalog_indexes)
    def manage_delColumn(self, names=None, REQUEST=None, RESPONSE=None, URL1=None):
        """Delete metadata columns (ZMI)."""
        if isinstance(names, str):
            names = [names]
        for name in names or ():
            self.delColumn(name)

    def _storage(self):
        return connection._storage_instance(self)._main

    def _index_creation(self, name: str, meta_type: str) -> SchemaChange | None:
        """The change that creates the typed column or SQL indexes of a
        catalog index (``schema.create_index``)."""
        return self._schema_change(
            lambda conn: schema.create_index(conn, name, meta_type, ddl.LOCK_TIMEOUT),
            f"index {name}",
            schema.index_version(name, meta_type),
        )

    def _index_drop(self, name: str, meta_type: str) -> SchemaChange | None:
        """The change that drops the typed column and SQL indexes of a
        deleted catalog index.

        The values stay in ``idx`` until objects are cataloged again; no
        query reads them, as no index definition names them (and a creation
        that undoes the drop fills the column from them again).
        """
        # The same source as the creation: zodb-pgjsonb remembers the last
        # version per source, so adding the index again creates it again.
        return self._schema_change(
            lambda conn: schema.drop_index(conn, name, meta_type, ddl.LOCK_TIMEOUT),
            f"index {name}",
            "drop " + schema.index_version(name, meta_type),
        )

    def _defer_ddl(self, statement, label: str) -> None:
        """Run the statement ``statement`` when this transaction commits."""
        if statement is not None:
            self._queue_at_commit(
                self._schema_change(
                    lambda conn: conn.execute(statement),
                    label,
                    statement.as_string(),
                )
            )

    def _schema_change(self, change, label: str, version: str) -> SchemaChange | None:
        """``change(conn)`` as a ``SchemaChange``: run on an autocommit
        connection, outside any read snapshot, once per version (here a
        digest of ``version``, the change as text), so a new version of it
        runs again.  None for a tool that is not in a database yet."""
        if self._p_jar is None and aq_parent(self) is None:
            return None
        storage = self._storage()
        processor.register(storage)
        return SchemaChange(
            storage,
            label,
            change,
            remedy="run the catalog's ensure_sql_indexes() again and commit",
            version=hashlib.sha1(version.encode()).hexdigest(),
        )

    def _queue_at_commit(self, change, undo=None, wanted=None) -> None:
        """Run ``change`` when this transaction commits, never if it aborts
        (``ddl.queue_at_commit``)."""
        if change is not None:
            ddl.queue_at_commit(
                change, connection._jar(self).transaction_manager.get(), undo, wanted
            )

    def _has_index(self, name: str, meta_type: str) -> bool:
        """Whether the definitions, as this transaction has them, hold an
        index ``name`` of type ``meta_type``."""
        try:
            return self._catalog.indexes.index_type(name) == meta_type
        except KeyError:
            return False

    @security.private
    def ensure_sql_indexes(self) -> None:
        """Create what is missing of the typed column or SQL indexes of
        every catalog index when this transaction commits (idempotent)."""
        for name, index in self._catalog.indexes.items():
            self._queue_at_commit(self._index_creation(name, index.meta_type))

    # -- write path -------------------------------------------------------------

    @security.private
    def pending_changes(self):
        """This transaction's pending changes; the commit will write them.

        The one way in for code that changes the catalog outside
        ``catalog_object`` (moves, ordering, security reindexes, rebuilds).

        The processor writes the rows at the end of the vote, in the
        commit's PostgreSQL transaction, whether the transaction stores the
        objects or not (a reindex of an unchanged object, a removal).  The
        ZODB connection must take part in the commit, even when no object
        changed: it is joined here.
        """
        processor.register(self._storage())
        connection.join_transaction(self)
        return pending_changes(functools.partial(read_replaced_paths, self))

    @security.protected(manage_zcatalog_entries)
    @zpublish(False)
    def catalog_object(
        self, obj, uid=None, idxs=None, update_metadata=1, pghandler=None
    ):
        """Catalog ``obj`` under ``uid`` (its physical path by default).

        Every index and metadata value is read now; PostgreSQL gets the
        row when the transaction commits.  With ``idxs``, only those
        indexes are read and merged into the stored row (and the metadata,
        unless ``update_metadata`` is false), as ZCatalog does; the object
        itself is not stored again.
        """
        self._catalog_object(obj, uid, idxs, update_metadata)

    @security.private
    def _catalog_object(self, obj, uid, idxs, update_metadata, plain=False):
        """``catalog_object``; with ``plain``, the object's own attributes
        are indexed, without plone.indexer's indexers (ZCatalog's
        ``_catalog.catalogObject``).  The patch of a partial reindex
        (``idxs``), for ``index_one``."""
        wrapped = obj if plain else indexable(obj, self)
        content = obj
        if wrapped is obj:
            unwrap = getattr(obj, "_getWrappedObject", None)
            if unwrap is not None:
                content = unwrap()
        path = uid or "/".join(content.getPhysicalPath())
        own = self._catalog_of_its_site(content, path)
        if own is not None:
            return own._catalog_object(obj, uid, idxs, update_metadata, plain)
        zoid = self._zoid_of(content, path)
        if zoid is None:
            return
        read_current(content)
        definitions = self.getIndexDefinitions()
        if any(
            definitions[name].meta_type == "GopipIndex"
            for name in (idxs or definitions)
            if name in definitions
        ):
            read_current_order(content)
        if idxs:
            for name in idxs:
                if name not in definitions:
                    raise KeyError(name)  # as ZCatalog's getIndex
            patch = extract_patch(
                zoid,
                path,
                definitions,
                set(idxs),
                self._catalog.names,
                wrapped,
                update_metadata=bool(update_metadata),
                default_language=self.site_languages()[0],
                # ZCatalog gives a new row its metadata in any case.
                read_metadata=bool(update_metadata) or not self._has_row(zoid, path),
            )
            self.pending_changes().patch(patch)
            return patch
        row = extract_row(
            zoid,
            path,
            definitions,
            self._catalog.names,
            wrapped,
            default_language=self.site_languages()[0],
        )
        # ``pghandler`` is ZCatalog's signature; progress is reported by the
        # loops that catalog many objects (maintenance.py), as in ZCatalog.
        self.pending_changes().catalog(row)

    @security.private
    def index_one(self, name: str, rid, obj) -> int:
        """An index view's ``index_object``: ``obj``'s value of index
        ``name`` (as given, without indexers) merged into its row at
        commit; 1 if it has one, else 0.  ``rid`` must be its record id."""
        path = "/".join(obj.getPhysicalPath())
        unwrap = getattr(obj, "_getWrappedObject", None)
        zoid = self._zoid_of(unwrap() if unwrap is not None else obj, path)
        if zoid is None or zoid != _record_id(rid):
            raise ValueError(
                f"index {name!r}: record id {rid!r} is not the one of the object"
                f" at {path} ({zoid}); a record id here is the object's oid"
                " (getrid gives it)"
            )
        patch = self._catalog_object(obj, path, [name], 0, plain=True)
        return int(patch is not None and name in patch.values)

    @security.private
    def unindex_one(self, name: str, rid) -> None:
        """An index view's ``unindex_object``: index ``name``'s value out
        of record id ``rid``'s row at commit; nothing if the site has no
        such row."""
        if name not in self._catalog.indexes:
            raise KeyError(name)
        rid = _record_id(rid)
        try:
            path = self.getpath(rid)
        except KeyError:
            return
        self.pending_changes().patch(CatalogPatch.removing(rid, path, name))

    def _catalog_of_its_site(self, content, path: str):
        """The catalog of another site that ``content`` (at ``path``, not
        in this catalog's site) belongs to, or None.

        CMFCore's ``getToolByName`` gives the current site's catalog: code
        that changes an object of another site of the database without
        making that site the current one (a move between sites, a script
        that walks several sites) has this catalog index it.  ZCatalog would
        keep a stray entry for it; here each object has one row, which the
        other site's searches read: indexed with this site's index
        definitions, it would lose the values of that site's indexes of
        other types or names.  The object's own catalog indexes it, as its
        site's requests do."""
        if in_subtree(path, self.site_path()):
            return None
        own = catalog_of(content)
        if own is None or aq_base(own) is aq_base(self):
            return None
        return own

    def _has_row(self, zoid: int, path: str) -> bool:
        """Whether ``zoid`` (at ``path``) is cataloged, pending changes
        included."""
        pending = current_pending()
        if pending and zoid in pending.rows:
            return True
        if pending and pending.uncataloged(path):
            return False
        if zoid in found_by_searches():
            return True  # as reindexObjectSecurity finds its objects
        try:
            with connection.reading(self) as conn:
                return search.is_cataloged(conn, zoid)
        except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable):
            return False  # no catalog column yet: nothing is cataloged

    def _zoid_of(self, content, path: str) -> int | None:
        """The object's oid as an int; assigns one to a new object."""
        from ZODB.utils import u64

        base = aq_base(content)
        if not hasattr(base, "_p_jar"):
            logger.warning("not cataloged, not a persistent object: %s", path)
            return None
        if base._p_oid is None:
            jar = connection._jar(content)
            jar.add(base)
        return u64(base._p_oid)

    @security.protected(manage_zcatalog_entries)
    def uncatalog_object(self, uid: str) -> None:
        # As paths are held (``layout.nul_free``): a path with NUL is no
        # object's, and PostgreSQL refuses it (every search of the
        # transaction and its commit failed).
        self.pending_changes().uncatalog(nul_free(uid))

    # CMFCore's queue-aware API, unchanged: it calls the methods above.
    indexObject = PloneCatalogTool.indexObject
    _removeIndex = PloneCatalogTool._removeIndex  # upgrade steps call it
    unindexObject = CMFCatalogTool.unindexObject
    reindexObject = CMFCatalogTool.reindexObject
    _indexObject = CMFCatalogTool._indexObject
    _unindexObject = CMFCatalogTool._unindexObject
    _CatalogTool__url = CMFCatalogTool._CatalogTool__url

    @security.private
    def _reindexObject(self, object, idxs=[], update_metadata=1, uid=None):
        if uid is None:
            uid = "/".join(object.getPhysicalPath())
        own = self._catalog_of_its_site(object, uid)
        if own is not None:
            # Before the names are filtered: by its own catalog's indexes.
            return own._reindexObject(object, idxs, update_metadata, uid)
        if idxs:
            # As CMFCore: names that are not indexes are left out.
            idxs = [name for name in idxs if name in self._catalog.indexes]
        else:
            # A moved folder's descendant: CMFCore's full reindex reads
            # what a move may change only, also where the queue was
            # processed before ``moves.object_moved`` made it partial.
            idxs = moves.expected_reindex(object) or idxs
        self.catalog_object(object, uid, idxs, update_metadata)

    for _name in ("indexObject", "unindexObject", "reindexObject"):
        security.declarePrivate(_name)
    del _name

    @security.protected(manage_zcatalog_entries)
    @zpublish(False)
    def clearFindAndRebuild(self, pghandler=None) -> None:
        """Catalog every content object again, then forget the site's rows
        that it did not write, in the current transaction (ZCatalog's
        contract: GenericSetup steps and upgrades call it inside theirs),
        logging count, rate and ETA.  Memory grows with the site until the
        commit: where the caller owns the transaction, ``rebuild``."""
        check_if_published(self, "clearFindAndRebuild")
        maintenance.clear_find_and_rebuild(self, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    @zpublish(False)
    def rebuild(self, batch_size=maintenance.DEFAULT_BATCH_SIZE, pghandler=None):
        """``clearFindAndRebuild`` committing every ``batch_size`` objects
        (flat memory; readers keep the complete catalog); it commits the
        current transaction.  The number of objects cataloged."""
        check_if_published(self, "rebuild")
        return maintenance.rebuild(self, batch_size=batch_size, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def manage_catalogRebuild(self, RESPONSE=None, URL1=None):
        """Catalog every content object again, in batches (Plone's ZMI
        button; its request's transaction is committed as it goes)."""
        check_if_published(self, "manage_catalogRebuild")
        _timed(
            lambda: self.rebuild(pghandler=maintenance.ProgressLogHandler()),
            "Catalog Rebuilt",
            RESPONSE,
            URL1,
        )

    @security.protected(manage_zcatalog_entries)
    def manage_catalogClear(self, REQUEST=None, RESPONSE=None, URL1=None) -> None:
        """Remove every row of this site from the catalog (at commit)."""
        check_if_published(self, "manage_catalogClear")
        self._clear()
        if REQUEST and RESPONSE:
            _back_to_zmi(RESPONSE, URL1, "Catalog Cleared")

    @security.private
    def _clear(self) -> None:
        self.pending_changes().uncatalog_subtree(self.site_path())

    @security.protected(manage_zcatalog_indexes)
    @zpublish(False)
    def clearIndex(self, name: str) -> None:
        """Empty index ``name`` for every object, at commit: a search on it
        finds nothing until it is reindexed (ZCatalog's; KeyError for an
        unknown name)."""
        check_if_published(self, "clearIndex")
        maintenance.clear_index(self, name)

    # -- maintenance -------------------------------------------------------------
    # ZCatalog's signatures; the bodies are in ``maintenance``.

    @security.protected(manage_zcatalog_entries)
    def refreshCatalog(self, clear=0, pghandler=None) -> None:
        """Catalog again every object the catalog holds; drop the rows of
        objects that no longer exist."""
        check_if_published(self, "refreshCatalog")
        maintenance.refresh_catalog(self, clear=clear, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    @zpublish(False)
    def reindexIndex(self, name, REQUEST=None, pghandler=None) -> None:
        """Read index ``name`` (or names) again for every cataloged object."""
        check_if_published(self, "reindexIndex")
        maintenance.reindex_index(self, name, REQUEST, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def manage_catalogReindex(self, REQUEST=None, RESPONSE=None, URL1=None):
        """Clear the catalog, then catalog again everything it held."""
        check_if_published(self, "manage_catalogReindex")
        _timed(
            lambda: self.refreshCatalog(
                clear=1, pghandler=maintenance.ProgressLogHandler()
            ),
            "Catalog Updated ",
            RESPONSE,
            URL1,
        )

    @security.protected(manage_zcatalog_entries)
    def manage_reindexIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        """Reindex the indexes ``ids`` (ZMI button)."""
        check_if_published(self, "manage_reindexIndex")
        if not ids:
            raise BadRequest("No items specified")
        self.reindexIndex(ids, REQUEST, maintenance.ProgressLogHandler())
        if REQUEST and RESPONSE:
            _back_to_zmi(
                RESPONSE, URL1, "Reindexing Performed", "manage_catalogIndexes"
            )

    @security.protected(manage_zcatalog_entries)
    def manage_clearIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        """Empty the indexes ``ids`` (ZCatalog's; the Indexes tab's Clear
        button runs it as a job)."""
        check_if_published(self, "manage_clearIndex")
        if not ids:
            raise BadRequest("No items specified")
        for name in (ids,) if isinstance(ids, str) else ids:
            self.clearIndex(name)
        if REQUEST and RESPONSE:
            _back_to_zmi(RESPONSE, URL1, "Index Cleared", "manage_catalogIndexes")

    @security.protected(manage_zcatalog_entries)
    def manage_catalogObject(self, REQUEST, RESPONSE, URL1, urls=None):
        """Catalog the objects at the paths ``urls`` (the Catalog tab's
        Update button); a path that leads to no object is skipped."""
        check_if_published(self, "manage_catalogObject")
        for url in (urls,) if isinstance(urls, str) else urls or ():
            obj = self.resolve_path(url)
            if obj is None and hasattr(self, "REQUEST"):
                obj = self.resolve_url(url, REQUEST)
            if obj is not None:
                self.catalog_object(obj, url)
        if RESPONSE is not None:
            _back_to_zmi(RESPONSE, URL1, "Object Cataloged", "manage_catalogView")

    @security.protected(manage_zcatalog_entries)
    def manage_uncatalogObject(self, REQUEST, RESPONSE, URL1, urls=None):
        """Remove the objects at the paths ``urls`` from the catalog (the
        Catalog tab's Remove button)."""
        check_if_published(self, "manage_uncatalogObject")
        for url in (urls,) if isinstance(urls, str) else urls or ():
            self.uncatalog_object(url)
        if RESPONSE is not None:
            _back_to_zmi(RESPONSE, URL1, "Object Uncataloged", "manage_catalogView")

    @security.protected(manage_zcatalog_entries)
    def manage_resetCatalogReport(self, REQUEST=None):
        """Forget this site's slow searches (ZCatalog's)."""
        check_if_published(self, "manage_resetCatalogReport")
        slowlog.LOG.clear(self.site_path())
        if REQUEST is not None:
            _back_to_zmi(
                REQUEST.response, REQUEST.URL1, "Report cleared", "manage_catalogReport"
            )

    @security.protected(manage_zcatalog_entries)
    def manage_editCatalogReport(self, long_query_time=0.1, REQUEST=None):
        """Set ZCatalog's threshold of the query report, in seconds: the
        ``slow_query_ms`` property (a negative time reports every search,
        as ZCatalog's would: 0 ms)."""
        check_if_published(self, "manage_editCatalogReport")
        try:
            seconds = float(long_query_time)
        except (TypeError, ValueError):
            seconds = math.nan
        if not math.isfinite(seconds):
            raise ValueError(
                f"long_query_time {long_query_time!r}: a number of seconds is needed"
            )
        self.slow_query_ms = max(0, round(seconds * 1000))
        if REQUEST is not None:
            _back_to_zmi(
                REQUEST.response,
                REQUEST.URL1,
                "Long query time changed",
                "manage_catalogReport",
            )

    # -- query path -------------------------------------------------------------

    @security.private
    def site_path(self) -> str:
        """The path of the site this catalog catalogs (``/plone``)."""
        return "/".join(aq_parent(aq_inner(self)).getPhysicalPath())

    @security.private
    def site_languages(self) -> list[str]:
        """The languages this catalog's site offers (default first)."""
        return site_languages(self)

    _listAllowedRolesAndUsers = PloneCatalogTool._listAllowedRolesAndUsers
    allow_inactive = PloneCatalogTool.allow_inactive
    security.declarePrivate("allow_inactive")

    @security.protected(search_zcatalog)
    @zpublish(False)
    def searchResults(self, query=None, **kw):
        """Search as Plone's catalog does: only what the user may see.

        ``allowedRolesAndUsers`` always comes from the current user and
        ``effectiveRange`` from the current time (unless ``show_inactive``
        or the AccessInactivePortalContent permission allow inactive
        content); values a caller passes for them are replaced.
        """
        processQueue()
        return search_results(self, self._secured_query(query, kw))

    __call__ = searchResults
    security.declareProtected(search_zcatalog, "__call__")
    # As ZCatalog's (Folder's need only "View management screens").
    security.declareProtected(manage_zcatalog_entries, "manage_main")
    security.declareProtected(manage_zcatalog_entries, "ZopeFindAndApply")

    @security.protected(search_zcatalog)
    @zpublish(False)
    def valid_roles(self):
        """The roles defined here and above (ZCatalog's, protected and not
        published; ``RoleManager``'s is neither)."""
        return ZCatalog.valid_roles(self)

    @security.private
    def _secured_query(self, query, kw: dict) -> dict:
        """``query`` and ``kw`` merged, with the security terms of the
        current user and time (``searchResults``)."""
        kw = dict(kw)
        show_inactive = kw.get("show_inactive")
        if show_inactive is None and isinstance(query, dict):
            show_inactive = query.get("show_inactive")
        if show_inactive is None:
            show_inactive = self.allow_inactive(kw)
        kw["allowedRolesAndUsers"] = self._listAllowedRolesAndUsers(
            _getAuthenticatedUser(self)
        )
        if not show_inactive:
            kw["effectiveRange"] = DateTime()
        # Plone drops sort_on names that are not indexes, from the keyword
        # arguments only (a query mapping keeps them: ZCatalog then raises).
        sort_on = kw.get("sort_on") or []
        if isinstance(sort_on, str):
            sort_on = [sort_on]
        try:
            sort_on = [name for name in sort_on if name in self._catalog.indexes]
        except TypeError:
            sort_on = []
        if sort_on:
            kw["sort_on"] = sort_on
        else:
            kw.pop("sort_on", None)
        return _merge(query, kw)

    @security.protected(search_zcatalog)
    def search(self, query, sort_index=None, reverse=0, limit=None, merge=1):
        # No docstring, as Plone's: not published through the web.
        # ZCatalog's programmatic search, with the security terms Plone's
        # ``CatalogTool.search`` adds (written into ``query``, as Plone
        # does; inactive content only where ``allow_inactive`` says so:
        # ``show_inactive`` is not read here).  ``query``'s own sort keys
        # are not read (``results.search_query``): the results are sorted
        # on index ``sort_index`` (a name), in reverse if ``reverse``, and
        # ``limit`` is ``sort_limit``.  With ``merge`` false, ZCatalog's
        # raw form for ``Catalog.mergeResults`` (``results.unmerged``).
        processQueue()
        query["allowedRolesAndUsers"] = self._listAllowedRolesAndUsers(
            _getAuthenticatedUser(self)
        )
        if not self.allow_inactive(query):
            query["effectiveRange"] = DateTime()
        return self._search(query, sort_index, reverse, limit, merge)

    @security.private
    def _search(self, query, sort_index, reverse, limit, merge):
        """``search`` without security terms (``_catalog.search``)."""
        names = sort_index if isinstance(sort_index, (list, tuple)) else [sort_index]
        for name in names:
            if name is not None and name not in self._catalog.indexes:
                raise KeyError(name)  # ZCatalog's ``indexes[sort_index]``
        query = results.search_query(query, sort_index, reverse, limit)
        found = search_results(self, query)
        if merge:
            return found
        return results.unmerged(self, found, sort_index)

    @security.protected(search_zcatalog)
    @zpublish(False)
    def facet_counts(self, query=None, facets=(), include_zero=False, **kw):
        """Per index of ``facets``, the number of results of each value, for
        the results ``searchResults(query, **kw)`` gives this user; each
        facet counted without its own criterion (disjunctive faceting):
        ``{"portal_type": {"Document": 12, ...}, ...}``.  Values without
        results are left out unless ``include_zero``.  One round trip.

        A facet is an index name, or ``{"index": "path", "depth": 1,
        "root": path, "name": key}`` (folders at a depth) or ``{"index":
        "effective", "ranges": {label: {"min": date, "max": date}}}``
        (date ranges); see ``faceting``.
        """
        processQueue()
        return faceting.facet_counts(
            self, self._secured_query(query, kw), facets, include_zero
        )

    @security.private
    def _facet_totals(self, query, facets, include_zero=False):
        """``facet_counts`` with, per facet, the number of results that
        have a value: ``{facet: (total, {value: count})}`` (``@facet-count``)."""
        processQueue()
        return faceting.counted(
            self, self._secured_query(query, {}), facets, include_zero
        )

    @security.private
    def unrestrictedSearchResults(self, REQUEST=None, **kw):
        """Search without security terms: every object, active or not."""
        processQueue()
        return search_results(self, _merge(REQUEST, kw))

    @security.private
    def _unrestrictedSearchResults(self, REQUEST=None, **kw):
        """Like unrestrictedSearchResults, without processing the queue."""
        return search_results(self, _merge(REQUEST, kw))

    # -- what else ZCatalog answers -------------------------------------------

    @security.private
    def getCounter(self) -> int:
        processQueue()
        try:
            with connection.reading(self) as conn:
                return search.read_counter(conn)
        except psycopg.errors.UndefinedTable:
            return 0

    def __len__(self) -> int:
        return search_results(
            self, {}, match_all=True, metadata=False
        ).actual_result_count

    def __bool__(self) -> bool:
        # A catalog is a tool: it is true even when it holds no rows.
        return True

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getpath(self, rid: int) -> str:
        """The path of record id ``rid`` (KeyError if it is not one of the
        site's).  plone.app.uuid asks for the path of each UID it resolves:
        the path its lookup read in this transaction
        (``snapshots.path_read``) needs no round trip, and the paths read
        are kept per committed state where the transaction has no pending
        changes (``snapshots.lookups``)."""
        pending = current_pending()
        if pending and rid in pending.rows:
            return pending.rows[rid].path
        site_path = self.site_path()
        snapshot = connection.snapshot_id(self)
        key = None
        if not pending and snapshots.lookups.enabled and snapshot is not None:
            key = (*snapshot, site_path, "getpath", rid)

        def read() -> str | None:
            # Kept for the committed state too when the transaction read
            # it already: the next request's UID lookup is kept, and reads
            # no path to remember.
            if snapshot is not None:
                path = snapshots.path_read((*snapshot, site_path), rid)
                if path is not None:
                    return path
            with connection.reading(self) as conn:
                return search.path_of(conn, rid, site_path)

        path = snapshots.lookups.get(key, read)
        if path is None:
            raise KeyError(rid)
        # A row of a subtree this transaction moved: where it is now.
        return relocate(path, pending.relocations) if pending else path

    # -- index data API ---------------------------------------------------------

    @security.protected(search_zcatalog)
    @zpublish(False)
    def uniqueValuesFor(self, name: str) -> tuple:
        """The distinct values of index ``name`` (KeyError if unknown).

        Kept per committed state (``snapshots.unique_values``) under the
        index's name and type, read from the definitions as they are in
        this transaction: vocabularies ask on every form, and the index
        view's own path to its kept values (the view, its rows, their key)
        cost three times as much (``benchmarks/README.rst``, "The fixed cost
        of a kept result").  Never kept with this transaction's pending
        changes laid over the rows."""
        catalog = self._catalog
        key = None
        if current_pending() is None:
            key = connection.snapshot_id(self)
        if key is not None:
            index_type = catalog.indexes.index_type(name)
            key = (*key, self.site_path(), "uniqueValuesFor", name, index_type)
        return snapshots.unique_values.get(
            key, lambda: tuple(catalog.getIndex(name).uniqueValues())
        )

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getIndexDataForUID(self, uid: str) -> dict:
        """What each index holds for the object cataloged at ``uid`` (its
        path), as ZCatalog's index entries; KeyError if not cataloged."""
        return index_data(self._catalog.indexes, uid=uid)

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getMetadataForUID(self, uid: str) -> dict:
        """The metadata of the object cataloged at ``uid`` (its path)."""
        rid = self.getrid(uid)
        if rid is None:
            raise KeyError(uid)
        return self.getMetadataForRID(rid)

    @security.protected(search_zcatalog)
    @zpublish(False)
    def searchAll(self):
        """Every object of the catalog, unrestricted, by record id."""
        return search_results(self, {}, match_all=True)

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getAllBrains(self):
        """A generator of the brains of every cataloged object."""
        yield from search_results(self, {}, match_all=True)

    def _row_data(self, rid: int) -> tuple[dict, dict]:
        """``(idx, meta)`` of one cataloged row; KeyError if there is none."""
        pending = current_pending()
        if pending and rid in pending.rows:
            row = pending.rows[rid]
            return row.idx, row.meta
        with connection.reading(self) as conn:
            idx, meta = search.row_data(conn, rid, connection.ready_columns(self))
        if idx is None:
            raise KeyError(rid)
        return idx, meta

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getIndexDataForRID(self, rid: int) -> dict:
        """What each index holds for one row, in ZCatalog's forms."""
        return index_data(self._catalog.indexes, rid=rid)

    @security.protected(search_zcatalog)
    @zpublish(False)
    def getMetadataForRID(self, rid: int) -> dict:
        """Metadata of one row, as the brain gives it."""
        _, meta = self._row_data(rid)
        return {
            name: metadata.decode(meta[name])
            for name in self._catalog.names
            if name in meta
        }

    @security.private
    def brain_of(self, rid: int):
        """The brain of record id ``rid`` (``_catalog[rid]``); KeyError if
        the site has no such row."""
        for brain in self._unrestrictedSearchResults(
            path={"query": self.getpath(rid), "depth": 0}
        ):
            return brain
        raise KeyError(rid)

    @security.private
    def _unrestricted_unmerged(self, query: dict):
        """ZCatalog's ``Catalog.searchResults(query, _merge=False)``."""
        found = search_results(self, query)
        return results.unmerged(self, found, sort_attr(query, "on") or None)

    # Private in Plone (``CMFPlone.earlypatches.security``): they traverse
    # without checks.
    @security.private
    def resolve_path(self, path: str):
        """The object at ``path``, traversed from the catalog without
        checks, or None (ZCatalog's: no exception)."""
        try:
            return self.unrestrictedTraverse(path)
        except Exception:
            return None

    @security.private
    def resolve_url(self, path: str, REQUEST):
        """The object at URL path ``path`` as ``REQUEST`` resolves it (below
        the request's script), or None (ZCatalog's: no exception)."""
        if not REQUEST:
            return None
        script = REQUEST.script
        if path.find(script) != 0:
            path = f"{script}/{path}"
        try:
            return REQUEST.resolve_url(path)
        except Exception:
            return None

    @security.protected(manage_zcatalog_entries)
    def getCatalogReport(self) -> list[dict]:
        """The slow searches of this site in this process (the Query
        Report tab), in ZCatalog's form (``slowlog.zcatalog_report``)."""
        return slowlog.zcatalog_report(slowlog.LOG, self.site_path())

    @security.protected(search_zcatalog)
    def getrid(self, path: str, default=None):
        for brain in self._unrestrictedSearchResults(path={"query": path, "depth": 0}):
            return brain.getRID()
        return default

    @security.protected(search_zcatalog)
    def getobject(self, rid: int, REQUEST=None):
        return self.unrestrictedTraverse(self.getpath(rid))


def _timed(work, message: str, RESPONSE, URL1) -> None:
    """Run ``work``; back to the ZMI with its times (ZCatalog's message of
    its maintenance buttons)."""
    elapse = time.time()
    c_elapse = time.process_time()
    work()
    elapse = time.time() - elapse
    c_elapse = time.process_time() - c_elapse
    if RESPONSE is not None:
        _back_to_zmi(
            RESPONSE,
            URL1,
            f"{message}\nTotal time: {elapse!r}\nTotal CPU time: {c_elapse!r}",
        )


def _back_to_zmi(
    RESPONSE, URL1: str, message: str, page: str = "manage_catalogAdvanced"
) -> None:
    """Back to a ZMI tab showing ``message``: the Advanced tab, as
    ZCatalog's maintenance buttons lead (or ``page``)."""
    RESPONSE.redirect(f"{URL1}/{page}?manage_tabs_message={quote(message)}")


def _record_id(rid) -> int:
    """``rid`` as a record id (an int), or ValueError naming it."""
    if isinstance(rid, bool) or not isinstance(rid, int):
        raise ValueError(f"record id {rid!r}: an int is needed (getrid gives it)")
    return rid


def _merge(query, kw: dict) -> dict:
    """ZCatalog's ``merge_query_args``: a dict plus keywords (a query that
    is not a dict, such as a request, is not read)."""
    merged = {}
    if isinstance(query, dict):
        merged.update(query)
    merged.update(kw)
    return merged


InitializeClass(PGCatalogTool)
