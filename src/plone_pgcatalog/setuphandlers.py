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

Must not build SQL: the tool's API does the catalog work.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from plone.base.interfaces import INonInstallable
from plone_pgcatalog.tool import PGCatalogTool
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import getToolByName
from Products.CMFPlone.CatalogTool import CatalogTool as PloneCatalogTool
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from zope.interface import implementer

import logging


logger = logging.getLogger(__name__)

TOOL_ID = "portal_catalog"


@implementer(INonInstallable)
class HiddenProfiles:
    def getNonInstallableProfiles(self):
        return ["plone_pgcatalog:uninstall"]


def _move_definitions(old, new) -> None:
    """Give ``new`` the lexicons, indexes and columns of ``old``, empty."""
    for lexicon_id, lexicon in old.objectItems():
        if isinstance(aq_base(lexicon), PLexicon) and lexicon_id not in new:
            fresh = PLexicon(lexicon_id, lexicon.title, *lexicon._pipeline)
            new._setObject(lexicon_id, fresh, suppress_events=True)
    if isinstance(aq_base(old), PGCatalogTool):
        # Our catalog hands out views; the definitions are the index objects.
        definitions = old._catalog.indexes.definitions()
    else:
        definitions = {name: old._catalog.getIndex(name) for name in old.indexes()}
    old_catalog = aq_base(old._catalog)
    for name, index in definitions.items():
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

    Idempotent: on a site that has one already, only the SQL indexes are
    (re)queued.
    """
    old = site._getOb(TOOL_ID)
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
    """Give ``site`` back a ZCatalog portal_catalog, rebuilt from content."""
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


def post_install(setup_tool) -> None:
    """Post handler of the ``default`` profile (it gets ``portal_setup``)."""
    install_catalog(aq_parent(aq_inner(setup_tool)))


def post_uninstall(setup_tool) -> None:
    """Post handler of the ``uninstall`` profile (it gets ``portal_setup``)."""
    uninstall_catalog(aq_parent(aq_inner(setup_tool)))
