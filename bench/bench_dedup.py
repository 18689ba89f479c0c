"""End-to-end fuzzy dedup speed (signatures through the removal list) on the same documents, in one run.

- the whole `curate run --until dedup` process from the raw files (ingest, minhash, dedup; Ray start and
  stop included), inline and on the embedded Ray cluster, runs alternating, median of `--repeat`: its
  fixed cost (process wall minus the sum of the stages' wall times) and its speed against rensa (Rust
  MinHash + LSH) and datasketch, both given the documents already in memory, same zyda2 parameters
  (char 25-grams, 128 perms, 8x16) and cross_source policy;
- curate `fineweb` preset (word 5-grams, 14x8, policy all) vs datatrove's four-stage MinHash pipeline with
  its defaults (signatures, buckets, cluster, filter) on 2 workers;
- peak memory of a curate dedup run at two corpus sizes (10x apart);
- `--modes`: what checking removals costs: unverified (Zyda-2 as published), sound (the default: every removal
  checked against a kept document), and pair verification (`verify: 0.8`, unverified), minhash + dedup time.

    python bench/bench_dedup.py --docs 32000 --whole-only      # fixed cost, vs rensa and datasketch
    python bench/bench_dedup.py [--docs 4000] [--skip-datatrove]
    python bench/bench_dedup.py --docs 20000 --modes
    python bench/bench_dedup.py --docs 32000 --whole-only --near-threshold   # many pairs near the threshold

`--near-threshold`: the corpus of `near_copies.py` (a quarter of the documents planted near-copies whose Jaccard
with their original is close to the threshold), where sound dedup's exact check has the most to do; the whole
table then also says the exact phases' task seconds, their share of the dedup stage and their documents/s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import statistics

import duckdb

from curate.sample import make_sample
from near_copies import make_near_threshold
from eval_dedup import cross_source_removed, datasketch_clusters, lsh_groups  # same baseline as the quality evaluation

PRIORITY = ["fwe", "dclm", "zyda", "dolma_cc"]
# The timed process is minhash + dedup; the HTML report that a run writes at its end is left out (when this
# curate writes one), so that versions compare on the same work.
REPORT_FLAG = ["--no-report"] if "--no-report" in subprocess.run(
    [sys.executable, "-m", "curate", "run", "--help"], capture_output=True, text=True).stdout else []


MODES = {"unverified": ", mode: unverified", "sound": ", mode: sound", "pair verify 0.8": ", mode: unverified, verify: 0.8"}


def pipeline_yaml(sample: Path, preset: str, policy: str, dedup: str = "") -> str:
    return f"""name: bench
priority: {PRIORITY}
sources:
  fwe: {{format: fineweb, paths: '{sample}/fwe/data/*/*.parquet'}}
  dclm: {{format: dclm, paths: '{sample}/dclm/global-shard_*/local-shard_*/*.jsonl.zst'}}
  zyda: {{format: zyda, paths: '{sample}/zyda/data/*/*.parquet'}}
  dolma_cc: {{format: dolma, paths: '{sample}/dolma_cc/data/*/*.json.gz'}}
stages:
  ingest: {{}}
  minhash: {{preset: {preset}}}
  dedup: {{policy: {policy}{dedup}}}
"""


def run_curate(tmp: Path, sample: Path, preset: str, policy: str, mode: list[str], tag: str, dedup: str = "") -> dict:
    """Ingest first (not timed), then time minhash + dedup; returns seconds, removed, peak RSS (MB)."""
    f = tmp / f"{tag}.yaml"
    f.write_text(pipeline_yaml(sample, preset, policy, dedup))
    out = tmp / tag
    base = [sys.executable, "-m", "curate", "run", str(f), "--output", str(out), "-q"] + REPORT_FLAG
    subprocess.run(base + ["--inline", "--until", "ingest"], check=True, capture_output=True)
    started = time.monotonic()
    proc = subprocess.Popen(base + mode, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    if status != 0:
        raise SystemExit(proc.stderr.read().decode())
    removed = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/ledger/dedup/*/*.parquet')").fetchall()[0][0]
    docs = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/docs/*/*.parquet', union_by_name=true)").fetchall()[0][0]
    summary = json.loads((out / "summary.json").read_text())
    stages = {r["stage"]: r["wall_seconds"] for r in summary}
    return {"seconds": seconds, "stage_seconds": stages.get("minhash", 0) + stages.get("dedup", 0), "removed": removed,
            "docs": docs, "peak_mb": usage.ru_maxrss / 1024}


def run_whole(tmp: Path, sample: Path, mode: list[str], tag: str) -> dict:
    """The whole `--until dedup` process from the raw files: wall, the sum of its stages' wall times, and
    the difference (the fixed cost: interpreter and imports, Ray start and stop, scheduling, the lock)."""
    f = tmp / "whole.yaml"
    f.write_text(pipeline_yaml(sample, "zyda2", "cross_source"))
    out = tmp / tag
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "curate", "run", str(f), "--output", str(out), "-q", "--until", "dedup"]
                   + REPORT_FLAG + mode, check=True, capture_output=True)
    seconds = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text())
    stages = {}
    for r in summary:  # one row per stage and source; the wall time is the stage's
        stages[r["stage"]] = r["wall_seconds"]
    docs = sum(r["in"] for r in summary if r["stage"] == "minhash")
    removed = duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/ledger/dedup/*/*.parquet')").fetchall()[0][0]
    return {"seconds": seconds, "stages": sum(stages.values()), "fixed": seconds - sum(stages.values()), "docs": docs,
            "removed": removed, "per_stage": stages, **exact_phases(out)}


def exact_phases(out: Path) -> dict:
    """Sound mode's exact check: task seconds of the exact-a and exact-b phases (from their markers) and the pairs
    checked (exact-b's `in`)."""
    markers = {phase: [json.loads(p.read_text()) for p in (out / "_state" / "dedup" / phase).rglob("*.json")]
               for phase in ("exact-a", "exact-b")}
    return {"exact_s": sum(m.get("seconds", 0.0) for ms in markers.values() for m in ms),
            "exact_pairs": sum(m.get("in", 0) for m in markers["exact-b"])}


def rensa_clusters(docs, n=25, num_perm=128, seed=10, bands=8):
    """rensa's RMinHash + RMinHashLSH (zyda2's parameters), then union-find: datasketch_clusters' twin."""
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=0.8, num_perm=num_perm, num_bands=bands)
    sketches = []
    for i, (_, _, text) in enumerate(docs):
        m = RMinHash(num_perm=num_perm, seed=seed)
        m.update(list({text[j:j + n] for j in range(max(1, len(text) - n + 1))}))
        lsh.insert(i, m)
        sketches.append(m)
    return lsh_groups(sketches, lsh.query)


def whole_table(tmp: Path, sample: Path, repeat: int) -> None:
    """Fixed cost of the whole process, inline and on Ray, and its speed against rensa and datasketch."""
    runs: dict[str, list[dict]] = {"inline": [], "ray": []}
    for k in range(repeat):  # alternating, so that a busy moment of the box hits both alike
        runs["inline"].append(run_whole(tmp, sample, ["--inline"], f"w-inline-{k}"))
        runs["ray"].append(run_whole(tmp, sample, ["--workers", "2"], f"w-ray-{k}"))
    docs = load_docs(tmp / "w-inline-0")
    peers = {}
    for name, clusters in (("rensa", rensa_clusters), ("datasketch", datasketch_clusters)):
        times, removed = [], 0
        for _ in range(repeat if name == "rensa" else 1):
            started = time.monotonic()
            removed = len(cross_source_removed(clusters(docs), docs))
            times.append(time.monotonic() - started)
        peers[name] = {"seconds": statistics.median(times), "removed": removed}
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {os.cpu_count()} cores; {len(docs)} documents; "
          f"median of {repeat} runs, alternating")
    print(f"{'curate --until dedup':22} {'process s':>9} {'stages s':>8} {'fixed s':>8} {'removed':>8} "
          f"{'vs rensa':>9} {'vs datasketch':>13}")
    for mode, rs in runs.items():
        med = {key: statistics.median(r[key] for r in rs) for key in ("seconds", "stages", "fixed")}
        print(f"{mode:22} {med['seconds']:9.2f} {med['stages']:8.2f} {med['fixed']:8.2f} {rs[0]['removed']:8d} "
              f"{peers['rensa']['seconds'] / med['seconds']:8.1f}x {peers['datasketch']['seconds'] / med['seconds']:12.1f}x")
        print(f"{'':22} stages: " + ", ".join(f"{s} {statistics.median(r['per_stage'][s] for r in rs):.2f}s" for s in rs[0]["per_stage"]))
        exact, dedup = statistics.median(r["exact_s"] for r in rs), statistics.median(r["per_stage"]["dedup"] for r in rs)
        print(f"{'':22} exact check: {rs[0]['exact_pairs']} pairs, {exact:.2f} task s ({exact / dedup:.0%} of dedup), "
              f"{rs[0]['exact_pairs'] / max(exact, 1e-9):,.0f} pairs/s")
    for name, p in peers.items():
        print(f"{name:22} {p['seconds']:9.2f} {'':8} {'':8} {p['removed']:8d}   (documents already in memory)")


def mode_costs(tmp: Path, sample: Path, repeat: int = 3) -> None:
    """minhash + dedup stage time (inline) per dedup mode, against unverified: best and median of `repeat` runs, the
    modes alternating within each round (a busy moment of the box hits every mode alike)."""
    runs: dict[str, list[dict]] = {name: [] for name in MODES}
    for k in range(repeat):
        for i, (name, dedup) in enumerate(MODES.items()):
            runs[name].append(run_curate(tmp, sample, "zyda2", "cross_source", ["--inline"], f"m-{i}-{k}", dedup))
    best = {name: min(r["stage_seconds"] for r in rs) for name, rs in runs.items()}
    median = {name: statistics.median(r["stage_seconds"] for r in rs) for name, rs in runs.items()}
    print(f"load average {os.getloadavg()[0]:.2f}; {repeat} rounds, the modes alternating")
    print(f"{'mode':18} {'docs':>7} {'best s':>7} {'vs unverified':>14} {'median s':>9} {'vs unverified':>14} {'removed':>8}")
    for name, rs in runs.items():
        print(f"{name:18} {rs[0]['docs']:7d} {best[name]:7.2f} {best[name] / best['unverified']:13.2f}x {median[name]:9.2f} "
              f"{median[name] / median['unverified']:13.2f}x {rs[0]['removed']:8d}")


def load_docs(sample_run: Path) -> list[tuple[str, str, str]]:
    return duckdb.sql(f"""SELECT split_part(filename, '/', -2), id, text FROM
        read_parquet('{sample_run}/docs/*/*.parquet', filename=true, union_by_name=true) ORDER BY 1, 2""").fetchall()


def run_datasketch(docs) -> dict:
    """datasketch MinHash + MinHashLSH (zyda2's parameters), union-find, cross_source policy: timed end to end."""
    started = time.monotonic()
    removed = cross_source_removed(datasketch_clusters(docs), docs)
    return {"seconds": time.monotonic() - started, "removed": len(removed), "docs": len(docs)}


def run_datatrove(docs, tmp: Path) -> dict:
    """datatrove's MinHash dedup with its defaults: 4 stages, 2 tasks/workers where it parallelises."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter
    from datatrove.pipeline.readers import JsonlReader

    data = tmp / "dt-data"
    data.mkdir()
    half = (len(docs) + 1) // 2
    for k, part in enumerate((docs[:half], docs[half:])):
        with open(data / f"part{k}.jsonl", "w") as fh:
            for source, doc_id, text in part:
                fh.write(json.dumps({"id": f"{source}/{doc_id}", "text": text}) + "\n")
    config = MinhashConfig()
    work = tmp / "dt-work"
    log = str(tmp / "dt-logs")
    started = time.monotonic()
    LocalPipelineExecutor([JsonlReader(str(data)), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
                          tasks=2, workers=2, logging_dir=log + "/1").run()
    LocalPipelineExecutor([MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=config)],
                          tasks=config.num_buckets, workers=2, logging_dir=log + "/2").run()
    LocalPipelineExecutor([MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"), config=config)],
                          tasks=1, logging_dir=log + "/3").run()
    LocalPipelineExecutor([JsonlReader(str(data)), MinhashDedupFilter(input_folder=str(work / "remove"))],
                          tasks=2, workers=2, logging_dir=log + "/4").run()
    seconds = time.monotonic() - started
    removed = 0
    for f in (work / "remove").glob("*.remove"):
        removed += f.stat().st_size // 4
    return {"seconds": seconds, "removed": removed, "docs": len(docs)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--skip-datatrove", action="store_true")
    parser.add_argument("--memory-scale", type=int, default=10)
    parser.add_argument("--modes", action="store_true", help="only the cost of the dedup modes")
    parser.add_argument("--whole-only", action="store_true", help="only the whole-process table (fixed cost, rensa, datasketch)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--near-threshold", action="store_true", help="the corpus of near_copies.py: many pairs near the threshold")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        sample = tmp / "sample"
        if args.near_threshold:
            print("near-threshold corpus:", make_near_threshold(sample, docs=args.docs, seed=0))
        else:
            make_sample(sample, docs=args.docs, seed=0)
        if args.modes:
            return mode_costs(tmp, sample, args.repeat)
        whole_table(tmp, sample, args.repeat)
        if args.whole_only:
            return
        ours_inline = run_curate(tmp, sample, "zyda2", "cross_source", ["--inline"], "z-inline")
        ours_ray = run_curate(tmp, sample, "zyda2", "cross_source", ["--workers", "2"], "z-ray")
        docs = load_docs(tmp / "z-inline")
        theirs = run_datasketch(docs)
        rows.append(("zyda2 (char25, 8x16)", "curate, 1 core (inline)", ours_inline, theirs))
        rows.append(("zyda2 (char25, 8x16)", "curate, 2 workers (Ray)", ours_ray, theirs))
        if not args.skip_datatrove:
            fw = run_curate(tmp, sample, "fineweb", "all", ["--workers", "2"], "f-ray")
            dt = run_datatrove(docs, tmp)
            rows.append(("fineweb (word5, 14x8)", "curate, 2 workers (Ray)", fw, dt))
        print("ours (process): the whole `curate run` process, start-up included (Ray: ~7 s of cluster start and stop);")
        print("ours (stages): wall time of the minhash + dedup stages, signatures through the removal list.\n")
        print(f"{'preset':22} {'ours':24} {'docs':>6} {'ref docs/s':>10} {'ours (process)':>15} {'ratio':>6} "
              f"{'ours (stages)':>14} {'ratio':>6} {'removed ours/ref':>17}")
        for preset, label, ours, ref in rows:
            o, st, r = ours["docs"] / ours["seconds"], ours["docs"] / ours["stage_seconds"], ref["docs"] / ref["seconds"]
            print(f"{preset:22} {label:24} {ours['docs']:6d} {r:10,.0f} {o:15,.0f} {o / r:5.1f}x {st:14,.0f} {st / r:5.1f}x "
                  f"{ours['removed']:>8}/{ref['removed']}")
        if args.memory_scale > 1:
            big = tmp / "big"
            make_sample(big, docs=args.docs * args.memory_scale, seed=1)
            small_mem = ours_ray["peak_mb"]
            large = run_curate(tmp, big, "zyda2", "cross_source", ["--workers", "2"], "z-big")
            print("\npeak RSS of the driver process, minhash+dedup (Ray workers are separate processes):")
            print(f"  {ours_ray['docs']:>8} docs: {small_mem:7.0f} MB, {ours_ray['seconds']:.1f}s")
            print(f"  {large['docs']:>8} docs: {large['peak_mb']:7.0f} MB, {large['seconds']:.1f}s")
            inline_big = run_curate(tmp, big, "zyda2", "cross_source", ["--inline"], "z-big-inline")
            print("peak RSS, everything in one process (--inline):")
            print(f"  {ours_inline['docs']:>8} docs: {ours_inline['peak_mb']:7.0f} MB")
            print(f"  {inline_big['docs']:>8} docs: {inline_big['peak_mb']:7.0f} MB")


if __name__ == "__main__":
    main()
