"""Brains load metadata in windows of what is read (``brains.MetadataBatch``)."""

from __future__ import annotations

from plone_pgcatalog.brains import MetadataBatch


class _Loader:
    def __init__(self):
        self.calls: list[list[int]] = []

    def __call__(self, zoids):
        self.calls.append(list(zoids))
        # zoid 13 has no row any more (deleted): it is not asked for again.
        return {z: {"Title": f"t{z}"} for z in zoids if z != 13}


def test_a_page_of_a_large_result_loads_only_that_page():
    loader = _Loader()
    batch = MetadataBatch(list(range(5000)), loader)
    for position in range(20):
        expected = {} if position == 13 else {"Title": f"t{position}"}
        assert batch.get(position, position) == expected
    assert loader.calls == [list(range(20))]


def test_a_later_page_starts_at_the_brain_read():
    loader = _Loader()
    batch = MetadataBatch(list(range(5000)), loader)
    batch.get(4000, 4000)
    assert loader.calls == [list(range(4000, 4020))]


def test_reading_everything_takes_few_queries_each_row_once():
    loader = _Loader()
    zoids = list(range(1000))
    batch = MetadataBatch(zoids, loader)
    found = [batch.get(position, zoid) for position, zoid in enumerate(zoids)]
    assert found[13] == {} and found[999] == {"Title": "t999"}
    assert len(loader.calls) <= 7  # 20, 20, 40, 80, 160, 320, 360
    loaded = [z for call in loader.calls for z in call]
    assert sorted(loaded) == zoids
