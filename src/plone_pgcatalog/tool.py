"""``PGCatalogTool``: Plone's ``portal_catalog`` over PostgreSQL.

Owns: the catalog API that Plone, CMF and add-ons call, as a thin facade
over the steps of the data flow:

- definitions: ZCatalog index objects and metadata column names, kept as
  configuration only (``CatalogDefinitions``); they never hold data;
- write: ``catalog_object`` → ``extraction`` → ``pending`` (the processor
  writes it during the ZODB commit);
- query: ``searchResults`` → security terms → ``query.build_query`` (pure)
  → ``search.run_search`` (one round trip) → ``brains.LazyResults``.

Nothing of the catalog's data is stored in the ZODB.
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
from Acquisition import Implicit
from DateTime import DateTime
from OFS.Folder import Folder
from OFS.ObjectManager import ObjectManager
from Persistence import PersistentMapping
from persistent import Persistent
from plone_pgcatalog import maintenance
from plone_pgcatalog import metadata
from plone_pgcatalog import snapshots
from plone_pgcatalog.brains import LazyResults
from plone_pgcatalog.errors import PGCatalogError
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.extraction import extract_patch
from plone_pgcatalog.extraction import extract_row
from plone_pgcatalog.extraction import indexable
from plone_pgcatalog.fulltext import text_config
from plone_pgcatalog.indexes import index_data
from plone_pgcatalog.indexes import IndexMapping
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.pending import pending_changes
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import processor
from plone_pgcatalog.store import schema
from plone_pgcatalog.store import search
from plone_pgcatalog.store.ddl import SchemaChange
from plone_pgcatalog.store.overlay import Overlay
from plone_pgcatalog.store.relocation import relocate
from Products.CMFCore.CatalogTool import CatalogTool as CMFCatalogTool
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import _getAuthenticatedUser
from Products.CMFCore.utils import UniqueObject
from Products.CMFPlone.CatalogTool import CatalogTool as PloneCatalogTool
from Products.PluginIndexes.interfaces import IPluggableIndex
from Products.ZCatalog.interfaces import IZCatalog
from urllib.parse import quote
from zExceptions import BadRequest
from zope.interface import implementer

import functools
import hashlib
import logging
import psycopg
import time
import transaction

logger = logging.getLogger(__name__)


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


@implementer(IPGCatalogTool, ICatalogTool, IZCatalog)
class PGCatalogTool(UniqueObject, Folder):
    """``portal_catalog`` whose data lives in PostgreSQL (see module)."""

    id = "portal_catalog"
    meta_type = "PGCatalog Tool"
    zmi_icon = "fas fa-search"
    title = "Catalog on PostgreSQL"

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
    def getIndexDefinitions(self) -> dict:
        """The ZCatalog index objects that define each index (no views)."""
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
        self._defer_index_ddl(name, index.meta_type)

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
        self._defer_index_drop(name, index.meta_type)

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

    def _defer_index_ddl(self, name: str, meta_type: str) -> None:
        """Create the SQL indexes of a catalog index at the next commit."""
        self._defer_ddl(schema.index_ddl(name, meta_type), f"index {name}")

    def _defer_index_drop(self, name: str, meta_type: str) -> None:
        """Drop the SQL indexes of a deleted catalog index at the next commit.

        The values stay in ``idx`` until objects are cataloged again; no
        query reads them, as no index definition names them.
        """
        # The same source as the creation: zodb-pgjsonb remembers the last
        # version per source, so adding the index again creates it again.
        self._defer_ddl(schema.drop_index_ddl(name, meta_type), f"index {name}")

    def _defer_ddl(self, ddl, label: str) -> None:
        """Run ``ddl`` when the next write transaction begins.

        DDL cannot run inside this request's read snapshot; zodb-pgjsonb
        runs deferred actions at the start of the next write transaction,
        once per version: the DDL's text, so a new version of it runs again.
        """
        if ddl is None or self._p_jar is None and aq_parent(self) is None:
            return
        storage = self._storage()
        processor.register(storage)
        SchemaChange(
            storage,
            label,
            lambda conn: conn.execute(ddl),
            remedy="run the catalog's ensure_sql_indexes() again",
            version=hashlib.sha1(ddl.as_string().encode()).hexdigest(),
        ).queue()

    @security.private
    def ensure_sql_indexes(self) -> None:
        """Queue the SQL index of every catalog index (idempotent DDL)."""
        for name, index in self._catalog.indexes.items():
            self._defer_index_ddl(name, index.meta_type)

    # -- write path -------------------------------------------------------------

    @security.private
    def pending_changes(self):
        """This transaction's pending changes; the commit will write them.

        The one way in for code that changes the catalog outside
        ``catalog_object`` (moves, ordering, security reindexes, rebuilds).

        Objects the transaction stores get their catalog columns in the
        same INSERT as their state; the others (a reindex of an unchanged
        object, a removal) are written by the processor at the end of the
        vote.  Either way the ZODB connection must take part in the
        commit, even when no object changed: it is joined here.
        """
        processor.register(self._storage())
        connection.join_transaction(self)
        return pending_changes(functools.partial(_read_replaced_paths, self))

    @security.protected(manage_zcatalog_entries)
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
        wrapped = indexable(obj, self)
        content = obj
        if wrapped is obj:
            unwrap = getattr(obj, "_getWrappedObject", None)
            if unwrap is not None:
                content = unwrap()
        path = uid or "/".join(content.getPhysicalPath())
        zoid = self._zoid_of(content, path)
        if zoid is None:
            return
        _read_current(content)
        definitions = self.getIndexDefinitions()
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
                default_language=_site_languages()[0],
                # ZCatalog gives a new row its metadata in any case.
                read_metadata=bool(update_metadata) or not self._has_row(zoid),
            )
            self.pending_changes().patch(patch)
            return
        row = extract_row(
            zoid,
            path,
            definitions,
            self._catalog.names,
            wrapped,
            default_language=_site_languages()[0],
        )
        # ``pghandler`` is ZCatalog's signature; progress is reported by the
        # loops that catalog many objects (maintenance.py), as in ZCatalog.
        self.pending_changes().catalog(row)

    def _has_row(self, zoid: int) -> bool:
        """Whether ``zoid`` is cataloged, pending rows included."""
        pending = current_pending()
        if pending and zoid in pending.rows:
            return True
        if zoid in _found_by_searches():
            return True  # as reindexObjectSecurity finds its objects
        try:
            with connection.reading(self) as conn:
                return search.is_cataloged(conn, zoid)
        except psycopg.errors.UndefinedColumn:
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
        self.pending_changes().uncatalog(uid)

    # CMFCore's queue-aware API, unchanged: it calls the methods above.
    indexObject = PloneCatalogTool.indexObject
    unindexObject = CMFCatalogTool.unindexObject
    reindexObject = CMFCatalogTool.reindexObject
    _indexObject = CMFCatalogTool._indexObject
    _unindexObject = CMFCatalogTool._unindexObject
    _CatalogTool__url = CMFCatalogTool._CatalogTool__url

    @security.private
    def _reindexObject(self, object, idxs=[], update_metadata=1, uid=None):
        if uid is None:
            uid = "/".join(object.getPhysicalPath())
        if idxs:
            # As CMFCore: names that are not indexes are left out.
            idxs = [name for name in idxs if name in self._catalog.indexes]
        self.catalog_object(object, uid, idxs, update_metadata)

    for _name in ("indexObject", "unindexObject", "reindexObject"):
        security.declarePrivate(_name)
    del _name

    @security.protected(manage_zcatalog_entries)
    def clearFindAndRebuild(self, pghandler=None) -> None:
        """Catalog every content object again, then forget the site's rows
        that it did not write, in the current transaction (ZCatalog's
        contract: GenericSetup steps and upgrades call it inside theirs),
        logging count, rate and ETA.  Memory grows with the site until the
        commit: where the caller owns the transaction, ``rebuild``."""
        maintenance.clear_find_and_rebuild(self, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def rebuild(self, batch_size=maintenance.DEFAULT_BATCH_SIZE, pghandler=None):
        """``clearFindAndRebuild`` committing every ``batch_size`` objects
        (flat memory; readers keep the complete catalog); it commits the
        current transaction.  The number of objects cataloged."""
        return maintenance.rebuild(self, batch_size=batch_size, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def manage_catalogRebuild(self, RESPONSE=None, URL1=None):
        """Catalog every content object again, in batches (Plone's ZMI
        button; its request's transaction is committed as it goes)."""
        _timed(
            lambda: self.rebuild(pghandler=maintenance.ProgressLogHandler()),
            "Catalog Rebuilt",
            RESPONSE,
            URL1,
        )

    @security.protected(manage_zcatalog_entries)
    def manage_catalogClear(self, REQUEST=None, RESPONSE=None, URL1=None) -> None:
        """Remove every row of this site from the catalog (at commit)."""
        self.pending_changes().uncatalog_subtree(self.site_path())
        if REQUEST and RESPONSE:
            _back_to_zmi(RESPONSE, URL1, "Catalog Cleared")

    # -- maintenance -------------------------------------------------------------
    # ZCatalog's signatures; the bodies are in ``maintenance``.

    @security.protected(manage_zcatalog_entries)
    def refreshCatalog(self, clear=0, pghandler=None) -> None:
        """Catalog again every object the catalog holds; drop the rows of
        objects that no longer exist."""
        maintenance.refresh_catalog(self, clear=clear, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def reindexIndex(self, name, REQUEST=None, pghandler=None) -> None:
        """Read index ``name`` (or names) again for every cataloged object."""
        maintenance.reindex_index(self, name, REQUEST, pghandler=pghandler)

    @security.protected(manage_zcatalog_entries)
    def manage_catalogReindex(self, REQUEST=None, RESPONSE=None, URL1=None):
        """Clear the catalog, then catalog again everything it held."""
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
        if not ids:
            raise BadRequest("No items specified")
        self.reindexIndex(ids, REQUEST, maintenance.ProgressLogHandler())
        if REQUEST and RESPONSE:
            _back_to_zmi(RESPONSE, URL1, "Reindexing Performed")

    # -- query path -------------------------------------------------------------

    @security.private
    def site_path(self) -> str:
        """The path of the site this catalog catalogs (``/plone``)."""
        return "/".join(aq_parent(aq_inner(self)).getPhysicalPath())

    @security.private
    def site_languages(self) -> list[str]:
        """The languages Plone's settings offer (default language first)."""
        return _site_languages()

    _listAllowedRolesAndUsers = PloneCatalogTool._listAllowedRolesAndUsers
    allow_inactive = PloneCatalogTool.allow_inactive
    security.declarePrivate("allow_inactive")

    @security.protected(search_zcatalog)
    def searchResults(self, query=None, **kw):
        """Search as Plone's catalog does: only what the user may see.

        ``allowedRolesAndUsers`` always comes from the current user and
        ``effectiveRange`` from the current time (unless ``show_inactive``
        or the AccessInactivePortalContent permission allow inactive
        content); values a caller passes for them are replaced.
        """
        processQueue()
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
        merged = _merge(query, kw)
        return self._search(merged)

    __call__ = searchResults

    @security.private
    def unrestrictedSearchResults(self, REQUEST=None, **kw):
        """Search without security terms: every object, active or not."""
        processQueue()
        return self._search(_merge(REQUEST, kw))

    @security.private
    def _unrestrictedSearchResults(self, REQUEST=None, **kw):
        """Like unrestrictedSearchResults, without processing the queue."""
        return self._search(_merge(REQUEST, kw))

    def _search(self, query: dict, match_all: bool = False) -> LazyResults:
        pending = current_pending()
        overlay = pending.overlay() if pending else Overlay()
        plan = build_query(
            query,
            self.getIndexDefinitions(),
            self.site_path(),
            QueryContext(text_configs=self._text_configs(query)),
            overlay,
            match_all=match_all,
        )
        try:
            with connection.reading(self) as conn:
                found = snapshots.results.get(
                    self._result_key(plan),
                    lambda: search.run_search(conn, plan),
                    keep=lambda found: len(found.ids) <= snapshots.RESULT_ROWS,
                )
        except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable):
            # The catalog columns are created before the first commit that
            # writes catalog data; until then nothing is cataloged.
            logger.info("catalog columns not created yet: empty result")
            found = search.Found([], 0)
        _found_by_searches().update(zoid for zoid, _ in found.ids)
        # Rows this transaction cataloged have their metadata here, not in
        # PostgreSQL yet.
        pending_meta: dict[int, dict] = {}
        if pending:
            pending_meta.update((zoid, row.meta) for zoid, row in pending.rows.items())
            pending_meta.update(
                (zoid, patch.meta)
                for zoid, patch in pending.patches.items()
                if patch.update_metadata
            )

        def load_metadata(zoids):
            stored = [zoid for zoid in zoids if zoid not in pending_meta]
            with connection.reading(self) as conn:
                loaded = search.load_metadata(conn, stored)
            loaded.update(
                (zoid, pending_meta[zoid]) for zoid in zoids if zoid in pending_meta
            )
            return loaded

        def rest(offset: int) -> tuple[list, list | None]:
            with connection.reading(self) as conn:
                more = search.fetch_rest(conn, plan, offset)
            _found_by_searches().update(zoid for zoid, _ in more.ids)
            return more.ids, more.scores

        return LazyResults(
            found.ids,
            found.total,
            self,
            self._catalog.names,
            load_metadata,
            found.scores,
            rest=None if plan.windowed or plan.python_slice else rest,
        )

    def _result_key(self, plan) -> tuple | None:
        """The key of ``snapshots.results`` for a search's rows, or None
        when they are not the stored rows alone (pending changes)."""
        if plan.source_params or not snapshots.results.enabled:
            return None  # not composing a key nobody will look up
        snapshot = connection.snapshot_id(self)
        if snapshot is None:
            return None
        statement, params = plan.ids_query()
        return (*snapshot, statement.as_string(None), repr(params), plan.python_slice)

    def _text_configs(self, query: dict) -> tuple[str, ...]:
        """Languages whose stems a full-text query matches.

        Those the query asks for with ``Language``, else the site's
        available languages (Plone's language settings).
        """
        languages = query.get("Language")
        if isinstance(languages, dict):
            languages = languages.get("query")
        if isinstance(languages, str):
            languages = [languages]
        if not isinstance(languages, (list, tuple)) or not languages:
            languages = _site_languages()
        configs = {text_config(language) for language in languages}
        configs.discard("simple")
        return tuple(sorted(configs))

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
        return self._search({}, match_all=True).actual_result_count

    def __bool__(self) -> bool:
        # A catalog is a tool: it is true even when it holds no rows.
        return True

    @security.protected(search_zcatalog)
    def getpath(self, rid: int) -> str:
        pending = current_pending()
        if pending and rid in pending.rows:
            return pending.rows[rid].path
        with connection.reading(self) as conn:
            path = search.path_of(conn, rid, self.site_path())
        if path is None:
            raise KeyError(rid)
        # A row of a subtree this transaction moved: where it is now.
        return relocate(path, pending.relocations) if pending else path

    # -- index data API ---------------------------------------------------------

    @security.protected(search_zcatalog)
    def uniqueValuesFor(self, name: str) -> tuple:
        """The distinct values of index ``name`` (KeyError if unknown)."""
        return tuple(self._catalog.getIndex(name).uniqueValues())

    @security.protected(search_zcatalog)
    def getIndexDataForUID(self, uid: str) -> dict:
        """What each index holds for the object cataloged at ``uid`` (its
        path), as ZCatalog's index entries; KeyError if not cataloged."""
        return index_data(self._catalog.indexes, uid=uid)

    @security.protected(search_zcatalog)
    def getMetadataForUID(self, uid: str) -> dict:
        """The metadata of the object cataloged at ``uid`` (its path)."""
        rid = self.getrid(uid)
        if rid is None:
            raise KeyError(uid)
        return self.getMetadataForRID(rid)

    @security.protected(search_zcatalog)
    def searchAll(self):
        """Every object of the catalog, unrestricted, by record id."""
        return self._search({}, match_all=True)

    @security.protected(search_zcatalog)
    def getAllBrains(self):
        """A generator of the brains of every cataloged object."""
        yield from self._search({}, match_all=True)

    def _row_data(self, rid: int) -> tuple[dict, dict]:
        """``(idx, meta)`` of one cataloged row; KeyError if there is none."""
        pending = current_pending()
        if pending and rid in pending.rows:
            row = pending.rows[rid]
            return row.idx, row.meta
        with connection.reading(self) as conn:
            idx, meta = search.row_data(conn, rid)
        if idx is None:
            raise KeyError(rid)
        return idx, meta

    @security.protected(search_zcatalog)
    def getIndexDataForRID(self, rid: int) -> dict:
        """What each index holds for one row, in ZCatalog's forms."""
        return index_data(self._catalog.indexes, rid=rid)

    @security.protected(search_zcatalog)
    def getMetadataForRID(self, rid: int) -> dict:
        """Metadata of one row, as the brain gives it."""
        _, meta = self._row_data(rid)
        return {
            name: metadata.decode(meta[name])
            for name in self._catalog.names
            if name in meta
        }

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


#: Where the ZMI's maintenance buttons lead back to: the tool's own tab
#: (Folder's Contents), which shows ``manage_tabs_message``.  ZCatalog's
#: buttons lead to its Advanced and Indexes tabs, which this tool does not
#: have (yet).
_ZMI_PAGE = "manage_main"


def _back_to_zmi(RESPONSE, URL1: str, message: str) -> None:
    RESPONSE.redirect(f"{URL1}/{_ZMI_PAGE}?manage_tabs_message={quote(message)}")


_FOUND = "plone_pgcatalog.found"


def _found_by_searches() -> set[int]:
    """Rows the searches of this transaction found, so cataloged rows."""
    txn = transaction.get()
    try:
        return txn.data(_FOUND)
    except KeyError:
        found: set[int] = set()
        txn.set_data(_FOUND, found)
        return found


def _read_replaced_paths(catalog, pending) -> None:
    """Before the commit: where the stored rows that catalog-only writes
    replace are in this transaction's snapshot (``read_paths``).

    The commit writes those rows by zoid, while another transaction may
    have moved or removed them since (a move of a folder relocates its
    descendants' rows, a deletion clears the object's row; neither stores
    the object): the state processor then refuses the commit with a
    ``ConflictError`` rather than write a row back where it no longer
    belongs (an orphan, or an old path).  Objects the commit stores are
    left out: their rows go with their states, which ZODB checks.
    """
    processQueue()  # what the queue still holds is part of this commit
    candidates = set(pending.rows) | set(pending.patches)
    if not candidates:
        return
    zoids = sorted(candidates - connection.changed_in_transaction(catalog))
    if not zoids:
        return
    try:
        with connection.reading(catalog) as conn:
            pending.read_paths = search.stored_paths(conn, zoids)
    except psycopg.errors.UndefinedColumn:
        pass  # no catalog column yet: nothing stored to replace


def _read_current(content) -> None:
    """Have the commit check that ``content`` is still as it was read.

    A catalog row is read from the object; when the transaction does not
    store the object (a reindex of an unchanged object, a partial reindex,
    a rebuild), no write conflict would stop a row read from an older
    version from overwriting the row of a newer one that another
    transaction committed meanwhile.  ZODB's read-conflict check does: the
    commit fails with a ``ConflictError`` and the publisher retries, as
    ZCatalog's BTrees conflict in such a case.  Objects the transaction
    stores are checked by their write anyway (ZODB skips them here).
    """
    base = aq_base(content)
    jar = getattr(base, "_p_jar", None)
    if jar is not None and base._p_oid is not None and base._p_serial is not None:
        jar.readCurrent(base)


def _site_languages() -> list[str]:
    """The languages Plone's settings offer (default language first)."""
    from plone.registry.interfaces import IRegistry
    from zope.component import queryUtility

    registry = queryUtility(IRegistry)
    if registry is None:
        return [""]
    default = registry.get("plone.default_language") or ""
    available = registry.get("plone.available_languages") or []
    return [default, *available]


def _merge(query, kw: dict) -> dict:
    """ZCatalog's ``merge_query_args``: a dict plus keywords (a query that
    is not a dict, such as a request, is not read)."""
    merged = {}
    if isinstance(query, dict):
        merged.update(query)
    merged.update(kw)
    return merged


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


InitializeClass(PGCatalogTool)
