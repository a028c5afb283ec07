"""The first rows' metadata that came with a search (``search.metadata_given``),
as the result cache's many readers of one result read it."""

from __future__ import annotations

from plone_pgcatalog.store.search import Found
from plone_pgcatalog.store.search import metadata_given

import orjson


def _found() -> Found:
    rows = {1: {"Title": "One", "Subject": ["a", "b"]}, 2: {"Title": "Two"}}
    return Found(
        ids=[(1, "/plone/one"), (2, "/plone/two"), (3, "/plone/three")],
        total=3,
        metadata={zoid: orjson.dumps(meta).decode() for zoid, meta in rows.items()},
    )


def test_the_rows_that_came_are_given_and_the_others_not():
    found = _found()

    given = metadata_given(found, [2, 3, 1])

    assert given == {2: {"Title": "Two"}, 1: {"Title": "One", "Subject": ["a", "b"]}}


def test_each_row_is_decoded_once_for_every_reader():
    found = _found()
    first = metadata_given(found, [1, 2])

    again = metadata_given(found, [1])

    assert again[1] is first[1]
    assert found.parsed.keys() == {1, 2}


def test_the_decoded_rows_do_not_make_results_unequal():
    found = _found()
    metadata_given(found, [1])

    assert found == _found()
