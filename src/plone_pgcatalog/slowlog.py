"""The slow-query log: searches slower than a threshold, logged and kept.

Owns the threshold's reading (the tool's ``slow_query_ms`` property: a
number of milliseconds; ``-1`` turns the log off, ``0`` logs every search,
as PostgreSQL's ``log_min_duration_statement``), the one log line a slow
search writes, and this process's report of the slow query *shapes*: one
entry per site and SQL text (values are parameters, so one text per
shape; a site's report shows its own searches, whose values are its
users'), with
the number of slow runs, their mean and maximum, and the last run's query,
statement and parameters, so that an operator can see its plan
(``explain``).

The report lives in this process's memory only (each Zope instance has
its own; a restart empties it): it is for finding what is slow now, not a
history.  Searches that are not slow cost one comparison (``observe``).

Must not compose SQL: the statements are the query's (``query.SearchSQL``)
and ``store.reports.explain``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog.store import reports
from psycopg.rows import tuple_row

import itertools
import logging
import threading
import time

logger = logging.getLogger("plone_pgcatalog.slowlog")

#: The documented default of the tool's ``slow_query_ms`` property.
DEFAULT_THRESHOLD_MS = 100
#: Shapes kept; past it, the one with the smallest maximum makes room.
MAX_SHAPES = 100
#: Parameters of a slow run are kept (for ``explain``) up to this size of
#: their ``repr``: a search in a transaction that cataloged many objects
#: sends their pending rows as a parameter, which must not stay in memory.
MAX_PARAMS_CHARS = 20_000


@dataclass
class Shape:
    """The slow runs of one SQL text."""

    __allow_access_to_unprotected_subobjects__ = True  # page templates

    sql: str
    #: the path of the site whose catalog ran it (each site sees its own)
    site: str = ""
    count: int = 0
    total_ms: float = 0.0
    max_ms: float = 0.0
    #: the last slow run: its time, query, rows (None: it failed, ``error``)
    last_ms: float = 0.0
    query: str = ""
    rows: int | None = 0
    error: str = ""
    at: float = 0.0
    statement: object = field(default=None, repr=False)
    #: None: too large to keep (``MAX_PARAMS_CHARS``)
    params: tuple | None = field(default=(), repr=False)
    #: the search keeps its plan (``query.SearchSQL.plan_kept``,
    #: ``plan_forced``: ``store.search.keep_plan``): explained
    #: with that plan, not one made for the values
    kept: bool = False

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.count if self.count else 0.0

    @property
    def key(self) -> str:
        """A short stable name of the shape, for links."""
        import hashlib

        return hashlib.sha1(self.sql.encode()).hexdigest()[:12]


class SlowQueryLog:
    """This process's slow query shapes, per site (thread-safe): a site's
    report shows its own searches only (their values are its users')."""

    def __init__(self, max_shapes: int = MAX_SHAPES):
        self._lock = threading.Lock()
        self._shapes: dict[tuple[str, str], Shape] = {}
        self._max = max_shapes

    def record(
        self,
        ms: float,
        query: str,
        statement,
        params: tuple,
        rows: int | None,
        error: str = "",
        kept: bool = False,
        site: str = "",
    ) -> Shape:
        text = statement.as_string(None)
        if len(repr(params)) > MAX_PARAMS_CHARS:
            params = None
        with self._lock:
            shape = self._shapes.get((site, text))
            if shape is None:
                if len(self._shapes) >= self._max:
                    # The bound is the process's: the fastest of any site.
                    fastest = min(self._shapes.values(), key=lambda s: s.max_ms)
                    del self._shapes[fastest.site, fastest.sql]
                shape = self._shapes[site, text] = Shape(text, site)
            shape.count += 1
            shape.total_ms += ms
            shape.max_ms = max(shape.max_ms, ms)
            shape.last_ms = ms
            shape.query, shape.rows, shape.at = query, rows, time.time()
            shape.statement, shape.params, shape.error = statement, params, error
            shape.kept = kept
        outcome = f"{rows} rows" if error == "" else f"failed: {error}"
        logger.warning(
            "slow search: %.1f ms, %s; query: %s; SQL: %s", ms, outcome, query, text
        )
        return shape

    def shapes(self, site: str | None = None) -> list[Shape]:
        """The shapes of the site at path ``site`` (None: of all sites),
        slowest first (by maximum)."""
        with self._lock:
            found = [s for s in self._shapes.values() if site in (None, s.site)]
        return sorted(found, key=lambda s: -s.max_ms)

    def get(self, key: str, site: str | None = None) -> Shape | None:
        return next((s for s in self.shapes(site) if s.key == key), None)

    def clear(self, site: str | None = None) -> None:
        """Forget the shapes of the site at path ``site`` (None: all)."""
        with self._lock:
            for shape in list(self._shapes.values()):
                if site in (None, shape.site):
                    del self._shapes[shape.site, shape.sql]


#: The log of this process.
LOG = SlowQueryLog()


def zcatalog_report(log: SlowQueryLog, site: str) -> list[dict]:
    """The shapes of ``log`` of the site at path ``site``, as ZCatalog's
    ``getCatalogReport`` gives its
    slow queries, slowest mean first: ``{"query": the last run's query,
    "counter": runs, "duration": mean ms, "last": {"duration": ms,
    "details": []}}``.  ZCatalog's details time each index of the last
    run; a search here is one statement, so there are none."""
    report = [
        {
            "query": shape.query,
            "counter": shape.count,
            "duration": shape.mean_ms,
            "last": {"duration": shape.last_ms, "details": []},
        }
        for shape in log.shapes(site)
    ]
    report.sort(key=lambda entry: entry["duration"], reverse=True)
    return report


def threshold_ms(catalog) -> float:
    """The catalog's threshold, ``-1`` when the log is off."""
    value = getattr(catalog, "slow_query_ms", DEFAULT_THRESHOLD_MS)
    return -1 if value is None else value


def observe(
    catalog, started: float, describe, error: str = "", kept: bool = False
) -> None:
    """Record the search begun at ``started`` (``time.perf_counter``) if it
    was slow; ``describe()`` gives ``(query, statement, params, rows)``,
    asked for only then.  ``error``: the search failed (a timeout);
    ``kept``: its plan is kept (``Shape.kept``)."""
    ms = (time.perf_counter() - started) * 1000
    limit = threshold_ms(catalog)
    if limit < 0 or ms < limit:
        return
    site_path = getattr(catalog, "site_path", None)
    site = site_path() if callable(site_path) else ""
    LOG.record(ms, *describe(), error=error, kept=kept, site=site)


#: Names of the statements ``explain`` prepares, one per explanation.
_EXPLAINED = itertools.count(1)


def explain(conn, shape: Shape) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the shape's last slow run, with
    its parameters, on ``conn`` (run, then rolled back); ``[]`` when its
    parameters were too large to keep.  A search whose plan is kept ran the
    plan PostgreSQL made blind to the values: that one is explained (an
    operator looking for why a listing is slow must see the plan it ran)."""
    if shape.params is None:
        return []
    if not shape.kept:
        with conn.transaction(force_rollback=True):
            with conn.cursor(row_factory=tuple_row) as cursor:
                cursor.execute(reports.explain(shape.statement), shape.params)
                return [row[0] for row in cursor.fetchall()]
    name = f"pgcatalog_explained_{next(_EXPLAINED)}"
    return reports.explain_generic(conn, shape.statement, shape.params, name)
