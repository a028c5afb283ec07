"""zodb-pgjsonb's process-wide object cache and the add-on's invalidation
rule (``plone_pgcatalog.sharedcache``), on the cache object alone.

The sequence of the soak's stale reads: an object is cached at
transaction 5; another process commits a new state of it at 12; a
connection of this process commits at 14 (its own objects); a connection
whose snapshot began at 12 polls, finds the object changed and hands that
to the cache.  A transaction at 14 must then miss the cache and read the
object from PostgreSQL.
"""

from __future__ import annotations

from plone_pgcatalog.sharedcache import InvalidatingSharedLoadCache
from plone_pgcatalog.sharedcache import keep_invalidations
from ZODB.utils import p64
from zodb_pgjsonb.storage import SharedLoadCache

ZOID = 7
OWN = 99


def _after_the_race(cache: SharedLoadCache) -> SharedLoadCache:
    cache.poll_advance(10, [])
    assert cache.set(ZOID, b"state of 5", p64(5), 10)
    cache.poll_advance(14, [OWN])  # this process commits at 14
    cache.poll_advance(12, [ZOID])  # a poll that reached 12 only
    return cache


def test_zodb_pgjsonb_alone_keeps_the_old_state_after_the_poll():
    """The storage behaviour this module exists for (README, Known
    issues): if this fails, zodb-pgjsonb keeps every poll's invalidations
    itself now."""
    cache = _after_the_race(SharedLoadCache(max_mb=1))

    assert cache.get(ZOID, 14) == (b"state of 5", p64(5))


def test_the_old_state_is_dropped_by_the_poll():
    cache = _after_the_race(InvalidatingSharedLoadCache(max_mb=1))

    assert cache.get(ZOID, 14) is None
    assert cache.consensus_tid == 14  # not moved back by the late poll
    assert cache._current_bytes == 0


def test_a_reader_behind_the_consensus_still_cannot_fill_the_cache():
    cache = _after_the_race(InvalidatingSharedLoadCache(max_mb=1))

    assert not cache.set(ZOID, b"state of 5", p64(5), 12)
    assert cache.set(ZOID, b"state of 12", p64(12), 14)
    assert cache.get(ZOID, 14) == (b"state of 12", p64(12))


class _Storage:
    def __init__(self, cache):
        self._shared_cache = cache


def test_the_storage_keeps_its_cache_object_and_entries():
    cache = SharedLoadCache(max_mb=1)
    cache.poll_advance(1, [])
    cache.set(OWN, b"own state of 1", p64(1), 1)
    storage = _Storage(cache)

    keep_invalidations(storage)
    keep_invalidations(storage)

    assert storage._shared_cache is cache
    assert type(cache) is InvalidatingSharedLoadCache
    assert cache.get(OWN, 1) == (b"own state of 1", p64(1))
    assert _after_the_race(cache).get(ZOID, 14) is None


def test_a_cache_without_what_the_rule_uses_is_left_alone(monkeypatch, caplog):
    import plone_pgcatalog.sharedcache as sharedcache

    monkeypatch.setattr(sharedcache, "_USED", ("_lock", "_entries"))
    storage = _Storage(SharedLoadCache(max_mb=1))

    keep_invalidations(storage)

    assert type(storage._shared_cache) is SharedLoadCache
    assert "no _entries" in caplog.text
