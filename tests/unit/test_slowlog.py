"""The slow-query log's report, without a database (``slowlog``)."""

from __future__ import annotations

from plone_pgcatalog import slowlog
from psycopg import sql


def test_the_report_keeps_the_slowest_shapes():
    log = slowlog.SlowQueryLog(max_shapes=2)
    for ms, text in ((5, "SELECT 1"), (9, "SELECT 2"), (7, "SELECT 3")):
        log.record(ms, "{}", sql.SQL(text), (), 0)
    assert [s.sql for s in log.shapes()] == ["SELECT 2", "SELECT 3"]


def test_large_parameters_are_not_kept():
    """A search in a transaction that cataloged many objects sends their
    pending rows as a parameter: they must not stay in memory."""
    log = slowlog.SlowQueryLog()
    big = ("x" * (slowlog.MAX_PARAMS_CHARS + 1),)
    shape = log.record(150.0, "{}", sql.SQL("SELECT %s"), big, 1)
    assert shape.params is None
    assert slowlog.explain(None, shape) == []  # nothing to run again
    shape = log.record(150.0, "{}", sql.SQL("SELECT %s"), ("small",), 1)
    assert shape.params == ("small",)


def test_a_failed_search_is_recorded_with_its_error(caplog):
    log = slowlog.SlowQueryLog()
    shape = log.record(
        30_000.0, "{'SearchableText': 'x'}", sql.SQL("SELECT 1"), (), None, "timeout"
    )
    assert (shape.rows, shape.error) == (None, "timeout")
    assert "failed: timeout" in caplog.text


def test_observe_records_only_what_is_slower_than_the_threshold(monkeypatch):
    class Catalog:
        slow_query_ms = 50

    log = slowlog.SlowQueryLog()
    monkeypatch.setattr(slowlog, "LOG", log)
    clock = iter([10.0]).__next__
    monkeypatch.setattr(slowlog.time, "perf_counter", clock)
    slowlog.observe(Catalog(), 10.0 - 0.049, lambda: ("{}", sql.SQL("S"), (), 1))
    assert log.shapes() == []
    clock = iter([10.0]).__next__
    monkeypatch.setattr(slowlog.time, "perf_counter", clock)
    slowlog.observe(Catalog(), 10.0 - 0.051, lambda: ("{}", sql.SQL("S"), (), 1))
    assert [s.count for s in log.shapes()] == [1]
    Catalog.slow_query_ms = -1
    clock = iter([10.0]).__next__
    monkeypatch.setattr(slowlog.time, "perf_counter", clock)
    slowlog.observe(Catalog(), 0.0, lambda: ("{}", sql.SQL("S"), (), 1))
    assert [s.count for s in log.shapes()] == [1]
