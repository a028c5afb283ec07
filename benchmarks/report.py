"""The Markdown report of a run (run.py's ``OUTPUT.md``).

Owns: turning the results JSON into tables of medians, p95 and ratios
(pgcatalog / ZCatalog: below 1 means pgcatalog is faster, or for
throughput slower), and the EXPLAIN section.  Pure: no Zope, no database.

Usage on an existing result: ``python benchmarks/report.py OUTPUT.json``.
"""

from __future__ import annotations

from pathlib import Path

import json
import statistics
import sys

BASE, CANDIDATE = "zcatalog", "pgcatalog"


def _pct(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100.0 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _ratio(candidate, base) -> str:
    if candidate is None or base in (None, 0):
        return "–"
    return f"{candidate / base:.2f}"


def _load(values) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _memory(text: str | None) -> str:
    if not text or not text.endswith(" kB"):
        return text or "?"
    return f"{int(text.split()[0]) / 2**20:.0f} GB"


def _header(results: dict) -> list[str]:
    machine = results["machine"]
    any_backend = next(iter(results["backends"].values()))
    versions = any_backend["query"]["versions"]
    source = results.get("pgcatalog_source", {})
    lines = [
        f"# plone_pgcatalog benchmark: {results['docs']:,} documents",
        "",
        f"- Run {results['started']}, {results['seconds'] / 60:.1f} min; "
        f"{results['warmup']} warm-up + {results['iterations']} timed "
        "iterations per query, times in ms (median, p95); plone_pgcatalog's "
        "results kept per committed state: "
        + ("**on**" if results.get("result_cache") else "off")
        + "; plone.app.discussion loaded: "
        + ("**yes**" if results.get("discussion") else "no")
        + ".",
        f"- Machine: {machine['cpu']}, {machine['cpus']} CPUs, "
        f"{_memory(machine['memory'])} RAM; {machine['platform']}; "
        f"Python {machine['python']}.",
        f"- Load average at start {_load(machine['loadavg_start'])}"
        f", at end {_load(machine.get('loadavg_end', ()))}: "
        "other processes ran at the same time; compare ratios within this run.",
        f"- {machine['postgresql'].split(' on ')[0]} (one server, one database "
        "per backend"
        + (
            ", `VACUUM (ANALYZE)` before the query phase"
            if "analyze_seconds" in any_backend
            else ""
        )
        + "); ZODB cache-size 400 for both.",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
    ]
    rounds = any_backend["query"].get("rounds")
    if rounds:
        lines.append(
            f"- Query phases: {rounds} rounds, alternating between the backends "
            "(`--rounds`); a median is the median of the rounds' medians, a p95 "
            "the median of their p95s."
        )
    if source:
        if source.get("from_worktree"):
            state = f"the work tree at git {source.get('git_head')}" + (
                ", with uncommitted changes in src/"
                if source.get("src_modified_in_worktree")
                else ""
            )
        else:
            state = f"a copy, not the work tree (HEAD was {source.get('git_head')})"
        lines.append(
            f"- plone_pgcatalog imported from {source.get('module')}: {state}."
        )
    return lines + [""]


def _queries(results: dict) -> list[str]:
    backends = results["backends"]
    by_key = {
        name: {(q["name"], q["mode"]): q for q in data["query"]["queries"]}
        for name, data in backends.items()
    }
    keys = list((by_key.get(BASE) or by_key[next(iter(by_key))]).keys())
    lines = [
        "## Queries",
        "",
        "`ids`: `searchResults` + `len()` + `getPath()` of 20 brains; `metadata`: "
        "the same plus `Title` and `review_state`. Loads: ZODB objects loaded "
        "per query (warm median / with a cold connection cache).",
        "",
        "| Scenario | Mode | Results | ZCatalog median | ZCatalog p95 "
        "| pgcatalog median | pgcatalog p95 | Ratio (median) | Loads ZCatalog "
        "| Loads pgcatalog |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in keys:
        base = by_key.get(BASE, {}).get(key)
        cand = by_key.get(CANDIDATE, {}).get(key)
        any_q = base or cand
        results_len = any_q["result_len"]

        def cells(q):
            if q is None:
                return ["–", "–"], "–"
            loads = f"{_fmt(q['loads_median'], 0)} / {_fmt(q['cold_loads'])}"
            return [_fmt(q["median_ms"]), _fmt(q["p95_ms"])], loads

        base_cells, base_loads = cells(base)
        cand_cells, cand_loads = cells(cand)
        ratio = _ratio(cand and cand["median_ms"], base and base["median_ms"])
        lines.append(
            f"| {any_q['title']} ({any_q['user']}) | {key[1]} | {results_len} | "
            + " | ".join(base_cells + cand_cells)
            + f" | {ratio} | {base_loads} | {cand_loads} |"
        )
    return lines + [""]


def _ms_stats(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), _pct(values, 95)


def _writes(results: dict) -> list[str]:
    backends = results["backends"]
    rows = []

    def per_doc(label, phase, key):
        stats = {}
        for name, data in backends.items():
            values = data[phase][key]
            stats[name] = _ms_stats(values)
        count = len(next(iter(backends.values()))[phase][key])
        rows.append(
            (
                f"{label} (ms/doc, median, n={count})",
                {n: s[0] for n, s in stats.items()},
            )
        )
        rows.append((f"{label} (ms/doc, p95)", {n: s[1] for n, s in stats.items()}))

    rows.append(
        (
            "Site creation (s)",
            {n: d["create"]["site_seconds"] for n, d in backends.items()},
        )
    )
    per_doc("Content creation: create + transition + commit", "create", "create_ms")
    per_doc("Modification: edit + reindex + commit", "write", "modify_ms")
    per_doc("Workflow transition (retract) + commit", "write", "transition_ms")
    rows.append(
        (
            "Big folder: creation, 100 items per commit (ms/item)",
            {n: d["write"]["big_folder"]["ms_per_item"] for n, d in backends.items()},
        )
    )
    descendants = max(
        d["write"]["big_folder"]["descendants"] for d in backends.values()
    )
    rows.append(
        (
            f"Rename a folder with {descendants:,} descendants + commit "
            "(ms, mean of 2)",
            {n: statistics.mean(d["write"]["rename_ms"]) for n, d in backends.items()},
        )
    )
    rows.append(
        (
            f"Local role + reindexObjectSecurity on {descendants:,} descendants"
            " + commit (ms, mean of 2)",
            {n: statistics.mean(d["write"]["sharing_ms"]) for n, d in backends.items()},
        )
    )
    rows.append(
        (
            "clearFindAndRebuild + commit (objects/s, higher is better)",
            {n: d["write"]["rebuild"]["objects_per_s"] for n, d in backends.items()},
        )
    )
    rows.append(
        (
            "clearFindAndRebuild: objects, seconds",
            {
                n: f"{d['write']['rebuild']['objects']:,}, "
                f"{d['write']['rebuild']['seconds']:.1f} s"
                for n, d in backends.items()
            },
        )
    )
    rows.append(
        (
            "Peak RSS of the querying process (MB)",
            {n: d["query"]["peak_rss_kb"] / 1024 for n, d in backends.items()},
        )
    )
    rows.append(
        (
            "RSS of the querying process before the queries (MB)",
            {n: (d["query"]["rss_start_kb"] or 0) / 1024 for n, d in backends.items()},
        )
    )
    rows.append(
        (
            "Database size after all writes (MB)",
            {n: d["database_bytes"] / 2**20 for n, d in backends.items()},
        )
    )
    lines = [
        "## Writes, memory, size",
        "",
        "| Operation | ZCatalog | pgcatalog | Ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, values in rows:
        base, cand = values.get(BASE), values.get(CANDIDATE)
        if isinstance(base, str) or isinstance(cand, str):
            lines.append(f"| {label} | {base or '–'} | {cand or '–'} | |")
        else:
            lines.append(
                f"| {label} | {_fmt(base)} | {_fmt(cand)} | {_ratio(cand, base)} |"
            )
    return lines + [""]


def _explain(results: dict) -> list[str]:
    data = results["backends"].get(CANDIDATE)
    if not data or not data["query"].get("explain"):
        return []
    lines = [
        "## EXPLAIN (ANALYZE, BUFFERS) of each scenario's SQL (pgcatalog)",
        "",
        "Run once after the timings, on the same database; the parameters are the "
        "ones of the Manager (or Anonymous) query.",
        "",
    ]
    for plan in data["query"]["explain"]:
        lines += [
            f"### {plan['scenario']}",
            "",
            "```sql",
            plan["sql"],
            "```",
            "",
            "Parameters: `" + ", ".join(plan["params"]) + "`",
            "",
            *(
                ["Run with the plan PostgreSQL keeps, made blind to the values.", ""]
                if plan.get("kept")
                else []
            ),
            "```",
            plan["explain"],
            "```",
            "",
        ]
    return lines


def markdown(results: dict) -> str:
    return "\n".join(
        _header(results) + _queries(results) + _writes(results) + _explain(results)
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python benchmarks/report.py RESULTS.json")
    print(markdown(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
