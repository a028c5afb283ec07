"""Moves composed into relocations of stored rows (``relocation.py``).

The property: for any sequence of moves, every stored row ends where
moving it step by step would put it.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from plone_pgcatalog.store.relocation import compose
from plone_pgcatalog.store.relocation import moved_path
from plone_pgcatalog.store.relocation import relocate
from plone_pgcatalog.store.relocation import Relocation

#: A small tree of stored rows, so that random moves often overlap.
STORED = [
    "/s",
    "/s/a",
    "/s/a/x",
    "/s/a/x/1",
    "/s/a/y",
    "/s/b",
    "/s/b/x",
    "/s/b/x/1",
    "/s/c",
]
_NAMES = st.sampled_from(["a", "b", "c", "x", "y", "z", "1"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map(lambda p: "/s/" + "/".join(p))


def _step_by_step(path: str, moves) -> str:
    for old, new in moves:
        moved = moved_path(path, old, new)
        if moved is not None:
            path = moved
    return path


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(_PATHS, _PATHS), max_size=6))
def test_composed_moves_put_each_row_where_the_moves_do(moves):
    # A folder cannot move into itself; anything else is composed, also
    # moves Zope would refuse (onto an ancestor's path).
    moves = [(old, new) for old, new in moves if not new.startswith(old + "/")]
    relocations = compose(moves)
    for path in STORED:
        assert relocate(path, relocations) == _step_by_step(path, moves), (
            path,
            moves,
            relocations,
        )


def test_a_rename_twice():
    relocations = compose([("/s/a", "/s/b"), ("/s/b", "/s/c")])
    assert Relocation("/s/a", "/s/c") in relocations
    assert relocate("/s/a/x/1", relocations) == "/s/c/x/1"


def test_a_folder_moved_out_of_a_moved_folder():
    relocations = compose([("/s/a", "/s/b/a"), ("/s/b/a/x", "/s/x")])
    assert relocate("/s/a/x/1", relocations) == "/s/x/1"
    assert relocate("/s/a/y", relocations) == "/s/b/a/y"
    assert relocate("/s/ab", relocations) == "/s/ab"


def test_rows_moved_away_are_not_taken_by_a_later_move_of_the_old_path():
    # /s/a went to /s/z; a new /s/a/x made later moves to /s/y: the stored
    # /s/a/x rows are at /s/z/x, untouched by the second move.
    relocations = compose([("/s/a", "/s/z"), ("/s/a/x", "/s/y")])
    assert relocate("/s/a/x/1", relocations) == "/s/z/x/1"


def test_a_move_onto_an_ancestor_path_ends():
    # Zope refuses it (the id is taken); composing it must still end.
    relocations = compose([("/s/a", "/s/b/a"), ("/s/b/a/x", "/s/b")])
    assert relocate("/s/a/x/1", relocations) == "/s/b/1"
