"""EXPLAIN: every query shape of the differential suite is served by an index.

Owns: the proof that each query of ``tests/differential/queries.py`` (and of
``test_first_queries.py``), as each user sends it, reads the catalog through
PostgreSQL indexes on a catalog of more than 10,000 rows, also when the
transaction has pending changes (``overlay.Overlay``).

The catalog
    ``content.build_content`` builds the differential suite's ~250 objects
    through Plone's APIs and commits.  SQL then copies every cataloged row
    ``COPIES`` times under ``/plone/copy-NNN/`` (new zoids from zodb-pgjsonb's
    sequence, the NOT NULL state columns copied), so that the site holds more
    than 10,000 cataloged rows beside zodb-pgjsonb's own non-catalog rows.
    Most copies get other index values, drawn from a hash of copy and row:
    one of 40 portal types, 20 workflow states, 300 creators, 1,000
    keywords, titles, ids, descriptions and words of their own, dates moved
    back by half a year per copy; one copy in 40 keeps the original values.
    So a value a query names is a few percent of the catalog at most, as on
    a large site.  ``ANALYZE`` then gives the planner real statistics: of
    the path columns, and of every indexed ``idx`` expression (those of
    expression indexes, and of the statistics objects ``schema.index_ddl``
    creates for partial ones; without them every condition on ``idx``
    gets a fixed default selectivity and the plans prove nothing).

The statements
    Each query goes through ``portal_catalog`` as Plone calls it, so the
    tool adds the security terms (``allowedRolesAndUsers`` of the user,
    ``effectiveRange`` unless the user may see inactive content) and builds
    the SQL with ``query.build_query``.  ``search.run_search`` is replaced
    by a recorder for the duration of the call: the statements EXPLAINed
    are exactly ``SearchSQL.ids_query()`` (and ``count_query()``, which a
    window past the end runs) of the tool's own plan, with its parameters.
    Queries the suite records as raising (mode ``raises``, names starting
    with ``error-``) are filtered out; any other query that raises must do
    so before it sends SQL.

What fails
    A plain ``EXPLAIN (FORMAT JSON)`` whose plan, subplans included, reads
    the whole catalog: a ``Seq Scan`` on ``pgcatalog_objects``, or an index
    scan whose only conditions are the terms every query carries (the site
    subtree, ``allowedRolesAndUsers``), or an index
    scan with no condition through an index holding the whole catalog.
    The latter count because the planner prefers them to a Seq Scan when
    the table also holds many non-catalog rows: a test looking only for
    "Seq Scan" passes when no index serves the query at all.  A walk
    through a partial index that holds fewer rows (the objects that have
    occurrences) narrows the catalog and is accepted.  So is a walk in the
    window's order (the primary key, a sort key's index) that the window's
    ``LIMIT`` cuts (the count is a subquery of its own, checked as any
    scan), if EXPLAIN ANALYZE shows it read at most ``MOST`` of the
    catalog: the planner walks an order when it expects the window full
    early, and a walk that had to read most of the catalog to fill it is
    the misjudgement to catch.

    ``SET enable_seqscan = off`` is not used: every query carries
    the site subtree, which the path indexes
    satisfy, so the planner would always find an index path and
    the setting could not tell "no index serves this shape" from "an
    index exists".  Realistic data and statistics can.

    Some shapes match most of the catalog (every object the user may see,
    a ``not`` of a few values, a range open towards most values): reading
    every row is then the right plan, as in ZCatalog, which also walks its
    whole index for them.  ``FULL_SCAN_SHAPES`` lists each with its reason,
    and a test checks the reason: as the Manager (who sees every object) the
    shape must match at least ``MOST`` of the catalog.

Pending changes
    After ``content.change_without_commit`` (not committed), the
    read-your-writes queries read ``overlay.Overlay.source()``: stored rows
    UNION ALL the pending rows from ``jsonb_to_recordset``.  Their plans
    must still read the stored branch through indexes.

Must not import plone_pgcatalog's translation internals to build SQL: the
tool builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from psycopg import sql
from tests.conftest import run_in
from tests.differential.content import become
from tests.differential.content import change_without_commit
from tests.differential.queries import QUERIES
from tests.differential.queries import UNCOMMITTED_QUERIES
from tests.differential.test_first_queries import QUERIES as FIRST_QUERIES

import copy
import psycopg
import pytest
import re
import transaction

SITE = "/plone"
USERS = ("manager", "member", "anonymous")

#: Copies of the ~250 real rows: 41 give more than 10,000 cataloged rows.
COPIES = 41
MIN_ROWS = 10_000

#: A shape "matches most of the catalog" from this fraction on, as the
#: Manager runs it.  The copies keep every named value under 3 %.
MOST = 0.2

_EVERYTHING = (
    "names no index: Plone's catalog adds only the security terms, so the "
    "result is every object the user may see"
)
_SORT_ALL = (
    "sorts every object the user may see; a window (b_size, sort_limit) "
    "still counts every match, so every match is read"
)
_NOT = (
    "a 'not' of a few values: every object with another value matches; no "
    "index looks up what a value is not"
)
_BEFORE_2020 = (
    "created before a day of January 2020: the copies' dates reach back 20 "
    "years, nearly every object"
)

_KEYWORD_RANGE = (
    "a range over a KeywordIndex asks for objects with some keyword in the "
    "range: no index on the keyword arrays answers that, and two B-trees "
    "per keyword index would tax every write for a query form Plone never "
    "sends"
)

#: Shapes whose plans may read the whole catalog, and why.
FULL_SCAN_SHAPES: dict[str, str] = {
    "empty-query": _EVERYTHING,
    "empty-query-positional": _EVERYTHING,
    "unknown-key-only": _EVERYTHING,
    "getRemoteUrl-is-metadata-only": _EVERYTHING + " (a metadata column)",
    "allowedRolesAndUsers-anonymous-given": _EVERYTHING + " (the tool replaces "
    "the given allowedRolesAndUsers by the user's)",
    "allowedRolesAndUsers-user-given": _EVERYTHING + " (the given value is "
    "replaced)",
    "allowedRolesAndUsers-record-given": _EVERYTHING + " (the given value is "
    "replaced)",
    "show_inactive-true": _EVERYTHING + " (show_inactive drops effectiveRange)",
    "show_inactive-false": _EVERYTHING,
    "effectiveRange-2099": "every object effective before 2099 and not "
    "expired then: nearly all",
    "effectiveRange-datetime": "every object effective before 2099 and not "
    "expired then: nearly all",
    "effectiveRange-string": "objects without an effective date (all that "
    "are not published) match every moment",
    "effectiveRange-2000": "objects without an effective date (all that are "
    "not published) match every moment",
    "effectiveRange-2000-show-inactive": "objects without an effective date "
    "(all that are not published) match every moment",
    "path-slash": "'/' is the whole site",
    "sort-title-all": _SORT_ALL,
    "sort-title-descending": _SORT_ALL,
    "sort-two-indexes": _SORT_ALL,
    "sort-two-indexes-two-orders": _SORT_ALL,
    "sort-two-indexes-short-order-list": _SORT_ALL,
    "sort-two-indexes-one-reverse": _SORT_ALL,
    "sort-three-indexes": _SORT_ALL,
    "sort-limit-1": _SORT_ALL,
    "sort-limit-multi": _SORT_ALL,
    "created-sorted-limited": _SORT_ALL,
    "modified-sorted-descending-limited": _SORT_ALL,
    "Date-sorted-reverse-limited": _SORT_ALL,
    "batch-first": _SORT_ALL,
    "batch-second": _SORT_ALL,
    "batch-reverse": _SORT_ALL,
    "batch-strings": _SORT_ALL,
    "batch-two-sort-indexes": _SORT_ALL,
    "batch-and-sort-limit": _SORT_ALL,
    "sorted title descending, limit": _SORT_ALL,
    "is_folderish-false-sorted-limited": "every object but the folders, sorted",
    "portal_type-not": _NOT,
    "portal_type-not-list": _NOT,
    "review_state-not-published": _NOT,
    "Creator-not": _NOT,
    "Subject-not": _NOT + " (every object with keywords)",
    "Subject-not-absent": _NOT + " (every object with keywords)",
    "portal_type-range-min": "a range open above 'Link': most type names "
    "sort after it",
    "sortable_title-range-min-sorted": "titles from 'm' on: half of them",
    "sortable_title-range-three-values": "titles from 'c' to 'k': a third",
    "id-range-min-sorted": "ids from 't' on: a quarter of them",
    "UID-range": "UIDs from '0' to '8': half of the hexadecimal UIDs",
    "created-max": _BEFORE_2020,
    "created-aware-datetime": _BEFORE_2020,
    "created-naive-datetime": _BEFORE_2020,
    "created-date": _BEFORE_2020,
    "created-string": _BEFORE_2020,
    "created-iso-string": _BEFORE_2020,
    "created-int-epoch-seconds": _BEFORE_2020,
    "effective-max": "effective before 2001: the copies' dates reach back to "
    "2000, a third of the catalog",
    "expires-min-far": "objects that never expire carry the far-future "
    "default: nearly all",
    "Subject-unknown-range-name": "a range naming neither bound: every "
    "object with keywords (ZCatalog walks all of them too)",
    "created-unknown-range-name": "a range naming neither bound: every "
    "object with a creation date",
}

#: Shapes no SQL index serves, on purpose, and why (README: "Where results
#: differ").  Their plans read the catalog through the site path; the
#: shapes are not used by Plone or the add-ons we know of.
#: Shapes whose plan may read the table in order and stop early: either
#: plan is right, and the planner's choice between them depends on the
#: statistics of the moment.
EARLY_STOP_SHAPES: dict[str, str] = {
    # UnIndex's "not" asks whether any object of the site has the excluded
    # value (``registry``: ``EXISTS``); on the catalog's dense table the
    # planner may read it in order, expecting one within a few dozen rows
    # (IDocument: one row in 40), and stop there.
    "object_provides-not-in-en": "EXISTS stops at the first excluded row",
}

UNINDEXED_SHAPES: dict[str, str] = {
    "Subject-range-min": _KEYWORD_RANGE,
    "Subject-range-max": _KEYWORD_RANGE,
    "Subject-range-min-max": _KEYWORD_RANGE,
    "Subject-range-and": _KEYWORD_RANGE,
}


# -- the catalog ------------------------------------------------------------

# One statement: copies of every cataloged row of the site, with new zoids,
# paths under /plone/copy-NNN and, for 39 rows in 40, other index values.
# ``h`` is a hash of copy and row; dates move back half a year per copy
# (DateIndex and DateRecurringIndex store minutes of a 31-day-month
# calendar, effectiveRange minutes since the epoch).
MULTIPLY = sql.SQL("""
WITH source AS (
    SELECT s.zoid, s.path, s.parent_path, s.path_depth, {idx} AS idx, s.meta,
           s.searchable_text, row_number() OVER (ORDER BY s.zoid) AS r
    FROM pgcatalog_objects AS s
    WHERE s.path = %(site)s OR s.path LIKE %(below)s
), copies AS (
    SELECT source.*, n,
           %(site)s || '/copy-' || lpad(n::text, 3, '0') AS root,
           (n * 2654435761 + r * 40503) %% 1000003 AS h,
           n * 267840 AS date_shift,
           n * 262980 AS minute_shift
    FROM source CROSS JOIN generate_series(1, %(copies)s) AS n
), varied AS (
    SELECT copies.*, h %% 40 = 0 AS keep, h %% 40 AS t,
           chr(97 + (h %% 26)::int) || chr(97 + (h / 26 %% 26)::int) AS prefix,
           nextval('zoid_seq') AS new_zoid
    FROM copies
), objects AS (
    INSERT INTO object_state (zoid, tid, class_mod, class_name, state,
                              state_size, refs)
    SELECT v.new_zoid, o.tid, o.class_mod, o.class_name, o.state,
           o.state_size, o.refs
    FROM varied AS v JOIN object_state AS o ON o.zoid = v.zoid
)
INSERT INTO pgcatalog_objects (zoid, path, parent_path, path_depth, idx, meta,
                               searchable_text)
SELECT new_zoid,
       root || substr(path, length(%(site)s) + 1),
       CASE WHEN path = %(site)s THEN %(site)s
            ELSE root || substr(parent_path, length(%(site)s) + 1) END,
       path_depth + 1,
       idx || jsonb_strip_nulls(jsonb_build_object(
           'UID', md5(n || (idx ->> 'UID')),
           'sync_uid', md5(n || (idx ->> 'sync_uid')),
           'portal_type', CASE WHEN NOT keep THEN 'type-' || t END,
           'Type', CASE WHEN NOT keep THEN 'Type ' || t END,
           'object_provides', CASE WHEN NOT keep THEN
               jsonb_build_array('example.interfaces.IType' || t,
                                 'plone.dexterity.interfaces.IDexterityContent')
               || CASE WHEN t = 0 THEN jsonb_build_array(
                      'Products.CMFCore.interfaces.IFolderish',
                      'plone.dexterity.interfaces.IDexterityContainer')
                  ELSE '[]'::jsonb END END,
           'is_folderish', CASE WHEN NOT keep THEN to_jsonb(t = 0) END,
           'exclude_from_nav', CASE WHEN NOT keep THEN to_jsonb(h %% 50 = 1) END,
           'review_state', CASE WHEN NOT keep AND idx ? 'review_state'
               THEN 'state-' || (h / 40 %% 20) END,
           'Subject', CASE WHEN NOT keep AND (idx ? 'Subject' OR h %% 3 = 0)
               THEN jsonb_build_array('kw-' || lpad((h %% 500)::text, 3, '0'),
                                      'kw-' || (500 + h / 500 %% 500)) END,
           'Creator', CASE WHEN NOT keep THEN 'user-' || (h %% 300) END,
           'id', CASE WHEN NOT keep THEN prefix || '-' || (idx ->> 'id') END,
           'getId', CASE WHEN NOT keep THEN prefix || '-' || (idx ->> 'getId') END,
           'sortable_title', CASE WHEN NOT keep
               THEN prefix || ' ' || (idx ->> 'sortable_title') END,
           'Title', CASE WHEN NOT keep
               THEN 'title' || (h %% 997) || ' t' || (h %% 613) END,
           'Description', CASE WHEN NOT keep AND idx ? 'Description'
               THEN 'summary' || (h %% 991) || ' s' || (h %% 607) END,
           'created', (idx -> 'created')::bigint - date_shift,
           'modified', (idx -> 'modified')::bigint - date_shift,
           'effective', (idx -> 'effective')::bigint - date_shift,
           'Date', (idx -> 'Date')::bigint - date_shift,
           'expires', CASE WHEN (idx -> 'expires')::bigint < 1300000000
               THEN (idx -> 'expires')::bigint - date_shift END,
           'effectiveRange', CASE WHEN idx ? 'effectiveRange' THEN
               jsonb_build_array(
                   (idx -> 'effectiveRange' ->> 0)::bigint - minute_shift,
                   (idx -> 'effectiveRange' ->> 1)::bigint - minute_shift) END,
           'start', (SELECT jsonb_agg(e::bigint - date_shift ORDER BY o)
                     FROM jsonb_array_elements_text(idx -> 'start')
                          WITH ORDINALITY AS a(e, o)),
           'end', (SELECT jsonb_agg(e::bigint - date_shift ORDER BY o)
                   FROM jsonb_array_elements_text(idx -> 'end')
                        WITH ORDINALITY AS a(e, o))
       )),
       meta,
       CASE WHEN keep THEN searchable_text ELSE setweight(to_tsvector('simple',
           'lorem' || (h %% 4999) || ' ipsum' || (h %% 4993)
           || ' dolor' || (h %% 4987)), 'A') END
FROM varied
""")


def _multiply(dsn: str) -> None:
    from plone_pgcatalog.store import columns

    with psycopg.connect(dsn) as conn:
        with conn.cursor() as cur:
            ready = {n: k for n, (k, ok) in columns.registered(cur).items() if ok}
        # Each row's lists too (stored once: in their columns only).
        statement = MULTIPLY.format(idx=columns.whole_idx(sql.SQL("s"), ready))
        conn.execute(statement, {"site": SITE, "below": SITE + "/%", "copies": COPIES})
        conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE pgcatalog_objects")


# -- the statements ---------------------------------------------------------


@dataclass
class Recorded:
    """What one catalog call sent to PostgreSQL (or the error it raised)."""

    plans: list = field(default_factory=list)  # query.SearchSQL
    error: Exception | None = None

    def statements(self) -> list[tuple]:
        return [(statement, params) for statement, params, _ in self.planned()]

    def planned(self) -> list[tuple]:
        """``(statement, params, forced)`` of each statement: ``forced``
        where PostgreSQL runs its generic plan (``SearchSQL.plan_forced``;
        the count of a window past the end is planned for its values)."""
        from plone_pgcatalog.store.search import search_statement

        found = []
        for plan in self.plans:
            if plan.plan_forced:
                # The statement its generic plan is made for: a whole
                # result's first rows, counted, are not ``ids_query``'s
                # (``SearchSQL._by_the_count``).
                found.append((*search_statement(plan, metadata=False), True))
            else:
                found.append((*plan.ids_query(), False))
            if plan.windowed:
                found.append((*plan.count_query(), False))
        return found


def _record(catalog, query: dict, call: str) -> Recorded:
    """Search as Plone does; keep the tool's SQL instead of running it."""
    from plone_pgcatalog import snapshots
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import search

    recorded = Recorded()

    def run_search(conn, plan, metadata=True):
        recorded.plans.append(plan)
        return search.Found([], 0)

    def search_first(context, statement, params, keep_plan=False):
        # Not sent: the search then goes through ``reading`` and
        # ``run_search``, translated for the columns the snapshot has.
        return None

    original = search.run_search
    search.run_search = run_search
    original_first = connection.search_first
    connection.search_first = search_first
    # Every search must reach run_search: none answered from the results
    # kept per committed state.
    cache_enabled, snapshots.results.enabled = snapshots.results.enabled, False
    try:
        query = copy.deepcopy(query)
        if call == "dict":
            catalog(query)
        else:
            catalog(**query)
    except Exception as exc:  # recorded: the test decides
        recorded.error = exc
    finally:
        search.run_search = original
        connection.search_first = original_first
        snapshots.results.enabled = cache_enabled
    return recorded


def _raises_by_design(case) -> bool:
    return case.mode == "raises" or case.name.startswith("error-")


#: (name, query, call) of every shape to EXPLAIN.
SHAPES = [
    (case.name, case.query, case.call)
    for case in QUERIES
    if not _raises_by_design(case)
] + [(name, query, "kw") for name, query, _ in FIRST_QUERIES]


@dataclass
class Explained:
    dsn: str
    catalog_rows: int
    recorded: dict  # (name, user) -> Recorded
    uncommitted: dict  # (name, user) -> Recorded
    partial: dict  # index name -> its predicate narrows beyond the catalog
    #: index name -> (statement, params) of its index object's lookup of
    #: one value (``_index.get``), as Manager
    lookups: dict
    #: sort order -> a section's first 20 items in it (``SECTIONS``), as
    #: Manager
    sections: dict


#: Sort order -> a section whose items are all at the far end of the
#: catalog's order: the latest items of the last copy (its dates are the
#: furthest back), the first items of the first copy (only the site's own
#: rows are newer), as a listing asks for them.
SECTIONS = {
    "reverse": f"{SITE}/copy-{COPIES:03d}",
    "ascending": f"{SITE}/copy-001",
}


def _lookups(catalog) -> dict:
    """The statements of the index objects' lookups of one value
    (``indexes._Rows.fetch``): plone.app.uuid's of a UID, and a type's."""
    from plone_pgcatalog import indexes
    from plone_pgcatalog import snapshots

    uid = catalog.searchResults(portal_type="Document", sort_on="id")[0].UID
    seen = []
    fetch = indexes._Rows.fetch

    def recording(self, statement, params, keep_plan=False, json=True):
        seen.append((statement, tuple(params)))
        return fetch(self, statement, params, keep_plan, json)

    indexes._Rows.fetch = recording
    enabled, snapshots.lookups.enabled = snapshots.lookups.enabled, False
    try:
        found = {}
        for name, value in (("UID", uid), ("portal_type", "Document")):
            assert catalog.Indexes[name]._index.get(value)
            found[name] = seen[-1]
        return found
    finally:
        indexes._Rows.fetch = fetch
        snapshots.lookups.enabled = enabled


def _partial_indexes(conn) -> dict[str, bool]:
    rows = conn.execute(
        "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid)"
        " FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = 'pgcatalog_objects'::regclass"
    ).fetchall()
    return {name: predicate is not None for name, predicate in rows}


@pytest.fixture(scope="module")
def explained():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
    from tests.differential.content import build_content

    runner = run_in(PGCATALOG_FUNCTIONAL_TESTING)
    layer = next(runner)
    try:
        portal = layer["portal"]
        build_content(portal)
        dsn = layer["pgcatalog_dsn"]
        _multiply(dsn)
        catalog = portal.portal_catalog
        recorded = {}
        for user in USERS:
            become(portal, user)
            for name, query, call in SHAPES:
                recorded[(name, user)] = _record(catalog, query, call)
        become(portal, "manager")
        lookups = _lookups(catalog)
        sections = {
            order: _record(
                catalog,
                {
                    "path": path,
                    "sort_on": "modified",
                    "sort_order": order,
                    "b_size": 20,
                },
                "kw",
            )
            for order, path in SECTIONS.items()
        }
        change_without_commit(portal)
        uncommitted = {}
        for user in USERS:
            become(portal, user)
            for case in UNCOMMITTED_QUERIES:
                uncommitted[(case.name, user)] = _record(catalog, case.query, case.call)
        transaction.abort()
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM pgcatalog_objects"
                " WHERE path = %s OR path LIKE %s",
                (SITE, SITE + "/%"),
            ).fetchone()[0]
            partial = _partial_indexes(conn)
        yield Explained(dsn, rows, recorded, uncommitted, partial, lookups, sections)
    finally:
        transaction.abort()
        runner.close()


@pytest.fixture(scope="module")
def pg(explained):
    with psycopg.connect(explained.dsn, autocommit=True) as conn:
        _plan_as_reads(conn)
        yield conn


def _plan_as_reads(conn) -> None:
    """Plans as the catalog's reads get them (``store.connection``)."""
    from plone_pgcatalog.store.connection import PLAN_FOR_REQUESTS
    from plone_pgcatalog.store.connection import RANDOM_PAGE_COST

    if RANDOM_PAGE_COST is not None:
        conn.execute(
            "SELECT set_config('random_page_cost', %s, false)", (RANDOM_PAGE_COST,)
        )
    if PLAN_FOR_REQUESTS:
        conn.execute("SET jit = off")
        conn.execute("SET max_parallel_workers_per_gather = 0")


# -- reading plans ----------------------------------------------------------

SITE_RANGE = f"((path >= '{SITE}/'::text) AND (path < '{SITE}0'::text))"
SITE_ROOT = f"(path = '{SITE}'::text)"


def _carried_by_every_query(index: str, condition: str | None) -> bool:
    """Whether an index condition is one of the terms every query has."""
    from plone_pgcatalog.store.schema import sql_index_name

    # The security index: the typed column's, or (an index of another
    # kind so named) the expression index on ``idx``.
    if index in (
        sql_index_name("allowedRolesAndUsers", "c"),
        sql_index_name("allowedRolesAndUsers"),
    ):
        return True
    return index == "pgcatalog_path" and condition == SITE_RANGE


def _narrows(node: dict, partial: dict) -> bool:
    """Whether a bitmap (sub)tree narrows the catalog beyond those terms."""
    kind = node["Node Type"]
    if kind == "Bitmap Index Scan":
        condition = node.get("Index Cond")
        if condition is None:
            return partial.get(node["Index Name"], False)
        return not _carried_by_every_query(node["Index Name"], condition)
    children = node.get("Plans", [])
    if kind == "BitmapAnd":
        return any(_narrows(child, partial) for child in children)
    if kind == "BitmapOr":
        conditions = {child.get("Index Cond") for child in children}
        if conditions == {SITE_RANGE, SITE_ROOT}:
            return False  # the site subtree: path = site OR path below it
        return all(_narrows(child, partial) for child in children)
    raise AssertionError(f"unexpected bitmap node {kind}")


#: How a scan that an early-stopping ``LIMIT`` cuts is reported
#: (``catalog_scans``): then EXPLAIN ANALYZE tells how much it read.
CUT = "cut by LIMIT: "


def catalog_scans(node: dict, partial: dict, cut: bool = False) -> list[str]:
    """The scans of the catalog's table in a plan that read all of it.

    A walk through an index in the window's order (the primary key, a sort
    key's index) directly under the window's ``Limit`` (or under the
    incremental sort that breaks the sort key's ties) stops once the window
    is full: it is reported with the prefix ``CUT``, and what it read is
    measured (``_rows_walked``)."""
    found = []
    if node.get("Relation Name") == "pgcatalog_objects":
        kind = node["Node Type"]
        index = node.get("Index Name")
        prefix = CUT if cut else ""
        if kind == "Seq Scan":
            found.append("Seq Scan on pgcatalog_objects")
        elif kind in ("Index Scan", "Index Only Scan"):
            condition = node.get("Index Cond")
            if condition is None:
                if not partial.get(index, False):
                    found.append(f"{prefix}{kind} through all of {index}")
            elif _carried_by_every_query(index, condition):
                found.append(f"{prefix}{kind} using {index} on {condition} only")
        elif kind == "Bitmap Heap Scan":
            bitmap = [p for p in node["Plans"] if p["Parent Relationship"] == "Outer"]
            if not _narrows(bitmap[0], partial):
                found.append(f"Bitmap Heap Scan on {node.get('Recheck Cond')} only")
    for child in node.get("Plans", []):
        found += catalog_scans(child, partial, _cuts(node, child, cut))
    return found


def _cuts(node: dict, child: dict, cut: bool) -> bool:
    """Whether ``child``'s rows are read only until ``node``'s limit (a
    ``Result`` that gates a branch on a one-time test of the count passes
    its rows on as they come: ``SearchSQL._by_the_count``)."""
    if child.get("Parent Relationship") != "Outer":
        return False  # an InitPlan or SubPlan (the count): read whole
    return node["Node Type"] == "Limit" or (
        cut and node["Node Type"] in ("Incremental Sort", "Result")
    )


def _rows_walked(node: dict, cut: bool = False) -> int:
    """The most rows one scan cut by a ``LIMIT`` read, in an EXPLAIN
    ANALYZE plan (the rows it returned and those its filter removed)."""
    walked = 0
    if cut and node.get("Relation Name") == "pgcatalog_objects":
        walked = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
    for child in node.get("Plans", []):
        walked = max(walked, _rows_walked(child, _cuts(node, child, cut)))
    return walked


def _outline(node: dict, depth: int = 0) -> list[str]:
    line = "  " * depth + node["Node Type"]
    for key in (
        "Relation Name",
        "Index Name",
        "Index Cond",
        "Recheck Cond",
        "Filter",
        "Subplan Name",
    ):
        if key in node:
            line += f" [{key}: {str(node[key])[:160]}]"
    lines = [line]
    for child in node.get("Plans", []):
        lines += _outline(child, depth + 1)
    return lines


def explain(conn, statement, params) -> dict:
    row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + statement, params).fetchone()
    return row[0][0]["Plan"]


def explain_analyze(conn, statement, params) -> dict:
    row = conn.execute(
        sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + statement, params
    ).fetchone()
    return row[0][0]["Plan"]


def _problems(
    conn, dsn: str, recorded: Recorded, partial: dict, limit: int
) -> list[str]:
    """What reads all of the catalog in each statement's plan (the generic
    plan where it is forced, on a connection of its own to ``dsn``); a
    walk cut by the window's ``LIMIT`` only if it read more than ``limit``
    rows."""
    problems = []
    for statement, params, forced in recorded.planned():
        if forced:
            plan = _kept_plan(dsn, statement, params)
        else:
            plan = explain(conn, statement, params)
        scans = catalog_scans(plan, partial)
        if scans and all(scan.startswith(CUT) for scan in scans):
            if forced:
                [analyzed] = _kept_plans(dsn, [(statement, params)], analyze=True)
            else:
                analyzed = explain_analyze(conn, statement, params)
            walked = _rows_walked(analyzed)
            if walked <= limit:
                continue
            scans.append(f"read {walked} rows (at most {limit})")
        if scans:
            problems.append("; ".join(scans) + "\n" + "\n".join(_outline(plan)))
    return problems


def _params(names, users=USERS) -> list:
    return [
        pytest.param(name, user, id=f"{name}@{user}")
        for name in names
        for user in users
    ]


# -- tests --------------------------------------------------------------------


def test_the_catalog_has_more_than_10000_rows_and_statistics(explained, pg):
    assert explained.catalog_rows >= MIN_ROWS
    # The planner's view: statistics of the typed columns, not the default
    # selectivities it falls back to without them.
    rows = pg.execute(
        "SELECT most_common_vals::text FROM pg_stats"
        " WHERE tablename = 'pgcatalog_objects' AND attname = 'portal_type'"
    ).fetchall()
    assert rows and "type-1" in rows[0][0], rows


@pytest.mark.parametrize("name,user", _params([name for name, _, _ in SHAPES]))
def test_query_reads_the_catalog_through_an_index(explained, pg, name, user):
    recorded = explained.recorded[(name, user)]
    if recorded.error is not None:
        # Refused before any SQL: nothing reached PostgreSQL.
        assert not recorded.plans, f"raised {recorded.error!r} after sending SQL"
        return
    assert recorded.plans, "the catalog sent no SQL"
    problems = _problems(
        pg,
        explained.dsn,
        recorded,
        explained.partial,
        int(MOST * explained.catalog_rows),
    )
    if problems and name in FULL_SCAN_SHAPES:
        return  # justified, and checked by the next test
    if problems and name in UNINDEXED_SHAPES:
        return  # justified: not index-served on purpose
    if problems and name in EARLY_STOP_SHAPES:
        return  # justified: stops at the first row it needs
    assert name not in UNINDEXED_SHAPES, f"{name!r} is index-served now"
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("name", sorted(FULL_SCAN_SHAPES))
def test_full_scan_shapes_match_most_of_the_catalog(explained, pg, name):
    recorded = explained.recorded.get((name, "manager"))
    assert recorded is not None, f"{name!r} is not a query of the suite"
    assert recorded.error is None and recorded.plans, recorded.error
    statement, params = recorded.plans[0].count_query()
    matches = pg.execute(statement, params).fetchone()[0]
    assert matches >= MOST * explained.catalog_rows, (
        f"{name}: {matches} of {explained.catalog_rows} rows; "
        f"claimed: {FULL_SCAN_SHAPES[name]}"
    )


@pytest.mark.parametrize("name,user", _params([c.name for c in UNCOMMITTED_QUERIES]))
def test_pending_changes_keep_the_stored_rows_on_indexes(explained, pg, name, user):
    recorded = explained.uncommitted[(name, user)]
    assert recorded.error is None, recorded.error
    assert recorded.plans
    for statement, params in recorded.statements():
        plan = explain(pg, statement, params)
        outline = "\n".join(_outline(plan))
        # The pending rows are read from the overlay's JSON parameter...
        assert "jsonb_to_recordset" in str(plan), outline
        # ...and the stored ones through the catalog's indexes.
        assert not catalog_scans(plan, explained.partial), outline


def _kept_plan(dsn: str, statement, params, folders: int | None = None) -> dict:
    """The plan PostgreSQL keeps for ``statement`` prepared
    (``SearchSQL.plan_kept``): made once, blind to the values (its generic
    plan, which ``plan_cache_mode`` ``auto`` takes after five runs when it
    looks no worse).  With ``folders``: ``_kept_plans``."""
    [plan] = _kept_plans(dsn, [(statement, params)], folders)
    return plan


def _kept_plans(
    dsn: str, statements, folders: int | None = None, analyze: bool = False
) -> list[dict]:
    """``_kept_plan`` of each ``(statement, params)``, on a connection of
    their own, each statement the one prepared there while it is explained
    (and run, with ``analyze``).  With ``folders``, planned as if the
    catalog's rows were in that many folders (``n_distinct`` of
    ``parent_path``, analyzed once in a transaction rolled back: nothing of
    it stays)."""
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    plans = []
    with psycopg.connect(dsn) as conn:
        _plan_as_reads(conn)
        if folders is not None:
            conn.execute(
                sql.SQL(
                    "ALTER TABLE pgcatalog_objects"
                    " ALTER COLUMN parent_path SET (n_distinct = {})"
                ).format(sql.Literal(folders))
            )
            conn.execute("ANALYZE pgcatalog_objects (parent_path)")
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        for statement, params in statements:
            conn.execute(statement, params, prepare=True)
            [[name]] = conn.execute(
                "SELECT name FROM pg_prepared_statements"
            ).fetchall()
            # The values as literals of the statement's parameter types.
            arguments = sql.SQL(", ").join(sql.Literal(value) for value in params)
            row = conn.execute(
                sql.SQL("EXPLAIN ({}) EXECUTE {}({})").format(
                    sql.SQL(options), sql.Identifier(name), arguments
                )
            ).fetchone()
            plans.append(row[0][0]["Plan"])
            # psycopg forgets its prepared statements with them.
            conn.execute("DEALLOCATE ALL")
        conn.rollback()
    return plans


def _plans_made(dsn: str, statement, params, runs: int = 7) -> tuple[int, int]:
    """``(generic, custom)``: the plans PostgreSQL made for ``statement``,
    prepared and run ``runs`` times with ``params`` on a connection of its
    own, in ``plan_cache_mode`` ``auto`` as the catalog's reads run."""
    with psycopg.connect(dsn) as conn:
        _plan_as_reads(conn)
        for _ in range(runs):
            conn.execute(statement, params, prepare=True).fetchall()
        [plans] = conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        ).fetchall()
        conn.rollback()
    return plans


def _recorded_plans(explained, kept: str) -> list[tuple]:
    """``(name, user, plan)`` of each recorded search whose ``kept``
    (``plan_kept`` or ``plan_forced``) is true."""
    return [
        (name, user, plan)
        for (name, user), recorded in explained.recorded.items()
        for plan in recorded.plans
        if getattr(plan, kept)
    ]


def _indexes_read(node: dict) -> set[str]:
    found = set()
    if node.get("Relation Name", "pgcatalog_objects") == "pgcatalog_objects":
        found |= {node["Index Name"]} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        found |= _indexes_read(child)
    return found


def test_a_count_per_group_reads_at_most_twice_the_rows_of_counting_its_matches(
    explained, pg
):
    """A search counted from the counts per group (``SearchSQL.group_count``)
    with the effective range (every search of Anonymous and of a Member)
    takes away the rows of its groups out of the range where they are at
    most ``query.RESIDUE_SHARE``'s share of its groups' rows, and counts
    its matches otherwise.  The catalog holds 1,008 rows out of the range
    now (the archive's items, expired or in effect from 2099 on, and their
    copies), a tenth of it, as a site with expired news has; a type's
    search as Anonymous has a hundred matches.  Read through the range's
    indexes alone, whatever the groups, the residue was all 1,008 rows for
    each search (helper-42's review: 1,008 for a type none has, against
    0 to count its matches).  Now the residue is read by the indexes the
    planner finds best, with a limit, and where it is more than its share,
    the matches are counted too: at most about twice the rows."""
    counted = [
        (name, user, plan)
        for (name, user), recorded in explained.recorded.items()
        for plan in recorded.plans
        if plan.group_count is not None
        and "LIMIT g.grouped" in plan.group_count.as_string()
    ]
    assert any(user == "anonymous" for _, user, _ in counted)
    problems = []
    for name, user, plan in counted:
        grouped = sql.SQL("SELECT ") + plan.group_count
        read = _rows_read(explain_analyze(pg, grouped, plan.group_count_params))
        rows = _rows_read(explain_analyze(pg, *plan.count_query()))
        if read > 2 * rows + 1:
            problems.append(f"{name}@{user}: {read} rows read, {rows} to count them")
    assert not problems, "\n".join(sorted(problems))


@pytest.mark.parametrize("folders", [None, 40], ids=["as-built", "40-folders"])
def test_a_lookup_by_a_key_keeps_a_plan_that_reads_its_rows(explained, folders):
    """The plan kept for a search that finds few rows by a key (a folder's
    items, an object by its path or its UIDs: ``SearchSQL.plan_kept``),
    made blind to the values and the user, reads the key's rows by its
    index for every value and user: no index of another condition, whose
    selectivity it cannot know (written as one ``IS TRUE`` test,
    ``query.by_key``).  Else it combined the site's path range, estimated
    at a few rows, with a folder's items: every path of the site read for
    a listing.  Planned with the catalog's statistics, and as if its rows
    were in 40 folders (hundreds of items each): the generic plan's
    estimate of a folder's items is the rows per folder, and the larger it
    is, the more another index looks worth combining."""
    from plone_pgcatalog.store.columns import sql_index_name

    keys = {"pgcatalog_parent_path", "pgcatalog_path", sql_index_name("UID")}
    kept = _recorded_plans(explained, "plan_kept")
    assert len({name for name, _, _ in kept}) >= 3, kept
    statements = [
        (f"{name}@{user}", statement)
        for name, user, plan in kept
        for statement in (
            [plan.ids_query(), plan.count_query()]
            if plan.windowed
            else [plan.ids_query()]
        )
    ]
    generics = _kept_plans(
        explained.dsn, [statement for _, statement in statements], folders
    )
    read_by = set()
    for (shown, _), generic in zip(statements, generics, strict=True):
        outline = f"{shown}\n" + "\n".join(_outline(generic))
        read = _indexes_read(generic) - {"pgcatalog_objects_pkey"}
        assert len(read) == 1 and read <= keys, outline
        assert not catalog_scans(generic, explained.partial), outline
        read_by |= read
    # Listings and lookups by UID among them.
    assert {"pgcatalog_parent_path", sql_index_name("UID")} <= read_by, read_by


def test_postgresql_keeps_the_plans_kept(explained):
    """A search statement prepared to keep its plan (``SearchSQL.plan_kept``)
    gets the plan kept: PostgreSQL (``plan_cache_mode`` ``auto``) makes
    five plans for the values, then takes the generic plan only where its
    estimated cost is close to theirs.  Written ``"UID" = ANY(%s)``, a
    lookup of one UID was estimated at ten values and planned for its value
    on every run (600 custom plans of 600 on the benchmark's connection):
    prepared for nothing."""
    from plone_pgcatalog.store import search

    kept = _recorded_plans(explained, "plan_kept")
    assert kept
    for name, user, plan in kept:
        statement, params = search.search_statement(plan)
        generic, custom = _plans_made(explained.dsn, statement, params)
        # Five plans for the values, then the generic one where PostgreSQL
        # estimates it as cheap.
        assert generic + custom == 7 and generic >= 1, f"{name}@{user}: {statement!r}"


#: Query keys that carry no condition of a window's own: its order and its
#: size (``SearchSQL.plan_forced``).
_WINDOW_KEYS = {"sort_on", "sort_order", "sort_limit", "b_start", "b_size"}


def test_every_window_from_the_edge_keeps_its_plan(explained):
    """In a large catalog too, every window walked from the edge keeps the
    plan PostgreSQL is made to keep, blind to the values
    (``SearchSQL.plan_forced``): windows of every row the user may see and
    windows with a condition of their own (a type, a keyword, a section)
    alike.  The statement reads a condition's few matches by its indexes
    instead of walking the date's index (``SearchSQL._from_the_edge``;
    ``test_a_sections_window_walks_from_where_its_items_are`` runs that
    plan for a section of old items)."""
    queries = {case.name: case.query for case in QUERIES}
    forced = _recorded_plans(explained, "plan_forced")
    names = {name for name, _, _ in forced}
    assert names >= {
        "created-sorted-limited",
        "modified-sorted-descending-limited",
    }, forced
    assert any(set(queries[name]) - _WINDOW_KEYS for name in names), names
    planned = {
        name
        for (name, _), recorded in explained.recorded.items()
        for plan in recorded.plans
        if plan.from_the_edge and not plan.plan_forced
    }
    assert not planned, planned


def _bounded_scans(node: dict, column: str) -> list[tuple[str, str]]:
    """``(node type, index)`` of each scan of the catalog's table whose
    index condition bounds ``column`` by a value computed in the statement
    (the walk's edge: ``column <= $n``; PostgreSQL 17 and newer show
    ``column <= (InitPlan n).col1``)."""
    found = []
    condition = node.get("Index Cond") or node.get("Recheck Cond") or ""
    computed = r"(\$\d+|\(InitPlan \d+\)\.col\d+)"
    if node.get("Relation Name") == "pgcatalog_objects" and re.search(
        rf"\b{column} [<>]= {computed}", condition
    ):
        found.append((node["Node Type"], node.get("Index Name", "")))
    for child in node.get("Plans", []):
        found += _bounded_scans(child, column)
    return found


def test_the_walk_from_the_edge_is_the_one_plan_of_its_branch(explained):
    """The branch of a window from the edge that runs for many matches
    walks the sort key's index from the edge (``SearchSQL._from_the_edge``)
    in the plan kept blind to the values, whatever the conditions: no
    index answers them there.  Written as the count's conditions, the plan
    for some samples of ``ANALYZE`` read the matches again by a keyword's
    index and the date's range (a bitmap) and sorted them: at 10,000
    documents 10 ms instead of the walk's 4.9."""
    from plone_pgcatalog.store.columns import sql_index_name

    forced = [
        (f"{name}@{user}", plan)
        for name, user, plan in _recorded_plans(explained, "plan_forced")
        if plan.from_the_edge
    ]
    assert len({shown.split("@")[0] for shown, _ in forced}) >= 2, forced
    generics = _kept_plans(explained.dsn, [plan.ids_query() for _, plan in forced])
    for (shown, plan), generic in zip(forced, generics, strict=True):
        column = plan.edge[0].as_string(None).strip('"')
        index = sql_index_name(column)
        scans = _bounded_scans(generic, column)
        outline = f"{shown}\n" + "\n".join(_outline(generic))
        assert scans == [("Index Scan", index)], outline


def _rows_read(node: dict) -> int:
    """The rows all scans of the catalog's table read in an EXPLAIN
    ANALYZE plan (returned, and removed by their filters), every loop."""
    read = 0
    if node.get("Relation Name") == "pgcatalog_objects":
        rows = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        read = rows * node.get("Actual Loops", 1)
    return read + sum(_rows_read(child) for child in node.get("Plans", []))


@pytest.mark.parametrize("order", sorted(SECTIONS))
def test_a_sections_window_walks_from_where_its_items_are(explained, pg, order):
    """The latest 20 items of a section whose items are all older than the
    rest of the catalog, sorted on ``modified`` (and the first 20 of one
    whose items are all newer, ascending: ``SECTIONS``).  Where the planner
    walks the sort key's index for the window, expecting the section's rows
    spread over the order, the walk began at the catalog's end: every row
    of the other sections read first (at 10,220 rows, 15.4 ms instead of
    3.5).  The count, which reads the matches anyway, finds where they begin
    in the order, and the walk starts there (``SearchSQL.edge``).  Here the
    planner's estimate of the section is right and it sorts the section's
    rows instead; the walk is measured with sorts disabled.  The same
    window as the statement without the bound."""
    recorded = explained.sections[order]
    assert recorded.error is None, recorded.error
    [plan] = recorded.plans
    assert plan.edge is not None and plan.sorted_count_apart
    section = pg.execute(
        "SELECT count(*) FROM pgcatalog_objects WHERE path LIKE %s",
        (SECTIONS[order] + "/%",),
    ).fetchone()[0]
    assert 100 < section < explained.catalog_rows / 20
    statement, params = plan.ids_query()
    unbounded = replace(plan, edge=None).ids_query()
    pg.execute("SET enable_sort = off")
    try:
        walked = _rows_walked(explain_analyze(pg, statement, params))
        before = _rows_walked(explain_analyze(pg, *unbounded))
    finally:
        pg.execute("RESET enable_sort")
    assert walked <= section, (walked, section)
    # Without the bound: most of the catalog.
    assert before > MOST * explained.catalog_rows, before
    # The plan kept for the window (``SearchSQL.plan_forced``), made blind
    # to the section: it counts the section's rows and, so few, reads them
    # again and sorts them, instead of walking from their edge through
    # every other section's rows of their dates: the section's folder and
    # its items, read twice.
    assert plan.plan_forced
    [kept] = _kept_plans(explained.dsn, [(statement, params)], analyze=True)
    assert _rows_read(kept) <= 2 * (section + 1), (_rows_read(kept), section)
    window = pg.execute(statement, params).fetchall()
    assert len(window) == 20
    assert window == pg.execute(*unbounded).fetchall()


def test_the_check_of_a_site_alone_probes_the_path_index(explained, pg):
    """``layout.PATH_ENDS`` (the transaction's first read, for
    ``QueryContext.site_alone``), prepared on the catalog's connection: the
    plan PostgreSQL keeps, made blind to the site's path, reads the ends of
    the path's B-tree only (a scan of the table for rows after the site's
    path would read all of it)."""
    from plone_pgcatalog.store import layout

    ends = pg.execute(layout.PATH_ENDS, (SITE,)).fetchone()
    assert layout.site_alone(ends, SITE)
    plan = _kept_plan(explained.dsn, layout.PATH_ENDS, (SITE,))
    outline = "\n".join(_outline(plan))
    assert "Seq Scan" not in str(plan) and "Bitmap" not in str(plan), outline
    assert _indexes_read(plan) == {"pgcatalog_path"}, outline
    assert str(plan).count("'Limit'") >= 3, outline
    generic, custom = _plans_made(explained.dsn, layout.PATH_ENDS, (SITE,))
    assert generic >= 1, (generic, custom)


def test_an_index_objects_lookup_reads_its_columns_index(explained, pg):
    """``_index.get(value)`` on the catalog of more than 10,000 rows:
    plone.app.uuid's lookup of a UID reads the UID column's B-tree, by the
    plan it keeps (``UUIDIndexView``) and by one made for the value; a
    type's objects are read through an index too.  (Comparing ``idx`` on
    every row of the site, it took 34-37 ms at 10,220 rows.)"""
    from plone_pgcatalog.store.schema import sql_index_name

    statement, params = explained.lookups["UID"]
    assert "IS TRUE" in statement.as_string(None)
    for plan in (
        explain(pg, statement, params),
        _kept_plan(explained.dsn, statement, params),
    ):
        assert _indexes_read(plan) == {sql_index_name("UID", "c")}, _outline(plan)
    statement, params = explained.lookups["portal_type"]
    plan = explain(pg, statement, params)
    assert not catalog_scans(plan, explained.partial), _outline(plan)


# -- the plan reader, on plans written by hand ------------------------------


def _scan(kind, index=None, condition=None, **extra):
    node = {"Node Type": kind, "Relation Name": "pgcatalog_objects", **extra}
    if index is not None:
        node["Index Name"] = index
    if condition is not None:
        node["Index Cond"] = condition
    return node


def _bitmap(index, condition):
    return {
        "Node Type": "Bitmap Index Scan",
        "Index Name": index,
        "Index Cond": condition,
        "Parent Relationship": "Outer",
    }


def _heap(bitmap):
    bitmap = dict(bitmap, **{"Parent Relationship": "Outer"})
    return _scan("Bitmap Heap Scan", **{"Plans": [bitmap]})


def _site_bitmap():
    return {
        "Node Type": "BitmapOr",
        "Plans": [
            _bitmap("pgcatalog_path", SITE_ROOT),
            _bitmap("pgcatalog_path", SITE_RANGE),
        ],
    }


def test_reader_finds_a_seq_scan_in_a_subplan():
    plan = {
        "Node Type": "Sort",
        "Plans": [
            _scan(
                "Index Scan",
                "pgcatalog_parent_path",
                "(parent_path = '/plone/a'::text)",
            ),
            dict(_scan("Seq Scan"), **{"Parent Relationship": "InitPlan"}),
        ],
    }
    assert catalog_scans(plan, {}) == ["Seq Scan on pgcatalog_objects"]


def test_reader_tells_a_walk_cut_by_the_window_from_the_count_beside_it():
    walk = dict(
        _scan("Index Scan", "pgcatalog_objects_pkey"),
        **{"Parent Relationship": "Outer", "Actual Rows": 100},
    )
    walk["Rows Removed by Filter"] = 31
    count = dict(
        _scan("Index Scan", "pgcatalog_objects_pkey"),
        **{"Parent Relationship": "InitPlan", "Actual Rows": 9000},
    )
    plan = {"Node Type": "Limit", "Plans": [count, walk]}
    assert catalog_scans(plan, {}) == [
        "Index Scan through all of pgcatalog_objects_pkey",
        CUT + "Index Scan through all of pgcatalog_objects_pkey",
    ]
    assert _rows_walked(plan) == 131
    # Ties of the sort key broken by an incremental sort: still cut; a
    # full sort reads every row before the limit.
    for sort, cut in (("Incremental Sort", True), ("Sort", False)):
        sorted_walk = {
            "Node Type": "Limit",
            "Plans": [
                {"Node Type": sort, "Parent Relationship": "Outer", "Plans": [walk]}
            ],
        }
        assert catalog_scans(sorted_walk, {})[0].startswith(CUT) is cut
        assert _rows_walked(sorted_walk) == (131 if cut else 0)


def test_reader_finds_a_walk_through_a_partial_index_without_condition():
    plan = _scan("Index Scan", "pgcatalog_i_modified_99db3247")
    assert catalog_scans(plan, {"pgcatalog_i_modified_99db3247": False})


def test_reader_accepts_a_walk_through_an_index_that_holds_fewer_rows():
    plan = _scan("Index Scan", "pgcatalog_f_start_2b020927")
    assert not catalog_scans(plan, {"pgcatalog_f_start_2b020927": True})


def test_reader_finds_bitmaps_of_the_site_and_of_security_only():
    from plone_pgcatalog.store.schema import sql_index_name

    security = _bitmap(sql_index_name("allowedRolesAndUsers"), "(... ?| ...)")
    assert catalog_scans(_heap(_site_bitmap()), {})
    assert catalog_scans(_heap(security), {})
    both = {"Node Type": "BitmapAnd", "Plans": [_site_bitmap(), security]}
    assert catalog_scans(_heap(both), {})


def test_reader_accepts_a_bitmap_narrowed_by_the_query():
    by_type = _bitmap("pgcatalog_i_portal_type_56d9f162", "(... = ANY (...))")
    narrowed = {"Node Type": "BitmapAnd", "Plans": [_site_bitmap(), by_type]}
    assert not catalog_scans(_heap(narrowed), {})
    subtree = {
        "Node Type": "BitmapOr",
        "Plans": [
            _bitmap("pgcatalog_path", "(path = '/plone/en'::text)"),
            _bitmap(
                "pgcatalog_path",
                "((path >= '/plone/en/'::text) AND (path < '/plone/en0'::text))",
            ),
        ],
    }
    assert not catalog_scans(_heap(subtree), {})
