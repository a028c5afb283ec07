"""The soak in its short form (issue 16): ``benchmarks/soak.py --faults``
for 60 seconds with 4 clients, two Zope instances serving one database on
a PostgreSQL server of the command's own, whose connections it terminates
and which it stops for 5 seconds meanwhile.

The command itself is the test's subject: it builds the site, serves it
from two processes, loads it over HTTP, then checks the catalog rows of
every acknowledged write, ``pgcatalog verify`` and the connections left
(its docstring).  This test runs it on the test server and asserts each of
its findings separately, so that a failure says which one.
"""

from __future__ import annotations

from pathlib import Path

import json
import subprocess
import sys

ROOT = Path(__file__).resolve().parents[2]


def test_two_instances_under_load_lose_nothing(tmp_path):
    output = tmp_path / "soak"
    finished = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "soak.py"),
            "--faults",
            "--duration",
            "60",
            "--clients",
            "4",
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert output.with_suffix(".json").exists(), finished.stderr[-3000:]
    result = json.loads(output.with_suffix(".json").read_text())
    assert result["requests"] >= 100  # the instances served
    assert result["acknowledged"] >= 20  # and wrote
    assert result["item_problems"] == []
    assert result["verify"] == "0 differences"
    assert result["connections_after"] == 0
    unexpected = {
        error: count
        for error, count in result["errors"].items()
        if "ConflictError" not in error
        and not error.startswith("outage: ")
        and not error.startswith(("terminate: create", "terminate: edit"))
        and not error.startswith(("terminate: publish", "terminate: rename"))
        and not error.startswith(("terminate: delete", "terminate: sharing"))
    }
    assert unexpected == {}
    for kind in ("search anonymous", "search member", "folder listing", "navigation"):
        assert result["latency"][kind]["count"] > 0, kind
    terminate = result["faults"]["terminate"]
    assert terminate["connections"] > 0
    restart = result["faults"]["restart"]
    assert restart["slowest_failure_s"] <= 15  # failed fast, no hang
    assert restart["pages_naming_sql"] == 0, restart["naming_sql"]
    assert None not in restart["serving_again_after_s"].values()  # recovered
    assert finished.returncode == 0, finished.stdout[-3000:]
