"""Benchmark: curate.signals.compute_signals against datatrove's heuristic filters.

Both sides see the same documents in one run:

- ours: ``compute_signals`` over one Arrow array (every RPv2 signal that needs no
  external model, document- and line-level), after a warm-up call that pays the
  one-time costs (numba cache load or compile, Unicode tables), reported apart;
- datatrove: ``GopherQualityFilter``, ``GopherRepetitionFilter``,
  ``C4QualityFilter`` and ``FineWebQualityFilter`` as plain objects, each calling
  ``.filter(Document(...))`` on every document (a fresh Document per filter,
  since C4 rewrites the text), in one process, then in ``--cores`` processes.

Documents: ``../shared/data/dolma/formats/*.jsonl.gz`` when present, else the
``curate.sample`` corpus (FineWeb-Edu parquet ``text``) made in a temp dir.

datatrove's English filters need ``regex`` and ``spacy`` (spaCy's blank English
tokenizer, no model download). If they are not installed in the environment,
install them somewhere and pass ``--extra-site DIR`` (appended to sys.path), e.g.
``pip install --target /tmp/bench-extra regex spacy``.

``--stage``: the signals stage's own work per document on one core (the RPv2 set, datatrove's word
statistics, language id), with language id by fastText's C++ predictor (the code before) and by
``lid_kernel`` (now), checked equal text by text.

Usage: python bench/bench_signals.py [--docs 5000] [--dt-docs 400] [--cores 2]
       python bench/bench_signals.py --stage [--docs 3000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
from inputs import DOLMA, dolma_texts, sample_texts  # noqa: E402  (bench/inputs.py)


def load_texts() -> tuple[list[str], str]:
    texts = dolma_texts()
    if texts:
        return texts, f"dolma CC sample ({', '.join(p.name for p in sorted(DOLMA.glob('*.jsonl.gz')))})"
    return sample_texts(docs=4000, sources="fwe"), "curate.sample FineWeb-Edu parquet"


def _filters():
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    return [GopherQualityFilter(), GopherRepetitionFilter(), C4QualityFilter(), FineWebQualityFilter()]


def run_datatrove(texts: list[str]) -> float:
    """Seconds to run the four filters over ``texts`` in this process."""
    from datatrove.data import Document

    filters = _filters()
    for f in filters:  # warm-up: lazy tokenizer loading
        f.filter(Document(text="Warm up. " * 20, id="warm"))
    start = time.perf_counter()
    for i, text in enumerate(texts):
        for f in filters:
            f.filter(Document(text=text, id=str(i)))
    return time.perf_counter() - start


def _dt_worker(args) -> float:
    extra, texts = args
    if extra:
        sys.path.append(extra)
    return run_datatrove(texts)


def run_datatrove_procs(texts: list[str], cores: int, extra: str | None) -> float:
    """Wall seconds for ``cores`` processes sharing ``texts`` (start-up excluded)."""
    chunks = [texts[i::cores] for i in range(cores)]
    with mp.get_context("spawn").Pool(cores) as pool:
        pool.map(_dt_worker, [(extra, ["Warm up. " * 20])] * cores)
        start = time.perf_counter()
        pool.map(_dt_worker, [(extra, c) for c in chunks])
        return time.perf_counter() - start


def stage_table(texts: list[str], origin: str, docs: int, repeat: int) -> None:
    """The signals stage's computation per core, before (fastText's predictor) and after (lid_kernel)."""
    import numpy as np

    from curate.models.langid import identify, load_model
    from curate.signals import compute_signals, datatrove_word_stats

    arr = pa.array([texts[i % len(texts)] for i in range(docs)])
    urls = pa.array([None] * len(arr), pa.string())
    predict = load_model().f.predict

    def fasttext_identify(a):  # the code before: fastText's C++ predictor, one call per text
        out = [predict(t.replace("\n", " ") + "\n", 1, 0.0, "replace") for t in a.to_pylist()]
        return [o[0][1].removeprefix("__label__") for o in out], np.round(np.array([o[0][0] for o in out]), 8)

    parts = {"RPv2 set (compute_signals)": lambda: compute_signals(arr, urls), "dt_words": lambda: datatrove_word_stats(arr),
             "language id, fastText predict (before)": lambda: fasttext_identify(arr),
             "language id, lid_kernel (now)": lambda: identify(arr)}
    for fn in parts.values():  # one-time costs (kernel loads, the model) outside the timings
        fn()
    seconds = {name: min(_timed(fn) for _ in range(repeat)) for name, fn in parts.items()}
    langs, scores = identify(arr)
    want_langs, want_scores = fasttext_identify(arr)
    same = langs.to_pylist() == want_langs and np.array_equal(scores.to_numpy(zero_copy_only=False), want_scores)
    print(f"corpus: {origin}: {len(texts)} docs, cycled to {docs}; one core; best of {repeat}")
    for name, t in seconds.items():
        print(f"  {name:40} {t:6.3f} s  {docs / t:8,.0f} docs/s")
    common = seconds["RPv2 set (compute_signals)"] + seconds["dt_words"]
    before, after = common + seconds["language id, fastText predict (before)"], common + seconds["language id, lid_kernel (now)"]
    print(f"  whole stage's work, before: {before:.3f} s ({docs / before:,.0f} docs/s), now: {after:.3f} s "
          f"({docs / after:,.0f} docs/s): {before / after:.2f}x; language id equal to fastText's on every text: {same}")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=5000, help="documents for ours (the corpus is cycled)")
    ap.add_argument("--dt-docs", type=int, default=400, help="documents for datatrove (it is slow)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="best of N for ours")
    ap.add_argument("--extra-site", default=None, help="directory with regex/spacy for datatrove")
    ap.add_argument("--stage", action="store_true", help="the whole stage's work per core, language id before and after")
    args = ap.parse_args()
    if args.extra_site:
        sys.path.append(args.extra_site)

    from curate.signals import compute_signals

    texts, origin = load_texts()
    if args.stage:
        return stage_table(texts, origin, args.docs, args.repeat)
    # datatrove gets the first --dt-docs documents; ours the same documents,
    # cycled up to --docs so that its timing is long enough to be stable
    theirs = texts[:args.dt_docs]
    ours = [theirs[i % len(theirs)] for i in range(max(args.docs, len(theirs)))]
    mb = sum(len(t.encode("utf-8")) for t in ours) / 1e6
    print(f"corpus: {origin}: {len(texts)} docs; datatrove on the first {len(theirs)} "
          f"({sum(map(len, theirs)) / len(theirs):.0f} chars/doc), ours on them cycled to "
          f"{len(ours)} docs ({mb:.1f} MB)")

    arr = pa.array(ours)
    start = time.perf_counter()
    compute_signals(arr.slice(0, 8))
    print(f"ours one-time start-up (numba cache load or compile, Unicode tables): "
          f"{time.perf_counter() - start:.2f} s")

    def best(threads: int) -> float:
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            compute_signals(arr, threads=threads)
            times.append(time.perf_counter() - t0)
        return min(times)

    ours1 = len(ours) / best(1)
    oursn = len(ours) / best(args.cores)
    print(f"ours      1 thread : {ours1:10.0f} docs/s  ({ours1 * mb / len(ours):.1f} MB/s)")
    print(f"ours      {args.cores} threads: {oursn:10.0f} docs/s")

    try:
        dt1 = len(theirs) / run_datatrove(theirs)
    except ImportError as exc:
        print(f"datatrove filters unavailable ({exc}); see --extra-site in the module docstring")
        return
    print(f"datatrove 1 process: {dt1:10.1f} docs/s  (Gopher quality + Gopher repetition + C4 + FineWeb)")
    dtn = len(theirs) / run_datatrove_procs(theirs, args.cores, args.extra_site)
    print(f"datatrove {args.cores} procs  : {dtn:10.1f} docs/s")
    print(f"ratio, 1 core : {ours1 / dt1:8.1f}x")
    print(f"ratio, {args.cores} cores: {oursn / dtn:8.1f}x")


if __name__ == "__main__":
    main()
