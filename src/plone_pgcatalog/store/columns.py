"""Typed columns: the hot catalog indexes as plain columns of the table.

Owns: which kinds of typed column there are (``KINDS``), how each one's
value is derived from the index's value in ``idx`` (one SQL expression,
used by the trigger that keeps the column current, by the batch fill and
by the read-your-writes overlay alike), the registry of columns in the
database (``pgcatalog_columns``: name, kind, ready), and adding and
dropping a column online.

A translator that declares ``column_kind`` gets a column named as its
catalog index, of that kind, where the layout allows one (``column_name``).
The column is always derived in SQL, by one expression per kind
(``derive``), from the index's JSON value as a row is written: ``idx``
is what the catalog writes (add-on index types, values of other types
than the column's), and the column can never disagree with it.  A ready
column of ``ONCE_KINDS`` (a KeywordIndex's list of strings) then takes
the value out of ``idx``: it is stored once, in the column, and readers
of whole values read ``whole_idx`` / ``value_of`` instead of ``idx``
(``stored_once``):

- a ``BEFORE INSERT OR UPDATE OF idx`` trigger sets every column from the
  row's new ``idx`` (``trigger_ddl``, regenerated from the registry table
  whenever a column comes or goes); an ``UPDATE`` that names the keys of
  ``idx`` it changes (``PATCHED_KEYS``: a partial reindex, a sharing
  change) sets only the columns of those keys;
- a partial reindex that gives only such lists (a sharing change's
  ``allowedRolesAndUsers``) is written straight into their columns, from
  the values the commit sends, by the same expressions, ``idx`` untouched
  (``once_patch``: no trigger, no ``idx`` written again);
- rows written before the column existed get it by a fill in batches of
  ``FILL_BATCH`` rows, each its own short transaction, while the site
  runs (``add_column``); writers wait for one batch at most;
- a column is kept in the row (storage MAIN), unless its values are wide
  (``WIDE``): decided before the fill, so that rows take their form as
  they are filled (``move_wide_out``: the upgrade to schema 7 of columns
  made before);
- the column counts as ``ready`` once filled and indexed: only then do
  searches use it (``READY``, read once per request in the request's
  snapshot, so a search and the columns it uses agree).

Dropping a column first marks it not ready (new requests stop using it),
then drops it under an exclusive lock, which waits for the requests that
read it as ready: they took the table's lock in the same statement
(``READY``).

Must not open connections: functions take an autocommit connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog.store import layout
from psycopg import sql

import functools
import json
import logging
import math
import psycopg
import time

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    """One kind of typed column."""

    #: the column's SQL type
    sql_type: str
    #: the SQL index method serving it, or None (a test no index speeds up)
    method: str | None
    #: SQL deriving the column from ``{v}``, the index's JSONB value; NULL
    #: where the value has another type (queries then use ``idx``)
    derive: str
    #: of variable length (else fixed, always in the row)
    varlena: bool = True
    #: One more SQL index the column needs, or None: what follows ``ON
    #: pgcatalog_objects`` in its ``CREATE INDEX``, ``{c}`` the column
    #: (``bound_index_name``)
    bound: str | None = None


def _integer(value: str, below: int = 2**63 - 1) -> str:
    # Integral numbers whose size is under ``below`` (a bigint's range);
    # others stay in ``idx`` only.
    return (
        f"CASE WHEN jsonb_typeof({value}) = 'number'"
        f" AND ({value})::numeric = trunc(({value})::numeric)"
        f" AND abs(({value})::numeric) < {below}"
        f" THEN ({value})::numeric::bigint END"
    )


#: ``[since, until]`` in minutes, ``null`` an open end (DateRangeIndex):
#: the closed range, or ``empty`` where since > until (ZCatalog never
#: finds such an object: no moment lies in it).
_LOW, _HIGH = _integer("({v} -> 0)"), _integer("({v} -> 1)", below=2**63 - 2)
_RANGE = (
    "CASE WHEN jsonb_typeof({v}) = 'array' THEN"
    f" CASE WHEN ({_LOW}) > ({_HIGH}) THEN 'empty'::int8range"
    f" ELSE int8range({_LOW}, ({_HIGH}) + 1) END END"
)

#: Characters of a string that a typed column holds whole.  An SQL index
#: entry has a limit (a B-tree's 2,704 bytes, a GIN key's 2,712), and a
#: longer value failed the commit (``ProgramLimitExceeded``): an add-on's
#: FieldIndex of URLs, a tag pasted from a text.  A longer string is held
#: as its first ``TEXT_KEPT + 1`` characters, in a text column and in a
#: keywords column (whose list then stays in ``idx`` too: ``ONCE_KINDS``).
#: So held, it sorts, and compares with any shorter value, as the whole
#: string does, and equals no value a column holds whole; a query value
#: that long is looked up in ``idx`` (``registry.fits``), and readers of
#: values take a held string that long from ``idx``.  At most 4 bytes a
#: character: 2,004 bytes.
TEXT_KEPT = 500

#: A string as a typed column holds it (``TEXT_KEPT``), from text ``{s}``;
#: so are the terms of a numbered list (``NUMBERED``): a search by a term
#: that long reads ``idx`` (``registry.KeywordTranslator.overlaps``).
_HELD = f"left({{s}}, {TEXT_KEPT + 1})"

_STRINGS = (
    "ARRAY(SELECT {element} FROM jsonb_array_elements({{v}}) AS e"
    " WHERE jsonb_typeof(e) = 'string')"
)
_HELD_KEYWORDS = (
    "CASE WHEN jsonb_typeof({v}) = 'array' THEN "
    + _STRINGS.format(element=_HELD.format(s="e #>> '{}'"))
    + " END"
)

KINDS: dict[str, Kind] = {
    # FieldIndex, UUIDIndex: strings, compared by code point as in Python.
    # A string longer than ``TEXT_KEPT`` by its first characters.
    "text": Kind(
        'text COLLATE "C"',
        "btree",
        "CASE WHEN jsonb_typeof({v}) = 'string' THEN "
        + _HELD.format(s="{v} #>> '{}'")
        + ' COLLATE "C" END',
    ),
    # KeywordIndex: the object's string keywords (a long one by its first
    # characters).
    "keywords": Kind("text[]", "gin", _HELD_KEYWORDS),
    "boolean": Kind(
        "boolean",
        "btree",
        "CASE WHEN jsonb_typeof({v}) = 'boolean' THEN ({v})::boolean END",
        varlena=False,
    ),
    # DateIndex (minutes), positions in a folder.
    "integer": Kind("bigint", "btree", _integer("{v}"), varlena=False),
    # DateRangeIndex (effectiveRange).  The upper end is stored as the
    # next minute, exclusive; below the biggest bigint, so +1 fits.  Its
    # B-trees serve no search's own test (``@>``; a moment lies in nearly
    # every range): they find the few rows whose range lies wholly after a
    # moment, is empty or missing (the column's, in range order), or ends
    # at or before it (its upper ends; NULL, deduplicated, where a range
    # has none: 12 pages at 10,000 documents), which a count per group
    # takes away (``registry.DateRangeTranslator.residue``).  An SP-GiST
    # index of the ranges, grown in the order content is made, read all
    # of its 180 pages for that at 10,000 documents (2.2 ms; made again at
    # once, 5 pages): it keeps the shape its splits gave it as rows came.
    # B-trees stay balanced: 6 pages read, 0.04 ms.  The upper ends'
    # index is whole, not partial: the planner reads the statistics of an
    # expression from an index without a predicate only, and estimated a
    # third of the rows without them (it then counted through a covering
    # index instead, 2.9 ms).
    "range": Kind("int8range", "btree", _RANGE, bound="(upper({c}))"),
    # The number of a KeywordIndex's list of strings (``NUMBERED``): the
    # same list, the same number (``SETS_DDL``).  Written by the trigger,
    # the fill and ``once_patch`` only: finding a number may add one.
    "set": Kind(
        "integer",
        None,
        "pgcatalog_keyword_set(" + _HELD_KEYWORDS + ")",
        varlena=False,
    ),
}

#: Columns of the table that an index's column must not be named as.
BASE_COLUMNS = frozenset(
    {"zoid", "path", "parent_path", "path_depth", "idx", "meta", "searchable_text"}
)

#: How long adding or dropping a column waits for its exclusive lock (it
#: waits for every transaction that has read the table, and new readers
#: wait behind it); a change that does not get it is tried again.  At least
#: ``AUTOVACUUM_MARGIN`` past the server's ``deadlock_timeout``
#: (``_set_exclusive_lock_timeout``).
EXCLUSIVE_LOCK_TIMEOUT = "1s"
#: PostgreSQL cancels an autovacuum that blocks a lock request only when
#: the waiter's deadlock check runs, after ``deadlock_timeout`` (1 s by
#: default).  With a lock timeout of 1 s the wait gave up first, every time
#: an autovacuum worked on the table (PostgreSQL 18, three tries of three);
#: with 1.5 s the lock came after 1.0 s.
AUTOVACUUM_MARGIN = "500ms"

#: Rows each transaction of a fill updates.
FILL_BATCH = 2000

#: Typed values are kept in the row (storage MAIN: the table's TOAST
#: settings move ``idx``, ``meta`` and ``searchable_text`` out first,
#: ``schema.TABLE_DDL``), unless a column's values are this wide on
#: average (bytes, uncompressed): then they go out too (storage
#: EXTENDED), so that rows stay narrow.  Measured on the rows of the
#: table when the column is added (``_wide``).
WIDE = 256

#: Indexes whose values are wide on every Plone site, for a column added
#: when the table has no rows to measure yet (a new site): the interfaces
#: an object provides, some 60 names (1.8 KB).  Kept in the row, they
#: made a Plone page's row 1.2 KB instead of 0.5 (four rows a page
#: instead of 16).
WIDE_INDEXES = frozenset({"object_provides"})

#: Rows measured to tell whether a column's values are wide.
WIDE_SAMPLE = 1000

COLUMNS_TABLE = "pgcatalog_columns"

#: The registry of typed columns (part of ``schema.BASE_DDL``).
COLUMNS_DDL = """\
CREATE TABLE IF NOT EXISTS pgcatalog_columns (
    name  text PRIMARY KEY,
    kind  text NOT NULL,
    ready boolean NOT NULL DEFAULT false
);
"""

#: KeywordIndexes whose lists of strings are numbered, each distinct list
#: once (``SETS_DDL``): a second typed column (``set_column``, kind
#: ``set``) holds the number of the row's list.  On a Plone site a few
#: lists of who may view serve every object, so a search's security test
#: becomes a test of a few numbers, made on the covering indexes, which
#: hold the number instead of the list (``cover``).  Measured at 500
#: documents (1,512 rows, 3 lists), a count of 1,490 matches: 0.54 ms of
#: execution with the list, 0.23 with its number (``benchmarks/README.rst``,
#: "Numbered role lists").
NUMBERED = ("allowedRolesAndUsers",)

#: The end of the name of a column of list numbers, after its index's
#: name; no index's own column is named so (``column_name``).
SET_SUFFIX = ":set"

SETS_TABLE = "pgcatalog_keyword_sets"
SETS_FUNCTION = "pgcatalog_keyword_set"

#: The numbered lists (part of ``schema.BASE_DDL``), shared by the sites
#: of the database.  A list is found by the SHA-256 of its text: a B-tree
#: entry of the list itself would fail past 2,704 bytes (a long local
#: roles list).  The number of a list is written in the transaction that
#: first writes a row with it, or in an earlier one, so that every
#: snapshot that sees the row sees its list.  Two transactions adding the
#: same list: the second waits for the first (``ON CONFLICT``), then reads
#: its number.  Lists are never removed: a number may be in a row of a
#: snapshot still open, and unused lists are few (a list is who may view).
#: The GIN index finds the lists of a user's terms where there are many
#: (one per owner of private content on an intranet): 5,001 lists, the
#: lists of a member's terms 1.75 ms by reading them all, 0.03 by it.
#:
#: The function remembers, for the rest of the transaction, the last list
#: it numbered (the setting ``LAST_LIST``: the number, a space, the list):
#: a sharing change or a rebuild gives one list to many rows one after the
#: other, and each then costs a comparison instead of a digest and a
#: lookup (1,000 rows given one more role: the ``UPDATE`` 79.8 -> 75.7 ms,
#: ``benchmarks/README.rst``, "What a sharing change's UPDATE pays").  A
#: setting made in a subtransaction is undone with it, as the row it may
#: have inserted is.  Made again with the trigger (``_rebuild_trigger``).
LAST_LIST = "pgcatalog.last_list"
SET_FUNCTION = f"""\
CREATE OR REPLACE FUNCTION pgcatalog_keyword_set(list text[]) RETURNS integer
LANGUAGE plpgsql AS $pgcatalog_sets$
DECLARE
    here text;
    last text;
    key bytea;
    number integer;
BEGIN
    IF list IS NULL THEN
        RETURN NULL;
    END IF;
    here := list::text;
    last := current_setting('{LAST_LIST}', true);
    IF last IS NOT NULL AND last <> ''
            AND substr(last, strpos(last, ' ') + 1) = here THEN
        RETURN split_part(last, ' ', 1)::integer;
    END IF;
    key := sha256(convert_to(here, 'UTF8'));
    SELECT id INTO number FROM pgcatalog_keyword_sets WHERE digest = key;
    IF number IS NULL THEN
        INSERT INTO pgcatalog_keyword_sets (digest, terms) VALUES (key, list)
            ON CONFLICT (digest) DO NOTHING RETURNING id INTO number;
    END IF;
    IF number IS NULL THEN
        SELECT id INTO number FROM pgcatalog_keyword_sets WHERE digest = key;
    END IF;
    IF number IS NULL THEN
        RAISE EXCEPTION 'plone_pgcatalog: the list % has no number', list
            USING ERRCODE = 'serialization_failure';
    END IF;
    PERFORM set_config('{LAST_LIST}', number || ' ' || here, true);
    RETURN number;
END $pgcatalog_sets$;
"""
SETS_DDL = """\
CREATE TABLE IF NOT EXISTS pgcatalog_keyword_sets (
    id     integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest bytea NOT NULL UNIQUE,
    terms  text[] NOT NULL
);
CREATE INDEX IF NOT EXISTS pgcatalog_keyword_sets_terms
    ON pgcatalog_keyword_sets USING gin (terms);
""" + SET_FUNCTION


#: Counts kept per group of rows (``COUNTS_TABLE``): the typed columns
#: that make a group, and their kinds.  A search whose conditions name no
#: other column (``query.counted_by_groups``: a type, a state, who may
#: see, in a site alone in the table) counts its matches by adding up its
#: groups' counts instead of reading an index entry per match (about 150
#: ns each: 1.5 ms for 10,990 matches at 10,000 documents, 24 ms for
#: 100,000 at 1,000,000 rows; ``benchmarks/README.rst``, "Session 29").
GROUPED = {
    "portal_type": "text",
    "review_state": "text",
    "allowedRolesAndUsers" + SET_SUFFIX: "set",
}

COUNTS_TABLE = "pgcatalog_counts"

#: The counts (part of ``schema.BASE_DDL``), shared by the sites of the
#: database: a search uses them only where its site is alone in the table.
#: Its columns are named as the grouped columns of the catalog's table, so
#: that a search's own conditions select its groups.  A group's count is
#: the sum of its rows' ``n`` (a group without a value in a column has
#: NULL there): a write under the commit lock merges its change into one
#: row per group, a pack adds rows of its own (``COUNTS_FUNCTION_DDL``).
COUNTS_DDL = """\
CREATE TABLE IF NOT EXISTS pgcatalog_counts (
    portal_type                text COLLATE "C",
    review_state               text COLLATE "C",
    "allowedRolesAndUsers:set" integer,
    n                          bigint NOT NULL
);
"""

#: The statement-level triggers that keep the counts: each statement that
#: writes the catalog's table adds its net change per group, whatever
#: wrote it (the processor's statements, ``once_patch``, a relocation,
#: the cascade of a pack, a rebuild's batches).  Made where every grouped
#: column is ready, and dropped before one goes (``_count_groups``): a
#: trigger naming a dropped column would fail every write.
COUNTS_FUNCTION = "pgcatalog_count_groups"
COUNTS_TRIGGERS = {
    "INSERT": ("pgcatalog_counts_inserted", "NEW TABLE AS new_rows"),
    "UPDATE": (
        "pgcatalog_counts_updated",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
    ),
    "DELETE": ("pgcatalog_counts_deleted", "OLD TABLE AS old_rows"),
}
_GROUP = 'portal_type, review_state, "allowedRolesAndUsers:set"'
# An update: each row's old group one less, its new one one more (a row
# whose group is the same adds nothing): no join of the two tables, whose
# plan the trigger would keep whatever their size.  Measured on the
# 500-document benchmark's site: a 1,000-row sharing change's ``UPDATE``
# 83 ms with the triggers and without, a rewrite of 1,000 whole rows 75
# and 74 ms; the sharing change through Zope 211-247 ms with them,
# 240-242 without (``profile_writes.py``).
_CHANGES = {
    "INSERT": "SELECT " + _GROUP + ", 1 AS d FROM new_rows",
    "DELETE": "SELECT " + _GROUP + ", -1 AS d FROM old_rows",
    "UPDATE": (
        "SELECT " + _GROUP + ", -1 AS d FROM old_rows"
        " UNION ALL SELECT " + _GROUP + ", 1 FROM new_rows"
    ),
}
#: The SQL indexes of the counts: a search's conditions on a type or a
#: state select its groups through them, and a commit's merge finds the
#: rows of its groups by the type (``_SAME_GROUP``).  At 100,156 rows
#: (2,389 groups; ``benchmarks/README.rst``, "Session 33") a type's count
#: read every group (0.28-0.49 ms of its execution), and a merge too (its
#: ``DELETE`` 1.7 ms, 0.14 by the index).  Made with the
#: triggers (``_count_groups``): on a database made before, by the step to
#: profile 23.
COUNTS_INDEXES_DDL = """\
CREATE INDEX IF NOT EXISTS pgcatalog_counts_type
    ON pgcatalog_counts (portal_type, review_state);
CREATE INDEX IF NOT EXISTS pgcatalog_counts_state ON pgcatalog_counts (review_state);
"""
# A row of the same group: no index answers ``IS NOT DISTINCT FROM``, so
# the rows of the group's type (or without one) are found by the index
# first, and the test picks the group's among them.
_SAME_GROUP = (
    '(c.portal_type, c.review_state, c."allowedRolesAndUsers:set")'
    " IS NOT DISTINCT FROM"
    ' (x.portal_type, x.review_state, x."allowedRolesAndUsers:set")'
    " AND (c.portal_type = x.portal_type OR c.portal_type IS NULL)"
)
#: A commit's statements (``processor.CatalogStateProcessor.finalize``,
#: under zodb-pgjsonb's commit lock) merge their change into the rows of
#: the groups they change, one row each: the setting ``MERGING`` says so,
#: for the rest of the transaction.  Any other statement only adds rows of
#: its own, which lock no row a commit merges: a pack's cascade from
#: ``object_state`` (it removes the rows of the objects it finds
#: unreachable: orphans, which the catalog was never told of) runs in a
#: long transaction without the commit lock, and a merge there would make
#: every commit of the group wait for the pack's end holding the commit
#: lock, or deadlock with it (found by helper-41).  The group's next
#: commit merges them once the pack has committed.  A statement that
#: changes no group (a column's fill in batches) touches no row.
MERGING = "pgcatalog.merge_counts"
MERGE_COUNTS = f"SELECT set_config('{MERGING}', 'on', true)"
#: A statement's net change per group (``{rows}``: one of ``_CHANGES``).
_NET = (
    "SELECT " + _GROUP + ", sum(d) AS n FROM ({rows}) AS d"
    " GROUP BY " + _GROUP + " HAVING sum(d) <> 0"
)
_MERGE = (
    "WITH x AS (" + _NET + "),"
    " gone AS (DELETE FROM pgcatalog_counts AS c USING x WHERE "
    + _SAME_GROUP
    + ' RETURNING c.portal_type, c.review_state, c."allowedRolesAndUsers:set",'
    " c.n)"
    " INSERT INTO pgcatalog_counts SELECT " + _GROUP + ", sum(n)"
    " FROM (SELECT * FROM gone UNION ALL SELECT * FROM x) AS m"
    " GROUP BY " + _GROUP + " HAVING sum(n) <> 0"
)
_ADD = "INSERT INTO pgcatalog_counts " + _NET


def _by_operation(template: str, indent: str) -> str:
    """plpgsql running ``template`` (an SQL statement of ``{rows}``) on the
    change of the trigger's operation (``_CHANGES``)."""
    branches = [
        f"{'ELSIF' if number else 'IF'} TG_OP = '{operation}' THEN\n"
        f"{indent}    {template.format(rows=rows)};"
        for number, (operation, rows) in enumerate(_CHANGES.items())
    ]
    return f"\n{indent}".join(branches) + f"\n{indent}END IF;"


COUNTS_FUNCTION_DDL = f"""\
CREATE OR REPLACE FUNCTION {COUNTS_FUNCTION}() RETURNS trigger
LANGUAGE plpgsql AS $pgcatalog_counts$
BEGIN
    IF current_setting('{MERGING}', true) IS DISTINCT FROM 'on' THEN
        {_by_operation(_ADD, "        ")}
    ELSE
        {_by_operation(_MERGE, "        ")}
    END IF;
    RETURN NULL;
END $pgcatalog_counts$;
"""
#: The counts made anew from the rows (under the commit lock).
_COUNT_ANEW = (
    "DELETE FROM pgcatalog_counts; INSERT INTO pgcatalog_counts SELECT "
    + _GROUP
    + ", count(*) FROM pgcatalog_objects GROUP BY "
    + _GROUP
)
#: Whether the counts are kept (their triggers are there): read with the
#: ready columns (``READY``).
_COUNTED = (
    "EXISTS (SELECT FROM pg_trigger WHERE tgrelid = 'pgcatalog_objects'::regclass"
    " AND tgname = '" + COUNTS_TRIGGERS["DELETE"][0] + "')"
)


def _count_groups(cur: psycopg.Cursor, ready: dict[str, str]) -> None:
    """Keep the counts per group where every ``GROUPED`` column is
    ready: the triggers made, and the counts made anew from the rows where
    they were not kept; else the triggers dropped and the counts emptied.
    In the transaction that makes the typed-columns trigger, under the
    commit lock (``_rebuild_trigger``)."""
    cur.execute("SELECT " + _COUNTED)
    kept = cur.fetchone()[0]
    wanted = all(ready.get(name) == kind for name, kind in GROUPED.items())
    if wanted:
        cur.execute(COUNTS_INDEXES_DDL)
        cur.execute(COUNTS_FUNCTION_DDL)
        if not kept:
            for event, (name, tables) in COUNTS_TRIGGERS.items():
                cur.execute(
                    sql.SQL(
                        "CREATE OR REPLACE TRIGGER {} AFTER {} ON pgcatalog_objects"
                        " REFERENCING {} FOR EACH STATEMENT EXECUTE FUNCTION {}()"
                    ).format(
                        sql.Identifier(name),
                        sql.SQL(event),
                        sql.SQL(tables),
                        sql.Identifier(COUNTS_FUNCTION),
                    )
                )
            cur.execute(_COUNT_ANEW)
        return
    for statement in counts_triggers_dropped():
        cur.execute(statement)
    cur.execute("DELETE FROM pgcatalog_counts")


def counts_triggers_dropped() -> list[sql.Composed]:
    """The statements that drop the triggers of the counts per group."""
    return [
        sql.SQL("DROP TRIGGER IF EXISTS {} ON pgcatalog_objects").format(
            sql.Identifier(name)
        )
        for name, _tables in COUNTS_TRIGGERS.values()
    ]


def set_column(index_name: str) -> str:
    """The column of the list numbers of ``NUMBERED`` index ``index_name``."""
    return index_name + SET_SUFFIX


def source_key(name: str) -> str:
    """The key in ``idx`` that typed column ``name`` is derived from: its
    index's name."""
    return name.removesuffix(SET_SUFFIX)


def derivable(columns: dict[str, str]) -> dict[str, str]:
    """Of ``columns`` (``{column: kind}``), those a statement can derive
    from a row's ``idx`` (``derive``) without writing: all but the list
    numbers.  A search with pending changes reads only these
    (``query.build_query``, ``overlay.Overlay.source``)."""
    return {name: kind for name, kind in columns.items() if kind != "set"}


TRIGGER = "pgcatalog_typed_columns"

#: The typed columns a search may use, read once per request in its
#: snapshot, after ``LOCK``: the table's lock, taken before, keeps a
#: column's drop waiting until the request ends.
LOCK = "LOCK TABLE pgcatalog_objects IN ACCESS SHARE MODE"
#: Each row also carries the table's estimated number of rows (as the
#: last VACUUM or ANALYZE counted them; -1 before the first): a search's
#: statement takes its shape by the size of the catalog (``ready_rows``);
#: and so the estimated number of numbered lists (``MANY_LISTS``).
#: And, for a range column, the valid whole SQL indexes of one column
#: that are on it or on an expression: a site whose column was made
#: before its kind had its own (``KINDS``) gets them from an upgrade step
#: (``index_columns``), and until then no count takes away the rows out
#: of a range (``ready_rows``), which would read the table.  (0.024 ms
#: more a request, prepared: 0.085 instead of 0.061.)
READY = (
    "SELECT c.name, c.kind, t.reltuples, (SELECT l.reltuples FROM pg_class AS l"
    " WHERE l.oid = to_regclass('pgcatalog_keyword_sets')), " + _COUNTED + ","
    " CASE WHEN c.kind = 'range' THEN ARRAY(SELECT i.indexrelid::regclass::text"
    " FROM pg_index AS i WHERE i.indrelid = a.attrelid AND i.indnatts = 1"
    " AND i.indkey[0] IN (0, a.attnum) AND i.indpred IS NULL AND i.indisvalid)"
    " END"
    " FROM pgcatalog_columns AS c"
    " JOIN pg_attribute AS a ON a.attrelid = 'pgcatalog_objects'::regclass"
    " AND a.attname = c.name AND NOT a.attisdropped"
    " JOIN pg_class AS t ON t.oid = a.attrelid WHERE c.ready"
)


def ready_rows(found) -> tuple[dict[str, str], float, float, frozenset | None]:
    """``({column: kind}, estimated rows of the table, estimated numbered
    lists, the counts per group)`` from the rows of ``READY`` (0 rows and
    lists, and no counts, when no column is ready).  The counts per group
    are None where they are not kept, else the range columns with their
    SQL index, whose rows out of a range a count takes away from its
    groups' (``query.QueryContext.group_counts``)."""
    counted = any(row[4] for row in found)
    indexed = frozenset(
        name
        for name, kind, *_, present in found
        if present is not None and set(column_index_names(name, kind)) <= set(present)
    )
    return (
        {name: kind for name, kind, *_ in found},
        max((row[2] for row in found), default=0.0),
        max((row[3] or 0.0 for row in found), default=0.0),
        indexed if counted else None,
    )


#: From how many numbered lists on a search tests a row's number by a
#: semi-join on the lists of the user's terms, not against an array of
#: their numbers (``registry.KeywordTranslator.overlaps``).  PostgreSQL
#: tests a number against such an array one element after the other:
#: about 4 ns a row and list (20,000 rows, 5,002 lists: 143 ms); the
#: semi-join costs about 0.2 ms more to plan, and at 500 documents with 3
#: lists the whole statement 0.1-0.45 ms more than the array (see
#: ``benchmarks/README.rst``, "Numbered role lists").  At 32 lists, 1,500
#: matches cost about that much more with the array.
MANY_LISTS = 32


def many_lists(lists: float) -> bool:
    """Whether ``lists`` (an estimate, -1 unknown) is ``MANY_LISTS`` or more."""
    return lists >= MANY_LISTS


def column_name(index_name: str) -> str | None:
    """The typed column of catalog index ``index_name``: its own name,
    where that can be a column (not one of the table's own, at most 63
    bytes: PostgreSQL's limit for a name), else None (``idx`` only)."""
    if index_name in BASE_COLUMNS or not index_name:
        return None
    if index_name.endswith(SET_SUFFIX):
        return None
    if len(index_name.encode("utf-8")) > 63 or "\x00" in index_name:
        return None
    return index_name


def derive(kind: str, value: sql.Composable) -> sql.Composed:
    """The typed value of ``kind`` computed from ``value`` (JSONB)."""
    # Each ``{v}`` of the template is the same composed expression.
    first, *rest = KINDS[kind].derive.split("{v}")
    composed = [sql.SQL(first)]
    for part in rest:
        composed += [value, sql.SQL(part)]
    return sql.Composed(composed)


def ready_column(
    ready: dict[str, str], index_name: str, kind: str | None
) -> sql.Composable | None:
    """The column of ``index_name`` if ``ready`` (``{column: kind}``, the
    columns a request may use) has it with ``kind``, else None."""
    if kind is None or ready.get(index_name) != kind:
        return None
    return layout.column(index_name)


#: Kinds whose value an index without its ready column computes from
#: ``idx`` (``typed_value``), on an SQL index of that expression
#: (``held_value``).  A FieldIndex (or UUIDIndex) has no column when its
#: name cannot be one (over 63 bytes), when another site of the database
#: has an index of another type so named, or while its column waits for
#: its lock.  Its B-tree indexes were on the JSON value and its text
#: (``layout.json_key``, ``text_key``): a string over 2,704 bytes failed
#: the commit there.  The column's own expression holds a long string by
#: its first characters (``TEXT_KEPT``), and the translators then search
#: it as they search the column.  The other kinds hold numbers, booleans
#: or ranges, or are served by GIN, which hashes long keys.
COMPUTED_KINDS = frozenset({"text"})


@functools.lru_cache(maxsize=1024)
def held_value(index_name: str, kind: str) -> sql.Composed:
    """The value a typed column of ``kind`` would hold for ``index_name``,
    computed from ``idx``, in parentheses: the expression of the SQL index
    of an index without its column (``COMPUTED_KINDS``), as searches write
    it (PostgreSQL matches the two)."""
    return sql.Composed(
        [sql.SQL("("), derive(kind, layout.json_key(index_name)), sql.SQL(")")]
    )


def typed_value(
    ready: dict[str, str], index_name: str, kind: str | None
) -> sql.Composable | None:
    """What a search compares and sorts as the typed value of
    ``index_name``: its column if ``ready`` has it with ``kind``; for
    ``COMPUTED_KINDS``, else, the same value computed from ``idx``
    (``held_value``); else None (the translator reads ``idx``)."""
    column = ready_column(ready, index_name, kind)
    if column is None and kind in COMPUTED_KINDS:
        return held_value(index_name, kind)
    return column


def derived_columns(
    columns: dict[str, str], idx: sql.Composable
) -> list[sql.Composable]:
    """``derive(...) AS "name"`` of each typed column, from ``idx``: the
    columns of a row the overlay computes (``overlay.Overlay.source``)."""
    return [
        sql.SQL("{} AS {}").format(
            derive(kind, sql.SQL("({} -> {})").format(idx, sql.Literal(name))),
            sql.Identifier(name),
        )
        for name, kind in sorted(derivable(columns).items())
    ]


#: The kinds of typed column whose values are stored once: in the column,
#: not in ``idx`` too, once the column is ready (``stored_once``): a
#: KeywordIndex's list of strings (``object_provides``: some 60 names, 70 %
#: of a Plone page's ``idx``).  At 500 documents a row took 3,479 bytes
#: instead of 2,571, its ``idx`` 1,429 instead of 522, the table with its
#: TOAST 8.6 MB instead of 6.9; writes cost the same (a sharing change's
#: ``UPDATE`` of 1,000 rows, whole rows: ``benchmarks/README.rst``, "Each
#: value stored once").  A list with other values than strings stays in
#: ``idx`` (its column holds the strings).
ONCE_KINDS = ("keywords",)


def stored_once(columns: dict[str, str]) -> frozenset[str]:
    """Of ready ``columns`` (``{column: kind}``), those whose keys the
    trigger takes out of ``idx`` (``ONCE_KINDS``): a row's value of such
    an index is in ``idx`` only where the column cannot give it back."""
    return frozenset(name for name, kind in columns.items() if kind in ONCE_KINDS)


def restored(column: sql.Composable) -> sql.Composed:
    """The JSON value a column of ``ONCE_KINDS`` gives back (NULL for
    NULL)."""
    return sql.SQL("to_jsonb({})").format(column)


def whole_idx(row: sql.Composable, columns: dict[str, str]) -> sql.Composable:
    """A row's ``idx`` with every value (SQL): its own keys, and the value
    of each column stored once (``stored_once`` of the ready ``columns``)
    whose key it does not hold.  ``row`` is the row's name in the
    statement (a table alias).  What readers of whole values read
    (``getIndexDataForRID``, the overlay's stored rows, the index views,
    reports), instead of ``idx``."""
    once = sorted(stored_once(columns))
    if not once:
        return sql.SQL("{}.idx").format(row)
    pairs = sql.SQL(", ").join(
        sql.SQL("{}, {}").format(
            sql.Literal(name),
            restored(sql.SQL("{}.{}").format(row, sql.Identifier(name))),
        )
        for name in once
    )
    return sql.SQL("(jsonb_strip_nulls(jsonb_build_object({})) || {}.idx)").format(
        pairs, row
    )


def value_of(
    row: sql.Composable, index_name: str, columns: dict[str, str]
) -> sql.Composable:
    """One index's JSON value of a row (SQL), wherever it is stored: in
    ``idx``, or, for a column stored once, in the column where ``idx`` has
    none (``whole_idx``)."""
    key = sql.SQL("({}.idx -> {})").format(row, sql.Literal(index_name))
    if index_name not in stored_once(columns):
        return key
    return sql.SQL("COALESCE({}, {})").format(
        key, restored(sql.SQL("{}.{}").format(row, sql.Identifier(index_name)))
    )


def sql_index_name(index_name: str) -> str:
    """The name of the SQL index of a typed column."""
    return layout.sql_index_name(index_name, "c")


def bound_index_name(index_name: str) -> str:
    """The name of the second SQL index of a typed column whose kind has
    one (``Kind.bound``)."""
    return layout.sql_index_name(index_name, "e")


def column_index_names(name: str, kind: str) -> list[str]:
    """The names of the SQL indexes typed column ``name`` of ``kind`` has
    (``column_indexes``).  Named without composing their statements: every
    transaction's first read asks (``ready_rows``), and composing them took
    37 us of it."""
    names = []
    if KINDS[kind].method is not None:
        names.append(sql_index_name(name))
    if KINDS[kind].bound is not None:
        names.append(bound_index_name(name))
    return names


def column_indexes(name: str, kind: str) -> list[tuple[str, sql.Composed]]:
    """``(name, CREATE INDEX statement)`` of each SQL index of typed
    column ``name`` of ``kind`` (``KINDS``: its ``method``'s, and its
    ``bound`` one), made where missing."""
    made = []
    column = sql.Identifier(name)
    if KINDS[kind].method is not None:
        index = sql_index_name(name)
        made.append(
            (
                index,
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON pgcatalog_objects USING {} ({})"
                ).format(sql.Identifier(index), sql.SQL(KINDS[kind].method), column),
            )
        )
    if KINDS[kind].bound is not None:
        index = bound_index_name(name)
        made.append(
            (
                index,
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON pgcatalog_objects ").format(
                    sql.Identifier(index)
                )
                + sql.SQL(KINDS[kind].bound).format(c=column),
            )
        )
    return made


# -- the registry and the trigger ------------------------------------------------


def registered(cur: psycopg.Cursor) -> dict[str, tuple[str, bool]]:
    """``{name: (kind, ready)}`` of every typed column of the database.

    Only the columns the table has: a table made again (an upgrade that
    builds it beside, a schema put back) leaves registry rows behind,
    which ``add_column`` replaces.
    """
    cur.execute(
        "SELECT c.name, c.kind, c.ready FROM pgcatalog_columns AS c"
        " JOIN pg_attribute AS a ON a.attrelid = to_regclass('pgcatalog_objects')"
        " AND a.attname = c.name AND NOT a.attisdropped"
    )
    return {name: (kind, ready) for name, kind, ready in cur.fetchall()}


#: A setting of the writing transaction: the keys of ``idx`` (a JSON list
#: of index names) that the ``UPDATE`` about to run changes, in any of its
#: rows; the trigger then derives only their columns (``trigger_ddl``).
#: Set just before that statement and emptied just after it
#: (``store.processor``).  Each other key keeps its value in ``idx``, and
#: so its column the value derived from it.  A sharing change of 1,000
#: rows: the trigger deriving all 26 columns of a Plone site took half of
#: the statement's time (``benchmarks/write_cost_probe.py``).
PATCHED_KEYS = "pgcatalog.patched_keys"

#: A setting of the writing transaction, "on" for an ``UPDATE`` that writes
#: whole rows (every key of each row's ``idx``): the trigger derives every
#: column, as for an ``INSERT``.  Without it, a key stored once
#: (``stored_once``) that a whole row no longer has would look unwritten,
#: its column kept.  A setting of its own, with ``PATCHED_KEYS`` unset: the
#: trigger of schemas 12-13 (before the upgrade to 14 has made it again)
#: derives every column where no keys are named.
WHOLE_ROWS = "pgcatalog.whole_rows"

#: A setting of a transaction that puts values stored once back into
#: ``idx`` (``_drop_column``): the keys (a JSON list) the trigger leaves in
#: ``idx`` in the rows it writes.
KEPT_KEYS = "pgcatalog.kept_keys"


def _derive_into(names: list[str], columns: dict[str, str]) -> sql.Composed:
    """``SELECT ... INTO NEW."name", ...;``: the columns ``names`` derived
    from the row's new ``idx``.  A list's number whose list is derived too
    is then numbered from the list's column (``pgcatalog_keyword_set``):
    the list is made from ``idx`` once, not twice."""
    numbered = [
        name
        for name in names
        if columns[name] == "set"
        and source_key(name) in names
        and columns[source_key(name)] == "keywords"
    ]
    selected = [name for name in names if name not in numbered]
    statement = sql.SQL("SELECT {} INTO {};").format(
        sql.SQL(", ").join(
            derive(
                columns[name],
                sql.SQL("(NEW.idx -> {})").format(sql.Literal(source_key(name))),
            )
            for name in selected
        ),
        sql.SQL(", ").join(sql.SQL("NEW.") + sql.Identifier(name) for name in selected),
    )
    return sql.SQL(" ").join(
        [
            statement,
            *(
                sql.SQL("NEW.{} := pgcatalog_keyword_set(NEW.{});").format(
                    sql.Identifier(name), sql.Identifier(source_key(name))
                )
                for name in numbered
            ),
        ]
    )


def trigger_ddl(
    columns: dict[str, str], once: frozenset[str] = frozenset()
) -> sql.Composed:
    """The trigger that derives the typed columns of ``columns`` from a
    written row's ``idx``: every one (one ``SELECT ... INTO`` for all of
    them) for an ``INSERT`` and an ``UPDATE`` of whole rows
    (``WHOLE_ROWS``); for an ``UPDATE`` that names the keys
    it changes, the columns of those keys; for one that names nothing, the
    columns of the keys whose value it changes.  Then each key of a column
    of ``once`` (``stored_once``) leaves ``idx`` where its column gives
    the value back exactly (``restored``)."""
    if columns:
        by_key: dict[str, list[str]] = {}
        for name in sorted(columns):
            by_key.setdefault(source_key(name), []).append(name)

        def each_key(condition: str, keys: list[str]) -> sql.Composed:
            # ``IF condition THEN derive END IF;`` for each of ``keys``
            # (``{key}`` in ``condition``): the columns derived from it.
            return sql.SQL(" ").join(
                sql.SQL("IF " + condition + " THEN {derive} END IF;").format(
                    key=sql.Literal(key),
                    derive=_derive_into(by_key[key], columns),
                )
                for key in keys
            )

        keys = sorted(by_key)
        # The keys named, in groups behind one test each (``?|``): a
        # statement names one or a few, and each test is an expression
        # evaluated for every row (26 keys: 11 tests a row, not 26).
        size = max(1, math.isqrt(len(keys)) + 1)
        patched = sql.SQL(" ").join(
            sql.SQL("IF patched ?| {}::text[] THEN {} END IF;").format(
                sql.Literal(group), each_key("patched ? {key}", group)
            )
            for group in (keys[at : at + size] for at in range(0, len(keys), size))
        )
        # A key no longer in ``idx`` (stored once) is not written: its
        # column keeps its value.
        written = each_key(
            "(NEW.idx -> {key}) IS DISTINCT FROM (OLD.idx -> {key})", keys
        )
        # ``{0}``: the column, ``{1}``: its key, ``{2}``: its JSON.  The
        # key is tested first: where ``idx`` has none (a list stored once
        # already), the column's JSON is not made (an AND stops at its
        # first false operand; an ``=`` computes both of its sides).
        take_out = sql.SQL(
            "IF NEW.idx ? {1} AND NEW.{0} IS NOT NULL"
            " AND (NEW.idx -> {1})::text = ({2})::text"
            " AND NOT kept ? {1} THEN NEW.idx := NEW.idx - {1}; END IF;"
        )
        stripped = sql.SQL(" ").join(
            take_out.format(
                sql.Identifier(name),
                sql.Literal(name),
                restored(sql.SQL("NEW.") + sql.Identifier(name)),
            )
            for name in sorted(once)
            if name in columns
        )
        body = sql.SQL(
            "DECLARE patched jsonb := NULLIF(current_setting({setting}, true),"
            " '')::jsonb; kept jsonb := COALESCE(NULLIF(current_setting({keep},"
            " true), '')::jsonb, '[]'); whole boolean := COALESCE(NULLIF("
            "current_setting({whole}, true), ''), 'off')::boolean;"
            " BEGIN IF NEW.idx IS NULL THEN RAISE"
            " EXCEPTION USING ERRCODE = 'not_null_violation', MESSAGE ="
            " 'plone_pgcatalog: idx of the row ' || NEW.zoid || ' set to NULL',"
            " HINT = {hint}; END IF;"
            " IF TG_OP = 'INSERT' OR whole THEN {all} ELSIF patched IS NULL"
            " THEN {written} ELSE {patched} END IF; {stripped}"
        ).format(
            setting=sql.Literal(PATCHED_KEYS),
            keep=sql.Literal(KEPT_KEYS),
            hint=sql.Literal(
                "a keyword list is stored in its typed column only, not in idx:"
                " jsonb_set(idx, ...) of idx -> that key gives NULL"
            ),
            whole=sql.Literal(WHOLE_ROWS),
            all=_derive_into(sorted(columns), columns),
            written=written,
            patched=patched,
            stripped=stripped,
        )
    else:
        body = sql.SQL("BEGIN")
    function = sql.SQL(
        "CREATE OR REPLACE FUNCTION {trigger}() RETURNS trigger"
        " LANGUAGE plpgsql AS {source}"
    ).format(
        trigger=sql.Identifier(TRIGGER),
        source=sql.Literal(body.as_string(None) + " RETURN NEW; END"),
    )
    trigger = sql.SQL(
        "CREATE OR REPLACE TRIGGER {trigger} BEFORE INSERT OR UPDATE OF idx"
        " ON pgcatalog_objects FOR EACH ROW EXECUTE FUNCTION {trigger}()"
    ).format(trigger=sql.Identifier(TRIGGER))
    return sql.SQL("; ").join([function, trigger])


def once_patch(
    keys: list[str], columns: dict[str, tuple[str, bool]]
) -> sql.Composed | None:
    """The ``UPDATE`` that writes the patched values of ``keys`` straight
    into their typed columns, ``idx`` untouched: where each key is stored
    once (its column of ``ONCE_KINDS``) and every column derived from it
    is ready (``columns``: ``registered``), else None.

    The trigger fires only for an ``UPDATE`` of ``idx``.  A sharing change's
    merge of ``allowedRolesAndUsers`` into ``idx``, which the trigger then
    derived the list and its number from and took out again, wrote every row's
    ``idx`` anew (compressed again) for nothing: 1,000 rows 127 -> 97 ms
    (``benchmarks/README.rst``, "Session 28").  The columns are derived from
    the values as the trigger derives them (``derive``, the number from the
    list's column).  Parameters: the rows' zoids and their values (JSONB
    objects holding ``keys``).  Writes and returns only the rows whose ``idx``
    holds none of the keys and whose columns give each value back exactly
    (``restored``), as a row written through the trigger would then be; the
    caller writes the others through ``idx``."""
    if not keys:
        return None
    derived: list[tuple[str, str]] = []
    for key in keys:
        kind, ready = columns.get(key, (None, False))
        if kind not in ONCE_KINDS or not ready:
            return None
        # The columns derived from the key besides its own (its list's
        # number): each must be ready, or the trigger derives it.
        others = {
            name: (other_kind, other_ready)
            for name, (other_kind, other_ready) in columns.items()
            if source_key(name) == key and name != key
        }
        if not all(other_ready for _, other_ready in others.values()):
            return None
        derived += [(key, kind)]
        derived += [(name, other_kind) for name, (other_kind, _) in others.items()]
    lists = sql.SQL(", ").join(
        sql.SQL("{} AS {}").format(
            derive(columns[key][0], sql.SQL("(u.vals -> {})").format(sql.Literal(key))),
            sql.Identifier(key),
        )
        for key in keys
    )
    assignments, numbers = [], []
    for name, kind in derived:
        if kind == "set":
            numbers.append(
                sql.SQL(SETS_FUNCTION + "(l.{}) AS {}").format(
                    sql.Identifier(source_key(name)), sql.Identifier(name)
                )
            )
        elif name not in keys:
            return None  # no other kind is derived from a list
        assignments.append(sql.SQL("{0} = d.{0}").format(sql.Identifier(name)))
    exact = sql.SQL(" AND ").join(
        sql.SQL("({})::text = (l.vals -> {})::text").format(
            restored(sql.SQL("l.{}").format(sql.Identifier(key))), sql.Literal(key)
        )
        for key in keys
    )
    # Each distinct value derived and numbered once (a sharing change
    # gives the same list to most rows), as the trigger's last list
    # (``LAST_LIST``) saves for rows written one after the other.
    return sql.SQL(
        "WITH p AS (SELECT * FROM unnest(%b::bigint[], %b::jsonb[]) AS p(zoid, vals)),"
        " l AS (SELECT u.vals, {lists} FROM (SELECT DISTINCT vals FROM p) AS u),"
        " d AS (SELECT {selected} FROM l WHERE {exact})"
        " UPDATE pgcatalog_objects AS s SET {assignments}"
        " FROM p JOIN d ON d.vals = p.vals"
        " WHERE s.zoid = p.zoid AND NOT s.idx ?| {keys}::text[]"
        " RETURNING s.zoid"
    ).format(
        lists=lists,
        selected=sql.SQL(", ").join(
            [
                sql.SQL("l.vals"),
                *(sql.SQL("l.{}").format(sql.Identifier(key)) for key in keys),
                *numbers,
            ]
        ),
        exact=exact,
        assignments=sql.SQL(", ").join(assignments),
        keys=sql.Literal(list(keys)),
    )


def _set_lock_timeout(cur: psycopg.Cursor, lock_timeout: str) -> None:
    cur.execute("SELECT set_config('lock_timeout', %s, true)", (lock_timeout,))


#: Taken by each transaction that looks whether SQL indexes of the table
#: are there and builds those that are not (``index_columns``, ``cover``,
#: ``_untyped_index``, ``add_column``), before it looks: two processes
#: doing it at once (two Zope instances running the same upgrade step, an
#: install beside an upgrade) both found an index missing and both built
#: it (building takes a share lock, which lets the other build too), and
#: the second to commit failed on PostgreSQL's unique name of the first
#: one's (``tests/integration/test_index_columns_race.py``).  Now the
#: second looks once the first has committed.  A lock of the two-key form,
#: apart from zodb-pgjsonb's commit lock (key 0): commits are not held up
#: by it, only other index builds, which wait for the table anyway.
_INDEX_BUILDS = "SELECT pg_advisory_xact_lock(hashtext('plone_pgcatalog'), 1)"


def _lock_index_builds(cur: psycopg.Cursor, lock_timeout: str) -> None:
    """``lock_timeout`` for the transaction, then ``_INDEX_BUILDS``."""
    _set_lock_timeout(cur, lock_timeout)
    cur.execute(_INDEX_BUILDS)


def _set_exclusive_lock_timeout(cur: psycopg.Cursor) -> None:
    """The transaction's ``lock_timeout`` for the table's exclusive lock:
    ``EXCLUSIVE_LOCK_TIMEOUT``, or ``AUTOVACUUM_MARGIN`` past the server's
    ``deadlock_timeout`` where that is longer, so that an autovacuum holding
    the table is cancelled before the wait gives up."""
    cur.execute(
        "SELECT set_config('lock_timeout', ceil(1000 * extract(epoch FROM"
        " greatest(%s::interval, current_setting('deadlock_timeout')::interval"
        " + %s::interval)))::bigint || 'ms', true)",
        (EXCLUSIVE_LOCK_TIMEOUT, AUTOVACUUM_MARGIN),
    )


def _rebuild_trigger(cur: psycopg.Cursor) -> None:
    # The function the trigger numbers lists with, in this code's form too.
    cur.execute(SET_FUNCTION)
    known = registered(cur)
    columns = {name: kind for name, (kind, _ready) in known.items()}
    ready = {name: kind for name, (kind, ok) in known.items() if ok}
    cur.execute(trigger_ddl(columns, stored_once(ready)))
    _count_groups(cur, ready)


def counts_behind(conn: psycopg.Connection) -> bool:
    """Whether every ``GROUPED`` column is ready but the counts per group
    are not kept (their triggers missing): the step that makes them after
    the last grouped column was marked ready failed (``_add_column``), and
    a column ready is not made again.  ``schema.create_schema`` then makes
    them (``rebuild_trigger``)."""
    with conn.cursor() as cur:
        ready = {n: kind for n, (kind, ok) in registered(cur).items() if ok}
        cur.execute("SELECT " + _COUNTED)
        kept = cur.fetchone()[0]
    return not kept and all(ready.get(name) == kind for name, kind in GROUPED.items())


def rebuild_trigger(conn: psycopg.Connection) -> None:
    """Make the trigger again from the registry, as a column's change
    does (the upgrade to schema 12, which changed its form): under the
    lock of column changes; replacing the trigger stops writers, not
    readers, for an instant.  ``conn`` is in autocommit mode."""
    with conn.transaction(), conn.cursor() as cur:
        _set_exclusive_lock_timeout(cur)
        cur.execute("SELECT pg_advisory_xact_lock(0)")
        _rebuild_trigger(cur)


# -- a column added and dropped online ---------------------------------------------


def add_column(
    conn: psycopg.Connection, index_name: str, kind: str, lock_timeout: str
) -> bool:
    """Give catalog index ``index_name`` its typed column of ``kind``,
    filled and indexed, and mark it ready.  False when it cannot have one
    (its name, or a column of another kind of that name: another site of
    the database has an index of another type so named), True when the
    column is ready.  Idempotent; a try that stops half-way (a lock not
    got) goes on where it stopped when run again.  Then, for a column
    that a covering index holds, that index (``cover``): also when the
    column was ready already, so that a try that did not get the index's
    lock makes it when run again.
    """
    name = column_name(index_name)
    if name is None:
        return False
    made = _add_column(conn, name, kind, lock_timeout)
    if made and index_name in COVERED + INCLUDED + SORTED:
        number(conn, lock_timeout)
        cover(conn, lock_timeout)
    return made


def number(conn: psycopg.Connection, lock_timeout: str) -> list[str]:
    """Give each ``NUMBERED`` index whose keywords column is ready its
    column of list numbers, filled and marked ready (as ``add_column``);
    the names of the columns made ready.  ``conn`` is in autocommit
    mode."""
    with conn.cursor() as cur:
        known = registered(cur)
    made = []
    for index_name in NUMBERED:
        name = set_column(index_name)
        listed, numbered = known.get(index_name), known.get(name)
        if listed == ("keywords", True) and numbered != ("set", True):
            if _add_column(conn, name, "set", lock_timeout):
                made.append(name)
    if made:
        # Searches take their form by the estimated number of lists
        # (``MANY_LISTS``): estimated now, not at autovacuum's next look.
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(SETS_TABLE)))
    return made


def _add_column(
    conn: psycopg.Connection, name: str, kind: str, lock_timeout: str
) -> bool:
    """``add_column`` of the typed column ``name`` (of its index's
    ``source_key``)."""
    index_name = source_key(name)
    wide = False
    if KINDS[kind].varlena:
        # Measured before the exclusive lock below: readers never wait on it.
        with conn.transaction(), conn.cursor() as cur:
            _set_lock_timeout(cur, lock_timeout)
            wide = _wide(cur, name, kind)
    with conn.transaction(), conn.cursor() as cur:
        # The exclusive lock of ADD COLUMN: new readers queue behind it
        # while it waits, so it waits briefly, and is tried again.
        _set_exclusive_lock_timeout(cur)
        cur.execute("SELECT pg_advisory_xact_lock(0)")
        known = registered(cur).get(name)
        if known is not None and known[0] != kind:
            logger.warning(
                "plone_pgcatalog: index %r has no typed column here: the column"
                " %r is of kind %r (another site's index), not %r",
                index_name,
                name,
                known[0],
                kind,
            )
            return False
        if known is not None and known[1]:
            return True
        if known is None:
            cur.execute(
                sql.SQL(
                    "ALTER TABLE pgcatalog_objects ADD COLUMN IF NOT EXISTS {} {}"
                ).format(sql.Identifier(name), sql.SQL(KINDS[kind].sql_type))
            )
            if KINDS[kind].varlena:
                # Before the fill, so that the fill writes rows in their form.
                _set_storage(cur, name, wide)
            cur.execute(
                "INSERT INTO pgcatalog_columns (name, kind) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind,"
                " ready = false",
                (name, kind),
            )
            _rebuild_trigger(cur)
    filled = _fill(conn, name, kind, lock_timeout)
    with conn.transaction(), conn.cursor() as cur:
        _lock_index_builds(cur, lock_timeout)
        for _index, statement in column_indexes(name, kind):
            cur.execute(statement)
        cur.execute(
            "UPDATE pgcatalog_columns SET ready = true WHERE name = %s", (name,)
        )
    if kind in ONCE_KINDS or name in GROUPED:
        # From now on the trigger takes the key out of ``idx`` as rows are
        # written (readers use the column: it is ready in every snapshot
        # that sees the first row without the key); the last grouped
        # column ready, the counts per group are kept (``_count_groups``).
        # In a transaction of its own that takes the commit lock first, as
        # commits do: taken after the index's lock on the table, a commit
        # holding it and waiting for that lock made a deadlock.
        rebuild_trigger(conn)
    logger.info(
        "plone_pgcatalog: typed column %r (%s) ready, %d rows filled",
        name,
        kind,
        filled,
    )
    if kind in ONCE_KINDS:
        store_once(conn, lock_timeout, name)
    if KINDS[kind].bound is not None:
        _analyze(conn)
    return True


def index_columns(conn: psycopg.Connection, lock_timeout: str) -> list[str]:
    """Make the SQL indexes of each ready typed column (``column_indexes``)
    where one is missing: a column made before its kind had them
    (``effectiveRange``'s, profile 22).  The names of the columns
    indexed; each column's in a transaction of its own (building an index
    stops writers, not readers, for its time).  ``conn`` is in autocommit
    mode."""
    made = []
    with conn.cursor() as cur:
        ready = {n: kind for n, (kind, ok) in registered(cur).items() if ok}
    for name, kind in sorted(ready.items()):
        indexes = column_indexes(name, kind)
        with conn.transaction(), conn.cursor() as cur:
            _lock_index_builds(cur, lock_timeout)
            cur.execute(
                "SELECT count(to_regclass(n)) FROM unnest(%s::text[]) AS n",
                ([index for index, _ in indexes],),
            )
            if cur.fetchone()[0] == len(indexes):
                continue
            for _index, statement in indexes:
                cur.execute(statement)
        made.append(name)
        logger.info("plone_pgcatalog: SQL indexes of typed column %r made", name)
    if made:
        _analyze(conn)
    return made


def _analyze(conn: psycopg.Connection) -> None:
    """``ANALYZE`` the table after an expression index was made (``conn``
    in autocommit mode): the planner reads the expression's statistics
    from the index, which has none until then, and making an index is no
    change that autovacuum counts.  Without them the rows out of the
    effective range were estimated at a third of the table, and counted
    through a covering index: published as Anonymous at 10,000 documents
    took 4.0-4.2 ms instead of 1.6 (2.5 as before the index)."""
    try:
        conn.execute("ANALYZE pgcatalog_objects")
    except psycopg.Error as error:
        # The index is made; autovacuum gives it statistics later.
        logger.warning("plone_pgcatalog: ANALYZE after an index failed: %s", error)


def _wide(cur: psycopg.Cursor, name: str, kind: str) -> bool:
    """Whether the values of typed column ``name`` are wide (``WIDE``):
    measured on the values derived from ``idx`` of the first
    ``WIDE_SAMPLE`` rows (at most that many rows read), or, where none of
    them has one, by ``WIDE_INDEXES``."""
    ready = {c: k for c, (k, ok) in registered(cur).items() if ok}
    value = value_of(sql.SQL("o"), name, ready)
    cur.execute(
        sql.SQL(
            "SELECT avg(pg_column_size({})) FROM (SELECT * FROM pgcatalog_objects"
            " LIMIT %s) AS o WHERE {} IS NOT NULL"
        ).format(derive(kind, value), value),
        (WIDE_SAMPLE,),
    )
    size = cur.fetchone()[0]
    if size is None:
        return name in WIDE_INDEXES
    return size > WIDE


def _set_storage(cur: psycopg.Cursor, name: str, wide: bool) -> None:
    # Wide values go out of the row with ``idx``; GIN answers the queries
    # on them without reading them.
    cur.execute(
        sql.SQL("ALTER TABLE pgcatalog_objects ALTER COLUMN {} SET STORAGE {}").format(
            sql.Identifier(name), sql.SQL("EXTENDED" if wide else "MAIN")
        )
    )


def _fill(conn: psycopg.Connection, name: str, kind: str, lock_timeout: str) -> int:
    """Set the column of the rows written before it existed, in batches in
    zoid order (rows written since are set by the trigger).  Returns the
    number of rows filled; logs progress every 10 seconds."""
    with conn.cursor() as cur:
        ready = {c: k for c, (k, ok) in registered(cur).items() if ok}
    # The list numbers of a keywords column stored once: from the column.
    value = derive(kind, value_of(sql.SQL("o"), source_key(name), ready))
    # Numbering a batch's rows may add lists, which a commit writing one of
    # them would wait for while holding a row the batch has yet to write:
    # each batch holds zodb-pgjsonb's commit lock (commits wait for one
    # batch at most).
    return _rewrite(
        conn, name, value, lock_timeout, "filling", commit_lock=kind == "set"
    )


def _rewrite(
    conn: psycopg.Connection,
    name: str,
    value: sql.Composable,
    lock_timeout: str,
    doing: str,
    progress: str | None = None,
    commit_lock: bool = False,
    where: sql.Composable = sql.SQL("TRUE"),
    settings: dict[str, str] | None = None,
) -> int:
    """Set column ``name`` of every row to ``value`` (SQL on the row, ``o``),
    in batches of ``FILL_BATCH`` rows in zoid order, each its own
    transaction.  Returns the number of rows written; logs progress
    every 10 seconds.  With ``progress`` (a key of ``pgcatalog_state``),
    each batch records its last zoid there, and a run after an interrupted
    one goes on after it.  With ``commit_lock``, each batch holds
    zodb-pgjsonb's commit lock.  ``where``: only the rows it holds for
    (SQL on the table's columns); ``settings``: set in each batch's
    transaction."""
    batch = sql.SQL(
        "WITH batch AS (SELECT zoid FROM pgcatalog_objects WHERE zoid > %s"
        " AND {where} ORDER BY zoid LIMIT %s)"
        " UPDATE pgcatalog_objects AS o SET {column} = {value} FROM batch"
        " WHERE o.zoid = batch.zoid RETURNING o.zoid"
    ).format(column=sql.Identifier(name), value=value, where=where)
    last, filled = -1, 0
    if progress is not None:
        with conn.cursor() as cur:
            cur.execute(_PROGRESS, (progress,))
            found = cur.fetchone()
        last = found[0] if found else -1
    started = logged = time.monotonic()
    while True:
        with conn.transaction(), conn.cursor() as cur:
            _set_lock_timeout(cur, lock_timeout)
            if commit_lock:
                cur.execute("SELECT pg_advisory_xact_lock(0)")
            for setting, value_set in (settings or {}).items():
                cur.execute("SELECT set_config(%s, %s, true)", (setting, value_set))
            cur.execute(batch, (last, FILL_BATCH))
            zoids = [row[0] for row in cur.fetchall()]
            if zoids and progress is not None:
                cur.execute(_RECORD_PROGRESS, (progress, max(zoids)))
        if not zoids:
            return filled
        filled += len(zoids)
        last = max(zoids)
        now = time.monotonic()
        if now - logged >= 10:
            logged = now
            logger.info(
                "plone_pgcatalog: %s column %r: %d rows, %.0f rows/s",
                doing,
                name,
                filled,
                filled / (now - started),
            )


_PROGRESS = "SELECT value FROM pgcatalog_state WHERE key = %s"
_RECORD_PROGRESS = (
    "INSERT INTO pgcatalog_state (key, value) VALUES (%s, %s)"
    " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)
#: The progress of a column whose rows are all written.
_DONE = 2**63 - 1


def move_wide_out(conn: psycopg.Connection, lock_timeout: str) -> list[str]:
    """Move the values of the typed columns that are wide (``_wide``) out
    of the rows: storage EXTENDED, then every row written again in
    batches (PostgreSQL moves a value out when its row is next written),
    then ``VACUUM`` so that the space of the old row versions is used
    again (a failed ``VACUUM`` is logged: autovacuum does it later).  Each
    column's progress is kept in ``pgcatalog_state``: run again after a
    failure, it goes on where it stopped.  Schema 6 kept
    ``object_provides`` in the row on sites whose table was empty when the
    column was made (every new site), and rows filled before the storage
    changed on the others.  The names of the columns whose rows this run
    wrote; ``conn`` is in autocommit mode."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT c.name, c.kind FROM pgcatalog_columns AS c"
            " JOIN pg_attribute AS a ON a.attrelid = to_regclass('pgcatalog_objects')"
            " AND a.attname = c.name AND NOT a.attisdropped ORDER BY c.name"
        )
        made = [(name, kind) for name, kind in cur.fetchall() if kind in KINDS]
    moved = []
    for name, kind in made:
        if not KINDS[kind].varlena:
            continue
        with conn.transaction(), conn.cursor() as cur:
            _set_exclusive_lock_timeout(cur)
            wide = _wide(cur, name, kind)
            if wide:
                _set_storage(cur, name, wide=True)
        if wide:
            # Tried again after a failure, it goes on where it stopped (a
            # column done is skipped: its progress is ``_DONE``).
            progress = f"wide_out:{name}"
            if _rewrite(
                conn, name, sql.Identifier(name), lock_timeout, "moving out", progress
            ):
                moved.append(name)
            conn.execute(_RECORD_PROGRESS, (progress, _DONE))
    if moved:
        try:
            conn.execute("VACUUM (ANALYZE) pgcatalog_objects")
        except psycopg.Error as error:
            # The rows are written: autovacuum takes the old versions later.
            logger.warning("plone_pgcatalog: VACUUM after moving out failed: %s", error)
    return moved


def short_texts_in_row(conn: psycopg.Connection, lock_timeout: str) -> int:
    """Write every row again in batches (``_rewrite``, as
    ``move_wide_out``), so that PostgreSQL decides anew, with the table's
    ``toast_tuple_target``, where each ``tsvector`` goes: a short text's
    stays in the row (schema 8), a long one's goes out.  The value is
    rebuilt (``|| ''``: the same lexemes and positions), since a value
    written as it was read keeps its place out of line.  Then ``VACUUM``,
    as ``move_wide_out``.  Run again after a failure, it goes on where it
    stopped (``pgcatalog_state``); the number of rows this run wrote;
    ``conn`` is in autocommit mode.  Sets the table's option first (every
    application of ``schema.BASE_DDL`` sets it too)."""
    with conn.transaction(), conn.cursor() as cur:
        _set_lock_timeout(cur, lock_timeout)
        cur.execute(
            sql.SQL(
                "ALTER TABLE pgcatalog_objects SET (toast_tuple_target = {})"
            ).format(sql.Literal(layout.TOAST_TUPLE_TARGET))
        )
    progress = "texts_in_row"
    written = _rewrite(
        conn,
        "searchable_text",
        sql.SQL("o.searchable_text || ''::tsvector"),
        lock_timeout,
        "writing again",
        progress,
    )
    conn.execute(_RECORD_PROGRESS, (progress, _DONE))
    if written:
        try:
            conn.execute("VACUUM (ANALYZE) pgcatalog_objects")
        except psycopg.Error as error:
            logger.warning(
                "plone_pgcatalog: VACUUM after writing rows failed: %s", error
            )
    return written


def drop_column(conn: psycopg.Connection, index_name: str, lock_timeout: str) -> bool:
    """Take the typed column of ``index_name`` away, if it has one: not
    ready first (requests from then on use ``idx``), then dropped (under an
    exclusive lock: the requests that still use it finish first).  The
    column of its list numbers (``NUMBERED``) goes first."""
    name = column_name(index_name)
    if name is None:
        return False
    numbered = index_name in NUMBERED and _drop_column(
        conn, set_column(name), lock_timeout
    )
    dropped = False
    try:
        dropped = _drop_column(conn, name, lock_timeout)
    finally:
        if numbered or (dropped and name in INCLUDED + SORTED):
            # PostgreSQL dropped the covering indexes that included it (or
            # its number): made again of the columns left, also when the
            # column's own drop did not get its lock.
            cover(conn, lock_timeout)
    return dropped


def _drop_column(conn: psycopg.Connection, name: str, lock_timeout: str) -> bool:
    """``drop_column`` of the typed column ``name``; whether it was.  The
    values of a column stored once go back into ``idx`` first (another
    site of the database may query the index through ``idx`` when the
    column is gone): in batches while the column is ready (the trigger
    leaves the key in the rows each batch writes, ``KEPT_KEYS``), then
    the rows written meanwhile in the transaction that marks it not
    ready, after which the trigger leaves the key in every row."""
    with conn.cursor() as cur:
        kind = registered(cur).get(name, (None, False))[0]
    once = kind in ONCE_KINDS
    if once:
        _restore(conn, name, kind, lock_timeout)
    with conn.transaction(), conn.cursor() as cur:
        _set_lock_timeout(cur, lock_timeout)
        cur.execute(
            "UPDATE pgcatalog_columns SET ready = false WHERE name = %s RETURNING kind",
            (name,),
        )
        if cur.fetchone() is None:
            return False
        if once:
            cur.execute("SELECT pg_advisory_xact_lock(0)")
            _rebuild_trigger(cur)
            restore, missing = _restoring(name, kind)
            cur.execute(
                sql.SQL("UPDATE pgcatalog_objects AS o SET idx = {} WHERE {}").format(
                    restore, missing
                )
            )
    with conn.transaction(), conn.cursor() as cur:
        _set_exclusive_lock_timeout(cur)
        cur.execute("SELECT pg_advisory_xact_lock(0)")
        cur.execute("DELETE FROM pgcatalog_columns WHERE name = %s", (name,))
        _rebuild_trigger(cur)
        cur.execute(
            sql.SQL("ALTER TABLE pgcatalog_objects DROP COLUMN IF EXISTS {}").format(
                sql.Identifier(name)
            )
        )
    return True


def _restoring(name: str, kind: str) -> tuple[sql.Composable, sql.Composable]:
    """The ``idx`` that gives back the values of column ``name`` stored once
    (SQL on the row ``o``), and the rows that need it."""
    restore = whole_idx(sql.SQL("o"), {name: kind})
    missing = sql.SQL("{} IS NOT NULL AND NOT idx ? {}").format(
        sql.Identifier(name), sql.Literal(name)
    )
    return restore, missing


def _restore(conn: psycopg.Connection, name: str, kind: str, lock_timeout: str) -> int:
    """Put the values of column ``name`` (stored once) back into ``idx``, in
    batches; the number of rows written."""
    restore, missing = _restoring(name, kind)
    return _rewrite(
        conn,
        "idx",
        restore,
        lock_timeout,
        "keyword lists put back into idx from",
        where=missing,
        settings={KEPT_KEYS: json.dumps([name])},
    )


def store_once(
    conn: psycopg.Connection, lock_timeout: str, name: str | None = None
) -> int:
    """Take out of ``idx`` of the rows written before (in batches) the keys
    the trigger now takes out as rows are written (``stored_once``): of
    column ``name``, or of every such column.  Each row is written as it
    is and the trigger takes out what its columns give back.  The number
    of rows written; ``conn`` is in autocommit mode."""
    with conn.cursor() as cur:
        ready = {c: k for c, (k, ok) in registered(cur).items() if ok}
    once = sorted(stored_once(ready))
    if name is not None:
        once = [n for n in once if n == name]
    if not once:
        return 0
    held = sql.SQL("idx ?| {}").format(sql.Literal(once))
    return _rewrite(
        conn,
        "idx",
        sql.SQL("o.idx"),
        lock_timeout,
        "keyword lists stored once:",
        where=held,
    )


# -- covering indexes: counts without the heap -----------------------------------

#: Typed columns whose values a whole-site listing filters on: besides its
#: own index, each gets a B-tree that includes ``INCLUDED`` too (``cover``),
#: so that counting the matches of a search on it reads that index only
#: (an index-only scan) instead of every match's row.  Each also includes
#: the others: a listing of a type in a state (published news items) is
#: counted from one index too.  At 1,000,000 rows, the latest 20 of
#: ``portal_type=Document`` and ``review_state=published`` (16,950
#: matches): 57.5 -> 7.9 ms, the covering index of ``portal_type`` 115 ->
#: 131 MB (``benchmarks/README.rst``, "A type and a state").
COVERED = ("portal_type", "review_state")

#: The terms every Plone search carries: the site's subtree, the user's
#: security terms and, unless the user may see inactive content, the
#: effective range (``tool``).  Those that are typed columns ready are
#: included; ``path`` always.
INCLUDED = ("path", "allowedRolesAndUsers", "effectiveRange")

#: The date indexes listings sort on.  Where one is a typed column ready,
#: the covering indexes include it too, and it gets a partial index of the
#: rows that have a value of another type (``untyped_index_name``: rows
#: whose ``idx`` holds it, its column none; there are usually none): a
#: sorted window's count of its matches then reads those two indexes only
#: (``query.SearchSQL.count_parts``).  At 1,000,000 rows, page 2 of
#: ``portal_type=Document`` sorted on ``effective`` (24,957 matches): the
#: count 93.6 -> 6.5 ms; the covering index of ``portal_type`` 143 -> 178 MB.
SORTED = ("effective", "modified", "created")


def _included(name: str, ready: set[str]) -> str:
    """The column a covering index holds for ``INCLUDED`` or ``SORTED``
    column ``name``, given the columns ``ready``: the number of its list
    where it is numbered and that is ready (``NUMBERED``)."""
    if name in NUMBERED and set_column(name) in ready:
        return set_column(name)
    return name


def covering_index_name(name: str) -> str:
    """The name of the covering index of typed column ``name``."""
    return layout.sql_index_name(name, "v")


def untyped_index_name(name: str) -> str:
    """The name of the partial index of the rows whose value of index
    ``name`` has no typed form (``SORTED``)."""
    return layout.sql_index_name(name, "u")


def untyped_predicate(name: str, typed: sql.Composable | None = None) -> sql.Composable:
    """The rows whose ``idx`` holds a value of index ``name`` that its
    typed column (or ``typed``: ``typed_value``) does not: the predicate of
    the column's partial index, as searches write it (the planner uses the
    index for a query that implies it)."""
    return sql.SQL("{} IS NULL AND {}").format(
        layout.column(name) if typed is None else typed, layout.has_key(name)
    )


def _index_columns(cur: psycopg.Cursor, index: str) -> list[str] | None:
    """The columns of SQL index ``index``, keys then included ones, or
    None if there is no such index (every index has a column)."""
    cur.execute(
        "SELECT a.attname FROM pg_index AS i"
        " CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(n, o)"
        " JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.n"
        " WHERE i.indexrelid = to_regclass(%s) ORDER BY k.o",
        (index,),
    )
    return [name for (name,) in cur.fetchall()] or None


def cover(conn: psycopg.Connection, lock_timeout: str) -> list[str]:
    """Make the covering index of each ``COVERED`` typed column that is
    ready hold that column, the other ``COVERED`` ones and the ``INCLUDED``
    ones that are (a type and a state together are counted from either
    index): created
    where missing, made again where the columns ready changed (a column
    dropped takes PostgreSQL's index with it, one added is not in it).
    Also the partial index of each ``SORTED`` column ready.  The names of
    the columns whose covering index changed ("NAME (its untyped values)"
    for a partial index made); each change in a transaction of its own
    (building the index stops writers, not readers, for its time: about
    0.1 s at 10,000 rows).  On the catalog's table (schema 5 on); ``conn``
    is in autocommit mode."""
    with conn.cursor() as cur:
        ready = {name for name, (_kind, ok) in registered(cur).items() if ok}
    changed = []
    for name in SORTED:
        if name in ready and _untyped_index(conn, name, lock_timeout):
            changed.append(f"{name} (its untyped values)")
    for name in COVERED:
        index = covering_index_name(name)
        wanted = None
        if name in ready:
            wanted = [name] + [
                c
                for c in (
                    *(other for other in COVERED if other != name),
                    *(_included(c, ready) for c in INCLUDED + SORTED),
                )
                if c == "path" or c in ready
            ]
        with conn.transaction(), conn.cursor() as cur:
            _lock_index_builds(cur, lock_timeout)
            present = _index_columns(cur, index)
            if present == wanted:
                continue
            if present is not None:
                cur.execute(
                    sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index))
                )
            if wanted is not None:
                cur.execute(
                    sql.SQL(
                        "CREATE INDEX {} ON pgcatalog_objects ({}) INCLUDE ({})"
                    ).format(
                        sql.Identifier(index),
                        sql.Identifier(name),
                        sql.SQL(", ").join(map(sql.Identifier, wanted[1:])),
                    )
                )
        changed.append(name)
        logger.info(
            "plone_pgcatalog: covering index of %r: %s",
            name,
            ", ".join(wanted) if wanted else "dropped",
        )
    return changed


def _untyped_index(conn: psycopg.Connection, name: str, lock_timeout: str) -> bool:
    """Make the partial index of ``SORTED`` column ``name`` (ready) if it
    is missing; whether it was.  Dropping the column drops it."""
    index = untyped_index_name(name)
    with conn.transaction(), conn.cursor() as cur:
        _lock_index_builds(cur, lock_timeout)
        if _index_columns(cur, index) is not None:
            return False
        cur.execute(
            sql.SQL("CREATE INDEX {} ON pgcatalog_objects (zoid) WHERE {}").format(
                sql.Identifier(index), untyped_predicate(name)
            )
        )
    logger.info("plone_pgcatalog: index of the untyped values of %r made", name)
    return True
