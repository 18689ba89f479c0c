"""Tests for the offline sample corpus (curate.sample).

The corpus is ground truth for the readers, dedup and filter tests, so these
tests read it back independently (pyarrow, zstandard, zlib) and check that
expected.json and truth.json describe what is really on disk.
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curate.sample import is_complete, make_sample
from curate.sample import text as T
from curate.sample.writers import DCLM_FILES

FILES = {
    "fwe": ["fwe/data/CC-MAIN-2024-10/000_00000.parquet",
            "fwe/data/CC-MAIN-2024-18/000_00000.parquet"],
    "dclm": [f"dclm/{p}" for p in DCLM_FILES],
    "zyda": ["zyda/data/zyda_refinedweb/train-00000-of-00001.parquet",
             "zyda/data/zyda_c4-en/train-00000-of-00001.parquet"],
    "dolma_cc": ["dolma_cc/data/cc_en_head/cc_en_head-0000.json.gz",
                 "dolma_cc/data/cc_en_middle/cc_en_middle-0000.json.gz",
                 "dolma_cc/data/cc_en_tail/cc_en_tail-0000.json.gz",
                 "dolma_cc/data/cc_en_tail/cc_en_tail-0001.json.gz"],
}
DCLM_KEYS = ["text", "url", "bff_contained_ngram_count_before_dedupe",
             "language_id_whole_page_fasttext", "metadata", "previous_word_count",
             "fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob",
             "warcinfo"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    dest = tmp_path_factory.mktemp("sample") / "corpus"
    expected = make_sample(dest, docs=4000, seed=0)
    return dest, expected


@pytest.fixture(scope="module")
def readback(sample):
    dest, _ = sample
    return {src: READERS[src](dest) for src in FILES}


@pytest.fixture(scope="module")
def truth(sample):
    return json.loads((sample[0] / "truth.json").read_text())


# --------------------------------------------------------------------------
# Independent readers: (records, {id: text} of good records, Counter of bad).
# --------------------------------------------------------------------------

def _read_parquet(dest, src, id_col):
    good = {}
    for rel in FILES[src]:
        for row in pq.read_table(dest / rel, columns=[id_col, "text"]).to_pylist():
            good[row[id_col]] = row["text"]
    return len(good), good, Counter()


def _classify_json(line: bytes):
    """Return (record, None) or (None, bad kind)."""
    try:
        s = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "invalid_utf8"
    try:
        obj = json.loads(s)
    except json.JSONDecodeError:
        return None, "invalid_json"
    if "text" not in obj:
        return None, "missing_text"
    if obj["text"] == "":
        return None, "empty_text"
    return obj, None


def _read_dclm(dest):
    records, good, bad = 0, {}, Counter()
    for rel in FILES["dclm"]:
        data = zstandard.ZstdDecompressor().decompress((dest / rel).read_bytes())
        assert data.endswith(b"\n")
        for line in data.split(b"\n")[:-1]:
            records += 1
            obj, kind = _classify_json(line)
            if kind:
                bad[kind] += 1
            else:  # the dclm reader's id: the record's own WARC-Record-ID
                good[obj["metadata"]["WARC-Record-ID"]] = obj["text"]
    return records, good, bad


def _read_dolma(dest):
    records, good, bad = 0, {}, Counter()
    for rel in FILES["dolma_cc"]:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = d.decompress((dest / rel).read_bytes())
        lines = data.split(b"\n")[:-1]
        for line in lines:
            obj, kind = _classify_json(line)
            assert kind is None
            good[obj["id"]] = obj["text"]
        records += len(lines)
        if not d.eof:
            bad["truncated_file"] += 1
            records += 1
    return records, good, bad


READERS = {
    "fwe": lambda dest: _read_parquet(dest, "fwe", "id"),
    "dclm": _read_dclm,
    "zyda": lambda dest: _read_parquet(dest, "zyda", "nemo_id"),
    "dolma_cc": _read_dolma,
}


def _all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------
# Determinism and layout.
# --------------------------------------------------------------------------

def test_deterministic(sample, tmp_path):
    dest, expected = sample
    again = make_sample(tmp_path / "again", docs=4000, seed=0)
    assert again == expected
    first, second = _all_files(dest), _all_files(tmp_path / "again")
    assert first.keys() == second.keys()
    for name in first:
        assert first[name] == second[name], name


def test_seed_changes_output(tmp_path):
    make_sample(tmp_path / "a", docs=200, seed=1)
    make_sample(tmp_path / "b", docs=200, seed=2)
    a, b = _all_files(tmp_path / "a"), _all_files(tmp_path / "b")
    assert a.keys() == b.keys()
    assert a[FILES["dclm"][0]] != b[FILES["dclm"][0]]


def test_layout(sample):
    dest, _ = sample
    files = set(_all_files(dest))
    models = {f"models/{m}.{ext}" for m in ("quality_standin", "dual_use_demo") for ext in ("bin", "json")}
    evals = {"evals/demo.jsonl", "evals/demo_truth.json"}
    want = {f for fs in FILES.values() for f in fs} | {"expected.json", "truth.json", "_SUCCESS"} | models | evals
    assert files == want
    assert (dest / "_SUCCESS").read_bytes() == b""
    assert is_complete(dest)


def test_partial_sample_is_replaced(tmp_path):
    dest = tmp_path / "corpus"
    stale = dest / "fwe" / "data" / "CC-MAIN-2024-10" / "stale.parquet"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half written")
    assert not is_complete(dest)
    make_sample(dest, docs=100, seed=0)
    assert not stale.exists()
    assert is_complete(dest)


def test_small_sample_still_has_everything(tmp_path):
    expected = make_sample(tmp_path / "c", docs=40, seed=3)
    assert set(expected) == set(FILES)
    truth = json.loads((tmp_path / "c" / "truth.json").read_text())
    assert {g["kind"] for g in truth["groups"]} == {"exact", "near"}


# --------------------------------------------------------------------------
# Schemas.
# --------------------------------------------------------------------------

def test_fwe_schema(sample):
    dest, _ = sample
    want = pa.schema([
        ("text", pa.string()), ("id", pa.string()), ("dump", pa.string()),
        ("url", pa.string()), ("date", pa.string()), ("file_path", pa.string()),
        ("language", pa.string()), ("language_score", pa.float64()),
        ("token_count", pa.int64()), ("score", pa.float64()), ("int_score", pa.int64()),
    ])
    for rel, dump in zip(FILES["fwe"], ("CC-MAIN-2024-10", "CC-MAIN-2024-18")):
        table = pq.read_table(dest / rel)
        assert table.schema.remove_metadata() == want
        rows = table.to_pylist()
        assert {r["dump"] for r in rows} == {dump}
        for r in rows[:50]:
            assert r["id"].startswith("<urn:uuid:") and r["id"].endswith(">")
            assert r["file_path"].startswith(f"s3://commoncrawl/crawl-data/{dump}/segments/")
            assert r["date"].endswith("Z") and r["date"][4] == "-"
            assert r["language"] == "en"
            assert 0 <= r["score"] <= 5
            assert r["int_score"] == min(5, max(0, round(r["score"])))
    assert pq.ParquetFile(dest / FILES["fwe"][1]).metadata.num_row_groups > 1


def test_zyda_schema(sample):
    dest, _ = sample
    want = pa.schema([(c, pa.string()) for c in
                      ("nemo_id", "text", "source", "filtering_features", "source_other")])
    for rel, comp in zip(FILES["zyda"], ("zyda_refinedweb", "zyda_c4-en")):
        table = pq.read_table(dest / rel)
        assert table.schema.remove_metadata() == want
        rows = table.to_pylist()
        assert {r["source"] for r in rows} == {comp}
        assert len({r["nemo_id"] for r in rows}) == len(rows)
        for r in rows[:50]:
            assert r["nemo_id"].startswith(comp + "-")
            assert isinstance(json.loads(r["filtering_features"]), dict)
            assert isinstance(json.loads(r["source_other"]), dict)


def test_dclm_records(sample):
    dest, _ = sample
    for i, rel in enumerate(FILES["dclm"]):
        lines = zstandard.ZstdDecompressor().decompress((dest / rel).read_bytes()).split(b"\n")[:-1]
        kinds = {}
        for lineno, line in enumerate(lines):
            obj, kind = _classify_json(line)
            if kind:
                kinds[kind] = lineno
                continue
            if obj["text"]:
                assert list(obj) == DCLM_KEYS
                assert set(obj["metadata"]) == {
                    "Content-Length", "Content-Type", "WARC-Date", "WARC-Record-ID",
                    "WARC-Target-URI", "WARC-Type"}
                assert obj["metadata"]["WARC-Target-URI"] == obj["url"]
                assert set(obj["language_id_whole_page_fasttext"]) == {"en"}
        if i == 0:
            assert set(kinds) == {"invalid_json", "invalid_utf8", "missing_text", "empty_text"}
            assert all(0 < n < len(lines) - 1 for n in kinds.values())
        else:
            assert kinds == {}


def test_dclm_bad_records_are_bad(sample):
    dest, _ = sample
    lines = zstandard.ZstdDecompressor().decompress(
        (dest / FILES["dclm"][0]).read_bytes()).split(b"\n")[:-1]
    undecodable = [ln for ln in lines if not _utf8_ok(ln)]
    assert len(undecodable) == 1
    decoded = [ln.decode() for ln in lines if _utf8_ok(ln)]
    parsed = []
    for s in decoded:
        try:
            parsed.append(json.loads(s))
        except json.JSONDecodeError:
            parsed.append(None)
    assert parsed.count(None) == 1
    objs = [o for o in parsed if o is not None]
    assert sum("text" not in o for o in objs) == 1
    assert sum(o.get("text") == "" for o in objs) == 1


def _utf8_ok(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_dolma_records_and_truncation(sample):
    dest, _ = sample
    for rel in FILES["dolma_cc"][:3]:
        with gzip.open(dest / rel, "rt", encoding="utf-8") as f:
            for line in f:
                obj = json.loads(line)
                assert list(obj) == ["id", "text", "source", "added", "created", "metadata"]
                assert obj["source"] == "common-crawl"
                assert set(obj["metadata"]) == {"url", "bucket", "perplexity", "language_score"}
                assert rel.split("/")[2] == f"cc_en_{obj['metadata']['bucket']}"
    complete = 0
    with pytest.raises(EOFError):
        with gzip.open(dest / FILES["dolma_cc"][3], "rb") as f:
            for line in f:
                complete += line.endswith(b"\n")
    assert complete > 0


# --------------------------------------------------------------------------
# expected.json against what is on disk.
# --------------------------------------------------------------------------

def test_expected_matches_readback(sample, readback):
    dest, expected = sample
    assert json.loads((dest / "expected.json").read_text()) == expected
    for src, (records, good, bad) in readback.items():
        exp = expected[src]
        assert exp["files"] == len(FILES[src])
        assert exp["records"] == records, src
        assert exp["good"] == len(good), src
        assert exp["bad"] == dict(bad), src


def test_split_and_mix(sample, readback, truth):
    _, expected = sample
    total = sum(e["good"] for e in expected.values())
    assert 3800 <= total <= 4100
    assert 0.25 < expected["fwe"]["good"] / total < 0.35
    assert 0.15 < expected["zyda"]["good"] / total < 0.25
    langs = Counter(lang for m in truth["languages"].values() for lang in m.values())
    junk = sum(len(v) for v in truth["junk"].values())
    non_en = sum(n for lang, n in langs.items() if lang not in ("en", "la", "zxx"))
    assert 0.05 < non_en / total < 0.12
    assert 0.07 < junk / total < 0.15
    assert len(truth["junk"]["fwe"]) < len(truth["junk"]["dolma_cc"])
    assert {"de", "fr", "es", "ru", "zh"} <= set(langs)


# --------------------------------------------------------------------------
# truth.json against the data.
# --------------------------------------------------------------------------

def _texts(readback):
    """{(source, reader id): text}."""
    return {(src, i): t for src, (_, good, _) in readback.items() for i, t in good.items()}


def test_truth_ids_exist(readback, truth):
    texts = _texts(readback)
    for g in truth["groups"]:
        for m in g["members"]:
            assert (m["source"], m["id"]) in texts, m
    for src, ids in truth["languages"].items():
        assert {(src, i) for i in ids} == {k for k in texts if k[0] == src}
    for src, ids in truth["junk"].items():
        assert all((src, i) in texts for i in ids)


def test_group_structure(readback, truth):
    texts = _texts(readback)
    kinds = Counter((g["kind"], g["scope"]) for g in truth["groups"])
    assert set(kinds) == {("exact", "within"), ("exact", "cross"),
                          ("near", "within"), ("near", "cross")}
    members = [m for g in truth["groups"] for m in g["members"]]
    assert 150 <= len(members) <= 250
    assert len({(m["source"], m["id"]) for m in members}) == len(members)
    combos = {frozenset(m["source"] for m in g["members"])
              for g in truth["groups"] if g["scope"] == "cross"}
    assert len(combos) >= 8
    for g in truth["groups"]:
        sources = {m["source"] for m in g["members"]}
        assert g["scope"] == ("within" if len(sources) == 1 else "cross")
        assert g["members"][0]["variant"] == "original"
        base = texts[(g["members"][0]["source"], g["members"][0]["id"])]
        for m in g["members"][1:]:
            t = texts[(m["source"], m["id"])]
            if g["kind"] == "exact":
                assert m["variant"] == "exact" and t == base
            else:
                assert m["variant"] in ("boilerplate", "linebreaks", "truncated", "edit", "loose")
                assert t != base
            assert m["jaccard_char25"] == pytest.approx(T.jaccard_char25(base, t), abs=1e-4)


def test_near_duplicates_are_near(truth):
    near = [m for g in truth["groups"] if g["kind"] == "near"
            for m in g["members"] if m["variant"] != "original"]
    strict = [m["jaccard_char25"] for m in near if m["variant"] != "loose"]
    loose = [m["jaccard_char25"] for m in near if m["variant"] == "loose"]
    assert sum(j >= 0.85 for j in strict) >= 0.9 * len(strict)
    assert loose and all(0.5 <= j <= 0.72 for j in loose)
    assert {m["variant"] for m in near} == {"boilerplate", "linebreaks", "truncated", "edit", "loose"}


def test_no_unplanned_exact_duplicates(readback, truth):
    texts = _texts(readback)
    planned = {(m["source"], m["id"]) for g in truth["groups"] if g["kind"] == "exact"
               for m in g["members"]}
    counts = Counter(t for k, t in texts.items() if k not in planned)
    assert counts.most_common(1)[0][1] == 1


# --------------------------------------------------------------------------
# Text quality: English articles should pass Gopher/C4-style heuristics.
# --------------------------------------------------------------------------

STOP = {"the", "be", "to", "of", "and", "that", "have", "with"}


def test_english_articles_look_like_prose():
    rng = random.Random(0)
    for _ in range(100):
        doc = T.english_article(rng)
        words = doc.split()
        assert 150 <= len(words) <= 1000
        assert 3 <= sum(map(len, words)) / len(words) <= 10
        assert sum(w.lower() in STOP for w in words) >= 10
        paragraphs = [p for p in doc.split("\n") if p.strip()][1:]  # skip title
        assert len(paragraphs) >= 3
        assert all(p.rstrip().endswith((".", "?", "!", '"')) for p in paragraphs)


def test_unrelated_articles_share_few_ngrams():
    rng = random.Random(1)
    docs = [T.english_article(rng) for _ in range(20)]
    sims = [T.jaccard_char25(a, b) for i, a in enumerate(docs) for b in docs[i + 1:]]
    assert max(sims) < 0.05


def test_generators_cover_all_kinds():
    rng = random.Random(2)
    for lang in T.FOREIGN_LANGS:
        assert len(T.foreign_page(rng, lang)) > 100
    for kind in T.JUNK_KINDS:
        text, got = T.junk_page(rng, kind)
        assert got == kind and text.strip()
    assert "All rights reserved" in T.footer(rng)
    assert "Share on" in T.share_line(rng)
    assert "cookies" in T.cookie_banner(rng)
