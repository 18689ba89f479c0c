"""Deterministic sample corpus in the native layouts of four web datasets.

The quickstart and the tests need real-looking input without downloads:
FineWeb-Edu parquet, DCLM-baseline ``.jsonl.zst``, Zyda parquet and Dolma
``.json.gz`` files, with planted duplicates, junk and bad records whose ground
truth is written next to the data:

* ``expected.json``: per source, the files, records, good records and bad
  records by kind that a correct reader reports;
* ``truth.json``: planted duplicate groups, each document's language and the
  junk pages, with ids exactly as the readers report them;
* ``_SUCCESS``: an empty marker written last, so a half-written sample is
  recognisable and gets regenerated.

The output is byte-identical for the same ``(docs, seed)``: every random
choice comes from ``random.Random`` seeded with strings, compressors run with
fixed settings and no timestamps, and JSON that must be stable is key-sorted.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import shutil
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from . import text as T
from .evals import make_evals
from .models import make_models
from .topic import topic_page

SOURCES = ("fwe", "dclm", "zyda", "dolma_cc")
SHARE = {"fwe": 0.3, "dclm": 0.3, "zyda": 0.2, "dolma_cc": 0.2}
# (non-English fraction, junk fraction): FineWeb-Edu is already clean English
# prose; the broader crawls carry more of both.
MIX = {"fwe": (0.0, 0.03), "dclm": (0.10, 0.16), "zyda": (0.10, 0.10),
       "dolma_cc": (0.14, 0.18)}
# Pages of the planted demonstration topic (beekeeping, for the dual_use stage), as a share of each
# source, split across the kinds howto / story / mention.
TOPIC = {"fwe": 0.01, "dclm": 0.03, "zyda": 0.03, "dolma_cc": 0.03}
TOPIC_SPLIT = {"howto": 0.4, "story": 0.4, "mention": 0.2}

# Planted duplicate groups at docs=4000; scaled linearly for other sizes.
EXACT_WITHIN_PER_SOURCE = 3
EXACT_CROSS = 8
NEAR_WITHIN = {"fwe": 2, "dclm": 6, "zyda": 2, "dolma_cc": 6}
NEAR_CROSS = 30
LOOSE = 6
NEAR_KINDS = ("boilerplate", "linebreaks", "truncated", "edit")
NEAR_MIN_JACCARD = 0.85

MARKER = "_SUCCESS"
SCALED_FROM = 20_000  # more documents than this: the corpus is made in parts (scaled.py)
_OUTPUTS = (MARKER, *SOURCES, "models", "evals", "expected.json", "truth.json")  # marker first

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


@dataclass
class Member:
    doc: Doc
    source: str
    variant: str
    jaccard: float = 1.0


@dataclass
class Group:
    kind: str  # "exact" | "near"
    members: list[Member] = field(default_factory=list)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def is_complete(dest) -> bool:
    """True when ``dest`` holds a fully written sample."""
    return (Path(dest) / MARKER).exists()


def make_corpus(dest, docs: int = 4000, seed: int = 0) -> dict:
    """Write the sample corpus under ``dest`` in one process and return the expected counts (see
    ``make_sample``, which makes corpora above SCALED_FROM documents in parts instead)."""
    dest = Path(dest)
    _clear(dest)
    plan = _Planner(docs, seed).plan()
    expected = {
        "fwe": _write_fwe(dest / "fwe", plan["fwe"], _rng(seed, "fwe")),
        "dclm": _write_dclm(dest / "dclm", plan["dclm"], _rng(seed, "dclm")),
        "zyda": _write_zyda(dest / "zyda", plan["zyda"], _rng(seed, "zyda")),
        "dolma_cc": _write_dolma(dest / "dolma_cc", plan["dolma_cc"],
                                 plan["dolma_cc_truncated"], _rng(seed, "dolma_cc")),
    }
    make_models(dest, seed)
    make_evals(dest, plan, seed)
    _write_json(dest / "expected.json", expected)
    _write_json(dest / "truth.json", _truth(plan))
    (dest / MARKER).write_bytes(b"")
    return expected


# --------------------------------------------------------------------------
# Planning: which documents go to which source, and the planted groups.
# --------------------------------------------------------------------------

def _rng(seed: int, name: str) -> random.Random:
    """Independent stream per purpose (string seeds hash with SHA-512)."""
    return random.Random(f"curate-sample:{seed}:{name}")


def _scaled(n: int, scale: float, minimum: int = 1) -> int:
    return max(minimum, round(n * scale))


class _Planner:
    """Builds per-source document lists with planted groups mixed in."""

    def __init__(self, docs: int, seed: int):
        self.rng = _rng(seed, "plan")
        self.scale = docs / 4000
        rest = docs - sum(round(docs * SHARE[s]) for s in SOURCES[:-1])
        self.counts = {s: round(docs * SHARE[s]) for s in SOURCES[:-1]}
        self.counts["dolma_cc"] = rest
        self.seen: set[str] = set()
        self.pool: dict[str, list[Doc]] = {s: [] for s in SOURCES}
        self.groups: list[Group] = []
        self._kinds = itertools.cycle(NEAR_KINDS)

    # -- documents --------------------------------------------------------
    def _unique(self, make) -> str:
        """Call ``make`` until it returns text not used before."""
        while True:
            text = make()
            if text not in self.seen:
                self.seen.add(text)
                return text

    def article(self, min_words: int = 150) -> Doc:
        text = self._unique(lambda: T.english_article(self.rng, min_words))
        return Doc(text, url=T.make_url(self.rng))

    def foreign(self) -> Doc:
        lang = self.rng.choice(T.FOREIGN_LANGS)
        return Doc(self._unique(lambda: T.foreign_page(self.rng, lang)), lang,
                   url=T.make_url(self.rng))

    def junk(self) -> Doc:
        kind = self.rng.choice(T.JUNK_KINDS)
        text = self._unique(lambda: T.junk_page(self.rng, kind)[0])
        return Doc(text, T.JUNK_LANGUAGE[kind], junk=kind, url=T.make_url(self.rng))

    def topic(self, kind: str) -> Doc:
        return Doc(self._unique(lambda: topic_page(self.rng, kind)), topic=kind, url=T.make_url(self.rng))

    def fresh(self, source: str) -> list[Doc]:
        """Ungrouped documents filling the source's language/junk/topic mix."""
        n = self.counts[source]
        nonen, junk = (round(n * f) for f in MIX[source])
        topic = [k for k, share in TOPIC_SPLIT.items() for _ in range(round(n * TOPIC[source] * share))]
        grouped = len(self.pool[source])
        n_en = max(0, n - nonen - junk - grouped - len(topic))
        return ([self.article() for _ in range(n_en)]
                + [self.foreign() for _ in range(nonen)]
                + [self.junk() for _ in range(junk)]
                + [self.topic(k) for k in topic])

    def _add(self, group: Group, doc: Doc, source: str, variant: str, jac: float = 1.0):
        group.members.append(Member(doc, source, variant, round(jac, 4)))
        self.pool[source].append(doc)

    # -- groups -----------------------------------------------------------
    def exact_group(self, sources: list[str]) -> None:
        """The same text in every listed source (repeats mean a re-crawl)."""
        group, base = Group("exact"), self.article()
        for i, src in enumerate(sources):
            if i == 0:
                self._add(group, base, src, "original")
                continue
            url = base.url if src != sources[0] else T.make_url(self.rng)
            self._add(group, Doc(base.text, url=url), src, "exact")
        self.groups.append(group)

    def near_group(self, sources: list[str], loose: bool = False) -> None:
        """A base article in sources[0] and one variant in each other entry."""
        group, base = Group("near"), self.article(min_words=350)
        self._add(group, base, sources[0], "original")
        variants = [next(self._kinds) for _ in sources[1:]]
        if loose:
            variants[-1] = "loose"
        for src, kind in zip(sources[1:], variants):
            text, jac = self._variant(base.text, kind)
            url = base.url if src != sources[0] else T.make_url(self.rng)
            self._add(group, Doc(text, url=url), src, kind, jac)
        self.groups.append(group)

    def _variant(self, base: str, kind: str) -> tuple[str, float]:
        """A variant of ``kind``; gentler retries until Jaccard >= 0.85
        (or, for "loose", until it lands in 0.5-0.72)."""
        best = None
        for attempt in range(8):
            strength = 0.75 ** attempt
            text = self._unique(lambda strength=strength: self._transform(base, kind, strength))
            jac = T.jaccard_char25(base, text)
            ok = 0.5 <= jac <= 0.72 if kind == "loose" else jac >= NEAR_MIN_JACCARD
            best = (text, jac)
            if ok:
                break
            self.seen.discard(text)
        self.seen.add(best[0])
        return best

    def _transform(self, base: str, kind: str, strength: float) -> str:
        r = self.rng
        if kind == "boilerplate":
            return T.add_boilerplate(r, base, strength)
        if kind == "linebreaks":
            return T.change_linebreaks(r, base, strength)
        if kind == "truncated":
            return T.truncate(r, base, 1 - r.uniform(0.08, 0.14) * strength)
        if kind == "edit":
            return T.edit_words(r, base, strength)
        if kind == "loose":
            cut = T.truncate(r, base, r.uniform(0.6, 0.75))
            return T.add_boilerplate(r, T.change_linebreaks(r, cut), 1.0)
        raise ValueError(kind)

    def _source_sets(self, sizes: tuple[int, ...]) -> list[list[str]]:
        """All source combinations of the given sizes, in a shuffled order
        and with a random first (original) source."""
        combos = [list(c) for k in sizes for c in itertools.combinations(SOURCES, k)]
        self.rng.shuffle(combos)
        for c in combos:
            self.rng.shuffle(c)
        return combos

    def plan(self) -> dict[str, list[Doc]]:
        r, s = self.rng, self.scale
        for src in SOURCES:
            for i in range(_scaled(EXACT_WITHIN_PER_SOURCE, s)):
                self.exact_group([src] * (3 if i == 0 else 2))
        cross = itertools.cycle(self._source_sets((2, 3)))
        for _ in range(_scaled(EXACT_CROSS, s)):
            self.exact_group(next(cross))
        for src, n in NEAR_WITHIN.items():
            for _ in range(_scaled(n, s, minimum=1 if n > 2 else 0)):
                self.near_group([src] * r.randint(2, 4))
        cross = itertools.cycle(self._source_sets((2, 3, 4)))
        n_loose = _scaled(LOOSE, s)
        for i in range(_scaled(NEAR_CROSS, s)):
            srcs = next(cross)
            if r.random() < 0.2:  # a second copy inside the original's source
                srcs = srcs + [srcs[0]]
            self.near_group(srcs, loose=i < n_loose)

        plan: dict[str, list[Doc]] = {}
        for src in SOURCES:
            fresh = self.fresh(src)
            r.shuffle(fresh)
            if src == "dolma_cc":  # the truncated file holds only ungrouped docs
                n_trunc = min(60, max(5, self.counts[src] // 8))
                plan["dolma_cc_truncated"], fresh = fresh[:n_trunc], fresh[n_trunc:]
            docs = self.pool[src] + fresh
            r.shuffle(docs)
            plan[src] = docs
        plan["groups"] = self.groups
        return plan


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


def _write_fwe(root: Path, docs: list[Doc], rng: random.Random) -> dict:
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


def _write_dclm(root: Path, docs: list[Doc], rng: random.Random) -> dict:
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


def _write_zyda(root: Path, docs: list[Doc], rng: random.Random, id_prefix: str = "") -> dict:
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


def _write_dolma(root: Path, docs: list[Doc], truncated: list[Doc],
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


# --------------------------------------------------------------------------
# Ground truth and helpers.
# --------------------------------------------------------------------------

def _truth(plan: dict) -> dict:
    groups = []
    for g in plan["groups"]:
        sources = {m.source for m in g.members}
        groups.append({
            "kind": g.kind,
            "scope": "within" if len(sources) == 1 else "cross",
            "variants": sorted({m.variant for m in g.members} - {"original"}),
            "members": [{"source": m.source, "id": m.doc.id, "variant": m.variant,
                         "jaccard_char25": m.jaccard} for m in g.members],
        })
    languages, junk, junk_kinds, topic = {}, {}, {}, {}
    for src in SOURCES:
        docs = plan[src] + plan.get(f"{src}_truncated", [])
        docs = [d for d in docs if d.readable]
        languages[src] = {d.id: d.lang for d in docs}
        junk[src] = sorted(d.id for d in docs if d.junk)
        junk_kinds[src] = {d.id: d.junk for d in docs if d.junk}
        topic[src] = {d.id: d.topic for d in docs if d.topic}
    return {"groups": groups, "languages": languages, "junk": junk,
            "junk_kinds": junk_kinds, "topic": topic}


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def _clear(dest: Path) -> None:
    """Remove a previous sample (finished or partial): marker first, so an
    interrupted clean-up still reads as incomplete."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in _OUTPUTS:
        p = dest / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
