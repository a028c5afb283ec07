"""The databases Zope's start-up prepares (``startup.prepare_database``,
which the test layer calls as Zope's subscriber does) keep every poll's
invalidations in zodb-pgjsonb's shared cache (``plone_pgcatalog.sharedcache``).
"""

from __future__ import annotations

from plone_pgcatalog.sharedcache import InvalidatingSharedLoadCache
from ZODB.utils import p64


def test_the_site_database_keeps_every_poll_s_invalidations(pg_layer):
    db = pg_layer["app"]._p_jar.db()
    cache = db.storage._shared_cache

    assert type(cache) is InvalidatingSharedLoadCache
    consensus = cache.consensus_tid
    zoid = 2**40  # no object of the site
    assert cache.set(zoid, b"old state", p64(1), consensus)
    cache.poll_advance(consensus - 1, [zoid])  # a late poll
    assert cache.get(zoid, consensus) is None
    assert cache.consensus_tid == consensus
