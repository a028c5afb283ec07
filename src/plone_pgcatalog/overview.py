"""What the operators' pages show: the ZMI tabs (``zmi``) and the control
panel (``controlpanel``).

Owns the figures read for them, each on the request's connection
(``connection.reading``) with ``store.reports``' statements: a page of
cataloged objects, per index its objects, distinct values and SQL indexes,
the database (schema version, upgrade steps to run, sizes, dead rows,
vacuum and analyze, the server), the slow-query report (``slowlog``) and
``pg_stat_statements`` where the extension is installed.

Must not compose SQL beyond the site clause, nor change anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone_pgcatalog import slowlog
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.store import columns as store_columns
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import reports
from plone_pgcatalog.store import schema
from plone_pgcatalog.store.layout import sql_index_name
from Products.CMFCore.utils import getToolByName
from psycopg import sql
from psycopg.rows import tuple_row

import datetime
import psycopg

PROFILE = "plone_pgcatalog:default"


def _site(tool, within: str = "") -> tuple[sql.Composable, list]:
    """The clause of the site's rows, or of the rows at and below ``within``
    (a path in the site, absolute or relative to it)."""
    site_path = tool.site_path()
    within = within.strip()
    if not within or within.rstrip("/") == site_path:
        return path_clause(site_path, -1)
    if not within.startswith("/"):
        within = f"{site_path}/{within}"
    within = "/" + "/".join(part for part in within.split("/") if part)
    if not within.startswith(site_path + "/"):
        raise ValueError(f"path {within!r} is not in the site {site_path!r}")
    return path_clause(within, -1)


# -- Catalog tab ------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    zoid: int
    path: str
    portal_type: str | None
    review_state: str | None


@dataclass(frozen=True)
class CatalogPage:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    entries: list[Entry]
    #: rows at and below the path asked for
    total: int
    start: int
    size: int


def catalog_page(tool, within: str = "", start: int = 0, size: int = 50):
    """Cataloged objects at and below ``within``, in path order, from
    ``start``."""
    clause, params = _site(tool, within)
    start, size = max(int(start), 0), min(max(int(size), 1), 1000)
    with connection.reading(tool) as conn, conn.cursor(row_factory=tuple_row) as cursor:
        cursor.execute(reports.ROW_COUNT.format(clause), params)
        total = cursor.fetchone()[0]
        cursor.execute(reports.CATALOG_PAGE.format(clause), [*params, size, start])
        entries = [Entry(*row) for row in cursor.fetchall()]
    return CatalogPage(entries, total, start, size)


# -- Indexes tab ------------------------------------------------------------------


@dataclass(frozen=True)
class SQLIndex:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    name: str
    size: int
    definition: str


@dataclass(frozen=True)
class IndexFigures:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    name: str
    meta_type: str
    #: objects with a value in the index
    objects: int
    #: distinct values (each element of a keyword list), None where the
    #: catalog keeps no values to count (full text)
    distinct: int | None
    #: the typed column's kind, None where the index reads ``idx``
    column: str | None
    sql_indexes: tuple[SQLIndex, ...]

    @property
    def sql_size(self) -> int:
        return sum(index.size for index in self.sql_indexes)


def _owner(sql_name: str, names) -> str | None:
    """The catalog index whose SQL object ``sql_name`` is (``layout.
    sql_index_name``: ``pgcatalog_<kind>_<name>_<digest>``)."""
    for name in names:
        suffix = sql_index_name(name, "x")[len("pgcatalog_x") :]
        if sql_name.startswith("pgcatalog_") and sql_name.endswith(suffix):
            return name
    return None


def index_figures(tool) -> list[IndexFigures]:
    """Every index of the catalog, by name."""
    definitions = tool.getIndexDefinitions()
    clause, params = _site(tool)
    with connection.reading(tool) as conn, conn.cursor(row_factory=tuple_row) as cursor:
        whole = store_columns.whole_idx(sql.SQL("s"), connection.ready_columns(tool))
        cursor.execute(reports.INDEX_FIGURES.format(idx=whole, site=clause), params)
        figures = {key: (objects, distinct) for key, objects, distinct in cursor}
        cursor.execute(reports.TEXT_ROWS.format(clause), params)
        text_rows = cursor.fetchone()[0]
        cursor.execute(reports.ROW_COUNT.format(clause), params)
        rows = cursor.fetchone()[0]
        typed = store_columns.registered(cursor)
        cursor.execute(reports.RELATIONS)
        relations = cursor.fetchall()
    owned: dict[str, list[SQLIndex]] = {}
    built_in = {
        sql_name: name
        for name, (_, sql_names) in reports.BUILT_IN.items()
        for sql_name in sql_names
    }
    for name, kind, _table, definition, size, _total in relations:
        if kind != "i":
            continue
        owner = built_in.get(name) or _owner(name, definitions)
        if owner is not None:
            owned.setdefault(owner, []).append(SQLIndex(name, size, definition))
    result = []
    for name, definition in sorted(definitions.items()):
        meta_type = definition.meta_type
        kind = typed.get(name)
        column = kind[0] if kind else None
        if name in reports.BUILT_IN:
            column = reports.BUILT_IN[name][0]
        if name == "SearchableText":
            objects, distinct = text_rows, None
        elif name == "path":
            objects = distinct = rows  # one path per row
        elif meta_type == "ZCTextIndex":
            objects, distinct = figures.get(name, (0, 0))[0], None
        else:
            objects, distinct = figures.get(name, (0, 0))
        result.append(
            IndexFigures(
                name,
                meta_type,
                objects,
                distinct,
                column,
                tuple(owned.get(name, ())),
            )
        )
    return result


# -- Database tab ---------------------------------------------------------------


@dataclass(frozen=True)
class Relation:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    name: str
    kind: str
    table: str | None
    size: int
    total: int


@dataclass(frozen=True)
class TableActivity:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    name: str
    live: int
    dead: int
    #: when (``when``), or None: never
    vacuumed: str | None
    analyzed: str | None


@dataclass(frozen=True)
class Database:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    schema_version: int | None
    code_version: int
    #: titles of the profile's upgrade steps still to run
    upgrades: list[str]
    server_version: str
    server: str
    relations: list[Relation]
    activity: list[TableActivity]
    counter: int | None
    #: when (``when``), or None: never in this database
    last_rebuild: str | None
    rows: int

    @property
    def table_size(self) -> int:
        """The catalog's tables with their indexes and TOAST."""
        return sum(r.total for r in self.relations if r.kind == "r")


def when(moment: datetime.datetime | None) -> str | None:
    """A moment for the pages (page templates may not call ``strftime``)."""
    if moment is None:
        return None
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def pending_upgrades(tool) -> list[str]:
    """The titles of this profile's upgrade steps not run yet."""
    setup = getToolByName(tool, "portal_setup")
    steps = []
    for step in setup.listUpgrades(PROFILE):
        for one in step if isinstance(step, list) else [step]:
            steps.append(f"{one['ssource']} -> {one['sdest']}: {one['title']}")
    return steps


def database(tool) -> Database:
    clause, params = _site(tool)
    with connection.reading(tool) as conn, conn.cursor(row_factory=tuple_row) as cursor:
        cursor.execute(reports.STATE)
        state = dict(cursor.fetchall())
        cursor.execute(reports.SERVER_VERSION)
        version, server = cursor.fetchone()
        cursor.execute(reports.RELATIONS)
        relations = [
            Relation(name, kind, table, size, total)
            for name, kind, table, _definition, size, total in cursor.fetchall()
        ]
        cursor.execute(reports.TABLE_ACTIVITY)
        activity = [
            TableActivity(name, live, dead, when(vacuumed), when(analyzed))
            for name, live, dead, vacuumed, analyzed in cursor.fetchall()
        ]
        cursor.execute(reports.ROW_COUNT.format(clause), params)
        rows = cursor.fetchone()[0]
    rebuilt = state.get(schema.rebuild_key(tool.site_path()))
    return Database(
        schema_version=state.get("schema_version"),
        code_version=schema.SCHEMA_VERSION,
        upgrades=pending_upgrades(tool),
        server_version=version,
        server=server,
        relations=relations,
        activity=activity,
        counter=state.get("counter"),
        last_rebuild=(
            when(datetime.datetime.fromtimestamp(rebuilt, datetime.UTC))
            if rebuilt is not None
            else None
        ),
        rows=rows,
    )


# -- Query report -----------------------------------------------------------------


@dataclass(frozen=True)
class StatementFigures:
    """One statement of ``pg_stat_statements``."""

    __allow_access_to_unprotected_subobjects__ = True  # page templates
    calls: int
    total_ms: float
    mean_ms: float
    max_ms: float
    rows: int
    query: str


@dataclass(frozen=True)
class QueryReport:
    __allow_access_to_unprotected_subobjects__ = True  # page templates
    threshold_ms: float
    shapes: list[slowlog.Shape]
    #: None where the extension is not installed in this database
    statements: list[StatementFigures] | None
    #: why ``statements`` is None, or empty
    statements_note: str


def query_report(tool, limit: int = 20) -> QueryReport:
    statements, note = None, ""
    with connection.reading(tool) as conn, conn.cursor(row_factory=tuple_row) as cursor:
        cursor.execute(reports.HAS_PG_STAT_STATEMENTS)
        if not cursor.fetchone()[0]:
            note = (
                "pg_stat_statements is not installed in this database"
                " (CREATE EXTENSION pg_stat_statements, with the library in"
                " shared_preload_libraries)"
            )
        else:
            try:
                with conn.transaction():
                    cursor.execute(reports.PG_STAT_STATEMENTS, [limit])
                    statements = [StatementFigures(*row) for row in cursor]
            except psycopg.Error as error:
                note = f"pg_stat_statements cannot be read: {error}".strip()
    return QueryReport(
        slowlog.threshold_ms(tool),
        slowlog.LOG.shapes(tool.site_path()),
        statements,
        note,
    )


def explain(tool, key: str) -> tuple[slowlog.Shape, list[str]]:
    """A slow shape and the plan of its last slow run, run again."""
    shape = slowlog.LOG.get(key, tool.site_path())
    if shape is None:
        raise KeyError(key)
    with connection.reading(tool) as conn:
        return shape, slowlog.explain(conn, shape)
