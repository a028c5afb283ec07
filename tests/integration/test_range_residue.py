"""The effective range's residue (``registry.DateRangeTranslator.residue``)
is exactly the rows its search condition (``where``) leaves out.

A count per group takes the residue away from its groups' counts
(``query._group_count``): a row in both, or in neither, would make
``len()`` wrong.  Ranges at and around the moment, open at either end,
empty (since after until) and missing, derived into the typed column as
the catalog derives them (``columns.derive``) in a temporary table of
the test server; the matches are ZCatalog's own ``DateRangeIndex``'s
(the oracle), for a first condition and for one that narrows another's
result (``QueryContext.preceded``: a row without a range matches).
"""

from __future__ import annotations

from BTrees.IIBTree import IITreeSet
from plone_pgcatalog.query import _parsed
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.store.columns import derive
from plone_pgcatalog.testing import server_dsn
from Products.PluginIndexes.DateRangeIndex.DateRangeIndex import DateRangeIndex
from psycopg import sql
from psycopg.types.json import Jsonb
from types import SimpleNamespace

import itertools
import psycopg
import pytest

#: The moment tested, in the index's minutes (2024-01-02 03:04 UTC).
MOMENT = 28402564

#: Each end of a range: open, or a minute before, at or after the moment.
ENDS = (None, MOMENT - 1, MOMENT, MOMENT + 1)


def _objects() -> list[SimpleNamespace | None]:
    """Every pair of ends (some with since after until), and an object
    without a range (None: a row without the index's value)."""
    pairs = itertools.product(ENDS, ENDS)
    return [SimpleNamespace(effective=s, expires=u) for s, u in pairs] + [None]


def _index() -> DateRangeIndex:
    index = DateRangeIndex("effectiveRange", "effective", "expires")
    # Minutes stored as given: ``_convertDateTime`` passes ints through.
    for rid, obj in enumerate(_objects()):
        if obj is not None:
            index.index_object(rid, obj)
    return index


def _rows(conn: psycopg.Connection, index: DateRangeIndex) -> None:
    """The objects' rows, ``rid`` and the range column, in ``ranges``."""
    translator = get_translator(index.meta_type)
    conn.execute('CREATE TEMP TABLE ranges (rid integer, "effectiveRange" int8range)')
    for rid, obj in enumerate(_objects()):
        value = None if obj is None else translator.extract(index, obj)
        statement = sql.SQL(
            "INSERT INTO ranges SELECT %s, {} FROM (SELECT %s::jsonb AS v) AS s"
        ).format(derive("range", sql.Identifier("v")))
        conn.execute(statement, (rid, None if value is None else Jsonb(value)))


def _rids(conn: psycopg.Connection, condition: tuple) -> set[int]:
    clause, values = condition
    statement = sql.SQL("SELECT rid FROM ranges WHERE {}").format(clause)
    return {rid for (rid,) in conn.execute(statement, values)}


@pytest.mark.parametrize("preceded", [False, True], ids=["first", "narrowing"])
@pytest.mark.parametrize("moment", ENDS[1:], ids=["before", "at", "after"])
def test_the_residue_is_every_row_the_condition_leaves_out(preceded, moment):
    index = _index()
    translator = get_translator(index.meta_type)
    context = QueryContext(
        columns={"effectiveRange": "range"},
        group_counts=frozenset({"effectiveRange"}),
        preceded=preceded,
    )
    query = _parsed({"effectiveRange": moment}, index, "effectiveRange")
    everything = set(range(len(_objects())))
    # ZCatalog narrowing a result removes the rows out of the range only.
    given = IITreeSet(everything) if preceded else None
    oracle = set(index.query_index(query, given))
    with psycopg.connect(server_dsn(), autocommit=True) as conn:
        _rows(conn, index)
        matches = _rids(conn, translator.where(index, query, context))
        residue = _rids(conn, translator.residue(index, query, context))
    assert matches == oracle
    assert residue == everything - oracle
    # Every kind of row is on each side for some moment: the ranges hold
    # the moment only where they should (the oracle has both kinds).
    assert oracle and everything - oracle
