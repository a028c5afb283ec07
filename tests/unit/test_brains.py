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


# -- results that hold their first rows only (``LazyResults`` with ``rest``)


class _Rest:
    """The rows of a 250-match result past the first 100."""

    def __init__(self, ids):
        self.ids = ids
        self.offsets: list[int] = []

    def __call__(self, offset):
        self.offsets.append(offset)
        return self.ids[offset:], None


def _results(total=250, first=100):
    from Acquisition import Implicit
    from plone_pgcatalog.brains import LazyResults

    import transaction

    transaction.begin()
    ids = [(zoid, f"/plone/d{zoid}") for zoid in range(total)]
    rest = _Rest(ids)
    results = LazyResults(
        ids[:first], total, Implicit(), ["Title"], _Loader(), rest=rest
    )
    return results, rest


def test_len_and_the_first_page_read_only_the_first_rows():
    results, rest = _results()
    assert len(results) == results.actual_result_count == 250
    assert [b.getPath() for b in results[:20]] == [f"/plone/d{z}" for z in range(20)]
    assert results[99].getPath() == "/plone/d99"
    assert rest.offsets == []


def test_a_brain_past_the_first_rows_fetches_all_the_others_once():
    results, rest = _results()
    assert results[-1].getPath() == "/plone/d249"
    assert [b.getPath() for b in results] == [f"/plone/d{z}" for z in range(250)]
    assert rest.offsets == [100]


def test_the_rest_is_fetched_before_the_transaction_ends():
    import transaction

    for end in (transaction.commit, transaction.abort):
        results, rest = _results()
        end()
        assert rest.offsets == [100]
        assert len(list(results)) == 250
        assert rest.offsets == [100]


def test_a_complete_result_fetches_nothing_more():
    import transaction

    results, rest = _results(total=40)
    transaction.commit()
    assert len(list(results)) == 40
    assert rest.offsets == []


# -- metadata values, as brains read them (``PGCatalogBrain._value``)


def _brains_of(row: dict, schema=("Title", "Subject", "modified", "getObjSize")):
    from Acquisition import Implicit
    from plone_pgcatalog.brains import LazyResults

    ids = [(1, "/plone/a"), (2, "/plone/b")]
    loaded = []

    def load(zoids):
        loaded.append(list(zoids))
        return {zoid: row for zoid in zoids}

    return LazyResults(ids, 2, Implicit(), schema, load), loaded


def test_brains_read_plain_values_as_stored_and_decode_the_others_once():
    from DateTime import DateTime
    from plone_pgcatalog import metadata

    import Missing

    modified = DateTime("2026-11-27 12:00:00 UTC")
    row = {
        "Title": "A page",
        "Subject": ["one", "two"],
        "modified": metadata.encode(modified),
    }
    results, loaded = _brains_of(row)
    first, second = results[0], results[1]
    assert first.Title == "A page" and first["Title"] == "A page"
    assert first.modified == modified and isinstance(first.modified, DateTime)
    assert first.getObjSize is Missing.Value  # in the schema, not in the row
    # A list is decoded once per brain: the same list when read again, and
    # changing it changes neither the stored row nor another brain's.
    subjects = first.Subject
    assert subjects == ["one", "two"] and first.Subject is subjects
    subjects.append("three")
    assert second.Subject == ["one", "two"]
    assert row["Subject"] == ["one", "two"]
    assert loaded == [[1, 2]]  # one load for both brains


def test_brains_refuse_names_outside_the_schema_and_private_ones():
    import pytest

    results, _ = _brains_of({"Title": "A page", "_secret": "x"}, ("Title", "_secret"))
    brain = results[0]
    with pytest.raises(AttributeError):
        brain.Description
    with pytest.raises(AttributeError):
        brain._secret
    with pytest.raises(KeyError):
        brain["Description"]


def test_columns_are_properties_of_a_class_made_once_per_schema():
    """``brain_class``: a column found on the class, not by ``__getattr__``;
    the brain's own attributes win over columns of the same names, as
    before."""
    from plone_pgcatalog.brains import brain_class
    from plone_pgcatalog.brains import PGCatalogBrain

    import Missing

    schema = ("Title", "getPath", "data_record_id_", "has_key", "Description")
    row = {"Title": "A page", "getPath": "/elsewhere", "data_record_id_": 99}
    results, _ = _brains_of(row, schema)
    brain = results[0]
    made = type(brain.aq_base)
    assert made is brain_class(frozenset(schema)) is type(results[1].aq_base)
    assert issubclass(made, PGCatalogBrain) and made is not PGCatalogBrain
    assert made.__name__ == "PGCatalogBrain"
    assert set(made.__dict__) & set(schema) == {"Title", "Description"}
    assert brain.Title == "A page" and brain["Title"] == "A page"
    assert brain.Description is Missing.Value
    assert brain.getPath() == "/plone/a" and brain["getPath"] == "/elsewhere"
    assert brain.data_record_id_ == 1 and brain.has_key("Title")
    other = brain_class(frozenset(("Title",)))
    assert other is not made and "Description" not in other.__dict__
