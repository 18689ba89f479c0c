"""The document maps' cost: the pack step's work for one source (per docs shard: read the token documents, expand
copies, pack, write each format; then merge the shards) with and without writing and merging the maps; and the maps'
size per million tokens.

Synthetic token documents as the tokenize step writes them (lengths drawn like web pages: log-normal, median ~400
tokens), the same for both sides; the sides alternate; the median of --repeat (and the best, in the last column).
The packed files' bytes are checked to be the same on both sides.

    python bench/bench_docmap.py [--tokens 20000000] [--shards 4] [--seq-len 2049] [--repeat 7]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.tokens.batch import Tokens  # noqa: E402
from curate.tokens.docmap import SHARD_MAPS, DocKeys, merge_maps  # noqa: E402
from curate.tokens.formats import get  # noqa: E402
from curate.tokens.shard import pack_shard  # noqa: E402


def documents(total: int, seed: int = 0) -> tuple[Tokens, DocKeys]:
    rng = np.random.default_rng(seed)
    lengths = np.maximum(rng.lognormal(6.0, 1.0, total // 300).astype(np.int64), 1)
    lengths = lengths[: np.searchsorted(np.cumsum(lengths), total) + 1]
    ids = rng.integers(0, 50257, int(lengths.sum())).astype(np.int32)
    keys = DocKeys("web", pa.array([f"<urn:uuid:{i:08x}-0000-4000-8000-{i:012x}>" for i in range(len(lengths))]),
                   np.ones(len(lengths), np.int64))
    return Tokens(ids, np.concatenate([[0], np.cumsum(lengths)])), keys


def digest(prefix: str, formats: list[str]) -> str:
    h = hashlib.sha256()
    for name in formats:
        for suffix in get(name).suffixes:
            h.update(Path(prefix + suffix).read_bytes())
    return h.hexdigest()


def pack_step(tmp: str, shards: list[str], method: str, seq_len: int, formats: list[str], maps: bool) -> None:
    """What the pack step does for one source: per docs shard read the token documents, expand copies, pack and write
    (with or without maps), then merge each format's shard files (and maps) into the source's files."""
    from curate.io.parquet import read_table
    from curate.tokens.shard import expand_copies, from_arrow

    parts = []
    for i, path in enumerate(shards):
        table = read_table(path)
        copies = table.column("copies").to_numpy().astype(np.int64)
        tokens = expand_copies(from_arrow(table.column("tokens")), copies)
        prefix = os.path.join(tmp, f"{'m' if maps else 'p'}{i}")
        keys = DocKeys("web", table.column("id").combine_chunks(), copies) if maps else None
        pack_shard(tokens, prefix, vocab_size=50257, seq_len=seq_len, method=method, seed=i, formats=formats, keys=keys)
        parts.append(prefix)
    out = os.path.join(tmp, "maps" if maps else "plain")
    for name in formats:
        get(name).merge(out, parts, vocab_size=50257, tokenizer_name="gpt2")
    if maps:
        merge_maps({name: out + get(name).map_suffix for name in formats if get(name).map_suffix}, [q + SHARD_MAPS for q in parts])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=20_000_000)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=2049)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--formats", default="megatron,datatrove")
    p.add_argument("--methods", default="best_fit,concat,none")
    args = p.parse_args()
    import pyarrow.parquet as pq

    from curate.tokens.shard import to_arrow

    formats = args.formats.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-docmap-") as tmp:
        shards, total = [], 0
        for i in range(args.shards):   # token documents as the tokenize step writes them
            tokens, keys = documents(args.tokens // args.shards, seed=i)
            path = os.path.join(tmp, f"tok{i}.parquet")
            pq.write_table(pa.table({"id": keys.ids, "tokens": to_arrow(tokens), "copies": pa.array(np.ones(len(tokens), np.int32))}), path)
            shards.append(path)
            total += tokens.num_tokens
        print(f"{args.shards} shards, {total:,} tokens, seq_len {args.seq_len}, formats {formats}; median of {args.repeat}, "
              f"the sides alternating; load {os.getloadavg()[0]:.1f}")
        for method in args.methods.split(","):
            wall = {False: [], True: []}
            cpu = {False: [], True: []}
            for _ in range(args.repeat):
                for maps in (False, True):
                    t0, c0 = time.perf_counter(), time.process_time()
                    pack_step(tmp, shards, method, args.seq_len, formats, maps)
                    wall[maps].append(time.perf_counter() - t0)
                    cpu[maps].append(time.process_time() - c0)
            assert digest(os.path.join(tmp, "plain"), formats) == digest(os.path.join(tmp, "maps"), formats)
            per_m = {f: os.path.getsize(os.path.join(tmp, "maps") + get(f).map_suffix) / (total / 1e6) / 1024 for f in formats}
            w0, w1, c0, c1 = (statistics.median(x) for x in (wall[False], wall[True], cpu[False], cpu[True]))
            best = 100 * (min(cpu[True]) / min(cpu[False]) - 1)
            print(f"| {method} | {w0:.3f} | {w1:.3f} | {100 * (w1 / w0 - 1):+.1f}% | {c0:.3f} | {c1:.3f} | "
                  f"{100 * (c1 / c0 - 1):+.1f}% | " + " / ".join(f"{per_m[f]:.1f}" for f in formats) + f" | {best:+.1f}% |")


if __name__ == "__main__":
    main()
