"""What the catalog of a site holds, set against its content: ``verify``
(and ``repair``) and ``stats``, the reports of the ``pgcatalog`` command and
of the operators' pages (ZMI tabs, the control panel, background jobs).

Owns the comparison of stored rows with what extraction gives now, and the
figures of a site's catalog; the statements are ``store.reports``'.  Reads
on the ZODB connection's own PostgreSQL connection
(``connection.read_connection``); changes (``repair``) go through the tool's
API and reach PostgreSQL at commit.

Must not import Zope, Plone or the catalog's Zope modules at module level
(the CLI imports it before Zope is configured).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog.store import reports
from psycopg import sql
from typing import Any
from typing import TextIO

import json

#: objects compared per SQL round trip in ``verify``
VERIFY_BATCH = 500


def _path(obj) -> str:
    return "/".join(obj.getPhysicalPath())


# -- verify -------------------------------------------------------------------


@dataclass
class Verification:
    """What ``verify`` found: paths of each kind of problem."""

    site_path: str
    objects: int = 0
    rows: int = 0
    #: objects a rebuild would catalog that have no row (at their path)
    missing: list[str] = field(default_factory=list)
    #: rows no walked object matches (deleted, moved, not content)
    orphan: list[str] = field(default_factory=list)
    #: ``(path, [names])``: index values, metadata or words that differ
    stale: list[tuple[str, list[str]]] = field(default_factory=list)
    #: path -> zoid of every walked object (used by the repair)
    walked: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def problems(self) -> int:
        return len(self.missing) + len(self.orphan) + len(self.stale)

    def report(self, out: TextIO, show: int) -> None:
        if not self.problems:
            out.write(
                f"catalog of {self.site_path} is in order:"
                f" {self.objects} objects, {self.rows} rows\n"
            )
            return
        out.write(
            f"catalog of {self.site_path}: {self.problems} problems"
            f" ({len(self.missing)} missing, {len(self.orphan)} orphan,"
            f" {len(self.stale)} stale) in {self.objects} objects,"
            f" {self.rows} rows\n"
        )
        kinds = (
            ("missing", [(p, "") for p in self.missing]),
            ("orphan", [(p, "") for p in self.orphan]),
            ("stale", [(p, f" ({', '.join(names)})") for p, names in self.stale]),
        )
        for kind, entries in kinds:
            if not entries:
                continue
            out.write(f"{kind}: {len(entries)}\n")
            for path, detail in entries[:show]:
                out.write(f"  {path}{detail}\n")
            if len(entries) > show:
                out.write(f"  ... and {len(entries) - show} more\n")


def walk_content(tool, visit: Callable[[Any], None], root=None) -> None:
    """Call ``visit`` with what a rebuild catalogs, in its order
    (``maintenance.content_objects``), of the site or of the object
    ``root`` and below; nothing is kept."""
    from plone_pgcatalog.maintenance import content_objects

    for obj in content_objects(tool, root):
        visit(obj)


def outermost(paths) -> list[str]:
    """``paths`` without those below another of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == root or path.startswith(root + "/") for root in kept):
            kept.append(path)
    return kept


def _json(value):
    """``value`` as it comes back from a JSON column."""
    return json.loads(json.dumps(value))


#: plone.dexterity names the schema it generates for a content type after
#: the site, the type and the modification time of the type's FTI
#: (``Plone_0_Folder`` before the FTI's first commit, then
#: ``Plone_5_1795673233_2_259375_0_Folder``): an object cataloged before a
#: change of its FTI keeps the older name in ``object_provides`` under
#: ZCatalog too.  Nobody searches for those names, so verify does not
#: count them as a difference (found on a new ``make run`` site, where
#: every object was "stale").
GENERATED_SCHEMAS = "plone.dexterity.schema.generated."


def _comparable(name: str, value):
    if name == "object_provides" and isinstance(value, list):
        return [v for v in value if not str(v).startswith(GENERATED_SCHEMAS)]
    return value


def _differences(expected: dict, stored: dict, names) -> list[str]:
    absent = object()
    return [
        name
        for name in names
        if _comparable(name, expected.get(name, absent))
        != _comparable(name, stored.get(name, absent))
    ]


def verify(tool, handler=None, roots=None) -> Verification:
    """Compare the catalog rows of the site with the content (see module);
    with ``roots`` (paths), only the rows and the content at and below
    them (the repair after an undo, ``undo``): a root no object lies at
    has its rows orphaned."""
    from plone_pgcatalog.extraction import extract_row
    from plone_pgcatalog.extraction import indexable
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.store import columns as store_columns
    from plone_pgcatalog.store import connection
    from plone_pgcatalog.store import schema
    from psycopg.rows import tuple_row
    from ZODB.utils import u64

    site_path = tool.site_path()
    result = Verification(site_path)
    definitions = tool.getIndexDefinitions()
    index_names = sorted(name for name in definitions if name != "SearchableText")
    columns = list(tool.schema())
    language = tool.site_languages()[0]
    conn = connection.read_connection(tool)
    with conn.transaction(), conn.cursor(row_factory=tuple_row) as cursor:
        typed = {
            name: kind
            for name, (kind, ready) in store_columns.registered(cursor).items()
            if ready
        }
    statement = reports.STORED_ROWS.format(
        idx=store_columns.whole_idx(sql.SQL("s"), typed),
        vector=schema.searchable_vector(sql.SQL("e.words"), sql.SQL("e.config")),
        typed=reports.typed_drift(typed),
    )

    def compare(batch: list) -> None:
        params = (
            [row.zoid for row in batch],
            [row.text_config for row in batch],
            [row.searchable_text for row in batch],
        )
        with conn.transaction(), connection.json_cursor(conn) as cursor:
            cursor.execute(statement, params)
            stored = {zoid: rest for zoid, *rest in cursor.fetchall()}
        for row in batch:
            found = stored.get(row.zoid)
            if found is None or found[0] != row.path:
                result.missing.append(row.path)
                continue
            _, idx, meta, same_words, drifted = found
            # A text index whose attributes give no string keeps the words
            # it had (``CatalogRow.kept``): whatever the row holds is right.
            compared = index_names
            if row.kept:
                compared = [n for n in index_names if n not in row.kept]
            names = _differences(_json(row.idx), idx, compared)
            names += _differences(_json(row.meta), meta, columns)
            if not same_words and row.text_given and "SearchableText" in definitions:
                names.append("SearchableText")
            # A typed column that is not what ``idx`` holds.
            names += [
                f"{name} column"
                for name in drifted
                if store_columns.source_key(name) in definitions
            ]
            if names:
                result.stale.append((row.path, names))

    scopes = outermost(roots) if roots is not None else [site_path]
    if handler is not None:
        handler.init(
            f"verifying {', '.join(scopes)}", len(tool) if roots is None else None
        )
    batch = []

    def visit(obj) -> None:
        path = _path(obj)
        oid = getattr(obj, "_p_oid", None)
        result.objects += 1
        if handler is not None:
            handler.report(result.objects)
        if oid is None:  # never stored: it cannot have a row
            result.missing.append(path)
            return
        zoid = u64(oid)
        result.walked[path] = zoid
        batch.append(
            extract_row(
                zoid,
                path,
                definitions,
                columns,
                indexable(obj, tool),
                default_language=language,
            )
        )
        if len(batch) >= VERIFY_BATCH:
            compare(batch)
            batch.clear()

    if roots is None:
        walk_content(tool, visit)
    else:
        from plone_pgcatalog.maintenance import resolve

        for root in scopes:
            found = resolve(tool, root)
            if found is not None:
                walk_content(tool, visit, found)
    if batch:
        compare(batch)
    if handler is not None:
        handler.finish()

    for scope in scopes:
        where, where_params = path_clause(scope, -1)
        rows = reports.SITE_ROWS.format(site=where)
        last = -1
        while True:
            with conn.transaction(), connection.json_cursor(conn) as cursor:
                cursor.execute(rows, [*where_params, last, VERIFY_BATCH])
                page = cursor.fetchall()
            if not page:
                break
            for zoid, path in page:
                result.rows += 1
                if result.walked.get(path) != zoid:
                    result.orphan.append(path)
            last = page[-1][0]
    result.missing.sort()
    result.orphan = sorted(set(result.orphan))
    result.stale.sort()
    return result


def repair(tool, found: Verification) -> None:
    """Catalog missing and stale objects, uncatalog orphan rows (at commit)."""
    from plone_pgcatalog.maintenance import resolve

    # Orphans first: an uncatalog clears every row at that path but the
    # rows this transaction catalogs, so an object living at an orphan's
    # path is cataloged again after it.
    for path in found.orphan:
        tool.uncatalog_object(path)
    todo = [*found.missing, *(path for path, _ in found.stale)]
    todo += [path for path in found.orphan if path in found.walked]
    for path in dict.fromkeys(todo):
        obj = resolve(tool, path)
        if obj is not None:
            tool.catalog_object(obj, path)


# -- stats ---------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    site_path: str
    rows: int
    indexes: int
    columns: int
    per_type: list[tuple[str | None, int]] | None
    per_state: list[tuple[str | None, int]] | None
    column_sizes: dict[str, int]
    sql_indexes: list[tuple[str, int]]
    schema_version: int | None
    counter: int | None

    def report(self, out: TextIO, expected_version: int) -> None:
        index_bytes = sum(size for _, size in self.sql_indexes)
        data_bytes = sum(self.column_sizes.values())
        out.write(
            f"catalog of {self.site_path}\n"
            f"  rows: {self.rows}\n"
            f"  indexes: {self.indexes}\n"
            f"  metadata columns: {self.columns}\n"
            f"  schema version: {self.schema_version}"
            f" (this code: {expected_version})\n"
            f"  change counter: {self.counter}\n"
            f"  catalog columns: {_size(data_bytes)}\n"
            f"  SQL indexes: {len(self.sql_indexes)}, {_size(index_bytes)}\n"
        )
        for title, counts in (
            ("portal_type", self.per_type),
            ("review_state", self.per_state),
        ):
            if counts is None:
                out.write(f"rows per {title}: (no index {title})\n")
                continue
            out.write(f"rows per {title}:\n")
            for value, count in counts:
                out.write(f"  {'(none)' if value is None else value}: {count}\n")
        out.write(f"catalog column sizes (rows of {self.site_path}):\n")
        for name, size in self.column_sizes.items():
            out.write(f"  {name}: {_size(size)}\n")
        out.write("SQL indexes (every site of the database):\n")
        for name, size in self.sql_indexes:
            out.write(f"  {name}: {_size(size)}\n")


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def stats(tool) -> Stats:
    from plone_pgcatalog.paths import path_clause
    from plone_pgcatalog.store import connection

    site_path = tool.site_path()
    site, params = path_clause(site_path, -1)
    indexes = set(tool.indexes())
    conn = connection.read_connection(tool)
    sizes = sql.SQL(", ").join(
        sql.SQL("COALESCE(sum(pg_column_size({})), 0)").format(sql.Identifier(name))
        for name in reports.CATALOG_COLUMNS
    )
    with conn.transaction(), connection.json_cursor(conn) as cursor:
        cursor.execute(reports.ROW_COUNT.format(site), params)
        rows = cursor.fetchone()[0]
        per_value = {}
        for name in ("portal_type", "review_state"):
            if name in indexes:
                cursor.execute(reports.PER_VALUE.format(site), [name, *params])
                per_value[name] = [tuple(row) for row in cursor.fetchall()]
        cursor.execute(reports.COLUMN_SIZES.format(sizes, site), params)
        column_sizes = dict(zip(reports.CATALOG_COLUMNS, cursor.fetchone()))
        cursor.execute(reports.SQL_INDEXES, [r"pgcatalog\_%"])
        sql_indexes = [tuple(row) for row in cursor.fetchall()]
        cursor.execute(reports.STATE)
        state = dict(cursor.fetchall())
    return Stats(
        site_path=site_path,
        rows=rows,
        indexes=len(indexes),
        columns=len(tool.schema()),
        per_type=per_value.get("portal_type"),
        per_state=per_value.get("review_state"),
        column_sizes={k: int(v) for k, v in column_sizes.items()},
        sql_indexes=[(name, int(size)) for name, size in sql_indexes],
        schema_version=state.get("schema_version"),
        counter=state.get("counter"),
    )
