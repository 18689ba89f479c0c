"""Scale curve: the zyda2 recipe on sample corpora of growing size, per stage time, documents/s and memory.

For each size the sample corpus is made (cached under --corpora; above 20,000 documents it is made in
parts, see curate/sample/scaled.py), then `curate run pipelines/zyda2.yaml --until STAGE` runs in a
subprocess on the embedded Ray cluster while this script samples /proc every 0.25s: the driver's RSS
and the largest RSS of a Ray worker process, attributed to the stage the driver's progress lines name.
Time per stage is the run's own `wall_seconds` (summary.json); documents/s is the stage's input over it.
CPU seconds per stage are the user+system ticks of the driver and every process under it (Ray's workers,
raylet, GCS) that grew while the driver named that stage, from /proc/<pid>/stat; bytes written per stage
likewise from /proc/<pid>/io (`write_bytes`: what reached the storage layer, Ray's spills included), bytes read
from its `rchar` (through read calls, page cache included). What
the driver does after the last stage (`report`: the summary is written, then report.html) is a stage of
its own here. The run folder's size on disk, per top-level entry and per million documents, is recorded
after the run (`du`).

`--many-files N [N ...]` measures the driver instead: a source of N tiny JSONL files (N ingest tasks of
each phase) through the ingest stage, and the driver's peak RSS, which must not grow with N.

    python bench/bench_scale.py --docs 100000 300000 --until pack
    python bench/bench_scale.py --docs 1000000 --until dedup
    python bench/bench_scale.py --docs 10000000 --until all      # every step: kept, manifest and the report too
    python bench/bench_scale.py --many-files 1000 10000
    python bench/bench_scale.py --plot-only          # the table and plot from bench/scale.json

Results accumulate in bench/scale.json (one entry per size and stage list); the plot is bench/scale.png
(matplotlib, from the `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loopback import children_of  # noqa: E402  (the /proc process tree, shared with bench_nodes)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "scale.json"
PLOT = ROOT / "bench" / "scale.png"
STAGE_LINE = re.compile(r"^\[([^\]:]+)")


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(root: int) -> list[int]:
    children = children_of()
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def is_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().startswith(b"ray::") and pid > 0
    except OSError:
        return False


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (its own, not its children's)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def io_bytes(pid: int) -> tuple[int, int] | None:
    """(bytes read through read calls, page cache included: `rchar`; bytes caused to be written to storage:
    `write_bytes`) of a live process, from /proc/<pid>/io."""
    try:
        with open(f"/proc/{pid}/io") as handle:
            fields = dict(line.split(":", 1) for line in handle)
        return int(fields["rchar"]), int(fields["write_bytes"])
    except (OSError, ValueError, KeyError):
        return None


class Sampler:
    """Per stage (the stage the driver last named; `report` once the run's summary.json is written): peak RSS of
    the driver and of the largest Ray worker, and the CPU seconds and bytes written by the driver and every
    process under it. A process's counters are read every 0.25 s; what grew since its last reading is the
    current stage's (what a process does in its last 0.25 s before it exits is lost: Ray's workers live long)."""

    def __init__(self, process: subprocess.Popen, summary: Path | None = None):
        self.process, self.stage, self.summary = process, "start", summary
        self.driver: dict[str, float] = {}
        self.worker: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.written: dict[str, int] = {}
        self.read: dict[str, int] = {}
        self.driver_peak = 0.0
        self.lines: list[str] = []
        self._cpu_seen: dict[int, float] = {}
        self._io_seen: dict[int, tuple[int, int]] = {}
        threading.Thread(target=self._read, daemon=True).start()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if (match := STAGE_LINE.match(line)) and self.stage != "report":
                self.stage = match.group(1).strip()

    def _count(self, stage: str, pids: list[int]) -> None:
        for pid in pids:
            if (cpu := cpu_seconds(pid)) is not None:
                self.cpu[stage] = self.cpu.get(stage, 0.0) + cpu - self._cpu_seen.get(pid, 0.0)
                self._cpu_seen[pid] = cpu
            if (io := io_bytes(pid)) is not None:
                read, written = self._io_seen.get(pid, (0, 0))
                self.read[stage] = self.read.get(stage, 0) + io[0] - read
                self.written[stage] = self.written.get(stage, 0) + io[1] - written
                self._io_seen[pid] = io

    def _sample(self) -> None:
        while self.process.poll() is None:
            if self.summary is not None and self.stage != "report" and self.summary.exists():
                self.stage = "report"
            stage = self.stage
            tree = [self.process.pid, *descendants(self.process.pid)]
            driver = rss_mb(self.process.pid)
            workers = [rss_mb(p) for p in tree[1:] if is_worker(p)]
            self.driver[stage] = max(self.driver.get(stage, 0.0), driver)
            self.worker[stage] = max(self.worker.get(stage, 0.0), max(workers, default=0.0))
            self.driver_peak = max(self.driver_peak, driver)
            self._count(stage, tree)
            time.sleep(0.25)

    def join(self) -> None:
        self._thread.join()


def disk_mb(path: Path) -> dict[str, float]:
    """MB on disk of each top-level entry of a run folder, and `total` (du, in 1 KiB blocks)."""
    out = {}
    for line in subprocess.run(["du", "-sk", *sorted(str(p) for p in path.iterdir())], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        size, name = line.split("\t", 1)
        out[Path(name).name] = round(int(size) / 1024, 1)
    out["total"] = round(sum(out.values()), 1)
    return out


def make_corpus(corpora: Path, docs: int) -> Path:
    sys.path.insert(0, str(ROOT))
    from curate.sample import is_complete, make_sample

    path = corpora / f"sample-{docs}"
    if not is_complete(path):
        started = time.monotonic()
        make_sample(path, docs=docs, seed=0)
        print(f"made the {docs:,}-document corpus in {time.monotonic() - started:.0f}s", flush=True)
    return path


def sampled(cmd: list[str], corpus: Path, summary: Path) -> tuple[int, Sampler, float]:
    """Run a `curate run` command over `corpus` (CURATE_SAMPLE), its processes sampled: (exit code, sampler, wall s)."""
    started = time.monotonic()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "CURATE_SAMPLE": str(corpus), "PYTHONUNBUFFERED": "1"})
    sampler = Sampler(process, summary)
    process.wait()
    sampler.join()
    return process.returncode, sampler, time.monotonic() - started


def run_scale(docs: int, until: str, corpora: Path, runs: Path, workers: int | None) -> dict:
    corpus = make_corpus(corpora, docs)
    out = runs / f"run-{docs}-{until}"
    if out.exists():
        subprocess.run(["rm", "-rf", str(out)], check=True)
    cmd = [sys.executable, "-m", "curate", "run", str(ROOT / "pipelines" / "zyda2.yaml"), "--output", str(out),
           *(["--until", until] if until != "all" else []), *(["--workers", str(workers)] if workers else [])]
    returncode, sampler, total = sampled(cmd, corpus, out / "summary.json")
    if returncode != 0:
        raise SystemExit(f"run of {docs:,} documents failed:\n" + "\n".join(sampler.lines[-20:]))
    if not (out / "report.html").exists():   # the run only warns when its report fails: a bench must not
        raise SystemExit(f"run of {docs:,} documents wrote no report.html:\n" + "\n".join(sampler.lines[-20:]))
    rows = json.loads((out / "summary.json").read_text())
    stages = {}
    for row in rows:
        s = stages.setdefault(row["stage"], {"docs": 0, "seconds": row["wall_seconds"], "tasks": 0})
        s["docs"] += row["in"]
        s["tasks"] += row["tasks"]
    for extra in ("start", "report"):   # the driver's start (imports, the Ray cluster) and its work after the last stage
        if extra in sampler.driver:
            stages[extra] = {"docs": 0, "seconds": None, "tasks": 0}
    for name, s in stages.items():
        s["docs_per_s"] = round(s["docs"] / s["seconds"], 1) if s["seconds"] else None
        s["driver_rss_mb"] = round(sampler.driver.get(name, 0.0), 1)
        s["worker_rss_mb"] = round(sampler.worker.get(name, 0.0), 1)
        s["cpu_seconds"] = round(sampler.cpu.get(name, 0.0), 1)
        s["cpu_ms_per_doc"] = round(1000 * s["cpu_seconds"] / docs, 3)
        s["written_mb"] = round(sampler.written.get(name, 0) / 2**20, 1)
        s["read_mb"] = round(sampler.read.get(name, 0) / 2**20, 1)
    disk = disk_mb(out)
    cpu = sum(sampler.cpu.values())
    return {"docs": docs, "until": until, "total_seconds": round(total, 1), "driver_peak_mb": round(sampler.driver_peak, 1),
            "worker_peak_mb": round(max(sampler.worker.values(), default=0.0), 1), "cpus": os.cpu_count(),
            "cpu_seconds": round(cpu, 1), "cpu_ms_per_doc": round(1000 * cpu / docs, 3),
            "written_mb": round(sum(sampler.written.values()) / 2**20, 1),
            "read_mb": round(sum(sampler.read.values()) / 2**20, 1), "disk_mb": disk,
            "disk_mb_per_million": round(disk["total"] * 1e6 / docs, 1), "stages": stages}


def run_many_files(files: int, runs: Path) -> dict:
    """A source of `files` one-document JSONL files through ingest: the driver's memory against the task count."""
    data = runs / f"many-{files}"
    if not (data / "_done").exists():
        subprocess.run(["rm", "-rf", str(data)], check=True)
        (data / "in").mkdir(parents=True)
        for i in range(files):
            (data / "in" / f"{i:06d}.jsonl").write_text(json.dumps({"id": str(i), "text": f"document number {i} " * 20}) + "\n")
        (data / "_done").write_text("")
    pipeline = data / "p.yaml"
    pipeline.write_text(f"name: many\nsources:\n  s: {{format: jsonl, paths: '{data}/in/*.jsonl'}}\nstages: {{ingest: {{}}}}\n")
    out = data / "run"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "curate", "run", str(pipeline), "--output", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sampler = Sampler(process)
    process.wait()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit("\n".join(sampler.lines[-20:]))
    rows = json.loads((out / "summary.json").read_text())
    return {"files": files, "tasks": sum(r["tasks"] for r in rows), "seconds": round(time.monotonic() - started, 1),
            "driver_peak_mb": round(sampler.driver_peak, 1)}


# ---------------------------------------------------------------- reporting


def table(results: list[dict]) -> str:
    """Per size and stage: wall, documents/s, CPU, CPU-ms per document, peak RSS of the driver and the largest
    worker, MB read and written; the total row of each size, then its run folder's size on disk per million documents."""
    lines = ["| documents | stage | wall s | docs/s | CPU s | CPU-ms/doc | driver peak RSS MB | largest worker RSS MB | read MB | written MB |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cell = lambda s, key, fmt: format(s[key], fmt) if s.get(key) is not None else "-"
    for r in sorted(results, key=lambda r: (r["until"], r["docs"])):
        for name, s in r["stages"].items():
            rate = f"{s['docs_per_s']:,.0f}" if s["docs_per_s"] else "-"
            wall = f"{s['seconds']:.1f}" if s["seconds"] is not None else "-"
            lines.append(f"| {r['docs']:,} | {name} | {wall} | {rate} | {cell(s, 'cpu_seconds', '.1f')} | "
                         f"{cell(s, 'cpu_ms_per_doc', '.3f')} | {s['driver_rss_mb']:.0f} | {s['worker_rss_mb']:.0f} | "
                         f"{cell(s, 'read_mb', ',.0f')} | {cell(s, 'written_mb', ',.0f')} |")
        lines.append(f"| {r['docs']:,} | **total** (through {r['until']}) | {r['total_seconds']:.1f} | "
                     f"{r['docs'] / r['total_seconds']:,.0f} | {cell(r, 'cpu_seconds', '.1f')} | {cell(r, 'cpu_ms_per_doc', '.3f')} | "
                     f"{r['driver_peak_mb']:.0f} | {r['worker_peak_mb']:.0f} | {cell(r, 'read_mb', ',.0f')} | "
                     f"{cell(r, 'written_mb', ',.0f')} |")
    disk = [r for r in results if r.get("disk_mb")]
    if disk:
        lines += ["", "| documents | through | run folder MB | MB per million documents | largest entries (MB) |", "|---:|---|---:|---:|---|"]
        for r in sorted(disk, key=lambda r: (r["until"], r["docs"])):
            top = sorted(((k, v) for k, v in r["disk_mb"].items() if k != "total"), key=lambda kv: -kv[1])[:5]
            lines.append(f"| {r['docs']:,} | {r['until']} | {r['disk_mb']['total']:,.0f} | {r['disk_mb_per_million']:,.0f} | "
                         + ", ".join(f"{k} {v:,.0f}" for k, v in top) + " |")
    return "\n".join(lines)


def projection(results: list[dict], target: float = 1e9, hours: float = 24.0) -> str:
    """Seconds per document from the largest run through each stage list, extrapolated linearly."""
    out = []
    for until in sorted({r["until"] for r in results}):
        largest = max((r for r in results if r["until"] == until), key=lambda r: r["docs"])
        steps = [s for name, s in largest["stages"].items() if name not in ("start", "report")]
        if all("cpu_seconds" in s for s in steps):   # measured: the CPU seconds of the run's processes in the steps
            work = sum(s["cpu_seconds"] for s in steps)
        else:                                        # older entries: wall seconds times the CPUs
            work = sum(s["seconds"] for s in steps) * largest["cpus"]
        per_doc = work / largest["docs"]
        cpu_hours = per_doc * target / 3600
        nodes = math.ceil(cpu_hours / hours / 16)
        out.append(f"through {until}: {per_doc * 1000:.2f} CPU-ms per document (from {largest['docs']:,}) -> "
                   f"{cpu_hours:,.0f} CPU-hours for {target:,.0f} documents = {nodes:,.0f} node{'s' if nodes != 1 else ''} "
                   f"of 16 CPUs for {hours:.0f} hours")
    return "\n".join(out)


def plot(results: list[dict], path: Path) -> bool:
    """Wall seconds per stage against documents (log-log), one line per stage, and linear growth for reference."""
    series: dict[str, list[tuple[int, float]]] = {}
    for r in results:
        for name, s in r["stages"].items():
            if s["seconds"]:
                series.setdefault(name, []).append((r["docs"], s["seconds"]))
        series.setdefault("total", []).append((r["docs"], r["total_seconds"]))
    first = min(series["total"])
    series["linear (from total)"] = [(x, first[1] * x / first[0]) for x, _ in sorted(series["total"])]
    try:
        import matplotlib
    except ImportError:   # the `bench` extra is not installed: the table and the JSON are enough
        print("no plot: matplotlib is not installed (pip install curate[bench])")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    colours = iter(plt.get_cmap("tab20").colors)
    for name, points in sorted(series.items()):
        points.sort()
        fixed = {"total": {"color": "black", "linewidth": 2.5},
                 "linear (from total)": {"color": "black", "linestyle": "--", "marker": ""}}
        style = fixed[name] if name in fixed else {"color": next(colours)}
        ax.plot([p[0] for p in points], [p[1] for p in points], **{"marker": "o", **style}, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents")
    ax.set_ylabel("wall seconds")
    ax.set_title(f"curate run pipelines/zyda2.yaml, per stage ({results[0]['cpus']} CPUs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, nargs="*", default=[])
    parser.add_argument("--until", default="pack")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/curate-scale"))
    parser.add_argument("--many-files", type=int, nargs="*", default=[])
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON results accumulate in (default bench/scale.json)")
    args = parser.parse_args()
    args.corpora.mkdir(parents=True, exist_ok=True)
    saved = json.loads(args.results.read_text()) if args.results.exists() else {"scale": [], "many_files": []}
    for docs in args.docs:
        result = run_scale(docs, args.until, args.corpora, args.corpora, args.workers)
        saved["scale"] = [r for r in saved["scale"] if (r["docs"], r["until"]) != (docs, args.until)] + [result]
        args.results.write_text(json.dumps(saved, indent=1) + "\n")
        print(f"{docs:,} documents through {args.until}: {result['total_seconds']:.0f}s, driver peak "
              f"{result['driver_peak_mb']:.0f} MB, largest worker {result['worker_peak_mb']:.0f} MB", flush=True)
    for files in args.many_files:
        result = run_many_files(files, args.corpora)
        saved["many_files"] = [r for r in saved["many_files"] if r["files"] != files] + [result]
        args.results.write_text(json.dumps(saved, indent=1) + "\n")
        print(f"{files:,} files: {result['tasks']:,} tasks in {result['seconds']:.0f}s, driver peak {result['driver_peak_mb']:.0f} MB",
              flush=True)
    if saved["scale"]:
        print(table(saved["scale"]))
        print(projection(saved["scale"]))
        path = PLOT if args.results == RESULTS else args.results.with_suffix(".png")
        if plot(saved["scale"], path):
            print(f"plot: {path}")


if __name__ == "__main__":
    main()
