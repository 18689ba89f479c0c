"""Benchmark: the dual-use blocklist (curate.dualuse.Blocklist) against the obvious alternatives.

All methods see the same documents in one run, single-threaded (so MB/s is per core):

- ours: ``Blocklist.count(texts, stop_at=2)`` (what the stage needs: escalate or not),
  ``count`` without a stop, and ``scan`` (the distinct terms of every document);
- pyahocorasick (if installed), exact: one ``Automaton.iter`` per case-folded document
  with the same early stop, and one ``iter`` per batch over the joined case-folded
  documents with numpy ``searchsorted`` mapping matches back (no early stop);
- ``re``: one compiled alternation of the escaped terms, ``re.IGNORECASE``, distinct
  matches per document with the same early stop. Not exact: ``finditer`` never reports
  overlapping terms, and IGNORECASE is not casefold (``ß`` is not ``ss``); the table
  says how often its escalation decision differs;
- Python: ``folded = text.casefold(); sum(t in folded for t in terms)``, the definition (each
  document folded once: folding it again for every term, as the one-liner
  ``sum(t in text.casefold() for t in terms)`` does, is ~60x slower at 10,000 terms).

Each runs with 100 and with 10,000 English-like terms; ours also with 10,000 terms whose
words come from every script in the corpus (a large alphabet: the worst case for the
automaton's table). The slow ones are timed on the first
documents only, up to ``--budget`` CPU seconds each, and reported per MB. Speeds are MB
(UTF-8) per CPU second of this single-threaded process, i.e. per core, which a shared box
disturbs less than wall time (printed beside it). Ours is
checked against the Python definition on the documents that one was timed on.

Terms are made from the corpus so that they look like a real list (multi-word, sharing
prefixes with the text's words): the demonstration beekeeping terms, some real word
bigrams/trigrams that occur in 0.3%-3% of documents (so that some documents escalate),
and the rest random bigrams/trigrams of corpus words (frequent words more likely).

Documents: ``../shared/data/dolma/formats/*.jsonl.gz`` (real Common Crawl pages) when
present, else the ``curate.sample`` corpus (``make_sample(dir, docs=2000, seed=0)``,
its parquet ``text`` columns), or pick with ``--corpus``. Ours runs on them cycled to
``--mb`` megabytes so that its timing is stable.

``stage_cost`` prints the whole stage's cost per document: the blocklist on every
document plus a classifier on the escalated ones (a fastText model trained here on
the blocklist's own labels, measured; at the measured and at an 8% escalation rate).

``stage_run`` runs the real ``dual_use`` stage (``curate run --inline``: scan phase,
classifier phase on the escalated documents, decisions) on the first ``--stage-docs``
documents (200 of the Dolma sample: 8% escalate with the 10,000-term list), once with
a fastText classifier and once with a BERT-base-size transformer (random weights,
``windows: max`` over 512-token windows, fp32, one torch thread) through curate's model
runner, and prints blocklist, classifier and total cost per document, in CPU time of
this process (the stage runs inline, in it) and wall time.

Usage: python bench/bench_dual_use.py [--corpus auto|dolma|sample] [--mb 40] [--budget 4] [--stage-docs 200]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

os.environ.setdefault("RAY_ENABLE_AUTO_CONNECT", "0")  # inline runs must not start Ray (see bench_classify.py)
ROOT = Path(__file__).resolve().parents[1]
from inputs import DOLMA, dolma_texts, sample_texts  # noqa: E402  (bench/inputs.py)
WORD = re.compile(r"[^\W\d_]+")
ENGLISH = re.compile(r"[a-z]+")


# ---------------------------------------------------------------- inputs

def load_texts(which: str) -> tuple[list[str], str]:
    texts = dolma_texts() if which in ("dolma", "auto") else []
    if texts or which == "dolma":
        return texts, f"dolma CC sample ({len(list(DOLMA.glob('*.jsonl.gz')))} files, real web pages, ~20% non-English)"
    return sample_texts(docs=2000), "curate.sample corpus (docs=2000, seed=0), parquet text columns"


def make_terms(texts: list[str], n: int, demo: list[str], seed: int = 0, scripts: str = "latin") -> list[str]:
    """``n`` terms: ``demo``, about sqrt(n)/2 real corpus n-grams, the rest random n-grams of
    corpus words (``scripts="latin"``: words of a-z only, like an English list; ``"all"``: any
    script's words, a list with a large alphabet)."""
    rng = random.Random(seed)
    keep = (lambda w: ENGLISH.fullmatch(w) is not None) if scripts == "latin" else (lambda w: True)
    docs = [WORD.findall(t.casefold()) for t in texts]
    freq = Counter(w for d in docs for w in d if len(w) >= 3 and keep(w))
    words = sorted(freq)
    weights = [freq[w] ** 0.5 for w in words]
    df = Counter()
    for d in docs:
        df.update({" ".join(d[i:i + k]) for k in (2, 3) for i in range(len(d) - k + 1)})
    lo, hi = 0.003 * len(docs), 0.03 * len(docs)
    real = sorted(g for g, c in df.items() if lo <= c <= hi and all(len(w) >= 3 and keep(w) for w in g.split()))
    terms = dict.fromkeys(demo)
    for g in rng.sample(real, min(len(real), max(4, round(n ** 0.5 / 2)))):
        terms[g] = None
    while len(terms) < n:
        terms[" ".join(rng.choices(words, weights, k=rng.choice((2, 2, 3))))] = None
    return list(terms)[:n]


# ---------------------------------------------------------------- the alternatives (single-threaded)

def python_loop(terms, texts, stop=None):
    """The definition, written as one would: fold each document once, then test every term."""
    out = np.zeros(len(texts), dtype=np.int32)
    for i, x in enumerate(texts):
        if x:
            folded = x.casefold()
            out[i] = sum(t in folded for t in terms)
    return out


def make_regex(terms):
    pattern = re.compile("|".join(map(re.escape, sorted(terms, key=len, reverse=True))), re.IGNORECASE)

    def run(texts, stop=2):
        out = np.zeros(len(texts), dtype=np.int32)
        for i, x in enumerate(texts):
            seen = set()
            for m in pattern.finditer(x or ""):
                seen.add(m.group().casefold())
                if len(seen) >= stop:
                    break
            out[i] = len(seen)
        return out
    return run


def make_pyahocorasick(terms):
    try:
        import ahocorasick
    except ImportError:
        return None, None
    auto = ahocorasick.Automaton()
    for i, t in enumerate(terms):
        auto.add_word(t, i)
    auto.make_automaton()

    def per_doc(texts, stop=2):
        out = np.zeros(len(texts), dtype=np.int32)
        for i, x in enumerate(texts):
            if not x:
                continue
            seen = set()
            for _, tid in auto.iter(x.casefold()):
                seen.add(tid)
                if len(seen) >= stop:
                    break
            out[i] = len(seen)
        return out

    lengths = np.array([len(t) for t in terms], dtype=np.int64)

    def batch(texts, stop=None):
        folded = [x.casefold() if x else "" for x in texts]
        starts = np.zeros(len(folded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, folded), np.int64, len(folded)), out=starts[1:])
        hits = np.fromiter(itertools.chain.from_iterable(auto.iter("".join(folded))), dtype=np.int64)
        end, tid = hits[0::2], hits[1::2]
        doc = np.searchsorted(starts, end, side="right") - 1
        keep = end - lengths[tid] + 1 >= starts[doc]  # drop matches that straddle two documents
        pairs = np.unique(doc[keep] * len(terms) + tid[keep])
        return np.bincount(pairs // len(terms), minlength=len(texts)).astype(np.int32)
    return per_doc, batch


# ---------------------------------------------------------------- timing

def mb_of(texts) -> float:
    return sum(len(x.encode("utf-8")) for x in texts if x) / 1e6


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def time_prefix(fn, texts, budget: float, chunk: int = 8):
    """Run fn on the first documents, chunk by chunk, until ``budget`` CPU seconds:
    (cpu seconds, wall seconds, docs, result)."""
    done, cpu, wall, parts = 0, 0.0, 0.0, []
    while done < len(texts) and cpu < budget:
        part = texts[done:done + chunk]
        w0, c0 = clocks()
        parts.append(fn(part))
        w1, c1 = clocks()
        cpu, wall, done = cpu + c1 - c0, wall + w1 - w0, done + len(part)
        chunk = min(chunk * 2, 512)
    return cpu, wall, done, np.concatenate(parts)


def best_of(fn, repeat: int) -> tuple[float, float]:
    """Least CPU and least wall seconds of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        w0, c0 = clocks()
        fn()
        w1, c1 = clocks()
        cpu.append(c1 - c0)
        wall.append(w1 - w0)
    return min(cpu), min(wall)


# ---------------------------------------------------------------- the whole stage

def classifiers(texts: list[str], labels: np.ndarray):
    """[(name, classify(list[str]) -> scores)] for the stage cost: a fastText model trained here
    on the blocklist's own labels (a stand-in with the real model's cost). Add a BERT here."""
    out = []
    try:
        import fasttext
    except ImportError:
        return out
    fasttext.FastText.eprint = lambda *a, **k: None
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for x, y in zip(texts, labels):
            f.write(f"__label__{int(y)} {' '.join(x.split())}\n")
    model = None
    for seed_try in range(3):  # tiny sets can trip fastText's NaN guard: retry
        try:
            model = fasttext.train_supervised(f.name, epoch=5, lr=0.5, wordNgrams=2, dim=32, thread=1,
                                              seed=seed_try, verbose=0)
            break
        except RuntimeError:
            continue
    Path(f.name).unlink()
    if model is not None:
        predict = model.f.predict

        def classify(batch):
            return [predict(" ".join(x.split()) + "\n", 1, 0.0, "replace") for x in batch]
        out.append(("fastText (dim 32, bigrams)", classify))
    return out


def stage_cost(bl, texts: list[str], escalate_at: int = 2, rate: float = 0.08) -> None:
    """Per document: the blocklist on every document + a classifier on the escalated ones."""
    arr = pa.array(texts)
    esc = bl.escalate(arr, escalate_at)
    t_block = best_of(lambda: bl.escalate(arr, escalate_at), 3)[0] / len(texts)
    print(f"\nwhole stage, per document ({len(texts)} docs, {esc.mean():.1%} escalated by "
          f"{len(bl)} terms; blocklist {t_block * 1e6:.1f} us/doc):")
    escalated = [x for x, e in zip(texts, esc) if e] or texts[:64]
    for name, classify in classifiers(texts, esc):
        per = best_of(lambda f=classify: f(escalated), 2)[0] / len(escalated)
        for label, r in (("measured", esc.mean()), ("at 8%", rate)):
            total = t_block + r * per
            print(f"  {name:28s} {label:9s} {r:6.1%}: {total * 1e6:8.1f} us/doc  "
                  f"({1 / total:9.0f} docs/s; classifier {per * 1e6:.0f} us per escalated doc, "
                  f"blocklist share {t_block / total:.0%})")


# ---------------------------------------------------------------- the real stage, `curate run --inline`

STAGE = """name: dual
sources:
  cc: {{format: dolma, paths: '{docs}'}}
stages:
  ingest: {{}}
  dual_use:
    terms: '{terms}'
    escalate_at: 2
    model: {model}
    threshold: 0.5
"""


def stage_run(bl, texts: list[str], n_docs: int, big_docs: int, workdir: Path, bert: bool = True) -> None:
    """The dual_use stage through `curate run --inline`: with a fastText classifier on the corpus cycled to
    ``big_docs`` documents and on its first ``n_docs``, and with a BERT-base-size classifier on the first
    ``n_docs``; per-document costs from timers around the stage's own phase methods (one task each)."""
    import curate.dualuse.blocklist as blocklist_module
    from bench_classify import Stopwatch, make_bert
    from curate.cli import main as curate_main
    from curate.models.hf import quiet
    from curate.models.train import train_fasttext
    from curate.stages.dual_use import DualUseStage

    def corpus(name: str, docs: list[str]) -> Path:
        path = workdir / name / "docs.jsonl.gz"
        path.parent.mkdir()
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for i, x in enumerate(docs):
                f.write(json.dumps({"id": f"doc{i:06d}", "text": x}) + "\n")
        return path

    small = corpus("small", texts[:n_docs])
    big = corpus("big", [texts[i % len(texts)] for i in range(big_docs)])
    terms = workdir / "terms.txt"
    terms.write_text("\n".join(bl.terms) + "\n", encoding="utf-8")
    esc = bl.escalate(pa.array(texts))
    t0 = time.perf_counter()
    ft = workdir / "dual_use_ft.bin"
    train_fasttext([x for x, e in zip(texts, esc) if e], [x for x, e in zip(texts, esc) if not e and x], ft,
                   labels=("flag", "ok"), dim=32, epoch=5, lr=0.5)
    fasttext_model = f"{{kind: fasttext, path: '{ft}', label: flag}}"
    runs = [("fastText (dim 32, bigrams)", big, fasttext_model), ("fastText (dim 32, bigrams)", small, fasttext_model)]
    if bert:
        with quiet():
            make_bert(texts, workdir / "bert", labels=["flag", "ok"])
        runs.append(("BERT-base, 512-token windows: max", small,
                     f"{{kind: hf, path: '{workdir / 'bert'}', max_tokens: 512, windows: max, label: flag}}"))
    print(f"\nthe dual_use stage, `curate run --inline` ({len(bl):,} terms, escalate_at 2; classifiers made in "
          f"{time.perf_counter() - t0:.0f} s; torch and fastText on one thread, one task per phase):")
    rows = []
    for name, docs, model in runs:
        pipeline, run = workdir / "dual.yaml", workdir / f"run-{len(rows)}"
        pipeline.write_text(STAGE.format(docs=docs, terms=terms, model=model))
        assert curate_main(["run", str(pipeline), "--output", str(run), "--inline", "-q", "--until", "ingest"]) == 0
        watch = Stopwatch()
        for method, label in (("scan", "scan"), ("load", "load"), ("classify", "classifier"), ("run_shard", "decisions")):
            watch.wrap(DualUseStage, method, label)
        build, built = blocklist_module.build, []

        def timed_build(*args, _build=build, _built=built):
            w, c = clocks()
            out = _build(*args)
            _built.append((time.perf_counter() - w, time.process_time() - c))
            return out
        blocklist_module.build = timed_build
        try:
            assert curate_main(["run", str(pipeline), "--output", str(run), "--inline", "-q"]) == 0
        finally:
            watch.restore()
            blocklist_module.build = build
        table = pa.concat_tables([pq.read_table(p) for p in sorted(run.glob("dual_use/*/*.parquet"))])
        n, n_esc = table.num_rows, pc_sum(table.column("escalated"))
        rows.append((name, n, n_esc, pc_sum(table.column("flagged")), dict(watch.seconds), tuple(map(sum, zip(*built)))))

    print("   per document, CPU time of this process (wall in brackets); the automaton's build and the model's load "
          "happen once per worker and are left out")
    print(f"   {'classifier':34s} {'docs':>5s} {'escalated':>12s} {'blocklist':>19s} {'classifier/escalated':>21s} "
          f"{'decisions':>19s} {'total':>19s} {'docs/s/core':>11s} {'classifier share':>16s}")
    for name, n, n_esc, _, sec, build in rows:
        scan_w, scan_c = sec["scan"]
        cls_w, cls_c = sec.get("classifier", (0.0, 0.0))
        dec_w, dec_c = sec["decisions"]
        scan_w, scan_c = scan_w - build[0], scan_c - build[1]
        total_c, total_w = scan_c + cls_c + dec_c, scan_w + cls_w + dec_w
        print(f"   {name:34s} {n:5d} {n_esc:5d} ({n_esc / n:4.1%}) {both(scan_c / n, scan_w / n)} "
              f"{both(cls_c / max(n_esc, 1), cls_w / max(n_esc, 1))} {both(dec_c / n, dec_w / n)} "
              f"{both(total_c / n, total_w / n)} {n / total_c:11.1f} {cls_c / total_c:16.1%}")
    for name, n, _, flagged, sec, build in rows:
        print(f"   {name} on {n} docs: automaton built in {build[1]:.2f} CPU-s, model loaded in "
              f"{sec.get('load', (0.0, 0.0))[0]:.1f} s; {flagged} flagged (a stand-in or random-weight classifier: its cost "
              f"is what counts)")
    if bert:
        from transformers import AutoTokenizer

        from curate.models.batching import rows_for

        ids = pa.concat_tables([pq.read_table(p) for p in sorted((workdir / f"run-{len(rows) - 1}").glob("dual_use/*/*.parquet"))])
        escalated = [int(i[3:]) for i, e in zip(ids.column("id").to_pylist(), ids.column("escalated").to_pylist()) if e]
        with quiet():
            tokenizer = AutoTokenizer.from_pretrained(workdir / "bert")
            lengths = np.array([len(t) for t in tokenizer([x for x in texts[:n_docs] if x], add_special_tokens=False)["input_ids"]])
            esc_lengths = np.array([len(t) for t in tokenizer([texts[i] for i in escalated], add_special_tokens=False)["input_ids"]])
        windows = len(rows_for(esc_lengths, 510, "max")[0])
        cls_c = rows[-1][4]["classifier"][1]
        print(f"   the BERT's escalated documents: {esc_lengths.mean():,.0f} tokens on average (all: {lengths.mean():,.0f}), "
              f"{windows} windows of 512 tokens ({windows / len(escalated):.1f} per document), "
              f"{fmt_seconds(cls_c / windows)} of CPU per window")


def pc_sum(column) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(column).as_py() or 0)


def fmt_seconds(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def both(cpu: float, wall: float) -> str:
    return f"{fmt_seconds(cpu):>9s} ({fmt_seconds(wall):>8s})"


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", choices=("auto", "dolma", "sample"), default="auto")
    ap.add_argument("--mb", type=float, default=40.0, help="MB of text for ours (the corpus is cycled)")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds per slow method and term list")
    ap.add_argument("--repeat", type=int, default=3, help="best of N for ours")
    ap.add_argument("--stage-docs", type=int, default=200, help="documents for the real stage runs (0: skip them)")
    ap.add_argument("--stage-big", type=int, default=5000, help="documents (the corpus cycled) for the fastText stage run")
    ap.add_argument("--skip-bert", action="store_true", help="the real stage with fastText only")
    args = ap.parse_args()

    from curate.dualuse import Blocklist, demo_terms_path, load_terms

    texts, origin = load_texts(args.corpus)
    corpus_mb = mb_of(texts)
    ours_texts = [texts[i % len(texts)] for i in range(int(len(texts) * max(1.0, args.mb / corpus_mb)))]
    arr = pa.array(ours_texts)
    mb, n = mb_of(ours_texts), len(ours_texts)
    print(f"corpus: {origin}: {len(texts)} docs, {corpus_mb:.1f} MB "
          f"({corpus_mb * 1e6 / len(texts):.0f} bytes/doc); ours on it cycled to {n} docs ({mb:.1f} MB); "
          f"single thread, so MB/s is per core")
    t0 = time.perf_counter()
    Blocklist(["warm up"]).count(pa.array(["warm up"]))
    print(f"ours one-time start-up (case-fold tables, numba cache load or compile): {time.perf_counter() - t0:.2f} s")

    demo = load_terms(demo_terms_path())
    configs = [(100, "latin", True), (10_000, "latin", True), (10_000, "all", False)]
    for n_terms, scripts, compare in configs:
        terms = make_terms(texts, n_terms, demo, scripts=scripts)
        t0 = time.perf_counter()
        bl = Blocklist(terms)
        a = bl.automaton
        build = time.perf_counter() - t0
        kind = "English-like (a-z words)" if scripts == "latin" else "words of any script (large alphabet)"
        print(f"\n== {len(bl)} terms, {kind}: automaton {a.n_states} states, {a.n_rows} rows x {a.n_dense} of "
              f"{a.n_classes} classes, {a.nbytes / 1e6:.1f} MB, built in {build:.2f} s")
        rows = []  # (name, MB/s cpu, MB/s wall, docs/s cpu, note)
        for name, call in (("curate count, stop at 2", lambda b=bl: b.count(arr, stop_at=2)),
                           ("curate count, full", lambda b=bl: b.count(arr)),
                           ("curate scan (terms too)", lambda b=bl: b.scan(arr))):
            cpu, wall = best_of(call, args.repeat)
            rows.append((name, mb / cpu, mb / wall, n / cpu, "exact"))
        full = bl.count(arr)[:len(texts)]
        esc = full >= 2
        slow = []
        if compare:
            per_doc, batch = make_pyahocorasick(bl.terms)
            slow = [("python: t in text.casefold()", lambda x, t=bl.terms: python_loop(t, x),
                     "exact (the definition)",
                     False)]
            if per_doc is not None:
                slow += [("pyahocorasick per doc, stop 2", per_doc, "exact", True),
                         ("pyahocorasick per batch", batch, "exact", False)]
            t0 = time.perf_counter()
            regex = make_regex(bl.terms)
            slow.append((f"re alternation (compile {time.perf_counter() - t0:.1f}s)", regex, "", True))
        checked = 0
        for name, fn, note, capped in slow:
            cpu, wall, done, res = time_prefix(fn, texts, args.budget)
            want = np.minimum(full[:done], 2) if capped else full[:done]
            if note.startswith("exact"):
                assert (res == want).all(), f"{name} disagrees with curate"
                checked = max(checked, done)
            else:
                note = f"escalation differs on {np.mean((res >= 2) != esc[:done]):.1%}"
            sub = mb_of(texts[:done])
            rows.append((name, sub / cpu, sub / wall, done / cpu, f"{note} (first {done} docs)"))
        ours = rows[0][1]
        print(f"   {esc.mean():.1%} of documents escalate (>= 2 distinct terms)"
              + (f"; curate matched the Python definition on the {checked} documents it was timed on"
                 if checked else ""))
        print(f"   {'method':38s} {'MB/s/core':>10s} {'(wall)':>8s} {'docs/s':>9s} {'curate stop-2 is':>17s}  note")
        for name, mbs, mbw, dps, note in rows:
            print(f"   {name:38s} {mbs:10.2f} {mbw:8.2f} {dps:9.0f} {ours / mbs:16.1f}x  {note}")
        if scripts == "latin" and n_terms == 10_000:
            stage_bl = bl

    stage_cost(stage_bl, texts)
    if args.stage_docs:
        with tempfile.TemporaryDirectory(prefix="bench-dual-use-stage-") as tmp:
            stage_run(stage_bl, texts, args.stage_docs, args.stage_big, Path(tmp), bert=not args.skip_bert)


if __name__ == "__main__":
    main()
