"""The benchmark's rounds of query phases (``benchmarks/run.py --rounds``)
combine into one result per backend."""

from __future__ import annotations

from pathlib import Path

import importlib.util
import pytest
import sys

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    """``benchmarks/NAME.py`` as a module.  Its sibling modules (``run.py``
    imports ``backends`` and ``report``) are imported by their names, so
    the directory is on the path while it loads; its dataclasses look
    their module up by name, so it is in ``sys.modules`` meanwhile."""
    spec = importlib.util.spec_from_file_location(
        f"benchmarks_{name}", BENCHMARKS / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
        del sys.modules[spec.name]
    return module


run = _load("run")


def _round(medians: dict, peak: int) -> dict:
    return {
        "cataloged": 500,
        "peak_rss_kb": peak,
        "queries": [
            {
                "name": name,
                "mode": "ids",
                "median_ms": median,
                "p95_ms": median * 2,
                "min_ms": median / 2,
                "max_ms": median * 3,
                "iterations": 50,
            }
            for name, median in medians.items()
        ],
    }


def test_rounds_combine_into_the_median_of_their_medians():
    combined = run.combine_rounds(
        [
            _round({"simple": 1.0, "complex": 4.0}, 100),
            _round({"simple": 3.0, "complex": 2.0}, 300),
            _round({"simple": 2.0, "complex": 9.0}, 200),
        ]
    )
    simple, complex_ = combined["queries"]
    assert simple["median_ms"] == 2.0 and simple["rounds_median_ms"] == [1.0, 3.0, 2.0]
    assert simple["p95_ms"] == 4.0
    assert (simple["min_ms"], simple["max_ms"]) == (0.5, 9.0)
    assert simple["iterations"] == 150
    assert complex_["median_ms"] == 4.0
    assert combined["rounds"] == 3 and combined["peak_rss_kb"] == 300


def test_rounds_of_other_scenarios_are_refused():
    with pytest.raises(ValueError, match="other scenarios"):
        run.combine_rounds([_round({"simple": 1.0}, 1), _round({"complex": 1.0}, 1)])


def test_rounds_are_bounded():
    assert run.parse_args(["--rounds", "3"]).rounds == 3
    with pytest.raises(SystemExit):
        run.parse_args(["--rounds", "0"])


def test_probe_scenarios_run_in_a_scale_probe_only(monkeypatch):
    scenarios = _load("scenarios")
    monkeypatch.delenv(scenarios.PROBE, raising=False)
    names = [s.name for s in scenarios.all_scenarios()]
    assert names == [s.name for s in scenarios.SCENARIOS]
    monkeypatch.setenv(scenarios.PROBE, "1")
    names = [s.name for s in scenarios.all_scenarios()]
    assert names[-3:] == ["probe_large_len", "probe_subtree", "probe_type_state"]
    subtree = scenarios.PROBE_SCENARIOS[1].query("/plone")
    assert subtree["path"] == "/plone/copy-00007"
    # A type in a state: the site's own values, which one copy in 40 keeps.
    listing = scenarios.PROBE_SCENARIOS[2].query("/plone")
    assert (listing["portal_type"], listing["review_state"]) == (
        "Document",
        "published",
    )
