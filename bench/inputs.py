"""The texts the benchmarks run on: the real Common Crawl pages of ../shared/data/dolma when present (absent on
a user's machine), else the offline sample corpus, made in a temp dir."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

DOLMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dolma" / "formats"


def dolma_texts() -> list[str]:
    """Every page of the Dolma CC sample (697 WET pages), or [] where it is absent."""
    texts = []
    for path in sorted(DOLMA.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    return texts


def sample_texts(docs: int = 2000, sources: str = "*", seed: int = 0) -> list[str]:
    """The non-empty texts of a fresh sample corpus of `docs` documents (Parquet sources only; `sources` a glob)."""
    from curate.sample import make_sample

    tmp = tempfile.mkdtemp(prefix="bench-")
    make_sample(tmp, docs=docs, seed=seed)
    return [t for p in sorted(Path(tmp).glob(f"{sources}/data/**/*.parquet"))
            for t in pq.read_table(p, columns=["text"])["text"].to_pylist() if t]
