"""The statement of facet counts (``store.search.facet_statement``),
without a database: a facet named otherwise reads its own index's values;
value facets of one query share one scan of its matches; typed columns
are read before ``idx``."""

from __future__ import annotations

from plone_pgcatalog.query import SearchSQL
from plone_pgcatalog.store import search
from psycopg import sql


def _plan(path: str = "/plone") -> SearchSQL:
    return SearchSQL(sql.SQL("path = %s"), (path,), sql.SQL("zoid"), None, 0)


def _text(*facets) -> str:
    statement, _params = search.facet_statement(list(facets))
    return statement.as_string(None)


def test_a_renamed_value_facet_reads_its_index():
    text = _text(search.ValueFacet("tags", "Subject", _plan()))
    assert "idx -> 'Subject'" in text
    assert "idx -> 'tags'" not in text
    assert "SELECT 'tags'::text" in text


def test_a_renamed_date_facet_reads_its_index():
    facet = search.RangeFacet("when", "created", _plan(), (("ever", _plan()),))
    text = _text(facet)
    assert "idx -> 'created'" in text and "idx -> 'when'" not in text


def test_typed_columns_are_read_before_idx():
    column = sql.Identifier("Subject")
    text = _text(search.ValueFacet("Subject", "Subject", _plan(), column, "keywords"))
    # idx only for a row whose column holds no string keyword, or one
    # longer than it holds whole (counted from idx, the others not twice)
    assert (
        'CASE WHEN cardinality("Subject") = 0 OR EXISTS (SELECT FROM'
        ' unnest("Subject") AS k WHERE char_length(k) > 500)'
        " THEN idx -> 'Subject' END"
    ) in text
    assert 'unnest("c0") AS k WHERE "j0" IS NULL GROUP BY k' in text
    assert 'CASE WHEN cardinality("c0") > 0 THEN true ELSE EXISTS' in text
    facet = search.RangeFacet("created", "created", _plan(), (), sql.Identifier("c"))
    assert "(\"c\" IS NOT NULL OR jsonb_typeof(idx -> 'created')" in _text(facet)


def test_value_facets_of_one_query_share_one_scan():
    """Facets whose queries are the same (no criterion of their own) read
    the matches once; a facet with a criterion of its own left out reads
    its matches apart.  Parameters follow the statement's text."""
    statement, params = search.facet_statement(
        [
            search.ValueFacet("portal_type", "portal_type", _plan()),
            search.PathFacet(
                "folders",
                _plan(),
                1,
                1,
                (sql.SQL("path LIKE %s"), ["/plone/%"]),
            ),
            search.ValueFacet("review_state", "review_state", _plan()),
            search.ValueFacet("Subject", "Subject", _plan("/plone/news")),
        ]
    )
    text = statement.as_string(None)
    assert text.startswith('WITH "m0" AS MATERIALIZED (SELECT ')
    assert text.count("AS MATERIALIZED") == 2
    assert text.count("path = %s") == 3  # two scans and the path facet
    m0 = text[: text.index('"m1" AS')]
    assert "idx -> 'portal_type'" in m0 and "idx -> 'review_state'" in m0
    assert "idx -> 'Subject'" not in m0
    assert params == ["/plone", "/plone/news", 3, "/plone", "/plone/%", 2]


def test_plans_with_equal_json_parameters_share_their_scan():
    """psycopg's ``Jsonb`` compares by identity; plans translated apart
    (each facet's, with this transaction's pending rows as a JSON
    parameter) are the same query all the same."""
    from psycopg.types.json import Jsonb

    def plan():
        return SearchSQL(
            sql.SQL("idx @> %s"), (Jsonb({"a": [1]}),), sql.SQL("zoid"), None, 0
        )

    text = _text(
        search.ValueFacet("portal_type", "portal_type", plan()),
        search.ValueFacet("review_state", "review_state", plan()),
    )
    assert text.count("AS MATERIALIZED") == 1
