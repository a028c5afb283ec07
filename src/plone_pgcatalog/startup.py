"""Zope start-up: prepare the databases on zodb-pgjsonb for the catalog.

Owns: the subscriber that runs when Zope opens its databases, and
``prepare_database``, which the test layers call too.  On a zodb-pgjsonb
storage it registers ``CatalogStateProcessor`` (which also queues the
catalog's base DDL for the first write transaction), makes the
database load ``pytz.utc`` zones as they were stored (``timezones``) and
keeps every poll's invalidations in the storage's process-wide cache
(``sharedcache``) and has a load on a lost connection tried again
(``lostloads``).
Other storages are left alone; a site whose catalog is a PGCatalogTool on
such a storage gets a clear error when the catalog is used.
"""

from __future__ import annotations

from plone_pgcatalog import lostloads
from plone_pgcatalog import sharedcache
from plone_pgcatalog import timezones
from plone_pgcatalog.store import processor

import logging

logger = logging.getLogger(__name__)


def prepare_database(db) -> bool:
    """Prepare ``db`` if its storage is zodb-pgjsonb; say whether it is."""
    if processor.register(db.storage) is None:
        return False
    timezones.restore_pytz_utc(db)
    sharedcache.keep_invalidations(db)
    lostloads.retry_lost_loads(db)
    return True


def register_processor(event) -> None:
    db = event.database
    for name, database in (getattr(db, "databases", None) or {"": db}).items():
        if prepare_database(database):
            logger.info("plone_pgcatalog: state processor on database %r", name)
