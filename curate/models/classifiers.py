"""fastText document classifiers configured by path (quality, RPv2's ml scores, dual-use), one load per worker."""

from __future__ import annotations

import functools
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def load_fasttext(path: str):
    """One load per worker process and file: a model retrained to the same path is loaded again (workers of a
    long-lived cluster, and inline runs, outlive a run)."""
    st = os.stat(path)
    return _load_fasttext(path, st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=16)
def _load_fasttext(path: str, size: int, mtime_ns: int, inode: int):
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None
    return fasttext.load_model(path)


def rpv2_ml_score(path: str, texts: pa.Array) -> pa.Array:
    """RedPajama-V2's `rps_doc_ml_*` score: newlines to spaces; if the top label is `__label__cc` the
    score is 1 - p, else p."""
    predict = load_fasttext(path).f.predict
    flat = pc.replace_substring(pc.fill_null(texts, ""), "\n", " ").to_pylist()
    out = np.empty(len(flat))
    for i, text in enumerate(flat):
        top = predict(text + "\n", 1, 0.0, "replace")
        prob, label = (top[0][0], top[0][1]) if top else (0.0, "")
        out[i] = 1.0 - prob if label == "__label__cc" else prob
    return pa.array(np.round(out, 8))
