"""Query translation: a ZCatalog query in, SQL and parameters out.

Owns: the meaning of a catalog query, as ZCatalog's ``Catalog.search``
gives it: which keys restrict (those naming an index's query names, in
ZCatalog's default plan order; other keys are ignored silently; a query
naming no index, or an index with nothing to do, has no results), sorting
(``sort_on``, ``sort_order``, ``sort_limit``; relevance for full text
without ``sort_on``) and batching (``b_start``, ``b_size``).  Each index's
part comes from its translator in the registry.

A pure function: no database, no Zope objects beyond the index
definitions.  The security terms (allowedRolesAndUsers, effectiveRange)
are added by the tool before the query arrives here.
"""

from __future__ import annotations

from Acquisition import aq_base
from collections.abc import Callable
from collections.abc import Collection
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from plone_pgcatalog.errors import QueryError
from plone_pgcatalog.errors import UnknownIndexError
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.store.columns import COUNTS_TABLE
from plone_pgcatalog.store.columns import derivable
from plone_pgcatalog.store.columns import GROUPED
from plone_pgcatalog.store.columns import SETS_TABLE
from plone_pgcatalog.store.columns import SORTED
from plone_pgcatalog.store.columns import typed_value
from plone_pgcatalog.store.columns import untyped_predicate
from plone_pgcatalog.store.layout import has_key
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.overlay import Overlay
from Products.PluginIndexes.interfaces import ILimitedResultIndex
from Products.PluginIndexes.interfaces import IQueryIndex
from Products.ZCatalog.query import IndexQuery
from psycopg import sql
from psycopg.types.json import Json
from psycopg.types.json import Jsonb

import functools
import re

#: The catalog table's rows as its statistics count them (``t.rows``; -1
#: before its first ``ANALYZE``), against which a window's count chooses
#: how the window is read (``SearchSQL._from_the_edge``, ``_by_the_count``).
_TABLE_ROWS = sql.SQL(
    "(SELECT reltuples AS rows FROM pg_class WHERE oid = {}::regclass) AS t"
).format(sql.Literal(TABLE.as_string(None)))

#: From how many rows of the catalog table on a window sorted on indexes
#: counts its matches apart (``SearchSQL.rows_query``): below, planning the
#: statement with its conditions twice costs more than the count in the
#: same pass (measured: see ``benchmarks/README.rst``, "Sorted pages").
#: A window walked from the edge of its matches with its plan kept
#: (``SearchSQL.plan_forced``) is not planned: it counts apart at any size.
COUNT_APART_ROWS = 5000


def is_large(catalog_rows: float) -> bool:
    """Whether a catalog of ``catalog_rows`` rows is large
    (``QueryContext.large``)."""
    return catalog_rows >= COUNT_APART_ROWS


_NOT_A_QUERY = frozenset(
    {"sort_on", "sort_order", "sort_limit", "b_start", "b_size", "show_inactive"}
)


@dataclass(frozen=True)
class QueryContext:
    """What a translator may need to know beyond its index and query.

    ``text_configs`` are the PostgreSQL text search configurations whose
    stems a full-text query also matches; ``preceded`` tells whether
    another index comes before this one in ZCatalog's default query plan
    (a ``not``-only query then excludes from that index's result rather
    than from the objects the index holds).
    """

    def column(self, index_name: str, kind: str) -> sql.Composable | None:
        """The typed column of ``kind`` of an index, if it is ready; else,
        for a kind of ``columns.COMPUTED_KINDS``, the same value computed
        from ``idx`` (``columns.typed_value``)."""
        return typed_value(self.columns, index_name, kind)

    site_path: str = "/"
    text_configs: tuple[str, ...] = ()
    preceded: bool = False
    #: ``{column: kind}`` of the typed columns ready in the database
    #: (``store.columns``): a translator whose index has one may use it
    columns: dict = field(default_factory=dict)
    #: The catalog has ``COUNT_APART_ROWS`` rows or more: a sorted window
    #: counts its matches apart (``SearchSQL.rows_query``)
    large: bool = False
    #: Every row of the table is in the site's subtree (one site per
    #: database, ``store.connection.site_alone``): a search without pending
    #: changes needs no test of the site's path.  That test ran for every
    #: match of every search: at 10,220 rows, 1.2-1.5 ms of a count of every
    #: row through a covering index
    site_alone: bool = False
    #: The numbered lists are many (``columns.MANY_LISTS``): a search tests
    #: a row's number by a semi-join on the lists of the user's terms
    many_lists: bool = False
    #: The counts per group (``columns.GROUPED``), where they are kept (not
    #: None): a search whose conditions name only the grouped columns, in
    #: a site alone in the table, counts its matches from them
    #: (``counted_by_groups``), where the numbered lists are few (not
    #: ``many_lists``: an intranet's list per owner makes as many groups,
    #: which a count would read all of).  The set names the range columns
    #: with their SQL indexes (``columns.ready_rows``): one condition on such
    #: a column more (the effective range of every search of a user who
    #: may not see inactive content) takes away from the groups' counts the
    #: rows its translator's ``residue`` finds
    group_counts: frozenset | None = None
    #: Indexes whose typed columns the caller reads from the search's rows
    #: beyond its conditions and sort keys (facets count theirs): a row
    #: source with pending changes gives them too (``_columns_named``;
    #: without pending changes it changes nothing, so no translation key
    #: holds it)
    read_apart: frozenset = frozenset()


def exact_text(value) -> str:
    """``value`` (parameters of a statement) as text that tells any two
    values apart: ``repr`` but for psycopg's JSON wrappers, whose ``repr``
    shortens a value of more than 40 characters."""
    if isinstance(value, (Json, Jsonb)):
        return f"{type(value).__name__}({exact_text(value.obj)})"
    if isinstance(value, (list, tuple)):
        items = ", ".join(exact_text(item) for item in value)
        return f"{type(value).__name__}[{items}]"
    if isinstance(value, dict):
        items = ", ".join(
            f"{exact_text(key)}: {exact_text(item)}" for key, item in value.items()
        )
        return f"dict{{{items}}}"
    return repr(value)


@dataclass(frozen=True)
class SearchSQL:
    """A translated query: rows, their order and the window to return."""

    where: sql.Composable
    params: tuple
    order_by: sql.Composable
    limit: int | None
    offset: int
    #: relevance of a full-text match, when the result is ordered by it
    score: sql.Composable | None = None
    score_params: tuple = ()
    source: sql.Composable = field(default_factory=lambda: TABLE)
    source_params: tuple = ()
    #: ``(start, stop)`` to cut from the whole result, for negative batches
    python_slice: tuple[int, int] | None = None
    #: ``((expression, direction), ...)`` of ``order_by`` before ``zoid``,
    #: when the result is sorted on indexes
    sort_keys: tuple = ()
    #: A window sorted on indexes counts its matches apart, as one in
    #: zoid order does (a large catalog: ``QueryContext.large``), where
    #: the query asks for a window (``b_size``, ``sort_limit``): the
    #: first rows of a whole result (``store.search.FIRST_ROWS``) are most
    #: often followed by all the others, whose sort needs every match
    sorted_count_apart: bool = False
    #: Two conditions, each with ``params``, whose matches together are
    #: ``where``'s, none in both: its count is the sum of theirs where it
    #: is counted apart.  Sorted on a ``columns.SORTED`` date column, the
    #: sort key's presence (a typed value, or one of another type in
    #: ``idx``) is the one test of ``where`` that needs the row: split in
    #: two, the first part's count reads the covering index only, the
    #: second's the partial index of the untyped values (``columns.cover``).
    count_parts: tuple = ()
    #: Where the first sort key is such a column (``count_parts``):
    #: ``(column, reverse)``.  A window counted apart then walks the
    #: column's index from where the matches begin in its order (``edge``
    #: of ``rows_query``), not from the end of the whole catalog.
    edge: tuple | None = None
    #: A search that finds few rows by a key, whatever its value (a
    #: translator's ``finds_few``: a folder's items, an object by its path
    #: or by UIDs), sorted on the items' position or not sorted, without a
    #: full-text condition, pending changes or a subquery of the table: the
    #: best plan is the same for every value (the key's rows by its index;
    #: the other conditions are written so that no other index answers
    #: them, ``by_key``), so PostgreSQL keeps one for the statement
    #: (prepared, per connection) instead of planning it for each search.
    #: At 10,220 rows a navigation's statement took 0.35-0.53 ms instead
    #: of 0.69-1.24 (``benchmarks/README.rst``, "Prepared plans").  Other
    #: searches are planned for their values: a plan made blind to them
    #: ranked every row for a word (full text 2.98 -> 6.1 ms), or read
    #: every visible row for a type without matches.
    plan_kept: bool = False
    #: A window walked from the edge (``from_the_edge``), without a
    #: full-text condition, pending changes or a subquery of the table, in
    #: a catalog of any size (it counts apart below ``COUNT_APART_ROWS``
    #: too: not planned, the statement costs less than the one pass; at
    #: 500 documents 0.50-0.91 of its time, ``benchmarks/README.rst``):
    #: PostgreSQL is made to keep one plan for its statement, blind to the
    #: values (``plan_cache_mode`` ``force_generic_plan`` for that statement
    #: alone, ``store.connection.send_search``).  Its best plan is the same
    #: for every value: the count reads the matches by the conditions'
    #: indexes, and by their number the statement either walks from their
    #: edge or reads the few and sorts them (``_from_the_edge``).  At 10,220
    #: rows the statement took 2.44-2.71 ms instead of 4.66-4.69 (three
    #: times the conditions to plan).  Without the choice by the count, a
    #: plan blind to the values walked the date's index through every newer
    #: row for a condition of few old rows (1,000,000 rows, a section's or
    #: a keyword's 510 old items: 286-350 ms; with it 1.6 ms;
    #: ``benchmarks/README.rst``, "One plan for every window").
    #: PostgreSQL's own choice (``plan_kept``) is no guide there: it took
    #: the generic plan of statements whose generic plan reads every row
    #: for a rare value, and made custom plans of these.
    plan_forced: bool = False
    #: Where ``where`` names only the columns the counts per group are kept
    #: by (``counted_by_groups``), but for one range the rows out of which
    #: its translator finds by an index (``group_count``): the count of
    #: its matches from the groups' counts (``columns.COUNTS_TABLE``), and
    #: its parameters.  A window in zoid order takes it instead of counting
    #: its matches.  At 10,000 documents ``portal_type=Document`` (10,990
    #: matches) took 1.4-2.1 ms instead of 3.3-4.6 (``benchmarks/README.rst``,
    #: "Session 29").
    group_count: sql.Composable | None = None
    group_count_params: tuple = ()
    #: ``group_count`` takes a residue away (``_LESS_RESIDUE``): it reads
    #: the table by the range's indexes, a plan that depends on the values
    group_count_residue: bool = False

    @property
    def windowed(self) -> bool:
        return self.limit is not None or bool(self.offset)

    @property
    def from_the_edge(self) -> bool:
        """Whether the window's statement (``ids_query``) walks the first
        sort key's index from the edge of the matches (``_from_the_edge``):
        a window sorted on a ``columns.SORTED`` column, counted apart (a
        large catalog, or its plan kept: ``plan_forced``)."""
        return (
            self.edge is not None
            and self.limit is not None
            and bool(self.count_parts)
            and self.sorted_count_apart
        )

    @property
    def by_the_count(self) -> bool:
        """Whether the statement of a window in zoid order, counted from
        the groups' counts (``group_count``, without a residue), lets that
        count choose how it reads the window (``_by_the_count``): one plan
        then serves every value (``plan_forced``).  Not for a result cut in
        Python (``python_slice``) nor a window without an end."""
        return (
            self.group_count is not None
            and not self.group_count_residue
            and not self.count_parts
            and not self.sort_keys
            and self.score is None
            and self.python_slice is None
            and not self.plan_kept
            and (self.limit is not None or not self.offset)
        )

    @functools.cached_property
    def statements(self) -> dict:
        """Statements made of this translation, by what they are for: kept
        with it (``store.search.search_statement`` keeps the search's, as
        text), so that a kept translation is composed once."""
        return {}

    @functools.cached_property
    def window_text(self) -> tuple[str, str]:
        """The window's statement and parameters as text: what tells two
        searches' rows apart in the result cache (``results``).  Composed
        once per translation (``translations`` keeps them)."""
        statement, params = self.ids_query()
        return statement.as_string(None), exact_text(params)

    def ids_query(self) -> tuple[sql.Composed, tuple]:
        """``SELECT zoid, path[, score, best score][, total]`` of the window.

        The total is asked for only when the window may not hold every
        match.
        """
        return self.rows_query(self.limit, self.offset, counted=self.windowed)

    def keeps_row_metadata(self, counted: bool) -> bool:
        """Whether ``rows_query`` (``counted`` as given) can carry each
        row's ``meta`` in its window (``with_meta``): a window in zoid
        order, counted apart, of the table itself (the overlay of pending
        changes has no ``meta``).  Read there, the first rows' metadata
        needs no third reference to the table (a subquery by ``zoid``
        each), which PostgreSQL plans with all the table's indexes.  At
        500 documents (1,512 rows; unprepared, medians of six blocks of 150
        runs) ``portal_type=Document`` took 0.86 ms instead of 1.03,
        published as Anonymous 0.81 instead of 1.02, a type no row has
        0.46 instead of 0.64; 1.56 instead of 1.82 where the window was cut
        by sorting every match (``benchmarks/README.rst``, "The first
        rows' metadata from the window's own rows")."""
        return (
            counted
            and self.score is None
            and not self.sort_keys
            and self.source is TABLE
            and not self.by_the_count
        )

    def rows_query(
        self, limit: int | None, offset: int, counted: bool, with_meta: bool = False
    ) -> tuple[sql.Composed, tuple]:
        """``ids_query`` for rows ``offset`` to ``offset + limit`` of the
        whole ordered result; ``counted`` adds the number of all matches
        (named ``total``, with ``with_meta``), ``with_meta`` each row's
        ``meta`` as the last column (only where ``keeps_row_metadata``)."""
        if with_meta and not self.keeps_row_metadata(counted):
            raise ValueError("this window cannot carry its rows' metadata")
        # Counted in the same pass as the window where the window needs
        # every match anyway: ranked by relevance, or sorted on indexes.
        total = sql.SQL(", count(*) OVER ()") if counted else sql.SQL("")
        if (
            counted
            and self.score is None
            and (not self.sort_keys or self.sorted_count_apart and self.windowed)
        ):
            # In zoid order: counted apart, by an uncorrelated subquery
            # that PostgreSQL runs once (an InitPlan), and the window cut
            # by ``LIMIT`` from the matches in order: walking the primary
            # key, the window stops once full instead of sorting every
            # match, and the count reads only the columns of its
            # conditions (an index-only scan where one index holds them
            # all: ``columns.cover``).  At 10,000 documents (EXPLAIN
            # ANALYZE, ms): portal_type=Document, 10,000 matches, 20.4 ->
            # 12.5; published as Anonymous 17.1 -> 11.8.  If the planner
            # walks the key for a window whose matches are rarer than it
            # estimates, the walk reads at most the whole catalog once more
            # (``tests/integration/test_explain.py`` bounds it on a catalog
            # of more than 10,000 rows).  So also a window the query asks
            # for, sorted on indexes, in a large catalog: PostgreSQL may
            # walk the sort key's index and stop once the window is full.
            # At 10,000 documents, page 2 sorted on ``effective`` (10,990
            # matches): 16.4 -> 8.8 ms (EXPLAIN ANALYZE), the whole search
            # 16.2 -> 11.0 (``benchmarks/README.rst``, "Sorted pages").
            if self.from_the_edge and limit is not None:
                return self._from_the_edge(limit, offset)
            if self.by_the_count and limit is not None:
                return self._by_the_count(limit, offset)
            parts = self.count_parts or (self.where,)
            if self.group_count is not None and not self.count_parts:
                count = self.group_count
                params = [*self.group_count_params, *self.source_params, *self.params]
            else:
                count = sql.SQL(" + ").join(
                    sql.SQL("(SELECT count(*) FROM {} WHERE {})").format(
                        self.source, part
                    )
                    for part in parts
                )
                params = [*self.source_params, *self.params] * (len(parts) + 1)
            meta = sql.SQL(" AS total, meta") if with_meta else sql.SQL("")
            statement = sql.SQL(
                "SELECT zoid, path, {}{} FROM {} WHERE {} ORDER BY {}"
            ).format(count, meta, self.source, self.where, self.order_by)
        elif self.score is None and counted:
            # Sorted on indexes, in a catalog of fewer than
            # ``COUNT_APART_ROWS`` rows, or the first rows of a whole
            # result: not so.  A sort index walked for the window reads
            # whole groups of equal keys (dates are minutes: the
            # 500-document benchmark's "complex" search walked every row
            # for 20), and the statement planned twice cost 0.9 ms to plan
            # instead of 0.36; at 500 documents the sorted scenarios took
            # 1.3-1.4 times as long.  A whole result's first rows are most
            # often followed by the others, which need every match sorted:
            # counted apart, its matches are read twice (a folder's 1,000
            # items at 10,000 documents: 2.4 -> 3.8 ms).  So the sort keys
            # are computed under the count, in a subquery that is not
            # merged into this one (OFFSET 0): else the count's window kept
            # each match's whole ``idx`` to compute them after it, and
            # spilled to disk (92 ms for 10,000 matches).
            keys, order = self._sort_key_columns()
            statement = sql.SQL(
                "SELECT zoid, path{} FROM (SELECT zoid, path, {} FROM {} WHERE {}"
                " OFFSET 0) AS matched ORDER BY {}, zoid"
            ).format(
                total,
                keys,
                self.source,
                self.where,
                order,
            )
            params = [*self.source_params, *self.params]
        elif self.score is None:
            statement = sql.SQL(
                "SELECT zoid, path FROM {} WHERE {} ORDER BY {}"
            ).format(self.source, self.where, self.order_by)
            params = [*self.source_params, *self.params]
        else:
            # The score is computed once per row, in the inner query.
            statement = sql.SQL(
                "SELECT zoid, path, score, max(score) OVER (){} FROM"
                " (SELECT zoid, path, {} AS score FROM {} WHERE {}) AS ranked"
                " ORDER BY {}"
            ).format(total, self.score, self.source, self.where, self.order_by)
            params = [
                *self.score_params,
                *self.source_params,
                *self.params,
            ]
        if limit is not None:
            statement += sql.SQL(" LIMIT %s")
            params.append(limit)
        if offset:
            statement += sql.SQL(" OFFSET %s")
            params.append(offset)
        return statement, tuple(params)

    def _sort_key_columns(self) -> tuple[sql.Composed, sql.Composed]:
        """The sort keys as columns of a subquery (``expression AS
        sort_key_0, ...``), and the order on those columns (``sort_key_0
        DESC, ...``)."""
        keys = sql.SQL(", ").join(
            sql.SQL("{} AS sort_key_{}").format(expression, sql.SQL(str(number)))
            for number, (expression, _) in enumerate(self.sort_keys)
        )
        order = sql.SQL(", ").join(
            sql.SQL("sort_key_{}{}").format(sql.SQL(str(number)), direction)
            for number, (_, direction) in enumerate(self.sort_keys)
        )
        return keys, order

    def _from_the_edge(self, limit: int, offset: int) -> tuple[sql.Composed, tuple]:
        """``rows_query`` of a window counted apart whose first sort key is
        a ``columns.SORTED`` typed column (``edge``).

        Walking the column's index for the window's rows, PostgreSQL
        expects the matches to be spread over the order evenly; the items
        of an old section are not, so the walk read every newer row of the
        catalog first (10,220 rows, the latest 20 of a subtree whose items
        are all older than the rest: 9,709 rows walked, 15.4 ms).  The
        count, which reads every match anyway (from the covering index where
        there is one), also takes the first key of the matches in the
        window's order, and the walk is bounded by it (an index condition:
        the B-tree descent skips the newer rows), 1.9-3.5 ms there.  Rows of
        other sections whose dates lie among the section's items are still
        read (a database where they were many: 7.9 -> 5.1 ms).  The same
        rows: no match is beyond its own edge.

        The walk is the way for many matches only: past the edge it reads
        about ``(limit + offset) * rows / matches`` rows of the catalog's
        ``rows`` before the window is full, where they are spread over the
        order, and all the rows older than the matches' first where they
        are not (a section's or a keyword's few old items among 1,000,000
        rows: 996,000 rows, 286-350 ms).  So the count also decides which
        of two branches runs (``many``, computed with the count; a condition
        on it alone PostgreSQL tests once, before the branch's scan starts,
        in any plan): where ``matches * matches`` reaches
        ``(limit + offset) * rows``, the walk; below, the matches are read
        by their conditions' indexes and sorted (``few``), as PostgreSQL
        plans a window of few rows.  Either way the same rows; one plan
        serves every value (``plan_forced``).  Where the table's rows are
        not known (-1 before its first ``ANALYZE``, 0 after a vacuum of it
        empty), the matches are read, as in ``_by_the_count``: the test
        took every count for many there, and walked.

        The walk's conditions are one ``COALESCE(..., false)`` test, true
        where they all are: no index answers it, and PostgreSQL estimates
        it true for half the rows (where it cannot read the expression's
        statistics).  The branch runs only for many matches, and the walk
        is then the one plan it has: before, a plan blind to the values
        could read the matches again by their conditions' indexes and sort
        them, as the ``few`` branch does, on some samples of ``ANALYZE``
        (the 10,000-document benchmark's type, state and keyword window,
        1,741 matches: 10 ms instead of the walk's 4.9;
        ``tests/integration/test_explain.py``).

        Rows whose value has no typed form (``count_parts[1]``, usually
        none) have no key to walk by: they are read apart, by their partial
        index, counted, and sorted with the walk's rows (they come first in
        a descending order, where the column's NULL sorts, and last in an
        ascending one)."""
        typed, untyped = self.count_parts
        column, reverse = self.edge
        keys, order = self._sort_key_columns()
        statement = sql.SQL(
            "WITH counted AS MATERIALIZED (SELECT c.matches, c.edge, t.rows > 0"
            " AND c.matches::float8 * c.matches >= %s * t.rows AS many"
            " FROM (SELECT count(*) AS matches, {first}({column}) AS edge"
            " FROM {source} WHERE {typed}) AS c, {table_rows}),"
            " untyped AS MATERIALIZED"
            " (SELECT zoid, path, {keys} FROM {source} WHERE {untyped})"
            " SELECT zoid, path, (SELECT matches FROM counted)"
            " + (SELECT count(*) FROM untyped) FROM (SELECT * FROM untyped"
            " UNION ALL (SELECT zoid, path, {keys} FROM {source}"
            " WHERE COALESCE({typed}, false)"
            " AND {column} {bound} (SELECT edge FROM counted)"
            " AND (SELECT many FROM counted) ORDER BY {order_by} LIMIT %s)"
            " UNION ALL (SELECT * FROM (SELECT zoid, path, {keys} FROM {source}"
            " WHERE {typed} AND NOT (SELECT many FROM counted) OFFSET 0) AS few"
            " ORDER BY {order}, zoid LIMIT %s)) AS walked ORDER BY {order}, zoid"
            " LIMIT %s"
        ).format(
            first=sql.SQL("max" if reverse else "min"),
            column=column,
            table_rows=_TABLE_ROWS,
            source=self.source,
            typed=typed,
            keys=keys,
            untyped=untyped,
            bound=sql.SQL("<=" if reverse else ">="),
            order_by=self.order_by,
            order=order,
        )
        where = [*self.source_params, *self.params]
        window = min(limit + offset, _BIGGEST)
        params = [window, *where, *where, *where, window, *where, window, limit]
        if offset:
            statement += sql.SQL(" OFFSET %s")
            params.append(offset)
        return statement, tuple(params)

    def _by_the_count(self, limit: int, offset: int) -> tuple[sql.Composed, tuple]:
        """``rows_query`` of a window in zoid order counted from the groups'
        counts (``by_the_count``), whose plan PostgreSQL keeps
        (``plan_forced``).

        Planned for its values, the statement of the whole site's
        ``portal_type=Document`` took 0.21 ms to plan (EXPLAIN's planner
        statistics, 500 documents) and 0.08 more to parse, more than the
        count and the window's rows took (``benchmarks/README.rst``,
        "Session 32").  A plan blind to the values must serve a type of
        few rows as well as one of many: walking the primary key for the
        window reads about ``window * rows / matches`` rows, all of them
        for a type of a few rows.  So, as in ``_from_the_edge``, the
        count, which costs little here, decides which of two branches
        runs (a condition on it alone PostgreSQL tests once, before the
        branch's scan starts): where the walk's rows, as many as the
        matches are spread over the table, cost no more than reading the
        matches (``MATCH_ROW_COST`` each), the walk, whose conditions are
        one ``COALESCE(..., false)`` test that no index answers; else the
        matches read by their conditions' indexes and sorted.  The same
        rows either way.  Where the table's rows are not known (-1 before
        its first ``ANALYZE``, 0 after a vacuum of it empty), the matches
        are read: that costs at most what they are, a walk could read the
        whole table for a type of few rows (helper-43's review)."""
        statement = sql.SQL(
            "WITH counted AS MATERIALIZED (SELECT c.matches, t.rows > 0"
            " AND c.matches::float8 * c.matches * {cost} >= %s * t.rows AS many"
            " FROM (SELECT {count} AS matches OFFSET 0) AS c, {table_rows})"
            " SELECT zoid, path, (SELECT matches FROM counted) FROM"
            " ((SELECT zoid, path FROM {source} WHERE COALESCE({where}, false)"
            " AND (SELECT many FROM counted) ORDER BY {order_by} LIMIT %s)"
            " UNION ALL (SELECT * FROM (SELECT zoid, path FROM {source}"
            " WHERE {where} AND NOT (SELECT many FROM counted) OFFSET 0) AS few"
            " ORDER BY {order_by} LIMIT %s)) AS read ORDER BY {order_by} LIMIT %s"
        ).format(
            cost=sql.Literal(MATCH_ROW_COST),
            table_rows=_TABLE_ROWS,
            count=self.group_count,
            source=self.source,
            where=self.where,
            order_by=self.order_by,
        )
        where = [*self.source_params, *self.params]
        window = min(limit + offset, _BIGGEST)
        params = [window, *self.group_count_params, *where, window, *where, window]
        params.append(limit)
        if offset:
            statement += sql.SQL(" OFFSET %s")
            params.append(offset)
        return statement, tuple(params)

    def others_query(
        self, held: list[int], best: float | None = None
    ) -> tuple[sql.Composed, tuple]:
        """The matches in the snapshot the statement runs in that are not
        among ``held`` (the zoids of the rows a result holds), in the
        result's order: the rest of a result whose transaction has ended.

        Not an offset (the rows that changed meanwhile would be skipped or
        repeated) nor a continuation after the last row held (a script that
        moves each item it reads to the bottom of its folder moves the
        unread ones before it): every match not held, wherever its sort
        keys are now.  Relevance is normalized by ``best``, the best score
        of the rows held, as theirs was.
        """
        if self.score is not None:
            statement = sql.SQL(
                "SELECT zoid, path, score, %s::float8 FROM"
                " (SELECT zoid, path, {} AS score FROM {} WHERE {}) AS ranked"
                " WHERE NOT zoid = ANY(%s::bigint[]) ORDER BY {}"
            ).format(self.score, self.source, self.where, self.order_by)
            return statement, (
                best,
                *self.score_params,
                *self.source_params,
                *self.params,
                held,
            )
        statement = sql.SQL(
            "SELECT zoid, path FROM {} WHERE ({}) AND NOT zoid = ANY(%s::bigint[])"
            " ORDER BY {}"
        ).format(self.source, self.where, self.order_by)
        return statement, (*self.source_params, *self.params, held)

    def count_query(self) -> tuple[sql.Composed, tuple]:
        """``SELECT count(*)`` of every match (for a window past the end)."""
        statement = sql.SQL("SELECT count(*) FROM {} WHERE {}").format(
            self.source, self.where
        )
        return statement, (*self.source_params, *self.params)


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _reverse(order) -> bool:
    if not isinstance(order, str):
        raise QueryError(f"sort_order: {order!r} is not a string")
    return order.lower() in ("reverse", "descending")


#: What reading a match by its conditions' indexes and sorting it costs,
#: in rows of the primary key walked in zoid order (``SearchSQL.
#: _by_the_count``): the walk reads the heap in the order rows were
#: written, many rows a page; the matches of a type are spread over the
#: table, a page each.  Measured at 100,156 rows (``scale_probe.py``'s
#: site, EXPLAIN ANALYZE, two types of about 2,500 matches spread over
#: the copies): 0.75-1.23 us a row walked, 3.35-3.71 us a match read and
#: sorted.  So a type of 2,481 matches, which a rule of one for one read
#: by its index (9.2 ms), is walked (5.7 ms, 4,619 rows).
MATCH_ROW_COST = 4

#: PostgreSQL's LIMIT and OFFSET are bigints.
_BIGGEST = 2**63 - 1


def _int(query: dict, key: str, default):
    """A batch argument as ZCatalog reads it (``int()``)."""
    value = query.get(key, default)
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise QueryError(f"{key}: {value!r} is not an integer") from exc
    return max(min(number, _BIGGEST), -_BIGGEST)


def sort_attr(query: dict, name: str):
    """``sort-on`` or ``sort_on`` (ZCatalog accepts both spellings)."""
    value = query.get(f"sort-{name}")
    return value if value is not None else query.get(f"sort_{name}")


def query_names(index) -> tuple[str, ...]:
    """The query keys an index answers (``effectiveRange``, ``path``...).

    Looked up on the unwrapped index, as ZCatalog does: an index without
    the method must not acquire one.
    """
    method = getattr(aq_base(index), "getIndexQueryNames", None)
    return tuple(method()) if method is not None else (index.getId(),)


def _canonical(query: dict) -> dict:
    """Lists and tuples sorted, as ZCatalog's ``make_query`` sorts them.

    ZCatalog sorts every list, sort and batch arguments too (after it has
    read ``sort_on`` and ``sort_order`` in their given order): values that
    cannot be compared fail there.
    """
    canonical = {}
    for key, value in query.items():
        if isinstance(value, (list, tuple)):
            try:
                ordered = sorted(value)
            except TypeError as exc:
                raise QueryError(
                    f"index {key!r}: the values {value!r} cannot be compared"
                ) from exc
            if key not in _NOT_A_QUERY:
                value = ordered
        canonical[key] = value
    return canonical


def _plan(query: dict, indexes: dict) -> list[tuple[str, object, str]]:
    """``(name, index, query name)`` in ZCatalog's default plan order.

    Indexes that cannot narrow a given result come first, then by name
    (``Catalog._sorted_search_indexes``).
    """
    entries = []
    for name, index in indexes.items():
        for query_name in query_names(index):
            if query_name in query and query_name not in _NOT_A_QUERY:
                limited = ILimitedResultIndex.providedBy(aq_base(index))
                entries.append(((limited, name), name, index, query_name))
    entries.sort(key=lambda entry: entry[0])
    return [entry[1:] for entry in entries]


def read_indexes(query: dict, indexes: dict) -> frozenset[str]:
    """The names of the indexes ``query`` tests (by any of their query
    names: ``effectiveRange``...) or sorts on (``PendingCatalog.overlay``'s
    ``reads``)."""
    names = {name for name, _index, _query_name in _plan(query, indexes)}
    sort_on = sort_attr(query, "on")
    sorted_on = sort_on if isinstance(sort_on, (list, tuple)) else [sort_on]
    # Other values are the translation's to refuse, with a clear error.
    names.update(name for name in sorted_on if isinstance(name, str))
    return frozenset(names)


#: Index types whose plain values a pending row is tested against in
#: Python (``row_test``): a string, or a list of strings, in ``idx``.
_TESTED_IN_PYTHON = frozenset({"FieldIndex", "UUIDIndex", "KeywordIndex"})
#: Query options that make a value find more than itself, or other rows.
_WIDER = ("range", "usage", "not")


def _parsed(query: dict, index, query_name: str) -> IndexQuery:
    """``query``'s part for ``index`` under ``query_name``, parsed as
    ZCatalog parses it (records, ``<name>_<option>`` keys, operators)."""
    return IndexQuery(
        query,
        query_name,
        getattr(aq_base(index), "query_options", ("query",)),
        getattr(aq_base(index), "operators", ("or", "and")),
        getattr(aq_base(index), "useOperator", "or"),
    )


def row_test(query: dict, indexes: dict) -> Callable[[dict], bool] | None:
    """A test of a pending row's ``idx`` that is False where ``query``
    cannot find the row (``PendingCatalog.overlay``'s ``may_match``), from
    its plain values of field, UUID and keyword indexes: any of some
    strings, as the translation reads them (no range, ``not`` or
    ``operator`` "and"; the security terms are such a value).  None when
    it has none, or when the query is one the translation refuses.  True
    wherever a row's value is of another kind: the search decides."""
    query = _canonical(query)
    tests = []
    for name, index, query_name in _plan(query, indexes):
        if index.meta_type not in _TESTED_IN_PYTHON:
            continue
        try:
            parsed = _parsed(query, index, query_name)
            if parsed.keys is None or parsed.operator != "or":
                continue
            if any(parsed.get(option) is not None for option in _WIDER):
                continue
            translator = get_translator(index.meta_type)
            wanted = {translator.convert(index, key) for key in parsed.keys}
        except (ValueError, TypeError, QueryError):
            return None  # the search raises it, with its own message
        if wanted and all(isinstance(value, str) and value for value in wanted):
            tests.append((name, frozenset(wanted)))
    if not tests:
        return None

    def may_match(idx: dict) -> bool:
        for name, wanted in tests:
            value = idx.get(name)
            if value is None:
                return False  # no value: not found by a value
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(item, str) for item in values):
                continue
            if wanted.isdisjoint(values):
                return False
        return True

    return may_match


def _columns_named(
    columns: dict[str, str],
    parts: list[sql.Composable | None],
    read_apart: Collection[str] = (),
) -> dict[str, str]:
    """Of the typed ``columns`` (``{column: kind}``), those the SQL
    ``parts`` of a search name (``layout.column``: quoted), and those of
    ``read_apart``.

    The overlay's row source (``overlay.Overlay.source``) derives each
    column it gives from the JSON of every pending, patched, moved or
    reordered row: PostgreSQL planned some 25 such expressions twice (the
    window and its count) for a search by UID after a rename, 5.5 ms of
    planning for 0.24 ms of execution.  It gives only these."""
    text = " ".join(part.as_string() for part in parts if part is not None)
    return {
        name: kind
        for name, kind in columns.items()
        if name in read_apart or sql.Identifier(name).as_string() in text
    }


def build_query(
    query: dict,
    indexes: dict,
    site_path: str,
    context: QueryContext | None = None,
    overlay: Overlay | None = None,
    match_all: bool = False,
) -> SearchSQL:
    """Translate ``query`` against the index definitions ``indexes``.

    ``site_path`` confines the result to one site, as each ZCatalog
    catalogs only its own site.  As in ZCatalog, a query that names no
    index, or names one that finds nothing to do, has no results; with
    ``match_all`` a query that names no index matches every row
    (``searchAll``, ``len(catalog)``).
    """
    context = replace(context or QueryContext(), site_path=site_path)
    if overlay:
        # Pending rows have no list numbers (``columns.derivable``).
        context = replace(context, columns=derivable(context.columns))
    query = _canonical(query)
    clauses: list[sql.Composable] = []
    params: list = []

    # Pending rows may be of another site: the site's path keeps them out.
    if not (context.site_alone and not overlay):
        site_clause, site_params = path_clause(site_path, -1)
        clauses.append(site_clause)
        params += site_params

    plan = _plan(query, indexes)
    score = None
    score_params: tuple = ()
    # Where the first clause that finds few rows by a key is, in
    # ``clauses`` and in ``params``, and its number of values; whether a
    # full-text condition is (``SearchSQL.plan_kept``).
    key = None
    worded = False
    # The conditions whose rows out of them a count per group takes away
    # (``group_count``): their place in ``clauses`` and ``params``, their
    # number of values, and the residue's SQL and values.
    residues = []
    for position, (name, index, query_name) in enumerate(plan):
        if not IQueryIndex.providedBy(aq_base(index)):
            # ZCatalog asks such an index (GopipIndex) to ``_apply_index``,
            # which finds nothing to do: the search has no results.
            clauses.append(sql.SQL("FALSE"))
            continue
        translator = get_translator(index.meta_type)
        if translator is None:
            raise UnknownIndexError(
                f"index {name!r}: no query translation for its type "
                f"{index.meta_type!r}"
            )
        parsed = _parsed(query, index, query_name)
        if parsed.keys is None:
            continue
        index_context = replace(context, preceded=position > 0)
        translated = translator.where(index, parsed, index_context)
        if translated is None:
            # ZCatalog: an index that finds nothing to do ends the search.
            clauses.append(sql.SQL("FALSE"))
            continue
        clause, values = translated
        finds_few = getattr(translator, "finds_few", None)
        if key is None and finds_few and finds_few(index, clause, index_context):
            key = (len(clauses), len(params), len(values))
        residue = getattr(translator, "residue", None)
        found = residue and residue(index, parsed, index_context)
        if found:
            residues.append((len(clauses), len(params), len(values), found))
        clauses.append(sql.SQL("(") + clause + sql.SQL(")"))
        params += values
        relevance = getattr(translator, "relevance", None)
        worded = worded or relevance is not None
        if score is None and relevance is not None:
            ranked = relevance(index, parsed, index_context)
            if ranked is not None:
                score, score_params = ranked[0], tuple(ranked[1])
    if not plan and not match_all:
        clauses.append(sql.SQL("FALSE"))

    sort_keys, sort_clauses, split = _order_by(query, indexes, context)
    order_by = sql.SQL(", ").join(
        [expression + direction for expression, direction in sort_keys]
        + [sql.SQL("zoid")]
    )
    count_parts = ()
    edge = None
    if split is not None:
        position, parts, edge = split
        count_parts = tuple(
            sql.SQL(" AND ").join(
                clauses
                + sort_clauses[:position]
                + [part]
                + sort_clauses[position + 1 :]
            )
            for part in parts
        )
    clauses += sort_clauses
    # Sorted on an index (even one every row has a value in, such as the
    # path, which adds no clause), or ranked by relevance.
    if _as_list(sort_attr(query, "on")) or score is None:
        score, score_params = None, ()
    else:
        # ZCatalog orders a full-text result by relevance when it is not
        # sorted on an index.
        order_by = sql.SQL("score DESC, zoid")
        sort_keys = []

    b_size = _int(query, "b_size", None)
    if b_size is None and sort_attr(query, "limit"):
        # ZCatalog: ``sort_limit`` stands for ``b_size`` when there is none.
        b_size = _int({"sort_limit": sort_attr(query, "limit")}, "sort_limit", None)
    # ZCatalog reads b_start only for a window, and slices its result list
    # with it: negative values count from the end, done here in Python.
    b_start = _int(query, "b_start", 0) if b_size is not None else 0
    python_slice = None
    if b_size is not None and (b_start < 0 or b_size < 0):
        python_slice = (b_start, b_start + b_size)
        b_start, b_size = 0, None
    if overlay:
        named = _columns_named(
            context.columns, [*clauses, order_by, score], context.read_apart
        )
        source, source_params = overlay.source(named)
    else:
        source, source_params = TABLE, ()
    # A plan made blind to the values is as good for all only without
    # these (``SearchSQL.plan_kept``, ``SearchSQL.plan_forced``).
    plannable = not worded and not overlay and not any(map(_reads_the_table, clauses))
    plan_kept = (
        key is not None
        and plannable
        and _as_list(sort_attr(query, "on")) in ([], [POSITION])
    )
    where = sql.SQL(" AND ").join(clauses or [sql.SQL("TRUE")])
    group_count: tuple = (None, ())
    if (
        context.group_counts is not None
        and context.site_alone
        and not context.many_lists
        and not overlay
        and score is None
    ):
        group_count = _group_count(clauses, params, residues) or group_count
    if plan_kept:
        where, params = by_key(clauses, params, *key)
    search = SearchSQL(
        where=where,
        params=tuple(params),
        order_by=order_by,
        limit=b_size,
        offset=b_start,
        python_slice=python_slice,
        score=score,
        score_params=score_params,
        source=source,
        source_params=source_params,
        sort_keys=tuple(sort_keys),
        sorted_count_apart=context.large,
        count_parts=count_parts if sort_keys and score is None else (),
        edge=edge if sort_keys and score is None else None,
        plan_kept=plan_kept,
        group_count=group_count[0],
        group_count_params=group_count[1],
        group_count_residue=bool(residues) and group_count[0] is not None,
    )
    apart = replace(search, sorted_count_apart=True)
    # A window of few matches far from the edge is read by its conditions
    # and sorted, one of many walked from the edge: the statement tests the
    # count (``SearchSQL._from_the_edge``), so one plan serves every value,
    # in a catalog of any size.
    if plannable and apart.from_the_edge:
        search = replace(apart, plan_forced=True)
    elif plannable and search.by_the_count:
        # Its count chooses how the window is read (``_by_the_count``).
        search = replace(search, plan_forced=True)
    return search


#: The matches of a search counted from their groups' counts
#: (``SearchSQL.group_count``): the search's own conditions select them.
_GROUP_COUNT = sql.SQL(
    "(SELECT COALESCE(sum(n), 0)::bigint FROM " + COUNTS_TABLE + " WHERE {})"
)
#: At most what share of its groups' rows a count takes away as its
#: residue (``_LESS_RESIDUE``): reading a row of the residue costs several
#: times what counting a match through a covering index costs.
RESIDUE_SHARE = 8

#: ... less the rows of those groups out of one more condition (its
#: residue), where they are at most ``RESIDUE_SHARE``'s share of the
#: groups' rows; else the matches counted, as without counts.  The
#: residue is read with a ``LIMIT`` of that share (one more row tells
#: that it is more), by whatever index the planner finds best for it:
#: its own indexes (few rows out of the range in the whole site), or the
#: groups' (a type's few rows, where the site holds an archive of expired
#: items: helper-42's review found the residue read whole through the
#: range's index, 1,008 rows for a type's 100 matches, 4 ms against 0.4
#: for counting them where most of the site had expired).
_LESS_RESIDUE = sql.SQL(
    "(SELECT CASE WHEN b.residue <= b.grouped / {share}"
    " THEN b.grouped - b.residue"
    " ELSE (SELECT count(*) FROM {table} WHERE {where}) END"
    " FROM (SELECT g.grouped, (SELECT count(*) FROM (SELECT FROM {table}"
    " WHERE {residue} AND ({others}) LIMIT g.grouped / {share} + 1) AS r)"
    " AS residue FROM (SELECT COALESCE(sum(n), 0)::bigint AS grouped FROM "
    + COUNTS_TABLE
    + " WHERE {others}) AS g) AS b)"
)


def _group_count(
    clauses: list[sql.Composable], params: list, residues: list
) -> tuple[sql.Composable, tuple] | None:
    """``SearchSQL.group_count`` of a search of conditions ``clauses``
    (their values ``params``): its groups' counts, where all of them name
    only the grouped columns (``counted_by_groups``), or all but one whose
    translator gave its residue (``residues``: the rows of the groups that
    it leaves out, which its SQL indexes find; the effective range of
    Anonymous's searches, a few rows not yet or no longer in effect), less
    the residue where it is small (``_LESS_RESIDUE``); else None.  At
    10,000 documents, published as Anonymous (6,997 matches): the residue
    took 0.04-0.06 ms to count, the matches about 1.1 ms; the search
    through Zope 1.5 ms instead of 2.5 (``benchmarks/README.rst``,
    "Session 30")."""
    if len(residues) > 1:
        return None
    others, values, less = clauses, list(params), None
    if residues:
        position, first, count, less = residues[0]
        others = clauses[:position] + clauses[position + 1 :]
        values = params[:first] + params[first + count :]
    where = sql.SQL(" AND ").join(others or [sql.SQL("TRUE")])
    if not counted_by_groups(where):
        return None
    if less is None:
        return _GROUP_COUNT.format(where), tuple(values)
    residue, residue_values = less
    statement = _LESS_RESIDUE.format(
        share=sql.Literal(RESIDUE_SHARE),
        table=TABLE,
        where=sql.SQL(" AND ").join(clauses),
        residue=residue,
        others=where,
    )
    return statement, (*params, *residue_values, *values, *values)


#: The words a condition counted by groups may hold besides the grouped
#: columns' quoted names: SQL's own, and those of the numbered lists'
#: subquery (``registry.KeywordTranslator``).  Any other word (``idx``, a
#: path, a function) names something a group does not have.
_GROUP_WORDS = frozenset(
    {
        "AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "ANY", "ARRAY",
        "SELECT", "FROM", "WHERE", "AS", "IN", "EXISTS", "s", "id", "terms",
        "text", "integer", "bigint", "boolean",
    }
)  # fmt: skip
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def counted_by_groups(where: sql.Composable) -> bool:
    """Whether the conditions ``where`` name no column but the grouped ones
    (``columns.GROUPED``): each group's rows then all match or all do not,
    and the matches are the sum of the matching groups' counts.  Read from
    the composed text, as ``_columns_named`` reads it: a condition on
    ``idx`` (a value of another type, a long string), the path, a text or
    anything else is counted from the rows."""
    text = where.as_string()
    names = {name.replace('""', '"') for name in _QUOTED.findall(text)}
    if not names <= {*GROUPED, SETS_TABLE}:
        return False
    rest = _QUOTED.sub(" ", text)
    return "'" not in rest and all(w in _GROUP_WORDS for w in _WORD.findall(rest))


def _reads_the_table(clause: sql.Composable) -> bool:
    """Whether ``clause`` has a subquery of the catalog's table (a ``not``
    of values that other rows must have, the site's deepest level): its
    plan would be kept too, blind to the values it finds rows by."""
    if clause == TABLE:
        return True
    return isinstance(clause, sql.Composed) and any(map(_reads_the_table, clause))


def by_key(clauses: list, params: list, position: int, first: int, count: int):
    """The conditions of a search that finds few rows by a key, written so
    that the key's rows are the only ones a SQL index finds
    (``SearchSQL.plan_kept``): the key's clause (``clauses[position]``, its
    ``count`` values from ``params[first]``), and the others as one ``IS
    TRUE`` test, which no index answers.  The same rows (``WHERE`` keeps
    a row where its condition is true).  The plan PostgreSQL keeps for a
    statement is made blind to its values: with the other conditions open
    to their indexes, it estimated the site's path range and the security
    term at a few rows each and combined their bitmaps with a folder's
    items (at 10,220 rows: every path of the site read, 1.98 ms instead of
    0.24).  The key's few rows are the plan for any value."""
    others = clauses[:position] + clauses[position + 1 :]
    where = clauses[position]
    if others:
        where += (
            sql.SQL(" AND (") + sql.SQL(" AND ").join(others) + sql.SQL(") IS TRUE")
        )
    last = first + count
    return where, [*params[first:last], *params[:first], *params[last:]]


#: The index of the items' positions in their folder, which listings sort
#: on (``SearchSQL.plan_kept``).
POSITION = "getObjPositionInParent"


def _has_key(name: str) -> sql.Composable:
    """Rows with a value in index ``name`` (JSON ``null`` counts as one, as
    it does for ``(idx -> name) IS NOT NULL``).

    Written so that no SQL index can answer it: with ``IS NOT NULL``, the
    sort key's B-tree became a way to read every row that has a value, and
    the planner, whose estimates of combined conditions on the shared table
    are about one row, took it where a selective condition's index was the
    plan (a folder of 1,000 items among 10,000 documents: the whole
    ``getObjPositionInParent`` index, 16 to 23 ms, instead of the folder's
    ``parent_path`` rows, 3 ms).  The sort needs every match anyway.
    Indexes whose values few objects have say so with ``sort_presence``
    (DateRecurringIndex: only events have occurrences).
    """
    return has_key(name)


def _order_by(query: dict, indexes: dict, context: QueryContext):
    """``(expression, direction)`` of each sort key, before the ``zoid``
    that breaks ties; the clauses that drop rows without sort keys; and
    for the first of those that tests a ``columns.SORTED`` typed column,
    its position among them, the two disjoint clauses it is made of
    (``SearchSQL.count_parts``) and, where it is the first sort key,
    ``(column, reverse)`` (``SearchSQL.edge``), or None."""
    sort_on = _as_list(sort_attr(query, "on"))
    orders = _as_list(sort_attr(query, "order"))
    terms: list[tuple] = []
    must_have: list[sql.Composable] = []
    split = None
    for position, name in enumerate(sort_on):
        index = indexes.get(name)
        if index is None:
            raise UnknownIndexError(f"Unknown sort_on index: {name!r}")
        translator = get_translator(index.meta_type)
        if translator is None:
            expressions = None
        elif hasattr(translator, "column_kind"):
            # Ours, which may sort on a typed column.
            expressions = translator.sort_expressions(index, context)
        else:
            expressions = translator.sort_expressions(index)
        if expressions is None:
            raise UnknownIndexError(
                "The index chosen for sort_on is not capable of being used as "
                f"a sort index: {name!r}"
            )
        # One order for all sort indexes, or one per index (ZCatalog's rule).
        if len(orders) == 1:
            reverse = _reverse(orders[0])
        else:
            reverse = position < len(orders) and _reverse(orders[position])
        direction = sql.SQL(" DESC") if reverse else sql.SQL(" ASC")
        terms += [(expression, direction) for expression in expressions]
        # ZCatalog leaves out objects that have no value in the sort index.
        # A translator may say how (or, with None, that every row has one).
        presence = getattr(translator, "sort_presence", None)
        typed = context.column(name, getattr(translator, "column_kind", None))
        if presence is None and typed is not None:
            if split is None and name in SORTED:
                # The first sort key, the column alone: walked from the edge.
                first = position == 0 and expressions == [typed]
                split = (
                    len(must_have),
                    (
                        sql.SQL("{} IS NOT NULL").format(typed),
                        untyped_predicate(name, typed),
                    ),
                    (typed, reverse) if first else None,
                )
            # The column's test first: ``idx`` is read for rows without
            # a typed value only.
            must_have.append(
                sql.SQL("({} IS NOT NULL OR {})").format(typed, _has_key(name))
            )
        elif presence is None:
            must_have.append(_has_key(name))
        elif presence(index) is not None:
            must_have.append(presence(index))
    return terms, must_have, split
