"""`curate why` at scale: the time to tell one document's story in a run of many documents.

Generates a run directory of the real layout for one source: --shards docs shards of --docs-per-shard documents
(ids either the reader's positional ids, `source/file/row`, or random UUIDs as DCLM's are), a filter step's ledger
removing 10% of each shard, a signals-like id-keyed table, token documents and a merged document map with its
shards' row ranges; then times `curate.why.story` (in-process, after imports) on documents in the first, middle and
last shard, kept and removed. The docs shard is found by the ingest step's id index (one per docs shard, as ingest
writes it: a footer and one row group a shard); `--no-index` leaves it out, as in a run made before it, and the docs
files' `id` min/max find the shard: that works for ids sorted within shards (positional ids), and random ids (UUIDs)
defeat it, every docs shard's id column being read. Then one shard's files per step.

    python bench/bench_why.py --shards 100 --docs-per-shard 100000 [--ids positional|uuid] [--no-index] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.rundir import IngestRecord, PackRecord, RunDir, TokenizerRecord  # noqa: E402
from curate.rundir.idindex import write_index  # noqa: E402
from curate.tokens.docmap import SCHEMA, SHARDS  # noqa: E402

PIPELINE = """name: scale
stages:
  ingest: {use: ingest}
  signals: {use: signals}
  short: {use: filter, where: {all: 'length(text) > 12'}}
  tokenize: {use: tokenize}
  pack: {use: pack}
"""


def generate(root: str, shards: int, per: int, ids: str, index: bool = True) -> list[tuple[str, str]]:
    run = RunDir(root)
    os.makedirs(root, exist_ok=True)
    Path(run.pipeline_file).write_text(PIPELINE)
    rng = np.random.default_rng(0)
    picks, where, first, token = [], {}, 0, 0
    maps = []
    for s in range(shards):
        shard = f"{s:06d}-0000"
        if ids == "positional":
            doc_ids = [f"web/part-{s:05d}.jsonl/{i}" for i in range(per)]
        else:
            doc_ids = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(per)]
        id_array = pa.array(doc_ids)
        removed = rng.random(per) < 0.1
        os.makedirs(os.path.dirname(run.docs("web", shard)), exist_ok=True)
        pq.write_table(pa.table({"id": id_array, "text": pa.array(["some text of a page"] * per)}), run.docs("web", shard))
        if index:
            write_index(run.id_index("ingest", "web", shard), id_array)
        for name, table in (("ledger", pa.table({"id": id_array.filter(pa.array(removed)), "source": pa.array(["web"] * int(removed.sum())),
                                                  "stage": pa.array(["short"] * int(removed.sum())),
                                                  "reason": pa.array(["where:length(text) > 12"] * int(removed.sum())),
                                                  "detail": pa.array(["length(text)=9"] * int(removed.sum()))})),
                            ("signals", pa.table({"source": pa.array(["web"] * per), "id": id_array,
                                                  "rps_doc_word_count": pa.array(rng.integers(1, 900, per))})),
                            ("tokenize", pa.table({"id": id_array.filter(pa.array(~removed)),
                                                   "tokens": pa.array([[1, 2, 3, 50256]] * int((~removed).sum()), pa.large_list(pa.int32())),
                                                   "copies": pa.array(np.ones(int((~removed).sum()), np.int32))}))):
            path = run.ledger("short", "web", shard) if name == "ledger" else run.table(name, "web", shard)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(table, path)
        kept = id_array.filter(pa.array(~removed))
        n = len(kept)
        m = pa.table([pa.array(np.arange(n) // 500 + first // 500), pa.array(np.arange(n) + first),
                      pa.array((np.arange(n) % 500 * 4).astype(np.int32)), pa.array(np.arange(n) * 4 + token),
                      pa.array(np.full(n, 4, np.int32)), pa.repeat(pa.scalar("web"), n), kept,
                      pa.array(np.zeros(n, np.int64)), pa.array(np.zeros(n, np.int32))], schema=SCHEMA)
        maps.append(m)
        where[shard] = [first, n]
        first, token = first + n, token + 4 * n
        picks.append((shard, doc_ids[int(np.flatnonzero(~removed)[0])]))
        picks.append((shard, doc_ids[int(np.flatnonzero(removed)[0])]))
    os.makedirs(run.path("pack"), exist_ok=True)
    with pq.ParquetWriter(run.token_prefix("pack", "web") + ".idx.map.parquet",
                          SCHEMA.with_metadata({SHARDS: json.dumps(where)})) as w:
        for m in maps:
            w.write_table(m.replace_schema_metadata({SHARDS: json.dumps(where)}), row_group_size=65536)
    run.publish("ingest", IngestRecord([{"source": "web", "shard": f"{s:06d}-0000", "input": f"part-{s:05d}.jsonl"}
                                        for s in range(shards)]))
    run.publish("pack", PackRecord(2049, "best_fit", ["megatron"], {"web": {"prefix": "pack/web", "files": []}}))
    run.publish("tokenize", TokenizerRecord("gpt2", "gpt2", "x", 50257, 50256, None, True))
    middle = shards // 2
    return [picks[i] for i in (0, 1, 2 * middle, 2 * middle + 1, len(picks) - 2, len(picks) - 1)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shards", type=int, default=100)
    p.add_argument("--docs-per-shard", type=int, default=100_000)
    p.add_argument("--ids", choices=["positional", "uuid"], default="positional")
    p.add_argument("--no-index", action="store_true", help="no id index (a run made before it): the docs footers find the shard")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from curate.why import story

    with tempfile.TemporaryDirectory(prefix="bench-why-", dir=args.out) as tmp:
        t0 = time.perf_counter()
        picks = generate(os.path.join(tmp, "run"), args.shards, args.docs_per_shard, args.ids, not args.no_index)
        print(f"{args.shards * args.docs_per_shard:,} documents in {args.shards} shards ({args.ids} ids, "
              f"{'no id index' if args.no_index else 'id index'}), "
              f"generated in {time.perf_counter() - t0:.0f}s")
        for shard, doc in picks:
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                s = story(os.path.join(tmp, "run"), "web", doc)
                times.append(time.perf_counter() - t0)
            print(f"  shard {shard} {s['status']:16s} {min(times) * 1000:7.1f} ms (best of 3; first {times[0] * 1000:.1f} ms)"
                  f"{'; tokens at sequence ' + str(s['tokens'][0]['sequence']) if s['tokens'] else ''}")


if __name__ == "__main__":
    main()
