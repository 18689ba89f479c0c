"""Language identification with fastText's lid.176 model, shipped in curate's own package data.

The model (CC BY-SA 3.0, see `data/LICENSE-lid.176.md`) is loaded once per worker process (a module-level
cache) and never downloaded: a plain `pip install` of curate is enough for the signals stage. Prediction runs in
`lid_kernel` (fastText's algorithm compiled with numba, equal results); fastText itself is the reference.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from curate.common.threads import map_in_order, shares
from curate.errors import CurateError
from curate.io.strings import string_spans
from curate.models.ftz import LOSS_HS, hs_tree, read_model
from curate.models.lid_kernel import LABEL_PREFIX, decode_rows, predict_top, vocabulary_rows, word_table


@functools.cache
def model_path() -> str:
    """lid.176.ftz in curate's package data."""
    path = Path(__file__).parent / "data" / "lid.176.ftz"
    if not path.is_file():
        raise CurateError(f"language identification needs fastText's lid.176 model, which ships with curate at {path}; "
                          "reinstall curate (or set `langid: false` on the signals stage)")
    return str(path)


@functools.cache
def load_model():
    """fastText's own model object: the reference `identify` is checked against (tests, benchmarks)."""
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load-time warning
    return fasttext.load_model(model_path())


@dataclass(frozen=True)
class _Compiled:
    """lid.176 as `lid_kernel.predict_top` takes it (built once per process, ~0.1 s)."""

    labels: list[str]
    args: tuple


@functools.cache
def _compiled() -> _Compiled:
    m = read_model(model_path())
    if m.loss != LOSS_HS or m.codes is None or m.prune is None or m.word_ngrams != 1:
        raise CurateError(f"{model_path()}: expected lid.176 (quantized and pruned, hierarchical softmax, no word n-grams)")
    words = np.frombuffer(b"".join(m.words), np.uint8)
    lengths = np.array([len(w) for w in m.words], np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    table = word_table(m.words)
    eos = m.words.index(b"</s>") if b"</s>" in m.words else -1
    present = np.packbits(m.prune >= 0, bitorder="little")
    prune = np.maximum(m.prune, 0)
    vocab_starts, vocab_rows = vocabulary_rows(words, starts, ends, eos, m.minn, m.maxn, m.bucket, present, prune, m.nwords)
    left, right = hs_tree(m.label_counts)
    rows = decode_rows(m.codes, m.centroids, m.norms, m.nsubq, m.dsub, m.lastdsub)
    return _Compiled([label.removeprefix("__label__") for label in m.labels],
                     (table, words, starts, ends, vocab_starts, vocab_rows, eos, m.minn, m.maxn, m.bucket, present, prune,
                      m.nwords, rows, m.output, left, right, len(m.labels), LABEL_PREFIX))


def identify(texts: pa.Array, threads: int = 1) -> tuple[pa.Array, pa.Array]:
    """(lang, lang_score) per text: lid.176's top label without `__label__`, and its probability (rounded to 8
    decimals), exactly what fastText's `predict` gives on the text as one line (its newlines made spaces)
    (a null text is read as empty). Computed by `lid_kernel`, ~3x faster than fastText's own predictor; `threads`
    splits the rows over that many threads (the kernel releases the GIL), the same results in the same order."""
    model = _compiled()
    # no copy of the texts: the kernel reads a newline as the space fastText would see, and a null as empty
    data, starts, ends, _ = string_spans(texts, "language id")
    parts = map_in_order(lambda r: predict_top(data, starts[r[0]:r[1]], ends[r[0]:r[1]], *model.args),
                         shares(len(starts), threads), threads)
    top, probs = np.concatenate([t for t, _ in parts]), np.concatenate([q for _, q in parts])   # shares: one range at least
    names = np.array(model.labels + [None], dtype=object)
    langs = pa.array(names[top], pa.string())  # -1 (nothing to predict from) is the None at the end
    scores = np.where(top >= 0, np.round(probs.astype(np.float64), 8), np.nan)
    return langs, pa.array(scores, pa.float64(), from_pandas=True)
