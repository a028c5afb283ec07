"""zodb-pgjsonb's process-wide object cache and the add-on's rules for it
(``plone_pgcatalog.sharedcache``), on the cache object alone.

The sequence of the soak's old reads: an object is cached at transaction
5; another process commits a new state of it at 12; a connection of this
process commits at 14 (its own objects); a connection whose poll read 12
as PostgreSQL's last transaction hands the changed object to the cache.
A transaction at 14 must then read the object from PostgreSQL.
"""

from __future__ import annotations

from plone_pgcatalog.sharedcache import CoveredSharedLoadCache
from ZODB.utils import p64
from zodb_pgjsonb.storage import SharedLoadCache

ZOID = 7
OWN = 99


def _after_the_race(cache: SharedLoadCache) -> SharedLoadCache:
    polled = getattr(cache, "polled", lambda since, through: None)
    cache.poll_advance(10, [])
    polled(None, 10)
    assert cache.set(ZOID, b"state of 5", p64(5), 10)
    cache.poll_advance(14, [OWN])  # this process commits at 14
    cache.poll_advance(12, [ZOID])  # a poll that reached 12 only
    polled(10, 12)
    return cache


def test_zodb_pgjsonb_alone_keeps_the_old_state_after_the_poll():
    """The storage behaviour this module exists for (README, Known
    issues): if this fails, zodb-pgjsonb keeps every poll's invalidations
    itself now."""
    cache = _after_the_race(SharedLoadCache(max_mb=1))

    assert cache.get(ZOID, 14) == (b"state of 5", p64(5))


def test_the_old_state_is_dropped_by_the_poll():
    cache = _after_the_race(CoveredSharedLoadCache(max_mb=1))

    assert cache.get(ZOID, 12) is None
    assert cache.consensus_tid == 14  # not moved back by the late poll
    assert cache.covered == 12
    assert cache._current_bytes == 0


def test_a_reader_behind_the_consensus_still_cannot_fill_the_cache():
    cache = _after_the_race(CoveredSharedLoadCache(max_mb=1))

    assert not cache.set(ZOID, b"state of 5", p64(5), 12)
    assert cache.set(ZOID, b"state of 12", p64(12), 14)
    assert cache.get(ZOID, 12) == (b"state of 12", p64(12))


def test_a_reader_past_what_the_polls_covered_reads_postgresql():
    """A connection's first poll (zodb-pgjsonb invalidates nothing then),
    or one not yet told to the cache, reaches past ``covered``: the entry
    may be older than a change no poll has dropped yet."""
    cache = CoveredSharedLoadCache(max_mb=1)
    cache.poll_advance(10, [])
    cache.polled(None, 10)
    assert cache.set(ZOID, b"state of 5", p64(5), 10)

    assert cache.get(ZOID, 12) is None
    assert cache.get(ZOID, 10) == (b"state of 5", p64(5))


def test_polls_extend_what_is_covered_only_from_within_it():
    cache = CoveredSharedLoadCache(max_mb=1)
    assert cache.covered is None
    cache.polled(None, 10)
    cache.polled(12, 20)  # changes 11-12 not dropped by it
    assert cache.covered == 10
    cache.polled(8, 15)
    assert cache.covered == 15
    cache.polled(15, 13)  # a poll that read less than covered
    assert cache.covered == 15


def test_the_first_poll_drops_what_was_cached_before_it():
    cache = CoveredSharedLoadCache(max_mb=1)
    cache.poll_advance(4, [])  # the cache warmer, before any poll
    assert cache.set(ZOID, b"state of 3", p64(3), 4)

    cache.polled(None, 10)

    assert cache.get(ZOID, 10) is None
    assert cache._current_bytes == 0


def test_clearing_forgets_what_was_covered():
    cache = CoveredSharedLoadCache(max_mb=1)
    cache.polled(None, 10)

    cache.clear()

    assert cache.covered is None


def test_a_reader_older_than_what_is_covered_cannot_fill_the_cache():
    """Whatever the consensus says (``clear`` resets it; the cache warmer
    sets it from a transaction it read earlier)."""
    cache = CoveredSharedLoadCache(max_mb=1)
    cache.begin(100)
    cache.clear()
    cache.polled(90, 100)  # a poll that was on its way
    cache.poll_advance(50, [])  # the warmer's older transaction

    assert not cache.set(ZOID, b"state of 55", p64(55), 60)
    assert cache.get(ZOID, 100) is None


def test_it_begins_at_postgresql_s_last_transaction():
    cache = CoveredSharedLoadCache(max_mb=1)

    cache.begin(100)

    assert cache.covered == 100 and cache.consensus_tid == 100
    assert cache.set(ZOID, b"state of 90", p64(90), 100)
    cache.polled(100, 120)
    assert cache.covered == 120
    assert cache.get(ZOID, 120) == (b"state of 90", p64(90))
