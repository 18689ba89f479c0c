"""Benchmark: curate's n-gram decontamination against datatrove 0.10's (`datatrove.pipeline.decont`), same text,
10 eval sets, one run, one thread (MB/s is per core: MB of UTF-8 text per CPU second of this process).

- ours: what the `decontaminate` stage does per shard: `EvalIndex.scan` (normalise and hash words once in a numba
  pass, then one compiled pass per gram length: rolling hash from prefix sums, bitset, binary search, against the
  grams of every set at once) then `decide` (runs, overlap, longest match, the frequency rule) over the stored
  matches; the index is built once, outside the timing.
- datatrove: `NGramsDecontFilter.filter(doc)` per document (its `simplify_text`, spaCy's English word tokenizer,
  13-grams joined and hashed with xxhash, a dict lookup per n-gram, stopping at the first hit). Its indexer needs
  `lighteval` to read tasks; we write its index files ourselves, in the format its filter reads (`<task>.index.hashes`,
  a flat array of its own 64-bit n-gram hashes, computed with its own `simplify_text`, tokenizer and hash function).

Eval sets: 10 sets of `--items` items each, made from the corpus's own words: most items are new word sequences (60
words of passage + a 15-word question), 2% are passages copied from documents, so both have something to find. The
two normalise differently (datatrove also strips diacritics and folds numbers), so the counts of documents with a hit
are printed side by side, not required to agree.

Documents: `../shared/data/dolma/formats/*.jsonl.gz` (real Common Crawl pages) when present, else the curate sample.
Ours runs on the texts cycled to `--mb` megabytes; datatrove on the first documents, for up to `--budget` CPU seconds.

Usage: python bench/bench_decontaminate.py [--mb 20] [--budget 20] [--items 1000]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
from inputs import dolma_texts, sample_texts  # noqa: E402  (bench/inputs.py)
SETS = 10


def load_texts() -> tuple[list[str], str]:
    texts = dolma_texts()
    if texts:
        return texts, f"dolma CC sample ({len(texts)} real pages)"
    return sample_texts(docs=2000), "curate.sample corpus (docs=2000)"


def make_sets(texts: list[str], items: int, seed: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    vocab = sorted({w for t in texts[:300] for w in t.split() if w.isalpha()})
    sets = []
    for s in range(SETS):
        rows = []
        for i in range(items):
            if rng.random() < 0.02:
                words = rng.choice(texts).split()
                start = rng.randrange(0, max(1, len(words) - 60))
                passage = " ".join(words[start:start + 60])
            else:
                passage = " ".join(rng.choices(vocab, k=60))
            rows.append({"id": f"s{s}-{i}", "passage": passage, "question": " ".join(rng.choices(vocab, k=15)) + "?", "answer": "yes"})
        sets.append(rows)
    return sets


def ours(texts: list[str], sets: list[list[dict]], mb: float) -> dict:
    from curate.decontam.decide import decide
    from curate.decontam.evalsets import EvalItem
    from curate.decontam.index import EvalIndex, doc_counts

    items = [EvalItem(f"set{s}", r["id"], (r["passage"], r["question"], r["answer"])) for s, rows in enumerate(sets) for r in rows]
    started = time.process_time()
    index = EvalIndex(items, [f"set{s}" for s in range(SETS)], 13, 8)
    build = time.process_time() - started
    index.scan(pa.array(["warm-up"]), pa.array(["warm the kernel up once"]))
    target, cycled, size = mb * 1e6, [], 0
    while size < target:
        for t in texts:
            cycled.append(t)
            size += len(t.encode())
            if size >= target:
                break
    batch, hits, matched = 8192, 0, set()
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(cycled), batch):
        part = cycled[start:start + batch]
        ids = pa.array([str(start + i) for i in range(len(part))])
        matches = index.scan(ids, pa.array(part))
        counts = doc_counts(matches)
        frequent = np.sort(counts.filter(pa.compute.greater(counts["docs"], 100))["gram"].to_numpy())
        pairs = decide(matches, index, frequent, 0.5, 50)
        hits += pairs.num_rows
        matched |= {int(i) % len(texts) for i in pc_unique(matches)}
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"mb": size / 1e6, "cpu": cpu, "wall": wall, "docs_hit": len(matched), "grams": len(index.keys), "build": build,
            "docs": len(cycled)}


def pc_unique(matches: pa.Table) -> list[str]:
    return pa.compute.unique(matches["id"]).to_pylist()


def datatrove(texts: list[str], sets: list[list[dict]], budget: float) -> dict:
    from datatrove.data import Document
    from datatrove.pipeline.decont import NGramsDecontConfig, NGramsDecontFilter
    from datatrove.utils.hashing import create_hash_func
    from datatrove.utils.text import ngrams, simplify_text
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    config = NGramsDecontConfig(n_grams=13, find_query_ngrams=True)
    tokenizer, hash_func = load_word_tokenizer("en"), create_hash_func(config.hash_config)
    folder = tempfile.mkdtemp(prefix="bench-decont-dt-")
    for s, rows in enumerate(sets):   # NGramsDecontIndexer.compute_hashes, without lighteval: label and query n-grams
        hashes = set()
        for r in rows:
            for text in (r["passage"], r["question"]):
                tokens = tokenizer.word_tokenize(simplify_text(text, config.norm_config))
                hashes.update(hash_func(" ".join(g)) for g in ngrams(tokens, config.n_grams))
        np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(os.path.join(folder, f"set{s}.index.hashes"))
    filt = NGramsDecontFilter(index_folder=folder, config=config)
    filt.filter(Document(text="warm up the tokenizer and load the index", id="w"))
    wall, cpu, size, done, hit = time.perf_counter(), time.process_time(), 0, 0, 0
    for i, t in enumerate(texts):
        kept = filt.filter(Document(text=t, id=str(i)))
        hit += kept is not True
        size += len(t.encode())
        done += 1
        if time.process_time() - cpu > budget:
            break
    return {"mb": size / 1e6, "cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "docs": done, "docs_hit": hit}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("--items", type=int, default=1000)
    args = ap.parse_args()
    texts, what = load_texts()
    sets = make_sets(texts, args.items)
    print(f"documents: {what}; {SETS} eval sets x {args.items} items; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    a = ours(texts, sets, args.mb)
    b = datatrove(texts, sets, args.budget)
    rows = [("curate decontaminate (scan + decide)", a), ("datatrove NGramsDecontFilter", b)]
    print(f"index: {a['grams']:,} grams, built in {a['build']:.2f} s (ours)")
    print("| method | MB | docs | CPU s | MB/s per core | wall MB/s | documents with a hit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['mb']:.1f} | {r['docs']:,} | {r['cpu']:.2f} | {r['mb'] / r['cpu']:.2f} | {r['mb'] / r['wall']:.2f} | "
              f"{r['docs_hit']:,} |")
    ratio = (a["mb"] / a["cpu"]) / (b["mb"] / b["cpu"])
    print(f"ratio (MB/s per core, ours / datatrove): {ratio:.1f}x; load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
