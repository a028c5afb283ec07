"""Running searches: one round trip for the ids and the first rows'
metadata, one more for the metadata of brains read past them.

Owns: executing a translated query (``query.SearchSQL``) on a connection it
is given, and the batch load of metadata for brains, on cursors that
decode JSON with orjson (``connection.json_cursor``).

Must not open connections or build query clauses.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from plone_pgcatalog.fulltext import MARK_END
from plone_pgcatalog.fulltext import MARK_START
from plone_pgcatalog.fulltext import mark_unspaced
from plone_pgcatalog.fulltext import passage_ends
from plone_pgcatalog.query import exact_text
from plone_pgcatalog.query import SearchSQL
from plone_pgcatalog.store.columns import TEXT_KEPT
from plone_pgcatalog.store.columns import whole_idx
from plone_pgcatalog.store.connection import FORCED
from plone_pgcatalog.store.connection import json_cursor
from plone_pgcatalog.store.connection import send_search
from plone_pgcatalog.store.layout import TABLE
from plone_pgcatalog.store.schema import READ_COUNTER
from plone_pgcatalog.store.schema import TEXTS
from psycopg import sql

import orjson
import psycopg

_PATH_OF = sql.SQL(
    "SELECT path FROM {} WHERE zoid = %s AND (path = %s OR path LIKE %s)"
).format(TABLE)

# ``meta::json``: a no-op on the table; until the upgrade to schema 5 the
# view may show a ``jsonb`` column (schema 3), and a statement prepared on
# the view must keep its result type when it runs on the table.
_LOAD_METADATA = sql.SQL(
    sql.SQL("SELECT zoid, meta::json FROM {} WHERE zoid = ANY(%s::bigint[])")
    .format(TABLE)
    .as_string(None)
)


@dataclass(frozen=True)
class Found:
    """What one search found: the window's rows and the number of matches."""

    #: ``[(zoid, path)]`` of the window, in order
    ids: list
    total: int
    #: ``[(score, normalized score)]`` aligned with ``ids``, when ranked
    scores: list | None = None
    #: the best score of the whole result, when ranked
    best: float | None = None
    #: ``{zoid: metadata JSON text}`` of the first rows (``META_ROWS``)
    metadata: dict = field(default_factory=dict)
    #: ``{zoid: metadata}`` of those rows, decoded once (``metadata_given``):
    #: a result the result cache keeps is read by many requests.  Read
    #: only: brains decode values from it (``metadata.decode``), new
    #: lists and dicts included.
    parsed: dict = field(default_factory=dict, compare=False, repr=False)


#: Rows the query of a result without a window (no ``b_size`` or
#: ``sort_limit``) returns: a page of a listing reads no further.  A brain
#: read past them fetches all the others in one more query
#: (``fetch_rest``).  So ``len()`` and the first page of a result of any
#: size cost one round trip and this many rows.
FIRST_ROWS = 100


def _execute(
    conn: psycopg.Connection, statement, params, keep_plan: bool | str = False
) -> list[tuple]:
    with json_cursor(conn) as cursor:
        # Planned for its parameters every time, unless its plan is kept
        # (``keep_plan``): a prepared statement's generic plan, blind to
        # them, read every row of the site to find the 70 of a word (14 ms
        # instead of 2).
        # A forced plan's setting goes with the statement, in its round trip.
        with conn.pipeline() if keep_plan == FORCED else nullcontext():
            send_search(conn, cursor, statement, params, keep_plan)
        return cursor.fetchall()


def keep_plan(search: SearchSQL) -> bool | str:
    """Whether the statement of ``search`` (``search_statement``) keeps its
    plan, as ``connection.send_search`` reads it: ``connection.FORCED``
    (``SearchSQL.plan_forced``), or ``SearchSQL.plan_kept``."""
    return FORCED if search.plan_forced else search.plan_kept


def run_search(
    conn: psycopg.Connection, search: SearchSQL, metadata: bool = True
) -> Found:
    """Run the window's query, or the first ``FIRST_ROWS`` of a result
    without a window (one round trip; two past the end of a window), with
    the first rows' metadata unless not ``metadata``."""
    rows = _execute(conn, *search_statement(search, metadata), keep_plan(search))
    return found_by(conn, search, rows, metadata)


#: Rows of a search whose metadata comes with them, the first of the
#: statement's: the page of brains a listing reads (``brains.MetadataBatch``
#: loads as many), in the search's round trip instead of one more.  As
#: text, decoded when a brain's metadata is read (``metadata_given``).
META_ROWS = 20

# Each of the first rows' metadata, read by its key once the window is
# cut, so that no sort carries it: numbered in the window's order (the
# scan of a subquery keeps the order its ORDER BY ... LIMIT gave; nothing
# above it reorders: no join, no grouping).
_WITH_METADATA = sql.SQL(
    "SELECT w.*, CASE WHEN row_number() OVER () <= %s THEN"
    " (SELECT meta::text FROM {} AS o WHERE o.zoid = w.zoid) END FROM ({}) AS w"
)
# The same where the window carries each row's ``meta``
# (``SearchSQL.keeps_row_metadata``): read as text for the first rows only.
_WITH_OWN_METADATA = sql.SQL(
    "SELECT w.zoid, w.path, w.total, CASE WHEN row_number() OVER () <= %s THEN"
    " w.meta::text END FROM ({}) AS w"
)


def _metadata_comes(search: SearchSQL, metadata: bool) -> bool:
    # A negative batch reads the whole result, to cut it: no metadata.
    return metadata and search.python_slice is None


def search_statement(search: SearchSQL, metadata: bool = True) -> tuple[sql.SQL, tuple]:
    """The statement ``run_search`` runs: the window's query, or the first
    ``FIRST_ROWS`` of a result without a window, counted; with
    ``metadata``, that of its first ``META_ROWS`` rows (last column).

    Composed and rendered as text once per translation (kept with it,
    ``SearchSQL.statements``): composing the parts and rendering them for
    psycopg cost a search about as much as finding its kept translation
    (``benchmarks/README.rst``, "The fixed cost of a kept result")."""
    key = ("search", metadata)
    kept = search.statements.get(key)
    if kept is None:
        statement, params = _search_statement(search, metadata)
        kept = search.statements[key] = (sql.SQL(statement.as_string(None)), params)
    return kept


def _search_statement(search: SearchSQL, metadata: bool) -> tuple[sql.Composed, tuple]:
    if not search.windowed and search.python_slice is None:
        limit, offset, counted = FIRST_ROWS, 0, True
    else:
        # ``ids_query``'s window.
        limit, offset, counted = search.limit, search.offset, search.windowed
    if not _metadata_comes(search, metadata):
        return search.rows_query(limit, offset, counted)
    if search.keeps_row_metadata(counted):
        statement, params = search.rows_query(limit, offset, counted, with_meta=True)
        return _WITH_OWN_METADATA.format(statement), (META_ROWS, *params)
    statement, params = search.rows_query(limit, offset, counted)
    return _WITH_METADATA.format(TABLE, statement), (META_ROWS, *params)


def found_by(
    conn: psycopg.Connection, search: SearchSQL, rows: list, metadata: bool = True
) -> Found:
    """What the rows of ``search_statement`` (with ``metadata`` or not)
    found (counted with one more query when a window past the end returned
    none)."""
    first = not search.windowed and search.python_slice is None
    given = {}
    if _metadata_comes(search, metadata):
        given = {row[0]: row[-1] for row in rows[:META_ROWS]}
        rows = [row[:-1] for row in rows]
    if search.python_slice is not None:
        # A negative batch: the whole result came, cut as ZCatalog cuts it.
        total = len(rows)
        rows = rows[slice(*search.python_slice)]
    elif first and len(rows) < FIRST_ROWS:
        total = len(rows)
    elif rows:
        total = rows[0][-1]
    else:
        total = _count(conn, search)
    return replace(_found(search, rows, total), metadata=given)


def found_read(rows: list[tuple]) -> Found:
    """What a search whose rows were read already found: all of ``rows``
    (``(zoid, path)``), in their order; their metadata is loaded when a
    brain's is read (``load_metadata``)."""
    return Found(list(rows), len(rows))


def metadata_given(found: Found, zoids: list[int]) -> dict[int, dict]:
    """``{zoid: metadata}`` of the rows of ``zoids`` whose metadata came
    with the search (``META_ROWS``)."""
    given, parsed = found.metadata, found.parsed
    loaded = {}
    for zoid in zoids:
        value = parsed.get(zoid)
        if value is None:
            text = given.get(zoid)
            if text is None:
                continue
            # Two threads may both decode it: the same value either way.
            value = parsed[zoid] = orjson.loads(text)
        loaded[zoid] = value
    return loaded


def fetch_rest(conn: psycopg.Connection, search: SearchSQL, offset: int) -> Found:
    """Rows ``offset`` to the end of a result ``run_search`` began, in the
    same snapshot."""
    statement, params = search.rows_query(None, offset, counted=False)
    rows = _execute(conn, statement, params)
    return _found(search, rows, offset + len(rows))


def fetch_others(conn: psycopg.Connection, search: SearchSQL, held: Found) -> Found:
    """The rest of a result whose snapshot has ended: the matches in this
    connection's snapshot that are not among the rows ``held``
    (``SearchSQL.others_query``)."""
    statement, params = search.others_query([zoid for zoid, _ in held.ids], held.best)
    rows = _execute(conn, statement, params)
    return _found(search, rows, len(rows))


def _found(search: SearchSQL, rows: list[tuple], total: int) -> Found:
    ids = [(row[0], row[1]) for row in rows]
    scores = best = None
    if search.score is not None:
        # ZCatalog: the normalized score is a percentage of the best one
        # (the rest of a result read later may hold a better one than its
        # first rows, ``fetch_others``: 100 then, as for the best).
        scores = [
            (score, min(100, int(100.0 * score / best)) if best else 100)
            for _, _, score, best, *_ in rows
        ]
        best = rows[0][3] if rows else None
    return Found(ids, total, scores, best)


def _count(conn: psycopg.Connection, search: SearchSQL) -> int:
    # A window past the end returns no row to carry the total: ask for it.
    statement, params = search.count_query()
    with json_cursor(conn) as cursor:
        # Planned for its values, as the search was (``_execute``).
        cursor.execute(statement, params, prepare=False)
        return cursor.fetchone()[0]


# Value facets.  The matches of one plan are read once (a materialized
# CTE, ``m0``, ``m1``, ...: facets without a criterion of their own share
# the query's plan) with each of its facets' values: the typed column's
# (``c<n>``), and the JSON value in ``idx`` (``j<n>``) only for rows whose
# column cannot hold it, so that ``idx`` (out of line, compressed) is read
# for those rows alone.  Each facet is counted by hashing: the typed
# values as they are (a keywords column unnested), the JSON values with
# arrays expanded (JSON null: none); a value found both ways is added up
# by the caller.  A facet's total: the matches that have a value.  (10,000
# documents, three facets of 5,012 matches: 15.8 ms; one scan, sort and
# ``idx`` per facet before: 62.7.)
_MATCHES = sql.SQL("{m} AS MATERIALIZED (SELECT {values} FROM {source} WHERE {where})")


@dataclass(frozen=True)
class _TypedValues:
    """How a facet reads a typed column of one kind: the JSON value of a
    row whose column cannot hold it (``json``), the counts of the column's
    values (``counts``), whether a row has one there (``has``)."""

    json: sql.SQL
    counts: sql.SQL
    has: sql.SQL


# A text or boolean column holds the value when it is a string or a
# boolean.  A keywords column holds a row's string keywords and is NULL
# where the row has none: ``extract`` of a "keywords" kind gives a list or
# nothing (``interfaces``); an empty one means keywords of other types
# (ZCatalog's BTrees cannot hold strings and other values in one index).
_SCALAR = _TypedValues(
    sql.SQL("CASE WHEN {column} IS NULL THEN idx -> {key} END"),
    sql.SQL(
        "SELECT {facet}::text, to_jsonb({c}), count(*) FROM {m}"
        " WHERE {c} IS NOT NULL GROUP BY {c}"
    ),
    sql.SQL("{c} IS NOT NULL"),
)
# A string longer than a column holds whole (``columns.TEXT_KEPT``) is
# counted from ``idx``, and so is a list that has one.
_KEPT = sql.Literal(TEXT_KEPT)
_TYPED_VALUES = {
    "text": _TypedValues(
        sql.SQL(
            "CASE WHEN {column} IS NULL"
            " OR char_length({column}) > {kept} THEN idx -> {key} END"
        ),
        sql.SQL(
            "SELECT {facet}::text, to_jsonb({c}), count(*) FROM {m}"
            " WHERE char_length({c}) <= {kept} GROUP BY {c}"
        ),
        sql.SQL("{c} IS NOT NULL"),
    ),
    "boolean": _SCALAR,
    "keywords": _TypedValues(
        sql.SQL(
            "CASE WHEN cardinality({column}) = 0 OR EXISTS (SELECT FROM"
            " unnest({column}) AS k WHERE char_length(k) > {kept})"
            " THEN idx -> {key} END"
        ),
        sql.SQL(
            "SELECT {facet}::text, to_jsonb(k), count(*) FROM {m}"
            " CROSS JOIN LATERAL unnest({c}) AS k WHERE {j} IS NULL GROUP BY k"
        ),
        sql.SQL("cardinality({c}) > 0"),
    ),
}

# A JSON value's elements (one, unless it is an array), as rows.
_ELEMENTS = sql.SQL(
    "jsonb_array_elements(CASE WHEN jsonb_typeof({j}) = 'array' THEN {j}"
    " ELSE jsonb_build_array({j}) END)"
)
_JSON_COUNTS = sql.SQL(
    "SELECT {facet}::text, v.value, count(*) FROM {m}"
    " CROSS JOIN LATERAL {elements} AS v(value)"
    " WHERE {j} IS NOT NULL AND v.value <> 'null'::jsonb GROUP BY v.value"
)
_JSON_HAS = sql.SQL(
    "EXISTS (SELECT FROM {elements} AS v(value) WHERE v.value <> 'null'::jsonb)"
)
_FACET_TOTAL = sql.SQL(
    "SELECT {facet}::text, NULL::jsonb, count(*) FILTER (WHERE {has}) FROM {m}"
)


# A path facet: the folder ``depth`` levels below its root that each match
# lies in (or is), from the path's first elements; the grouping set adds
# the matches deep enough to have one (value NULL).
_PATH_FACET_PART = sql.SQL(
    "SELECT {facet}::text, to_jsonb(v.value), count(*) FROM {source}"
    " CROSS JOIN LATERAL (SELECT array_to_string("
    "(string_to_array(path, '/'))[1:%s], '/')) AS v(value)"
    " WHERE ({where}) AND ({under}) AND path_depth >= %s"
    " GROUP BY GROUPING SETS ((v.value), ())"
)
# Every folder of a path facet, counted 0 (``include_zero``).
_PATH_BUCKETS_PART = sql.SQL(
    "SELECT DISTINCT {facet}::text, to_jsonb(v.value), 0::bigint FROM {source}"
    " CROSS JOIN LATERAL (SELECT array_to_string("
    "(string_to_array(path, '/'))[1:%s], '/')) AS v(value)"
    " WHERE ({where}) AND ({under}) AND path_depth >= %s"
)
# A date range: the matches of the facet's query with the range added.
_RANGE_PART = sql.SQL(
    "SELECT {facet}::text, to_jsonb(%s::text), count(*) FROM {source}"
    " WHERE ({where})"
)
# A date facet's total: the matches that have a date (in the typed
# column, where it has one ready, else in ``idx``).
_RANGE_TOTAL_PART = sql.SQL(
    "SELECT {facet}::text, NULL::jsonb, count(*) FROM {source}"
    " WHERE ({where}) AND ({typed}jsonb_typeof(idx -> {key}) <> 'null')"
)


@dataclass(frozen=True)
class ValueFacet:
    """Count the matches of ``plan`` per stored value of the index ``key``
    (read from its typed ``column`` of ``kind``, where it has one ready),
    as the facet ``name``."""

    name: str
    key: str
    plan: SearchSQL
    column: sql.Composable | None = None
    kind: str | None = None


@dataclass(frozen=True)
class PathFacet:
    """Count the matches of ``plan`` per folder ``depth`` levels below a
    root ``root_depth`` elements deep (``under``: its subtree's clause)."""

    name: str
    plan: SearchSQL
    root_depth: int
    depth: int
    under: tuple[sql.Composable, list]
    #: with ``include_zero``: the whole site's plan, for the empty folders
    everything: SearchSQL | None = None


@dataclass(frozen=True)
class RangeFacet:
    """Count the matches of each of ``ranges`` (``(label, plan)``: the
    facet's query with the range), and those of ``plan`` with a value of
    the index ``key``, as the facet ``name``."""

    name: str
    key: str
    plan: SearchSQL
    ranges: tuple[tuple[str, SearchSQL], ...]
    #: the index's typed column, where it has one ready
    column: sql.Composable | None = None


def _value_facets(facets: list[ValueFacet]):
    """The CTEs, their parameters and the parts counting ``facets``."""
    # Keys are indexes of the registry (``faceting`` checks them); names
    # are the caller's, bound as literals.
    plans: list[tuple[SearchSQL, list[int]]] = []
    for number, facet in enumerate(facets):
        for plan, numbers in plans:
            if _same_matches(plan, facet.plan):
                numbers.append(number)
                break
        else:
            plans.append((facet.plan, [number]))
    ctes, cte_params, parts = [], [], []
    for n, (plan, numbers) in enumerate(plans):
        m = sql.Identifier(f"m{n}")
        values = []
        for number in numbers:
            facet = facets[number]
            c, j = sql.Identifier(f"c{number}"), sql.Identifier(f"j{number}")
            key = sql.Literal(facet.key)
            name = sql.Literal(facet.name)
            elements = _ELEMENTS.format(j=j)
            has = _JSON_HAS.format(elements=elements)
            typed = _TYPED_VALUES.get(facet.kind)
            if facet.column is not None and typed is not None:
                values.append(sql.SQL("{} AS {}").format(facet.column, c))
                json = typed.json.format(column=facet.column, key=key, kept=_KEPT)
                parts.append(typed.counts.format(facet=name, c=c, m=m, j=j, kept=_KEPT))
                # The typed test first: ``idx`` only where it says none.
                has = sql.SQL("CASE WHEN {} THEN true ELSE {} END").format(
                    typed.has.format(c=c), has
                )
            else:
                json = sql.SQL("idx -> {}").format(key)
            values.append(sql.SQL("{} AS {}").format(json, j))
            parts.append(_JSON_COUNTS.format(facet=name, j=j, m=m, elements=elements))
            parts.append(_FACET_TOTAL.format(facet=name, m=m, has=has))
        ctes.append(
            _MATCHES.format(
                m=m,
                values=sql.SQL(", ").join(values),
                source=plan.source,
                where=plan.where,
            )
        )
        cte_params += [*plan.source_params, *plan.params]
    return ctes, cte_params, parts


def _same_matches(one: SearchSQL, other: SearchSQL) -> bool:
    # By the parameters' exact text: psycopg's ``Jsonb`` wrappers (the
    # overlay's rows, JSON criteria) compare by identity.
    return (one.source, one.where) == (other.source, other.where) and (
        exact_text(one.source_params + one.params)
        == exact_text(other.source_params + other.params)
    )


def _facet_parts(facet) -> tuple[list[sql.Composable], list]:
    """The parts counting a path or date facet, and their parameters."""
    plan = facet.plan
    if isinstance(facet, PathFacet):
        under, under_params = facet.under
        # Elements of the folder: '' and the root's, then ``depth`` more.
        elements = facet.root_depth + 1 + facet.depth
        deep_enough = facet.root_depth + facet.depth
        parts, params = [], []
        for template, counted in (
            (_PATH_FACET_PART, plan),
            (_PATH_BUCKETS_PART, facet.everything),
        ):
            if counted is None:
                continue
            parts.append(
                template.format(
                    facet=sql.Literal(facet.name),
                    source=counted.source,
                    where=counted.where,
                    under=under,
                )
            )
            params += [
                *counted.source_params,
                elements,
                *counted.params,
                *under_params,
                deep_enough,
            ]
        return parts, params
    typed = sql.SQL("")
    if facet.column is not None:
        typed = sql.SQL("{} IS NOT NULL OR ").format(facet.column)
    parts = [
        _RANGE_TOTAL_PART.format(
            facet=sql.Literal(facet.name),
            source=plan.source,
            where=plan.where,
            typed=typed,
            key=sql.Literal(facet.key),
        )
    ]
    params = [*plan.source_params, *plan.params]
    for label, ranged in facet.ranges:
        parts.append(
            _RANGE_PART.format(
                facet=sql.Literal(facet.name), source=ranged.source, where=ranged.where
            )
        )
        params += [label, *ranged.source_params, *ranged.params]
    return parts, params


def facet_rows(conn: psycopg.Connection, facets: list) -> list[tuple[str, object, int]]:
    """``(facet, value, count)`` of the matches of each facet's translated
    query (``faceting``), for all facets in one statement; with ``value``
    None, the number of matches that have a value.  ``facets``: a
    ``ValueFacet``, ``PathFacet`` or ``RangeFacet`` each.  A value may
    come in several rows: their counts add up."""
    return _execute(conn, *facet_statement(facets))


def facet_statement(facets: list) -> tuple[sql.Composed, list]:
    """The statement of ``facet_rows`` and its parameters."""
    values = [facet for facet in facets if isinstance(facet, ValueFacet)]
    ctes, params, parts = _value_facets(values)
    for facet in facets:
        if not isinstance(facet, ValueFacet):
            more, more_params = _facet_parts(facet)
            parts += more
            params += more_params
    statement = sql.SQL(" UNION ALL ").join(parts)
    if ctes:
        statement = sql.SQL("WITH {} {}").format(sql.SQL(", ").join(ctes), statement)
    return statement, params


# Snippets: each text's passage around its first match, marked by
# ``ts_headline`` in the text's language.  The passage (``SNIPPET_WINDOW``
# characters from a little before the first match) is all ``ts_headline``
# reads: its cost grows with the text it is given (20 whole texts of a
# content site: 9 ms; 20 passages: well under 5).  The first match is the
# first of the search's words (as typed and folded) or of their stems in
# the text's language, found in the lowercased text; none found: the
# text's beginning.  A cut word at either end of a passage is left out
# (at most 40 characters: Japanese, Chinese and Thai run on without
# spaces, and the cut would take the match with it).  ``ts_headline``
# marks no words of those scripts, or a whole run for a prefix: where the
# search has such words and the passage holds them, they are marked in
# Python instead (``fulltext.mark_unspaced``).
# ``OFFSET 0`` keeps each lateral step a step: flattened, the first
# match's search ran again for every use of its result (12 ms a page).
SNIPPET_WINDOW = 600
SNIPPET_LEAD = 120
SNIPPET_OPTIONS = (
    "MaxWords=35, MinWords=15, ShortWord=0, MaxFragments=1,"
    f" StartSel={MARK_START}, StopSel={MARK_END}"
)
_SNIPPETS = sql.SQL(
    "SELECT t.zoid,"
    " ts_headline(t.config::regconfig, w.part,"
    " to_tsquery(t.config::regconfig, %(query)s), %(options)s),"
    " w.part, s.start = 1, s.start + %(window)s > length(t.body)"
    " FROM (SELECT zoid, config, body FROM {texts}"
    " WHERE zoid = ANY(%(stored)s::bigint[])"
    " UNION ALL SELECT * FROM unnest(%(zoids)s::bigint[], %(configs)s::text[],"
    " %(bodies)s::text[])) AS t"
    " CROSS JOIN LATERAL (SELECT lower(t.body) AS low OFFSET 0) AS l"
    " CROSS JOIN LATERAL (SELECT greatest(1, coalesce((SELECT min(nullif("
    "strpos(l.low, n), 0)) FROM unnest(%(words)s::text[]"
    " || tsvector_to_array(to_tsvector(t.config::regconfig, %(words_text)s)))"
    " AS n), 1) - %(lead)s) AS start OFFSET 0) AS s"
    " CROSS JOIN LATERAL (SELECT regexp_replace(regexp_replace("
    "substr(t.body, s.start, %(window)s),"
    " CASE WHEN s.start > 1 THEN '^\\S{{0,40}}\\s+' ELSE '^' END, ''),"
    " CASE WHEN s.start + %(window)s <= length(t.body) THEN '\\s+\\S{{0,40}}$'"
    " ELSE '$' END, '') AS part OFFSET 0) AS w"
).format(texts=sql.Identifier(TEXTS))


@dataclass(frozen=True)
class Snippet:
    """A text's passage around its first match: ``marked`` holds the
    matched words between ``fulltext.MARK_START`` and ``MARK_END``;
    ``text_starts``/``text_ends``: the passage begins/ends the text."""

    marked: str
    text_starts: bool
    text_ends: bool


def snippets(
    conn: psycopg.Connection,
    zoids: list[int],
    query: str,
    words: tuple[str, ...],
    pending: dict[int, tuple[str, str] | None] | None = None,
    prefixes: frozenset[str] = frozenset(),
) -> dict[int, Snippet]:
    """``{zoid: Snippet}`` of the rows ``zoids`` that have a text, for a
    search's ``fulltext.Highlight`` (``query``, ``words``, ``prefixes``); the texts of
    ``pending`` (``{zoid: (config, text), or None without one}``, this
    transaction's) instead of the stored ones."""
    pending = pending or {}
    stored = [zoid for zoid in zoids if zoid not in pending]
    pending = {
        zoid: pending[zoid]
        for zoid in zoids
        if zoid in pending and pending[zoid] is not None
    }
    if not stored and not pending:
        return {}
    params = {
        "query": query,
        "options": SNIPPET_OPTIONS,
        "window": SNIPPET_WINDOW,
        "lead": SNIPPET_LEAD,
        "stored": stored,
        "zoids": list(pending),
        "configs": [config for config, _ in pending.values()],
        "bodies": [body for _, body in pending.values()],
        "words": list(words),
        "words_text": " ".join(words),
    }
    found = {}
    for zoid, marked, part, starts, ends in _execute(conn, _SNIPPETS, params):
        # A prefix of those scripts matches a whole run for ts_headline.
        marked = mark_unspaced(part, words, prefixes) or marked
        found[zoid] = Snippet(
            marked.strip(), *passage_ends(marked, part, bool(starts), bool(ends))
        )
    return found


def load_metadata(conn: psycopg.Connection, zoids: list[int]) -> dict[int, dict]:
    """``{zoid: metadata JSON}`` for the given rows, in one query."""
    if not zoids:
        return {}
    with json_cursor(conn) as cursor:
        cursor.execute(_LOAD_METADATA, (zoids,))
        return {zoid: meta for zoid, meta in cursor.fetchall()}


def path_of(conn: psycopg.Connection, zoid: int, site_path: str) -> str | None:
    """The cataloged path of one row of this site, or None."""
    with json_cursor(conn) as cursor:
        cursor.execute(_PATH_OF, (zoid, site_path, site_path + "/%"))
        row = cursor.fetchone()
    return row[0] if row else None


_ROW_DATA = sql.SQL("SELECT {}, meta::json FROM {} WHERE zoid = %s")


def row_data(
    conn: psycopg.Connection, zoid: int, ready: dict[str, str]
) -> tuple[dict | None, dict | None]:
    """``(idx, meta)`` of one cataloged row, or ``(None, None)``: ``idx``
    with every value, also those stored in a column only (``whole_idx``
    of the ``ready`` columns)."""
    statement = _ROW_DATA.format(whole_idx(TABLE, ready), TABLE)
    with json_cursor(conn) as cursor:
        cursor.execute(statement, (zoid,))
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


_IS_CATALOGED = sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE zoid = %s)").format(
    TABLE
)


def is_cataloged(conn: psycopg.Connection, zoid: int) -> bool:
    """Whether the stored row of ``zoid`` is cataloged."""
    with json_cursor(conn) as cursor:
        cursor.execute(_IS_CATALOGED, (zoid,))
        return bool(cursor.fetchone()[0])


def read_counter(conn: psycopg.Connection) -> int:
    """The catalog's change counter (moves with every cataloging commit)."""
    with json_cursor(conn) as cursor:
        cursor.execute(READ_COUNTER)
        row = cursor.fetchone()
    return row[0] if row else 0


_STORED_PATHS = sql.SQL(
    "SELECT r.zoid, c.path FROM unnest(%s::bigint[]) AS r(zoid)"
    " LEFT JOIN {} AS c ON c.zoid = r.zoid"
).format(TABLE)


def stored_paths(conn: psycopg.Connection, zoids: list[int]) -> dict[int, str | None]:
    """``{zoid: cataloged path, None if not cataloged}`` of ``zoids``."""
    with json_cursor(conn) as cursor:
        cursor.execute(_STORED_PATHS, (zoids,))
        return dict(cursor.fetchall())


_SNAPSHOT_TID = sql.SQL("SELECT COALESCE(max(tid), 0) FROM transaction_log")


def snapshot_tid(conn: psycopg.Connection) -> int:
    """The last ZODB transaction the connection's snapshot sees (zodb-pgjsonb's
    ``transaction_log``): objects stored after it have a greater ``tid``."""
    with json_cursor(conn) as cursor:
        cursor.execute(_SNAPSHOT_TID)
        return cursor.fetchone()[0]
