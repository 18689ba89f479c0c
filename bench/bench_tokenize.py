"""Tokens/s of HF `tokenizers` encode_batch alone vs curate's tokenize + best-fit pack + Megatron write.

Same texts for every contender: the Dolma sample under /work/shared/data when present, else the
FineWeb-Edu part of `curate.sample.make_sample(docs=4000)`. Best of --repeat runs after a warm-up.
Two views of ours: `write_shard` chains `encode_documents` and `pack_shard`, the very functions the
tokenize and pack stages call (no Parquet in between); and the stages themselves, in a
`curate run` of ingest -> tokenize -> pack (inline, one process) over the same texts written as one
Parquet file, timed from the run's task seconds (Parquet reads and writes of token ids included).

    python bench/bench_tokenize.py [--tokenizer gpt2] [--seq-len 2049] [--copies 3] [--repeat 3] [--format datatrove]
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.tokens import load_tokenizer, write_shard  # noqa: E402

DOLMA = "/work/shared/data/dolma/formats/*.jsonl.gz"


def load_texts(copies: int) -> tuple[list[str], str]:
    files = sorted(glob.glob(DOLMA))
    if files:
        texts = []
        for path in files:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                texts += [json.loads(line)["text"] for line in f]
        source = f"dolma sample ({len(files)} file)"
    else:
        import pyarrow.parquet as pq

        from curate.sample import make_sample

        texts = []
        with tempfile.TemporaryDirectory(prefix="bench-sample-") as tmp:
            root = Path(tmp) / "corpus"
            make_sample(root, docs=4000)
            for path in sorted(root.glob("fwe/data/*/*.parquet")):
                texts += [t for t in pq.read_table(path, columns=["text"]).column("text").to_pylist() if t]
        source = "make_sample(docs=4000) fwe parquet"
    return texts * copies, source


def best_of(repeat: int, fn):
    fn()  # warm-up: thread pools, page cache
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def pipeline_seconds(texts: list[str], tokenizer: str, seq_len: int) -> float:
    """Task seconds of the tokenize and pack stages of an inline `curate run` over `texts` (one Parquet shard)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import curate
    from curate.runner.progress import Progress

    with tempfile.TemporaryDirectory() as tmp:
        pq.write_table(pa.table({"text": texts}), os.path.join(tmp, "texts.parquet"))
        recipe = os.path.join(tmp, "p.yaml")
        with open(recipe, "w") as f:
            f.write(f"name: bench\nsources: {{s: {{format: parquet, paths: '{tmp}/texts.parquet'}}}}\n"
                    f"execution: {{task_size_mb: 100000, batch_rows: 8192}}\nstages:\n  ingest: {{}}\n"
                    f"  tokenize: {{tokenizer: {tokenizer}}}\n  pack: {{seq_len: {seq_len}}}\n")
        rows = curate.run_pipeline(curate.load_pipeline(recipe), os.path.join(tmp, "run"), inline=True,
                                   progress=Progress(quiet=True))
    return sum(r["task_seconds"] for r in rows if r["stage"] in ("tokenize", "pack"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", default="gpt2")
    ap.add_argument("--seq-len", type=int, default=2049)
    ap.add_argument("--copies", type=int, default=3, help="repeat the corpus to get stable timings")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", default="megatron", choices=["megatron", "datatrove"], help="the token files write_shard writes")
    args = ap.parse_args(argv)

    texts, source = load_texts(args.copies)
    ours = load_tokenizer(args.tokenizer)
    ours_hf = load_tokenizer(args.tokenizer, backend="hf")
    direct = ours_hf.hf  # the plain HF `tokenizers` object, used as any script would
    print(f"texts: {len(texts)} docs, {sum(map(len, texts)) / 1e6:.1f} M chars from {source}; "
          f"cores: {len(os.sched_getaffinity(0))}; tokenizer: {ours.identity()}")

    t_direct, encs = best_of(args.repeat, lambda: direct.encode_batch(texts))
    n_tokens = sum(len(e.ids) for e in encs)
    rows = [("direct tokenizers.encode_batch", t_direct, n_tokens)]
    with tempfile.TemporaryDirectory() as tmp:
        for label, tok in ((f"ours [{ours.backend}] tokenize+best_fit+{args.format}", ours),
                           (f"ours [hf] tokenize+best_fit+{args.format}", ours_hf)):
            if label.startswith("ours [hf]") and ours.backend == "hf":
                continue
            prefix = os.path.join(tmp, "shard")
            t, stats = best_of(args.repeat, lambda tok=tok, prefix=prefix: write_shard(
                texts, tok, prefix, fmt=args.format, packing="best_fit", seq_len=args.seq_len, seed=0))
            assert stats["tokens"] == n_tokens + len(texts), "ids differ from the direct run"
            rows.append((label, t, n_tokens))
            print(f"  packing: {stats['sequences']} sequences of <= {args.seq_len}, density {stats['density']:.4f}, "
                  f"docs split {stats['split_share']:.3%}, {stats['tokens_written']:,} tokens written")
    t_stages = pipeline_seconds(texts, args.tokenizer, args.seq_len)
    rows.append(("ours: tokenize + pack stages (curate run)", t_stages, n_tokens))
    for label, t, n in rows:
        print(f"{label:48s} {t:7.3f} s  {n / t / 1e6:6.2f} M tokens/s  ratio vs direct {t_direct / t:5.2f}x")
    best = min(t for _, t, _ in rows[1:-1])
    verdict = "PASS" if best <= t_direct * 1.2 else "FAIL"
    print(f"ours/direct time = {best / t_direct:.2f} (target <= 1.20): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
