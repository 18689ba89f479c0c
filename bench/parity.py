"""Shared machinery for measuring our Gopher / FineWeb recipes against datatrove's filters (docs/parity.md).

Used by `bench/eval_parity.py` (every corpus, in full) and `tests/signals/test_parity_datatrove.py` (the same
corpora, some capped). Needs datatrove (with spaCy) for datatrove's side; nothing here needs pytest.

- ours: the recipe's SQL evaluated by DuckDB over the text and the columns the signals stage stores (the
  RedPajama-V2 signals of `compute_signals` and the `dt_words` struct of `datatrove_word_stats`) exactly as
  the filter stage does it (`reason_sql`: the first failed rule, NULL failing);
- datatrove: its filter's `.filter(Document)` with default arguments (spaCy's blank English tokenizer),
  run in fresh interpreters so that the spaCy cost spreads over the cores.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zlib
from collections import Counter, defaultdict
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from curate.recipes import load_recipe
from curate.signals import compute_signals
from curate.signals.dtwords import COLUMN as DT_WORDS
from curate.signals.dtwords import datatrove_word_stats, datatrove_words

try:
    from curate.stages.filter import reason_sql
except ImportError:  # the stage layer is being rewritten; the filter stage re-exports this one
    from curate.sql import reason_sql

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
RECIPES = ("gopher_quality", "gopher_repetition", "fineweb")
# Disagreement classes a run can still explain (docs/parity.md): `words`, our tokenizer (curate.signals.dtwords)
# giving other words than spaCy's for the document, datatrove's own filter reaching our decision on our words.
# The classes of the earlier, approximate recipes (`dupe_guard`, `dupe_repeat`, `top_ngram_tie`, and `words` for
# the RE2 word split) are closed: docs/parity.md tells what they were.
CLASSES = ("words",)
DUPE_THRESHOLDS = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
TOP_THRESHOLDS = {2: 0.20, 3: 0.18, 4: 0.16}

# datatrove's removal reasons, per rule of ours (the rules are in datatrove's order)
REASONS = {
    "gopher_quality.word_count": {"gopher_short_doc", "gopher_long_doc"},
    "gopher_quality.mean_word_length": {"gopher_below_avg_threshold", "gopher_above_avg_threshold"},
    "gopher_quality.symbol_to_word_ratio": {"gopher_too_many_hashes", "gopher_too_many_ellipsis"},
    "gopher_quality.bullet_lines": {"gopher_too_many_bullets"},
    "gopher_quality.ellipsis_lines": {"gopher_too_many_end_ellipsis"},
    "gopher_quality.alphabetic_words": {"gopher_below_alpha_threshold"},
    "gopher_quality.stop_words": {"gopher_enough_stop_words"},
    "gopher_repetition.nonempty": {"empty"},
    "gopher_repetition.duplicate_paragraphs": {"dup_para_frac"},
    "gopher_repetition.duplicate_paragraph_chars": {"dup_para_char_frac"},
    "gopher_repetition.duplicate_lines": {"dup_line_frac"},
    "gopher_repetition.duplicate_line_chars": {"dup_line_char_frac"},
    **{f"gopher_repetition.top_{n}gram": {f"top_{n}_gram"} for n in TOP_THRESHOLDS},
    **{f"gopher_repetition.dupe_{n}grams": {f"duplicated_{n}_n_grams"} for n in DUPE_THRESHOLDS},
    "fineweb.line_punctuation": {"line_punct_ratio", "empty"},
    "fineweb.short_lines": {"short_line_ratio"},
    "fineweb.duplicate_line_chars": {"char_dup_ratio"},
    "fineweb.newline_ratio": {"list_ratio"},
}

# Runs datatrove's three filters over a JSON list of [id, text]; writes one [reason|null x 3] per document.
_WORKER = r"""
import json, sys
from datatrove.data import Document
from datatrove.pipeline.filters import FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter
filters = [GopherQualityFilter(), GopherRepetitionFilter(), FineWebQualityFilter()]
def reason(r):
    return None if r is True else (r[1] if isinstance(r, tuple) else "removed")
with open(sys.argv[1], encoding="utf-8") as f:
    docs = json.load(f)
out = [[reason(f.filter(Document(text=text, id=doc_id))) for f in filters] for doc_id, text in docs]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(out, f)
"""


# --- the real documents -------------------------------------------------------------------------------

def _read(path: Path) -> bytes:
    """A file's bytes, gunzipped / unzstd'ed by its magic number (not its name)."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except EOFError:  # a truncated file (curate's sample plants one): what it holds
            return zlib.decompressobj(wbits=47).decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    if data[:3] == b"BZh":
        return bz2.decompress(data)
    return data


def _jsonl(paths, field: str = "text", id_field: str | None = None) -> list[tuple[str, str]]:
    """Non-blank texts of JSON lines (undecodable lines skipped); id: the record's `id_field`, else `<file>:<line>`."""
    out = []
    for path in paths:
        path = Path(path)
        for i, line in enumerate(_read(path).split(b"\n")):
            try:
                rec = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                continue
            text = rec.get(field) if isinstance(rec, dict) else None
            if isinstance(text, str) and text.strip():
                doc_id = rec.get(id_field) if id_field else None
                out.append((str(doc_id) if doc_id is not None else f"{path.name.split('.json')[0]}:{i}", text))
    return out


def _glob(base: Path, pattern: str) -> list[Path]:
    return sorted(base.glob(pattern))


def _lines(path: Path, split_id: bool = False) -> list[tuple[str, str]]:
    """One document per line (`<id> <text>` when split_id), blank lines left out; a line that is not UTF-8 is
    read as Latin-1."""
    if not path.is_file():
        return []
    out = []
    for i, raw in enumerate(path.read_bytes().split(b"\n")):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:  # lee.cor has a Latin-1 pound sign
            line = raw.decode("latin-1")
        if split_id:
            doc_id, _, line = line.partition(" ")
            doc_id = f"{path.name}:{doc_id}"
        else:
            doc_id = f"{path.name}:{i}"
        if line.strip():
            out.append((doc_id, line))
    return out


def _wiki_pages(path: Path) -> list[tuple[str, str]]:
    """(title, wikitext) of every page of a MediaWiki XML export (the latest revision's text)."""
    if not path.is_file():
        return []
    out = []
    for _, elem in ET.iterparse(io.BytesIO(_read(path))):
        if elem.tag.rsplit("}", 1)[-1] != "page":
            continue
        title = text = None
        for child in elem.iter():
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "title":
                title = child.text
            elif tag == "text":
                text = child.text
        if text and text.strip():
            out.append((f"wiki:{title}", text))
        elem.clear()
    return out


def _wet(path: Path) -> list[tuple[str, str]]:
    """The plain-text bodies of a WET file's `conversion` records."""
    if not path.is_file():
        return []
    out = []
    for record in _read(path).decode("utf-8", errors="replace").split("WARC/1.0\r\n")[1:]:
        head, _, body = record.partition("\r\n\r\n")
        if "WARC-Type: conversion" in head:
            uri = re.search(r"WARC-Target-URI: (\S+)", head)
            if body.strip():
                out.append((uri.group(1) if uri else f"{path.name}:{len(out)}", body.rstrip("\r\n")))
    return out


def _sample(folder: Path) -> list[tuple[str, str]]:
    """curate's own sample corpus (`curate.sample.make_sample`): parquet read with pyarrow, JSON lines as above."""
    import pyarrow.parquet as pq

    out = []
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".parquet":
            texts = pq.read_table(path, columns=["text"])["text"].to_pylist()
            out += [(f"{path.parent.name}:{i}", t) for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        elif ".json" in path.name and path.is_file():
            out += [(f"{path.name.split('.json')[0]}/{i}", t) for i, t in _jsonl([path], id_field="id")]
    return out


# corpus -> (what it is, how to read it); every folder of ../shared/data with document text, each sample apart
CORPORA: dict[str, tuple[str, object]] = {
    "dolma_cc": ("dolma/formats: Common Crawl WET, July 2019, ~20% non-English (the .jsonl.zst twin is the same file)",
                 lambda d: _jsonl(_glob(d, "dolma/formats/*.jsonl.gz"), id_field="id")),
    "dolma_ccnet": ("dolma/multiple_files: CCNet head-bucket English pages",
                    lambda d: _jsonl(_glob(d, "dolma/multiple_files/*.jsonl"), id_field="id")),
    "dolma_provided": ("dolma/provided/documents: Common Crawl pages with attribute files",
                       lambda d: _jsonl(_glob(d, "dolma/provided/documents/*.json.gz"), id_field="id")),
    "dclm_judged": ("dclm/data: human-judged web pages (majority_data; agreement_data is a subset of it)",
                    lambda d: _jsonl(_glob(d, "dclm/data/majority_data.jsonl"))),
    "hplt_cc": ("hplt-warc2text-sample100/CC.zst: Common Crawl, 48% English, boilerplate",
                lambda d: _jsonl(_glob(d, "hplt-warc2text-sample100/CC.zst"), field="t")),
    "hplt_wide": ("hplt-warc2text-sample100/wide.zst: Internet Archive wide crawl, multilingual",
                  lambda d: _jsonl(_glob(d, "hplt-warc2text-sample100/wide.zst"), field="t")),
    "c4": ("olmo_test_fixtures: C4 samples", lambda d: _jsonl(_glob(d, "olmo_test_fixtures/c4-sample.*.json.gz"))),
    "guardian": ("olmo_test_fixtures: Guardian articles (C4 100 domains)",
                 lambda d: _jsonl(_glob(d, "olmo_test_fixtures/c4_100_domains_*.jsonl.gz"))),
    "fineweb_domain": ("fineweb-domain-analyzer: June 2024 CC records, spam, mojibake, HTML entities",
                       lambda d: _jsonl(_glob(d, "fineweb-domain-analyzer/*.jsonl"))),
    "dj_cc": ("data-juicer: RedPajama-V1 cc-2023-06", lambda d: _jsonl(_glob(d, "data-juicer/redpajama-cc-*.jsonl"))),
    "dj_c4": ("data-juicer: RedPajama-V1 c4", lambda d: _jsonl(_glob(d, "data-juicer/redpajama-c4-*.jsonl"))),
    "dj_stackexchange": ("data-juicer: RedPajama-V1 StackExchange (Pile)",
                         lambda d: _jsonl(_glob(d, "data-juicer/redpajama-pile-stackexchange-*.jsonl"))),
    "lee_background": ("gensim_test_data/lee_background.cor: ABC news articles, one per line",
                       lambda d: _lines(d / "gensim_test_data" / "lee_background.cor")),
    "lee": ("gensim_test_data/lee.cor: ABC news articles, one per line", lambda d: _lines(d / "gensim_test_data" / "lee.cor")),
    "enwiki": ("gensim_test_data: shortened English Wikipedia XML dump, page wikitext (markup, templates)",
               lambda d: _wiki_pages(next(iter(_glob(d, "gensim_test_data/enwiki-*.bz2")), Path("/nonexistent")))),
    "minhash_articles": ("minhash_plagiarism/articles_2500.train: news articles, planted near-duplicates "
                         "(the 100 and 1000 files are subsets of it)",
                         lambda d: _lines(d / "minhash_plagiarism" / "articles_2500.train", split_id=True)),
    "whirlwind_wet": ("cc-whirlwind: the WET record of one Common Crawl page",
                      lambda d: _wet(d / "cc-whirlwind" / "whirlwind.warc.wet.gz")),
}

# not measured: raw HTML / WARC only (the filters take extracted text)
SKIPPED = {
    "dolma/warc": "WARC responses (raw HTML); the filters run on extracted text",
    "dclm/enricher_test_files": "HTML pages only",
    "cc-whirlwind (WARC, WAT)": "raw HTML and metadata; its WET record is measured (whirlwind_wet)",
}


def real_corpora(shared: Path = SHARED_DATA, names=None, caps: dict[str, int] | None = None) -> dict[str, list[tuple[str, str]]]:
    """corpus -> [(id, text)] for the corpora present (blank texts left out, as ingest does).
    `caps`: corpus -> keep every k-th document so that at most this many remain (spread over the corpus)."""
    out = {}
    for name, (_, read) in CORPORA.items():
        if names is not None and name not in names:
            continue
        docs = read(shared) if shared.is_dir() else []
        cap = (caps or {}).get(name)
        if cap and len(docs) > cap:
            step = -(-len(docs) // cap)
            docs = docs[::step]
        if docs:
            out[name] = docs
    return out


def sample_corpus(folder: Path, docs: int = 2000, seed: int = 0) -> list[tuple[str, str]]:
    """curate's own sample corpus, written under `folder` by `make_sample` and read back."""
    from curate.sample import make_sample

    make_sample(str(folder), docs=docs, seed=seed)
    return _sample(Path(folder))


# --- both sides ---------------------------------------------------------------------------------------

@contextmanager
def _no_filters_env():
    saved = os.environ.pop("CURATE_FILTERS", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["CURATE_FILTERS"] = saved


def our_recipes(filters: Path | None = None) -> dict:
    """Our recipes from this checkout's filters/ (or from the folder `filters`), whatever CURATE_FILTERS says."""
    with _no_filters_env():
        if filters is not None:
            os.environ["CURATE_FILTERS"] = str(filters)
        try:
            return {name: load_recipe(name, str(ROOT / "pipelines" / "parity.yaml"), "parity") for name in RECIPES}
        finally:
            os.environ.pop("CURATE_FILTERS", None)


def signal_table(texts: list[str]) -> pa.Table:
    """`row`, `text` and what the signals stage stores for them: the RPv2 signals and `dt_words`."""
    array = pa.array(texts, pa.large_string())
    signals = compute_signals(array)
    signals = signals.append_column(DT_WORDS, datatrove_word_stats(array))
    return pa.table({"row": pa.array(range(len(texts)), pa.int64()), "text": array,
                     **{name: signals.column(name) for name in signals.column_names}})


def our_reasons(texts: list[str], filters: Path | None = None) -> tuple[dict[str, list[str | None]], pa.Table]:
    """recipe -> first failed rule per text (None: kept), and the signals (with the `dt_words` column the signals
    stage adds for these recipes)."""
    table = signal_table(texts)
    con = duckdb.connect()
    con.register("docs", table)
    out = {}
    for name, rules in our_recipes(filters).items():
        rows = con.sql(f"SELECT row, {reason_sql(rules)} AS reason FROM docs").fetchall()
        reasons: list[str | None] = [None] * len(texts)
        for row, reason in rows:
            reasons[row] = reason
        out[name] = reasons
    con.close()
    return out, table


def start_datatrove(docs: list[tuple[str, str]], folder: Path, workers: int) -> list:
    """datatrove's filters in `workers` fresh interpreters (spaCy's tokenizer is the cost), started now."""
    chunks: list[list] = [[] for _ in range(workers)]
    sizes = [0] * workers
    for k in sorted(range(len(docs)), key=lambda k: -len(docs[k][1])):  # balance characters
        w = sizes.index(min(sizes))
        chunks[w].append(k)
        sizes[w] += len(docs[k][1])
    jobs = []
    for w, rows in enumerate(chunks):
        src, dst = Path(folder) / f"in{w}.json", Path(folder) / f"out{w}.json"
        src.write_text(json.dumps([docs[k] for k in rows]), encoding="utf-8")
        proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(src), str(dst)], stderr=subprocess.PIPE)
        jobs.append((proc, rows, dst))
    return jobs


def finish_datatrove(jobs: list, n: int) -> dict[str, list[str | None]]:
    out: dict[str, list] = {name: [None] * n for name in RECIPES}
    for proc, rows, dst in jobs:
        _, err = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError("datatrove worker failed:\n" + err.decode(errors="replace")[-2000:])
        for k, reasons in zip(rows, json.loads(dst.read_text(encoding="utf-8"))):
            for name, reason in zip(RECIPES, reasons):
                out[name][k] = reason
    return out


# --- classifying a disagreement -----------------------------------------------------------------------

def our_words(texts: list[str]) -> list[list[str]]:
    """The words our recipes' statistics come from (curate.signals.dtwords: spaCy's tokenizer, re-implemented)."""
    return [datatrove_words(t) for t in texts]


def datatrove_with_words(recipe: str, text: str, words: list[str]) -> str | None:
    """datatrove's own filter, splitting words as our recipes do."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import fineweb_quality_filter as fw
    from datatrove.pipeline.filters import gopher_quality_filter as gq
    from datatrove.pipeline.filters import gopher_repetition_filter as gr

    module, cls = {"gopher_quality": (gq, gq.GopherQualityFilter), "gopher_repetition": (gr, gr.GopherRepetitionFilter),
                   "fineweb": (fw, fw.FineWebQualityFilter)}[recipe]
    saved = module.split_into_words
    module.split_into_words = lambda _text, language=None: list(words)
    try:
        result = cls().filter(Document(text=text, id="x"))
    finally:
        module.split_into_words = saved
    return None if result is True else (result[1] if isinstance(result, tuple) else "removed")


def classify(recipe: str, text: str, ours: str | None, words: list[str]) -> str:
    """The class of one disagreement (CLASSES), or "unexplained". `words`: our words for the text."""
    from datatrove.utils.text import split_into_words

    if words != split_into_words(text) and (datatrove_with_words(recipe, text, words) is None) == (ours is None):
        return "words"
    return "unexplained"


# --- one run ------------------------------------------------------------------------------------------

def run_parity(corpora: dict[str, list[tuple[str, str]]], scratch: Path, workers: int | None = None,
               filters: Path | None = None) -> dict:
    """Both sides over every document of `corpora`, and each disagreement classified. `filters`: take the
    recipes from that folder (e.g. an older version of them) instead of this checkout's filters/."""
    started = time.monotonic()
    docs = [(f"{ds}/{doc_id}", text) for ds, items in corpora.items() for doc_id, text in items]
    texts = [t for _, t in docs]
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    jobs = start_datatrove(docs, scratch, workers=workers)
    ours, _ = our_reasons(texts, filters)  # meanwhile
    theirs = finish_datatrove(jobs, len(docs))
    rows = sorted({k for name in RECIPES for k in range(len(docs)) if (ours[name][k] is None) != (theirs[name][k] is None)})
    words = dict(zip(rows, our_words([texts[k] for k in rows])))
    disagreements = []
    for name in RECIPES:
        for k in range(len(docs)):
            if (ours[name][k] is None) != (theirs[name][k] is None):
                cls = classify(name, texts[k], ours[name][k], words[k])
                disagreements.append((name, *docs[k][0].split("/", 1), ours[name][k], theirs[name][k], cls))
    return {"datasets": corpora, "docs": docs, "ours": ours, "theirs": theirs,
            "disagreements": disagreements, "seconds": time.monotonic() - started}


def agreement_table(parity) -> dict[tuple[str, str], tuple[int, int]]:
    """(recipe, dataset or 'all') -> (agreeing documents, documents)."""
    out: dict = defaultdict(lambda: [0, 0])
    for name in RECIPES:
        for k, (doc_id, _) in enumerate(parity["docs"]):
            same = (parity["ours"][name][k] is None) == (parity["theirs"][name][k] is None)
            for key in ((name, doc_id.split("/", 1)[0]), (name, "all")):
                out[key][0] += same
                out[key][1] += 1
    return {k: tuple(v) for k, v in out.items()}


def first_reason_table(parity) -> dict[str, tuple[int, int]]:
    """recipe -> (documents both remove where our first failed rule is datatrove's reason, documents both remove)."""
    out = {}
    for name in RECIPES:
        pairs = [(o, t) for o, t in zip(parity["ours"][name], parity["theirs"][name]) if o is not None and t is not None]
        out[name] = (sum(t in REASONS[o] for o, t in pairs), len(pairs))
    return out


def report(parity) -> str:
    """The corpus x recipe agreement table (one row per corpus), then the disagreements by class."""
    table = agreement_table(parity)
    datasets = [*parity["datasets"], "all"]
    width = max(len(d) for d in datasets) + 2
    lines = ["corpus".ljust(width) + "docs".rjust(6) + "".join(name.rjust(22) for name in RECIPES)]
    for d in datasets:
        total = table[RECIPES[0], d][1]
        cells = "".join(f"{table[name, d][0]}/{table[name, d][1]} ({table[name, d][0] / table[name, d][1]:.3f})".rjust(22)
                        for name in RECIPES)
        lines.append(d.ljust(width) + str(total).rjust(6) + cells)
    lows = {name: min(table[name, d][0] / table[name, d][1] for d in parity["datasets"]) for name in RECIPES}
    lines.append("lowest per corpus: " + ", ".join(f"{name} {v:.3f}" for name, v in lows.items()))
    firsts = first_reason_table(parity)
    lines.append("first failed rule = datatrove's reason, where both remove: "
                 + ", ".join(f"{name} {a}/{b}" for name, (a, b) in firsts.items()))
    by_class = Counter((name, cls) for name, *_, cls in parity["disagreements"])
    lines.append("disagreements by class: " + (", ".join(f"{name} {cls} {n}" for (name, cls), n in sorted(by_class.items())) or "none"))
    lines.append(f"{len(parity['docs'])} documents in {parity['seconds']:.1f}s")
    return "\n".join(lines)


# --- cost ---------------------------------------------------------------------------------------------

def _cpu_best(fn, repeat: int = 3) -> float:
    """Best process CPU seconds of `repeat` runs after a warm-up (CPU time: the machine may be shared)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def cost(texts: list[str], filters: Path | None = None, repeat: int = 3) -> dict[str, float]:
    """Documents per CPU second of each part, on one core: compute_signals, datatrove_word_stats, and the
    filter stage's query (rules in one CASE behind its OFFSET 0 fence) per recipe and for the three at once,
    over a table holding text, RPv2 signals and dt_words."""
    array = pa.array(texts, pa.large_string())
    out = {"compute_signals": len(texts) / _cpu_best(lambda: compute_signals(array), repeat),
           "datatrove_word_stats": len(texts) / _cpu_best(lambda: datatrove_word_stats(array), repeat)}
    table = signal_table(texts)
    table = table.rename_columns(["id", *table.column_names[1:]])
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.register("docs", table)
    recipes = our_recipes(filters)
    groups = {**recipes, "all three": [r for rs in recipes.values() for r in rs]}
    for name, rules in groups.items():
        sql = (f"SELECT id, reason FROM (SELECT id, {reason_sql(rules)} AS reason FROM docs OFFSET 0) "
               "WHERE reason IS NOT NULL ORDER BY id")
        out[f"filter: {name}"] = len(texts) / _cpu_best(lambda sql=sql: con.sql(sql).fetchall(), repeat)
    con.close()
    return out
