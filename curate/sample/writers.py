"""The sample corpus's files, one writer per source in its native format (FineWeb-Edu parquet, DCLM jsonl.zst, Zyda
parquet, Dolma json.gz), each returning its expected.json entry; corpus.py plans the documents they write."""

from __future__ import annotations

import gzip
import json
import random
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from . import text as T

DCLM_FILES = (
    "global-shard_01_of_10/local-shard_0_of_10/shard_00000000_processed.jsonl.zst",
    "global-shard_01_of_10/local-shard_1_of_10/shard_00000001_processed.jsonl.zst",
    "global-shard_02_of_10/local-shard_0_of_10/shard_00000002_processed.jsonl.zst",
)
FWE_DUMPS = {"CC-MAIN-2024-10": "2024-02", "CC-MAIN-2024-18": "2024-04"}
ZYDA_COMPONENTS = ("zyda_refinedweb", "zyda_c4-en")
DOLMA_BUCKETS = ("head", "middle", "tail")
DCLM_WARCINFO = (
    "robots: classic\r\nhostname: ip-10-60-113-42.ec2.internal\r\n"
    "software: Nutch 1.6 (CC)/CC WarcExport 1.0\r\nisPartOf: CC-MAIN-2013-20\r\n"
    "operator: CommonCrawl Admin\r\ndescription: Wide crawl of the web for May 2013\r\n"
    "publisher: CommonCrawl\r\nformat: WARC File Format 1.0\r\n"
    "conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf"
)
ZSTD_LEVEL = 3
GZIP_LEVEL = 6



@dataclass(eq=False)
class Doc:
    """One document to write; ``id`` is filled in by the source writer."""
    text: str
    lang: str = "en"
    junk: str | None = None
    topic: str | None = None  # the planted demonstration topic (curate.sample.topic): howto, story, mention
    url: str = ""
    id: str = ""
    readable: bool = True  # False when lost past the cut of the truncated file



# --------------------------------------------------------------------------
# Writers: one per source, each returns its expected.json entry.
# --------------------------------------------------------------------------

def _split(items: list, fractions: tuple[float, ...]) -> list[list]:
    """Consecutive chunks with the given share each (last takes the rest)."""
    out, start = [], 0
    for f in fractions[:-1]:
        end = start + round(len(items) * f)
        out.append(items[start:end])
        start = end
    out.append(items[start:])
    return out


def _urn(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def _iso(rng: random.Random, month: str) -> str:
    """A timestamp within ``month`` ('YYYY-MM')."""
    return (f"{month}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z")


def _write_parquet(path: Path, schema: pa.Schema, columns: dict, row_group_size: int | None):
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pydict(columns, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size or max(1, len(table)),
                   compression="snappy", use_dictionary=True, write_statistics=True)


def _counts(files: int, good: int, bad: dict[str, int] | None = None) -> dict:
    bad = bad or {}
    return {"files": files, "records": good + sum(bad.values()), "good": good, "bad": bad}


FWE_SCHEMA = pa.schema([
    ("text", pa.string()), ("id", pa.string()), ("dump", pa.string()),
    ("url", pa.string()), ("date", pa.string()), ("file_path", pa.string()),
    ("language", pa.string()), ("language_score", pa.float64()),
    ("token_count", pa.int64()), ("score", pa.float64()), ("int_score", pa.int64()),
])


def _fwe_warc(rng: random.Random, dump: str, month: str) -> str:
    seg = f"{rng.randint(10**12, 10**13 - 1)}.{rng.randint(0, 99)}"
    day, ym = rng.randint(1, 27), month.replace("-", "")
    ts = f"{ym}{day:02d}{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}"
    ts2 = f"{ym}{day + 1:02d}{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}"
    return (f"s3://commoncrawl/crawl-data/{dump}/segments/{seg}/warc/"
            f"CC-MAIN-{ts}-{ts2}-{rng.randint(0, 899):05d}.warc.gz")


def write_fwe(root: Path, docs: list[Doc], rng: random.Random) -> dict:
    """Two dumps; the second file has many small row groups."""
    halves = _split(docs, (0.5, 0.5))
    for (dump, month), part, rgs in zip(FWE_DUMPS.items(), halves, (None, 100)):
        cols = {name: [] for name in FWE_SCHEMA.names}
        for doc in part:
            doc.id = _urn(rng)
            words = len(doc.text.split())
            score = rng.uniform(0.3, 1.8) if doc.junk else rng.uniform(2.5, 4.9)
            row = {
                "text": doc.text, "id": doc.id, "dump": dump, "url": doc.url,
                "date": _iso(rng, month), "file_path": _fwe_warc(rng, dump, month),
                "language": "en",
                "language_score": round(rng.uniform(0.55, 0.9) if doc.junk
                                        else rng.uniform(0.88, 1.0), 6),
                "token_count": int(words * rng.uniform(1.2, 1.4)),
                "score": round(score, 6),
                "int_score": min(5, max(0, round(score))),
            }
            for k, v in row.items():
                cols[k].append(v)
        _write_parquet(root / "data" / dump / "000_00000.parquet", FWE_SCHEMA, cols, rgs)
    return _counts(len(FWE_DUMPS), len(docs))


def _dclm_record(rng: random.Random, doc: Doc) -> dict:
    en = rng.uniform(0.01, 0.3) if doc.lang != "en" else rng.uniform(0.65, 1.0)
    return {
        "text": doc.text,
        "url": doc.url,
        "bff_contained_ngram_count_before_dedupe": rng.randint(0, 40),
        "language_id_whole_page_fasttext": {"en": round(en, 6)},
        "metadata": {
            "Content-Length": str(len(doc.text.encode())),
            "Content-Type": "text/plain",
            "WARC-Date": _iso(rng, f"2013-0{rng.randint(1, 9)}"),
            "WARC-Record-ID": _urn(rng),
            "WARC-Target-URI": doc.url,
            "WARC-Type": "conversion",
        },
        "previous_word_count": len(doc.text.split()),
        "fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob":
            round(rng.uniform(0.002, 0.2) if doc.junk else rng.uniform(0.02, 0.99), 6),
        "warcinfo": DCLM_WARCINFO,
    }


def _jsonl(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()


def _dclm_bad_lines(rng: random.Random) -> list[bytes]:
    """invalid JSON, invalid UTF-8, missing text, empty text (in this order)."""
    def rec(text):
        return _dclm_record(rng, Doc(text, url=T.make_url(rng)))
    cut = json.dumps(rec(T.english_article(rng, 150, 200)), ensure_ascii=False)
    bad_utf8 = _jsonl(rec("Caf@@BAD@@ menu and opening hours.")).replace(
        b"@@BAD@@", b"\xff\xfe\xc3")
    missing = rec("unused")
    del missing["text"]
    return [(cut[: len(cut) // 2] + "\n").encode(), bad_utf8, _jsonl(missing), _jsonl(rec(""))]


DCLM_BAD_KINDS = ("invalid_json", "invalid_utf8", "missing_text", "empty_text")


def write_dclm(root: Path, docs: list[Doc], rng: random.Random) -> dict:
    """Three zstd JSONL shards; the first holds the four bad records at
    interior lines. A document's id is its record's own ``metadata.WARC-Record-ID``,
    as the ``dclm`` reader reports it."""
    for i, (rel, part) in enumerate(zip(DCLM_FILES, _split(docs, (1 / 3, 1 / 3, 1 / 3)))):
        lines: list[bytes | Doc] = list(part)
        if i == 0:
            total = len(part) + len(DCLM_BAD_KINDS)
            for k, bad in enumerate(_dclm_bad_lines(rng), start=1):
                lines.insert(total * k // 5, bad)
        out = []
        for item in lines:
            if isinstance(item, Doc):
                record = _dclm_record(rng, item)
                item.id = record["metadata"]["WARC-Record-ID"]
                item = _jsonl(record)
            out.append(item)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(b"".join(out)))
    return _counts(len(DCLM_FILES), len(docs), dict.fromkeys(DCLM_BAD_KINDS, 1))


ZYDA_SCHEMA = pa.schema([
    ("nemo_id", pa.string()), ("text", pa.string()), ("source", pa.string()),
    ("filtering_features", pa.string()), ("source_other", pa.string()),
])


def write_zyda(root: Path, docs: list[Doc], rng: random.Random, id_prefix: str = "") -> dict:
    """One parquet file per Zyda component; `id_prefix` keeps ids unique across the parts of a large corpus."""
    for comp, part in zip(ZYDA_COMPONENTS, _split(docs, (0.6, 0.4))):
        cols = {name: [] for name in ZYDA_SCHEMA.names}
        for i, doc in enumerate(part):
            doc.id = f"{id_prefix}{comp}-{i:07d}"
            words = doc.text.split()
            features = {
                "word_count": len(words),
                "mean_word_length": round(sum(map(len, words)) / max(1, len(words)), 4),
                "fraction_of_duplicate_lines": round(rng.uniform(0, 0.05), 4),
            }
            other = {"url": doc.url, "timestamp": _iso(rng, "2019-04")}
            if comp == "zyda_refinedweb":
                other["dump"] = "CC-MAIN-2019-18"
            for k, v in (("nemo_id", doc.id), ("text", doc.text), ("source", comp),
                         ("filtering_features", json.dumps(features, sort_keys=True)),
                         ("source_other", json.dumps(other, sort_keys=True))):
                cols[k].append(v)
        _write_parquet(root / "data" / comp / "train-00000-of-00001.parquet",
                       ZYDA_SCHEMA, cols, None)
    return _counts(len(ZYDA_COMPONENTS), len(docs))


def _dolma_lines(rng: random.Random, docs: list[Doc], bucket: str) -> bytes:
    perplexity = {"head": (80, 300), "middle": (300, 600), "tail": (600, 2000)}[bucket]
    out = []
    for doc in docs:
        doc.id = f"{rng.getrandbits(160):040x}"
        out.append(_jsonl({
            "id": doc.id,
            "text": doc.text,
            "source": "common-crawl",
            "added": _iso(rng, "2023-05"),
            "created": _iso(rng, f"2020-{rng.randint(1, 12):02d}"),
            "metadata": {
                "url": doc.url,
                "bucket": bucket,
                "perplexity": round(rng.uniform(*perplexity), 3),
                "language_score": round(rng.uniform(0.5, 1.0), 4),
            },
        }))
    return b"".join(out)


def _gzip(data: bytes) -> bytes:
    """gzip with no file name and mtime 0, so bytes depend only on data."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def readable_lines(data: bytes) -> int:
    """Complete lines that decompress from a (possibly truncated) gzip stream."""
    out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    return out.count(b"\n")


def write_dolma(root: Path, docs: list[Doc], truncated: list[Doc],
                 rng: random.Random) -> dict:
    """head/middle/tail files, plus a tail file cut at 60% of its bytes."""
    for bucket, part in zip(DOLMA_BUCKETS, _split(docs, (0.4, 0.35, 0.25))):
        path = root / "data" / f"cc_en_{bucket}" / f"cc_en_{bucket}-0000.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_gzip(_dolma_lines(rng, part, bucket)))
    full = _gzip(_dolma_lines(rng, truncated, "tail"))
    cut = full[: int(len(full) * 0.6)]
    (root / "data" / "cc_en_tail" / "cc_en_tail-0001.json.gz").write_bytes(cut)
    n_read = readable_lines(cut)
    for doc in truncated[n_read:]:
        doc.readable = False
    return _counts(len(DOLMA_BUCKETS) + 1, len(docs) + n_read, {"truncated_file": 1})
