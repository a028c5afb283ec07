"""The text that tells two searches' rows apart in the result cache
(``SearchSQL.window_text``): two different parameters never give the same
text, JSON parameters of any length included."""

from __future__ import annotations

from plone_pgcatalog.query import exact_text
from plone_pgcatalog.query import SearchSQL
from psycopg import sql
from psycopg.types.json import Json
from psycopg.types.json import Jsonb


def _search(*params) -> SearchSQL:
    return SearchSQL(
        where=sql.SQL("idx @> %s"),
        params=params,
        order_by=sql.SQL("zoid"),
        limit=20,
        offset=0,
    )


def test_long_json_parameters_are_told_apart():
    long_a, long_b = "x" * 40 + "-a", "x" * 40 + "-b"
    assert repr(Jsonb(long_a)) == repr(Jsonb(long_b))  # psycopg shortens
    assert _search(Jsonb(long_a)).window_text != _search(Jsonb(long_b)).window_text
    assert _search(Jsonb(long_a)).window_text == _search(Jsonb(long_a)).window_text


def test_wrappers_containers_and_types_are_told_apart():
    assert exact_text(Json("a")) != exact_text(Jsonb("a"))
    assert exact_text([Jsonb({"k": "y" * 50})]) != exact_text([Jsonb({"k": "z" * 50})])
    assert exact_text(("a",)) != exact_text(["a"])
    assert exact_text(1) != exact_text("1") != exact_text(1.0)
    assert exact_text({"k": Jsonb([1, 2])}) == "dict{'k': Jsonb(list[1, 2])}"
