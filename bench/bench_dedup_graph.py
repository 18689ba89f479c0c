"""Dedup's graph at 10M-100M documents: the real candidate and component phases on synthetic band keys (issue 32, item 2).

Generates band rows in the minhash stage's layout (`bands/n=<P>/p=<p>/<source>/<shard>.arrow`: band, key, row,
tie, split by `layout.PartitionedSink` as `MinhashSink` does) for N documents over 4 sources, one docs shard per
500,000 documents, written shard by shard (generation memory: one shard). Cluster sizes: most documents are
singletons; 10% fall into tail clusters whose sizes follow a rank-size power law (Zipf, exponent 1.1); one giant
cluster of max(100k, N/100) members (1M at 100M). A member shares its cluster's key in band `row % 8` and in every
other band with probability 1/2 (a template with edits: components of small diameter); everything else is unique.
Bands: the zyda2 preset's 8. Partitions: `layout.partitions_for(N)`, what the minhash stage chooses.

Then runs `curate.dedup.graph`'s phases (buckets, init, send/receive until no label changes) task by task in 2 worker
processes, and the sound mode's `settle` phase (`curate.dedup.sound.settle`, which needs only the signatures; the
exact checks need text and run per docs shard, not per cluster) on the giant cluster alone: synthetic 128-slot
signatures of a template with 0-35% of slots changed. Per phase: wall, CPU, the largest peak RSS of one task
(VmHWM, reset before each task through /proc/self/clear_refs), the driver's peak RSS, bytes written.

    nice python bench/bench_dedup_graph.py --docs 10000000 --work /tmp/graph10m --json out10m.json
    python bench/bench_dedup_graph.py --docs 10000000 --work /tmp/graph10m --skip-gen --settle-only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import numpy as np
import pyarrow as pa

from curate.dedup import bundles, graph, nodes
from curate.dedup.graph import GraphDir
from curate.dedup.layout import PLAIN, WORK, PartitionedSink, partitions_for, shard_numbers
from curate.dedup.shuffle import mix64
from curate.dedup.signature_store import fixed_lists
from curate.dedup.sound import Sound, settle

BANDS = 8                  # zyda2: 8 bands x 16 rows
SOURCES = ["fwe", "dclm", "zyda", "dolma_cc"]
SHARD_DOCS = 500_000
TAIL_SHARE, ZIPF = 0.10, 1.1
NUM_PERM = 128


def giant_size(docs: int) -> int:
    return max(100_000, docs // 100)


def layout(docs: int) -> list[tuple[str, str, int, int]]:
    """(source, shard name, first global document, documents) per docs shard."""
    shards = max(len(SOURCES), -(-docs // SHARD_DOCS))
    bounds = np.linspace(0, docs, shards + 1).astype(np.int64)
    return [(SOURCES[i % len(SOURCES)], f"{i // len(SOURCES):05d}", int(bounds[i]), int(bounds[i + 1] - bounds[i]))
            for i in range(shards)]


def clusters_of(first: int, n: int, docs: int, seed: int) -> np.ndarray:
    """Cluster id per document (-1: singleton; 0: the giant cluster; 1..: tail clusters, Zipf over their rank)."""
    rng = np.random.default_rng([seed, first])
    u = rng.random(n)
    pg = giant_size(docs) / docs
    out = np.full(n, -1, np.int64)
    out[u < pg] = 0
    tail = (u >= pg) & (u < pg + TAIL_SHARE)
    k = max(1, int(docs * TAIL_SHARE) // 4)           # tail clusters; mean size 4, a power law over rank
    cdf = np.cumsum(np.arange(1, k + 1, dtype=np.float64) ** -ZIPF)
    out[tail] = 1 + np.searchsorted(cdf, rng.random(int(tail.sum())) * cdf[-1])
    return out


def generate(root: str, docs: int, partitions: int, seed: int) -> dict:
    """Write every shard's band rows; returns counts and the time taken."""
    t0, c0 = time.time(), time.process_time()
    for source, shard, first, n in layout(docs):
        cl = clusters_of(first, n, docs, seed)
        row = np.arange(n, dtype=np.uint64)
        doc = np.uint64(first) + row
        band = np.arange(BANDS, dtype=np.uint64)
        own = mix64(mix64(doc)[:, None] ^ (band[None, :] + np.uint64(0xA5A5)))          # unique keys
        shared = mix64(mix64(cl.astype(np.uint64) + np.uint64(1 << 40))[:, None] ^ band[None, :])
        rng = np.random.default_rng([seed, first, 1])
        use = (rng.random((n, BANDS)) < 0.5) | (np.arange(BANDS)[None, :] == (np.arange(n) % BANDS)[:, None])
        use &= (cl >= 0)[:, None]
        keys = np.where(use, shared, own)
        with PartitionedSink(lambda p, s=source, h=shard: os.path.join(root, f"p={p:05d}", s, f"{h}{WORK}"), partitions, "key",
                             PLAIN) as sink:   # as the minhash stage writes them (`MinhashSink`)
            sink.write(pa.table({"band": np.tile(np.arange(BANDS, dtype=np.uint16), n), "key": keys.reshape(-1),
                                 "row": np.repeat(row, BANDS), "tie": np.repeat(row, BANDS)}))
    return {"wall_s": time.time() - t0, "cpu_s": time.process_time() - c0, "bytes": du(root)}


def du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _measured(fn, arg):
    """Run one task in a worker: its result, CPU seconds and peak RSS (bytes) of this task alone."""
    with open("/proc/self/clear_refs", "w") as h:
        h.write("5")
    c0 = time.process_time()
    out = fn(arg)
    cpu = time.process_time() - c0
    with open("/proc/self/status") as h:
        hwm = next(int(line.split()[1]) * 1024 for line in h if line.startswith("VmHWM"))
    return out, cpu, hwm


def run_phase(pool, name: str, fn, args, table: dict, root: str | None = None) -> list:
    t0 = time.time()
    res = list(pool.map(partial(_measured, fn), args, chunksize=1))
    row = {"wall_s": time.time() - t0, "cpu_s": sum(r[1] for r in res), "task_peak_rss": max((r[2] for r in res), default=0),
           "tasks": len(res)}
    if root is not None:
        row["bytes"] = du(root)
    table[name] = row
    print(f"  {name:<12} {row['wall_s']:8.1f} s wall {row['cpu_s']:8.1f} s cpu  task peak {row['task_peak_rss'] / 2**20:7.0f} MiB"
          + (f"  {row['bytes'] / 2**30:6.2f} GiB" if root else ""), flush=True)
    return [r[0] for r in res]


def files_under(folder: str) -> int:
    """Files a phase left in `folder` (what an object store would have taken as PUTs)."""
    return sum(len(names) for _, _, names in os.walk(folder))


def components(work: str, bands: str, docs: int, partitions: int, workers: int, max_rounds: int) -> dict:
    """buckets, init, send/receive until no label changes: `curate.stages.clustering.cluster`'s loop, in a process pool."""
    g = GraphDir(os.path.join(work, "graph"), partitions)
    numbers = shard_numbers([{"source": s, "shard": h} for s, h, _, _ in layout(docs)], SOURCES)
    table: dict = {}
    with ProcessPoolExecutor(workers) as pool:
        out = run_phase(pool, "buckets", partial(graph.buckets, g, bands, False, numbers, None), range(partitions), table, g.root)
        table["buckets"]["edges"] = sum(r["edges"] for r in out)
        table["buckets"]["files"] = files_under(g.path("edges")) + files_under(g.path("nodes"))
        out = run_phase(pool, "init", partial(graph.init, g), range(partitions), table, g.root)
        table["init"]["nodes"] = sum(r["in"] for r in out)
        send = {"wall_s": 0.0, "cpu_s": 0.0, "task_peak_rss": 0, "tasks": 0}
        for rnd in range(max_rounds):
            step: dict = {}
            by = graph.senders(run_phase(pool, f"send-{rnd}", partial(graph.send, g, rnd), range(partitions), step, None), partitions)
            jobs = [(p, by[p] if by else None) for p in range(partitions)]   # as `clustering._rounds` gives them
            out = run_phase(pool, f"receive-{rnd}", partial(graph.receive, g, rnd), jobs, step, g.root)
            for row in step.values():
                for k in ("wall_s", "cpu_s", "tasks"):
                    send[k] += row[k]
                send["task_peak_rss"] = max(send["task_peak_rss"], row["task_peak_rss"])
            send["bytes"] = step[f"receive-{rnd}"]["bytes"]
            send["message_files_per_round"] = max(send.get("message_files_per_round", 0), files_under(g.path("messages", f"r={rnd:03d}")))
            shutil.rmtree(g.path("messages", f"r={rnd:03d}"), ignore_errors=True)   # what a run keeps is the labels
            if sum(r["changed"] for r in out) == 0:
                send["rounds"] = rnd + 1
                break
        table["propagate"] = send
    return table


def write_giant(work: str, members: int, partitions: int, seed: int) -> tuple[GraphDir, int]:
    """The giant cluster's gathered rows (node, label, hi, length, sig) sent to the partition of its label, a bundle per
    250k members."""
    g = GraphDir(os.path.join(work, "settle"), partitions)
    rng = np.random.default_rng([seed, 7])
    template = rng.integers(0, 2**32, NUM_PERM, dtype=np.uint32)
    label = None
    for i, a in enumerate(range(0, members, 250_000)):
        n = min(250_000, members - a)
        idx = np.arange(a, a + n)
        node = np.concatenate([nodes.pack(q, 0, idx[idx % 4 == q] // 4) for q in range(4)])
        label = int(nodes.pack(0, 0, np.zeros(1, np.int64))[0]) if label is None else label
        sig = np.broadcast_to(template, (n, NUM_PERM)).copy()
        change = rng.random((n, NUM_PERM)) < rng.uniform(0.0, 0.35, n)[:, None]
        sig[change] = rng.integers(0, 2**32, int(change.sum()), dtype=np.uint32)
        hi = (nodes.priority_of(node).astype(np.uint64) << np.uint64(32)) | nodes.row_of(node).astype(np.uint64)
        p = int(graph.partition_of(np.array([label], np.uint64), partitions)[0])
        bundles.send(g.path("sound", "gathered"), f"{i:05d}",   # as `sound.gather` sends a docs shard's members
                     [(p, {"node": node, "label": np.full(n, label, np.uint64), "hi": hi, "length": np.full(n, 1000, np.int64),
                           "sig": fixed_lists(sig)})], bundles.partition, PLAIN)
    return g, p


def settle_giant(work: str, members: int, partitions: int, seed: int, workers: int) -> dict:
    g, p = write_giant(work, members, partitions, seed)
    s = Sound(0.8, 0.1, 8, "", {})
    table: dict = {}
    with ProcessPoolExecutor(1) as pool:
        out = run_phase(pool, "settle", partial(settle, g, s, "cross_source", False), [p], table, g.root)
    table["settle"].update(members=out[0]["in"], checks=out[0]["checks"])
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-rounds", type=int, default=100)
    ap.add_argument("--skip-gen", action="store_true", help="reuse the band rows already under --work")
    ap.add_argument("--settle-only", action="store_true")
    ap.add_argument("--no-settle", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    partitions = partitions_for(a.docs)
    bands = os.path.join(a.work, "bands", f"n={partitions}")
    result = {"docs": a.docs, "partitions": partitions, "giant": giant_size(a.docs), "shards": len(layout(a.docs)), "phases": {}}
    print(f"{a.docs:,} documents, {result['shards']} shards, {partitions} partitions, giant cluster {result['giant']:,}", flush=True)
    if not a.skip_gen and not a.settle_only:
        shutil.rmtree(a.work, ignore_errors=True)
        result["phases"]["generate"] = generate(bands, a.docs, partitions, a.seed)
        print(f"  generate     {result['phases']['generate']['wall_s']:8.1f} s wall", flush=True)
    if not a.settle_only:
        shutil.rmtree(os.path.join(a.work, "graph"), ignore_errors=True)
        result["phases"].update(components(a.work, bands, a.docs, partitions, a.workers, a.max_rounds))
    if not a.no_settle:
        shutil.rmtree(os.path.join(a.work, "settle"), ignore_errors=True)
        result["phases"].update(settle_giant(a.work, result["giant"], partitions, a.seed, a.workers))
    result["driver_peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result, indent=1))
    if a.json:
        with open(a.json, "w") as h:
            json.dump(result, h, indent=1)


if __name__ == "__main__":
    main()
