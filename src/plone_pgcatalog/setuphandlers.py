"""Install and uninstall: swapping ``portal_catalog`` for the other kind.

Owns: replacing Plone's ZCatalog-based ``portal_catalog`` by
``PGCatalogTool`` (profile ``default``) and back (profile ``uninstall``),
keeping every index definition, lexicon and metadata column that
catalog.xml files declared, re-registering the tool as the site's
``ICatalogTool`` utility and in the GenericSetup toolset, and cataloging
the site's content.  Definitions move empty and bound to the new tool
(lexicons fresh, a GopipIndex given the new tool's catalog): nothing the
new tool reaches holds the old one's data, which becomes unreferenced and
leaves the ZODB at the next pack.  The old tool's rows of the site leave
PostgreSQL at the uninstall's commit.

The catalog's schema (``store.schema``) follows: an install
puts back what is missing of it, an uninstall takes it all away once no
catalog of the database has rows left (another site may still use it).
Neither can run where they are asked for: DDL must not run inside a
request's read snapshot, and the uninstall's own commit needs the table
(the processor deletes the site's rows from it).  So both are zodb-pgjsonb
deferred actions (``store.ddl.SchemaChange``), run when a transaction of this
process begins, outside any snapshot of its own: the install's at the
latest when its commit begins, the uninstall's queued by its commit, once
it succeeded.  A change that does not get its locks (other requests'
snapshots) is tried again later.

Must not build SQL: the tool's API does the catalog work, ``schema`` owns
the DDL, ``connection`` the connections.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_chain
from Acquisition import aq_inner
from Acquisition import aq_parent
from collections.abc import Callable
from functools import partial
from plone.base.interfaces import INonInstallable
from plone_pgcatalog import maintenance
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.ddl import SchemaChange
from plone_pgcatalog.tool import PGCatalogTool
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import getToolByName
from Products.CMFPlone.CatalogTool import CatalogTool as PloneCatalogTool
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from zodb_pgjsonb.storage import PGJsonbStorage
from zope.interface import implementer

import logging
import psycopg

logger = logging.getLogger(__name__)

TOOL_ID = "portal_catalog"


class _Installs:
    """How many installs this process has begun (``install_catalog``)."""

    count = 0


@implementer(INonInstallable)
class HiddenProfiles:
    def getNonInstallableProfiles(self):
        return ["plone_pgcatalog:uninstall"]


def _definitions(catalog) -> dict:
    """The index objects of ``catalog``, by name."""
    if isinstance(aq_base(catalog), PGCatalogTool):
        # Our catalog hands out views; the definitions are the index objects.
        return dict(catalog._catalog.indexes.definitions())
    return {name: catalog._catalog.getIndex(name) for name in catalog.indexes()}


def _move_definitions(old, new) -> None:
    """Give ``new`` the lexicons, indexes and columns of ``old``, empty."""
    for lexicon_id, lexicon in old.objectItems():
        if isinstance(aq_base(lexicon), PLexicon) and lexicon_id not in new:
            fresh = PLexicon(lexicon_id, lexicon.title, *lexicon._pipeline)
            new._setObject(lexicon_id, fresh, suppress_events=True)
    old_catalog = aq_base(old._catalog)
    for name, index in _definitions(old).items():
        if name in new.indexes():
            continue
        index = aq_base(index)
        # An index that holds its catalog (GopipIndex) would keep the old
        # one, and all its data, alive in the ZODB: give it the new one.
        # (Reading the attribute wraps it: compare the bare objects.)
        if aq_base(getattr(index, "catalog", None)) is old_catalog:
            index.catalog = aq_base(new._catalog)
        new.addIndex(name, index)
        # Definitions travel, data does not.  Cleared in the new tool, so
        # that a ZCTextIndex binds the new (empty) lexicon, not the old one
        # and its words.
        index.__of__(new).clear()
    for column in old.schema():
        if column not in new.schema():
            new.addColumn(column)


def _swap_tool(site, new):
    """Put ``new`` in the site as portal_catalog, everywhere it is looked up."""
    site._delObject(TOOL_ID, suppress_events=True)
    site._setObject(TOOL_ID, new, set_owner=False, suppress_events=True)
    tool = site._getOb(TOOL_ID)
    site.getSiteManager().registerUtility(aq_base(tool), ICatalogTool)
    setup = getToolByName(site, "portal_setup")
    cls = aq_base(tool).__class__
    setup.getToolsetRegistry().addRequiredTool(
        TOOL_ID, f"{cls.__module__}.{cls.__name__}"
    )
    setup._p_changed = True
    return tool


def install_catalog(site) -> PGCatalogTool:
    """Make ``site``'s portal_catalog a PGCatalogTool with all its content.

    Idempotent: on a site that has one already, only the schema and the
    SQL indexes are (re)queued.  Refused (``PGCatalogConfigurationError``)
    for a site inside another site with this catalog, and, by the rebuild's
    walk, for one that holds such a site (``maintenance.nested_site_error``).
    """
    for outer in aq_chain(aq_parent(aq_inner(site))):
        if maintenance.pg_catalog_of_site(outer) is not None:
            raise maintenance.nested_site_error(site, outer)
    _Installs.count += 1
    old = site._getOb(TOOL_ID)
    # Before the tool queues its SQL indexes, which need the table.
    _create_schema(site, _definitions(old))
    if isinstance(aq_base(old), PGCatalogTool):
        old.ensure_sql_indexes()
        return old
    new = PGCatalogTool(TOOL_ID)
    tool = _swap_tool(site, new)
    _move_definitions(old, tool)
    tool.ensure_sql_indexes()
    tool.clearFindAndRebuild()
    logger.info(
        "portal_catalog of %s is now on PostgreSQL (%d indexes, %d columns)",
        "/".join(site.getPhysicalPath()),
        len(tool.indexes()),
        len(tool.schema()),
    )
    return tool


def uninstall_catalog(site):
    """Give ``site`` back a ZCatalog portal_catalog, rebuilt from content,
    and the database its schema without the catalog's, if no other site
    uses it.

    On a site that has a ZCatalog already, only the schema's removal is
    tried (again).
    """
    _drop_schema_after_commit(site)
    old = site._getOb(TOOL_ID)
    if not isinstance(aq_base(old), PGCatalogTool):
        return old
    old.manage_catalogClear()
    tool = _swap_tool(site, PloneCatalogTool())
    for lexicon_id in list(tool.objectIds()):
        tool._delObject(lexicon_id, suppress_events=True)
    for name in list(tool.indexes()):
        tool.delIndex(name)
    for column in list(tool.schema()):
        tool.delColumn(column)
    _move_definitions(old, tool)
    tool.clearFindAndRebuild()
    return tool


def _pgjsonb_storage(site) -> PGJsonbStorage | None:
    storage = site._p_jar.db().storage
    return storage if isinstance(storage, PGJsonbStorage) else None


def _create_schema(site, definitions: dict) -> None:
    """Put back what is missing of the schema, for ``definitions`` too,
    when the next transaction begins: the install's commit at the latest."""
    storage = _pgjsonb_storage(site)
    if storage is None:
        return
    indexes = tuple((name, index.meta_type) for name, index in definitions.items())

    def change(conn: psycopg.Connection) -> None:
        created = schema.create_schema(conn, ddl.LOCK_TIMEOUT, indexes)
        if created:
            logger.info("plone_pgcatalog: schema created: %s", ", ".join(created))

    SchemaChange(
        storage, "schema", change, "install plone_pgcatalog:default again"
    ).queue()


def _drop_schema_after_commit(site) -> None:
    """Take the schema away after this transaction, if it commits.

    Not in the commit: the processor deletes the site's rows from the
    table at its end.  Not if this process installs a catalog (again)
    before the drop runs: that install queued the schema before its own
    commit, which may come before the drop.
    """
    change_schema_after_commit(
        site,
        "schema removal",
        partial(_drop_schema, installs=_Installs.count),
        "apply the profile plone_pgcatalog:uninstall again",
    )


def change_schema_after_commit(
    site, label: str, change: Callable[[psycopg.Connection], None], remedy: str
) -> None:
    """Queue ``change`` as a ``SchemaChange`` once this transaction has
    committed (nothing if it aborts): it runs when the next transaction
    of this process begins."""
    storage = _pgjsonb_storage(site)
    if storage is None:
        return
    queued = SchemaChange(storage, label, change, remedy)

    def after_commit(committed: bool) -> None:
        if committed:
            queued.queue()

    site._p_jar.transaction_manager.get().addAfterCommitHook(after_commit)


def _drop_schema(conn: psycopg.Connection, installs: int) -> None:
    if _Installs.count != installs:
        logger.info("plone_pgcatalog: the schema stays: a catalog was installed since")
        return
    dropped = schema.drop_schema(conn, ddl.LOCK_TIMEOUT)
    if dropped.kept:
        logger.info("plone_pgcatalog: the schema stays: %s", dropped.kept)
        return
    logger.info(
        "plone_pgcatalog: schema removed: %s, %d columns, %d indexes,"
        " %d statistics objects%s",
        f"table {schema.TABLE}" if dropped.table else "no table",
        len(dropped.columns),
        len(dropped.indexes),
        len(dropped.statistics),
        f", table {schema.STATE_TABLE}" if dropped.state_table else "",
    )


def post_install(setup_tool) -> None:
    """Post handler of the ``default`` profile (it gets ``portal_setup``)."""
    install_catalog(aq_parent(aq_inner(setup_tool)))


def post_uninstall(setup_tool) -> None:
    """Post handler of the ``uninstall`` profile (it gets ``portal_setup``)."""
    uninstall_catalog(aq_parent(aq_inner(setup_tool)))
