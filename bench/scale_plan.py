"""The billion-document plan, from measurements: per step, what 1B documents (and Zyda-2's 5T tokens) cost.

Reads the runs `bench_scale.py --until all` recorded in bench/scale.json: per step, CPU seconds, bytes read and
written, tasks and the peak memory of the driver and the largest worker, at each size measured. A step's CPU and
bytes per document come from the largest run and are scaled linearly to the target (the scale curve's job is to
show that linear holds: its CPU per document is printed at every size); peak memory per task is what was measured
(it must not grow with the corpus; every size is printed so a reader sees whether it does). Tasks at the target
keep the measured documents per task (one per input file: real corpora come in bigger files, so fewer tasks).
Nodes for a 24-hour build: CPU-hours over 24 hours of `--node-cpus` cores, rounded up.

    python bench/scale_plan.py                       # markdown tables for docs/scale.md
    python bench/scale_plan.py --docs 1e9 --tokens 5e12 --node-cpus 16 --hours 24
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "scale.json"
TB = 1e12


def runs_through_all(results: Path) -> list[dict]:
    entries = json.loads(results.read_text())["scale"] if results.exists() else []
    return sorted((r for r in entries if r["until"] == "all" and "cpu_seconds" in r), key=lambda r: r["docs"])


def step_table(runs: list[dict], target: float, node_cpus: int, hours: float) -> str:
    largest = runs[-1]
    n = largest["docs"]
    sizes = " / ".join(f"{r['docs'] / 1e6:g}M" for r in runs)
    lines = [f"| step | CPU-ms/doc at {sizes} | CPU-hours for {target:,.0f} | read TB | written TB | "
             f"largest worker MB at {sizes} | driver MB at {sizes} | tasks |",
             "|---|---|---:|---:|---:|---|---|---:|"]
    total_cpu = 0.0
    for name, s in largest["stages"].items():
        cpu_h = s["cpu_seconds"] / n * target / 3600
        total_cpu += cpu_h
        per_doc = " / ".join(f"{r['stages'].get(name, {}).get('cpu_ms_per_doc', float('nan')):.3f}" for r in runs)
        worker = " / ".join(f"{r['stages'].get(name, {}).get('worker_rss_mb', 0):.0f}" for r in runs)
        driver = " / ".join(f"{r['stages'].get(name, {}).get('driver_rss_mb', 0):.0f}" for r in runs)
        read = s.get("read_mb", 0) * 2**20 / n * target / TB
        written = s.get("written_mb", 0) * 2**20 / n * target / TB
        tasks = s["tasks"] / n * target if s.get("tasks") else 0
        lines.append(f"| {name} | {per_doc} | {cpu_h:,.0f} | {read:,.1f} | {written:,.1f} | {worker} | {driver} | "
                     f"{tasks:,.0f} |")
    nodes = math.ceil(total_cpu / hours / node_cpus)
    lines.append("| **total** | " + " / ".join(f"{r['cpu_ms_per_doc']:.3f}" for r in runs)
                 + f" | **{total_cpu:,.0f}** | | | | | |")
    lines.append("")
    lines.append(f"{target:,.0f} documents: {total_cpu:,.0f} CPU-hours = **{nodes:,} node{'s' * (nodes != 1)} of "
                 f"{node_cpus} CPUs for {hours:g} hours** (from the {n:,}-document run; the run folder takes "
                 f"{largest['disk_mb_per_million'] * target / 1e6 / 1e6:,.1f} TB at {largest['disk_mb_per_million']:,.0f} MB "
                 "per million documents)")
    return "\n".join(lines)


def tokens_line(run_dir: Path | None, largest: dict, tokens: float, node_cpus: int, hours: float) -> str:
    """Zyda-2's size in tokens as documents, at the yield the measured run had (tokens available to the mix per
    input document), read from that run's manifest."""
    if run_dir is None or not (run_dir / "manifest.json").exists():
        return ""
    mixture = json.loads((run_dir / "manifest.json").read_text())["mixture"]["sources"]
    available = sum(s["available_tokens"] for s in mixture.values())
    per_input = available / largest["docs"]
    docs = tokens / per_input
    cpu_h = largest["cpu_seconds"] / largest["docs"] * docs / 3600
    nodes = math.ceil(cpu_h / hours / node_cpus)
    return (f"{tokens:,.0f} tokens: at this corpus's yield ({per_input:,.0f} tokens left to the mix per input document) "
            f"that is {docs:,.0f} input documents, {cpu_h:,.0f} CPU-hours = {nodes:,} nodes of {node_cpus} CPUs "
            f"for {hours:g} hours")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--docs", type=float, default=1e9, help="target documents (default 1e9)")
    ap.add_argument("--tokens", type=float, default=5e12, help="target tokens (default Zyda-2's 5e12)")
    ap.add_argument("--run", type=Path, default=None, help="the largest run's folder (its manifest gives tokens per document)")
    ap.add_argument("--node-cpus", type=int, default=16)
    ap.add_argument("--hours", type=float, default=24.0)
    a = ap.parse_args()
    runs = runs_through_all(a.results)
    if not runs:
        raise SystemExit(f"no run through all steps with CPU figures in {a.results}: run bench_scale.py --until all first")
    print(step_table(runs, a.docs, a.node_cpus, a.hours))
    if line := tokens_line(a.run, runs[-1], a.tokens, a.node_cpus, a.hours):
        print(line)


if __name__ == "__main__":
    main()
