"""Zope start-up: register the catalog's state processor on the storage.

Owns: the subscriber that runs when Zope opens its databases.  On a
zodb-pgjsonb storage it registers ``CatalogStateProcessor`` (which also
queues the catalog's base DDL for the first write transaction).  Other
storages are left alone; a site whose catalog is a PGCatalogTool on such
a storage gets a clear error when the catalog is used.
"""

from __future__ import annotations

from plone_pgcatalog import processor

import logging


logger = logging.getLogger(__name__)


def register_processor(event) -> None:
    db = event.database
    for name, database in (getattr(db, "databases", None) or {"": db}).items():
        if processor.register(database.storage) is not None:
            logger.info("plone_pgcatalog: state processor on database %r", name)
