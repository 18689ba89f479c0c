"""A corpus where sound dedup's exact check has work: many near-copies close to the threshold.

The sample corpus's planted near-duplicates are clear (Jaccard >= 0.85 by design), and most of its pairs never
reach the exact check. Here, after `make_sample`, each source gets one more file in its own native format
(FineWeb-Edu and Zyda parquet, DCLM jsonl.zst, Dolma json.gz) of near-copies of documents picked from every
source, 1 to 3 copies each, edited word by word (swaps, insertions, deletions) until their char 25-gram Jaccard
with the original falls in `BAND`: around zyda2's threshold of 0.8, where MinHash estimates land within the
margin and the exact Jaccard decides.

    python bench/bench_dedup.py --near-threshold --whole-only      # 32,000 documents
"""

from __future__ import annotations

import glob
import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from curate.dedup.exact import jaccard, shingle_hashes
from curate.dedup.shingles import Shingling
from curate.sample import make_sample
from curate.sample import text as T

BAND = (0.75, 0.93)     # char 25-gram Jaccard of a copy with its original
COPY_SHARE = 0.25       # of the documents: planted near-copies
CHAR25 = Shingling()    # zyda2's shingles: the Jaccard that sound dedup checks
WORDS = T.NOUNS + T.ADJECTIVES + T.VERBS


def edit(rng: random.Random, text: str, rate: float) -> str:
    """Each word, with probability `rate`: swapped with the next, a word inserted after it, or deleted."""
    words = text.split(" ")
    out, i = [], 0
    while i < len(words):
        w = words[i]
        if rng.random() >= rate:
            out.append(w)
        elif (kind := rng.random()) < 0.4 and i + 1 < len(words):
            out += [words[i + 1], w]
            i += 1
        elif kind < 0.7:
            out += [w, rng.choice(WORDS)]
        i += 1
    return " ".join(out)


def near_copy(rng: random.Random, text: str) -> tuple[str, float] | None:
    """An edited copy and its Jaccard, in `BAND` (the edit rate searched from light to heavy), None if none found."""
    target = rng.uniform(*BAND)
    original = shingle_hashes(text, CHAR25)
    for rate in (0.004, 0.008, 0.012, 0.018, 0.025, 0.035, 0.05, 0.07, 0.1):
        copy = edit(rng, text, rate)
        j = jaccard(original, shingle_hashes(copy, CHAR25))
        if j <= target:
            return (copy, j) if j >= BAND[0] else None
    return None


def _read(sample: Path) -> dict[str, tuple[list[str], list[dict]]]:
    """Per source: its files and its records (as dicts, for the texts and one record to copy the fields of)."""
    out = {}
    for source, pattern in (("fwe", "fwe/data/*/*.parquet"), ("zyda", "zyda/data/*/*.parquet")):
        files = sorted(glob.glob(str(sample / pattern)))
        out[source] = (files, [r for f in files for r in pq.read_table(f).to_pylist()])
    for source, pattern, opener in (("dclm", "dclm/*/*/*.jsonl.zst", _zst_lines), ("dolma_cc", "dolma_cc/data/*/*.json.gz", _gz_lines)):
        files = sorted(glob.glob(str(sample / pattern)))
        records = []
        for f in files:
            for line in opener(f):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass  # the sample's planted bad records
        out[source] = (files, records)
    return out


def _zst_lines(path: str) -> list[bytes]:
    try:
        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb")).read().splitlines()
    except zstandard.ZstdError:
        return []  # the sample's truncated file


def _gz_lines(path: str) -> list[bytes]:
    try:
        return gzip.open(path).read().splitlines()
    except (OSError, EOFError):
        return []


def _with(record: dict, source: str, text: str, n: int) -> dict:
    r = json.loads(json.dumps(record))
    r["text"] = text
    new_id = f"near-{source}-{n:06d}"
    if source == "zyda":
        r["nemo_id"] = new_id
    elif source == "dclm":
        r.setdefault("metadata", {})["WARC-Record-ID"] = f"<urn:uuid:{new_id}>"
    else:
        r["id"] = new_id
    return r


def make_near_threshold(dest: Path, docs: int = 32_000, seed: int = 0) -> dict:
    """The sample at `docs` x (1 - COPY_SHARE), then near-copies up to `docs`; returns counts and the copies' Jaccards."""
    make_sample(dest, docs=int(docs * (1 - COPY_SHARE)), seed=seed)
    rng = random.Random(f"near-threshold-{seed}")
    sources = _read(dest)
    pool = [r["text"] for _, records in sources.values() for r in records if len(r.get("text") or "") > 400]
    copies: dict[str, list[dict]] = {s: [] for s in sources}
    made, jaccards = 0, []
    while made < docs * COPY_SHARE:
        original = rng.choice(pool)
        for _ in range(rng.randint(1, 3)):
            found = near_copy(rng, original)
            if found is None:
                continue
            source = rng.choice(sorted(sources))
            copies[source].append(_with(sources[source][1][0], source, found[0], made))
            jaccards.append(found[1])
            made += 1
    for source, rows in copies.items():
        files = sources[source][0]
        target = Path(files[0]).parent
        if source in ("fwe", "zyda"):
            schema = pq.read_schema(files[0])
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), target / "near-copies.parquet")
        elif source == "dclm":
            data = "".join(json.dumps(r) + "\n" for r in rows).encode()
            (target / "near-copies.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
        else:
            with gzip.GzipFile(target / "near-copies.json.gz", "wb", mtime=0) as fh:
                fh.write("".join(json.dumps(r) + "\n" for r in rows).encode())
    jaccards.sort()
    return {"copies": made, "jaccard_median": jaccards[len(jaccards) // 2],
            "below_0.8": sum(j < 0.8 for j in jaccards), "per_source": {s: len(r) for s, r in copies.items()}}
