"""The scale probe (``benchmarks/scale_probe.py``) runs ``run.py``'s phases
with arguments of its own: they must hold all that ``run.run_phase``
reads (``--discussion`` came to run.py, and the probe failed before its
first phase)."""

from __future__ import annotations

from tests.unit.test_bench_rounds import _load

import pytest


class _Started(Exception):
    """The phase's worker would start here."""


def test_the_probes_arguments_start_a_phase(monkeypatch, tmp_path):
    probe = _load("scale_probe")
    args = probe.parse_args(["--dsn", "postgresql://example/postgres"])
    started = []

    def start(command, env, **kwargs):
        started.append((command, env))
        raise _Started

    monkeypatch.setattr(probe.run.subprocess, "run", start)
    with pytest.raises(_Started):
        probe.run.run_phase("create", "pgcatalog", "dsn", args, tmp_path)
    [(command, env)] = started
    assert command[command.index("--docs") + 1] == "500"
    assert env["PGCATALOG_RESULT_CACHE"] == "off"
    assert env["PGCATALOG_BENCH_DISCUSSION"] == "off"
