"""GenericSetup upgrade steps of the ``plone_pgcatalog:default`` profile.

Owns: bringing a site's catalog from one schema version
(``schema.SCHEMA_VERSION``) to the next.  DDL itself needs no step:
zodb-pgjsonb applies the new, idempotent ``schema.BASE_DDL`` before the
first write transaction after a restart.  A step is needed when the stored
forms change and rows must be rewritten, or when DDL would hold the table
long under an exclusive lock (a column's new type): an operator chooses
when that happens, a restart does not.
"""

from __future__ import annotations

from Acquisition import aq_inner
from Acquisition import aq_parent
from plone_pgcatalog import setuphandlers
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import schema
from Products.CMFCore.utils import getToolByName

import logging

logger = logging.getLogger(__name__)


def to_2(setup_tool) -> None:
    """1 → 2: SearchableText is stored as exact words and stems; new SQL
    indexes (text ranges, Title/Description words, occurrences).

    Rows written by version 1 hold unweighted words that queries of
    version 2 do not match: catalog every object again.  Version 1 kept a
    DateRecurringIndex in one B-tree over all occurrences, which fails past
    a few hundred of them: it is dropped, then every SQL index is created
    as version 2 defines it (both before the rows are written).
    """
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    for name, index in catalog.getIndexDefinitions().items():
        if index.meta_type == "DateRecurringIndex":
            catalog._defer_index_drop(name, index.meta_type)
    catalog.ensure_sql_indexes()
    catalog.clearFindAndRebuild()
    logger.info("plone_pgcatalog 2: %d objects cataloged again", len(catalog))


def to_3(setup_tool) -> None:
    """2 → 3: ``idx`` is kept in the row (storage MAIN, lz4 where the server
    has it), which makes every filter on it about five times cheaper.

    The DDL only changes how new values are stored: catalog every object
    again so that existing rows take the new form too.
    """
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    catalog.clearFindAndRebuild()
    logger.info("plone_pgcatalog 3: %d objects cataloged again", len(catalog))


def to_4(setup_tool) -> None:
    """3 → 4: the metadata column ``meta`` becomes ``json``: brains read it
    a quarter faster (PostgreSQL sends it as stored, without printing
    ``jsonb`` back to text).  The stored values stay as they are.

    Changing a column's type rewrites ``object_state``, under an exclusive
    lock held until the copy is done (readers and writers wait): run it
    when a pause is acceptable.  It runs after this step's commit, in its
    own connection, and tries again later if it cannot get the lock
    (``store.ddl.SchemaChange``).  Until then the catalog works as
    before.
    """
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    setuphandlers.change_schema_after_commit(
        site,
        "meta to json",
        _meta_to_json,
        "run the upgrade step 3 to 4 of plone_pgcatalog again",
    )


def _meta_to_json(conn) -> None:
    if schema.meta_to_json(conn, ddl.LOCK_TIMEOUT):
        logger.info("plone_pgcatalog 4: meta is json")
