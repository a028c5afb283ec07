"""The soak in its short form (issue 16): ``benchmarks/soak.py --faults``
for 60 seconds with 4 clients, two Zope instances serving one database on
a PostgreSQL server of the command's own, whose connections it terminates
and which it stops for 5 seconds meanwhile.

The command itself is the test's subject: it builds the site, serves it
from two processes, loads it over HTTP, then checks the catalog rows of
every acknowledged write, ``pgcatalog verify`` and the connections left
(its docstring).  This test runs it and asserts each of its findings
separately, so that a failure says which one.
"""

from __future__ import annotations

from pathlib import Path

import importlib.util
import json
import os
import signal
import subprocess
import sys

ROOT = Path(__file__).resolve().parents[2]


def _load_soak():
    spec = importlib.util.spec_from_file_location(
        "soak", ROOT / "benchmarks" / "soak.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


#: The command's own judgement (``unexpected_errors``, ``FAIL_FAST_S``).
soak = _load_soak()


def _soak(tmp_path, *args: str) -> tuple[dict, subprocess.CompletedProcess]:
    """Run ``benchmarks/soak.py ARGS``: its result and the process."""
    output = tmp_path / "soak"
    # In a session of its own: on a timeout its instances and server go too.
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "soak.py"),
            *args,
            "--output",
            str(output),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        stdout, stderr = process.communicate()
    finished = subprocess.CompletedProcess(
        process.args, process.returncode, stdout, stderr
    )
    assert output.with_suffix(".json").exists(), finished.stderr[-3000:]
    return json.loads(output.with_suffix(".json").read_text()), finished


def test_two_instances_under_load_lose_nothing(tmp_path):
    result, finished = _soak(tmp_path, "--faults", "--duration", "60", "--clients", "4")
    assert result["requests"] >= 100  # the instances served
    assert result["acknowledged"] >= 20  # and wrote
    assert result["item_problems"] == []
    assert result["verify"] == "0 differences"
    assert result["connections_after"] == 0
    unexpected = soak.unexpected_errors(result)
    assert unexpected == {}
    for kind in ("search anonymous", "search member", "folder listing", "navigation"):
        assert result["latency"][kind]["count"] > 0, kind
    terminate = result["faults"]["terminate"]
    assert terminate["connections"] > 0
    restart = result["faults"]["restart"]
    # Requests sent while the server was down, or in flight when it
    # stopped, ended: no hang past the outage and a margin.
    assert restart["caught_by_the_stop"] > 0
    assert restart["caught_slowest_s"] <= restart["outage_s"] + soak.FAIL_FAST_S
    assert restart["slowest_failure_s"] <= soak.FAIL_FAST_S
    assert restart["pages_naming_sql"] == 0, restart["naming_sql"]
    assert None not in restart["serving_again_after_s"].values()  # recovered
    assert finished.returncode == 0, finished.stdout[-3000:]


def test_more_requests_than_the_pools_allow_wait_then_fail_and_recover(tmp_path):
    """Two instances of four threads, each with two pooled connections, and
    eight clients: requests beyond the pool wait its timeout (3 s), then
    fail; nothing deadlocks, nothing is lost, and both instances answer
    once the load is gone."""
    result, finished = _soak(
        tmp_path,
        "--duration",
        "30",
        "--clients",
        "8",
        "--pool-max-size",
        "2",
        "--pool-timeout",
        "3",
    )
    pool = result["pool"]
    assert pool["timeouts"] > 0  # the pools were exhausted
    assert pool["slowest_timeout_s"] <= 3 + soak.FAIL_FAST_S
    assert pool["most_connections"] <= 2 * (2 + 2)
    assert set(result["answers_after"].values()) == {200}
    assert result["item_problems"] == []
    assert result["verify"] == "0 differences"
    assert result["connections_after"] == 0
    assert soak.unexpected_errors(result) == {}
    assert finished.returncode == 0, finished.stdout[-3000:]
