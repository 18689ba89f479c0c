"""The id index's cost (curate/rundir/idindex.py): the ingest step with and without writing it, and its size.

Generates --files JSON Lines files of --docs documents with random ids (UUIDs, as DCLM's) and web-page-like texts,
then runs a pipeline of the ingest step alone, inline, --repeat times a side, the sides alternating (without: the
stage's `index` replaced by a no-op); reports the medians of wall and CPU time, and the index's bytes per million ids.

    python bench/bench_idindex.py [--files 4] [--docs 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.cli import main as cli  # noqa: E402
from curate.stages.ingest import IngestStage  # noqa: E402


def corpus(folder: Path, files: int, docs: int) -> None:
    rng = np.random.default_rng(0)
    words = np.array("the of and to a in is that for it as was with be by on not he this are or his from at".split())
    folder.mkdir(parents=True)
    for f in range(files):
        with open(folder / f"{f:03d}.jsonl", "w") as out:
            for _ in range(docs):
                text = " ".join(rng.choice(words, int(rng.integers(50, 400))))
                out.write(json.dumps({"id": str(uuid.UUID(bytes=rng.bytes(16), version=4)), "text": text}) + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-idindex-") as tmp:
        corpus(Path(tmp) / "in", args.files, args.docs)
        pipeline = Path(tmp) / "p.yaml"
        pipeline.write_text(f"name: idindex\nsources:\n  web: {{format: jsonl, paths: '{tmp}/in/*.jsonl', fields: {{id: id}}}}\n"
                            "stages:\n  ingest: {}\n")
        keep, times = IngestStage.index, {True: [], False: []}
        for _ in range(args.repeat):
            for index in (False, True):
                out = Path(tmp) / "run"
                shutil.rmtree(out, ignore_errors=True)
                IngestStage.index = keep if index else (lambda self, source, shard, ids=None: None)
                t0, c0 = time.perf_counter(), time.process_time()
                assert cli(["run", str(pipeline), "--output", str(out), "--inline", "-q", "--no-report"]) == 0
                times[index].append((time.perf_counter() - t0, time.process_time() - c0))
        IngestStage.index = keep
        size = sum(f.stat().st_size for f in (out / "_work" / "ingest" / "index").rglob("*.parquet"))
        n = args.files * args.docs
        print(f"{n:,} documents in {args.files} files; median of {args.repeat}, the sides alternating; load {os.getloadavg()[0]:.1f}")
        w0, w1 = (statistics.median(t[0] for t in times[k]) for k in (False, True))
        c0, c1 = (statistics.median(t[1] for t in times[k]) for k in (False, True))
        print(f"| {w0:.2f} | {w1:.2f} | {100 * (w1 / w0 - 1):+.1f}% | {c0:.2f} | {c1:.2f} | {100 * (c1 / c0 - 1):+.1f}% | "
              f"{size / (n / 1e6) / 2**20:.1f} MiB |")


if __name__ == "__main__":
    main()
