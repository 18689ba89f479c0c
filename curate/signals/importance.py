"""DSIR importance weights (RPv2's `rps_doc_{books,wikipedia,openwebtext}_importance`).

Features are the normalised words' unigrams and bigrams hashed into `buckets` (10,000 in RPv2); the log
importance weight of a document is sum(count_f * (log p_target(f) - log p_cc(f))). The two reference
distributions are given as `.npy` arrays of bucket probabilities (RPv2 ships them with its pipeline).
"""

from __future__ import annotations

import functools
import hashlib
import os

import numpy as np

from curate.signals.compute import rpv2_normalize


def load_distributions(target: str, reference: str) -> np.ndarray:
    """The log ratio of the two distributions, cached per process by the files' identity (a file replaced at the
    same path, as when a user rebuilds it between two runs in one process, is read again)."""
    return _load(target, reference, _stamp(target), _stamp(reference))


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=8)
def _load(target: str, reference: str, *_stamps) -> np.ndarray:
    p, q = np.load(target), np.load(reference)
    if p.shape != q.shape:
        raise ValueError(f"{target} and {reference} have different numbers of buckets ({p.shape} vs {q.shape})")
    return np.log(np.clip(p, 1e-12, None)) - np.log(np.clip(q, 1e-12, None))


def _bucket(feature: str, buckets: int) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little") % buckets


def importance(texts: list[str | None], log_ratio: np.ndarray) -> np.ndarray:
    buckets = len(log_ratio)
    out = np.full(len(texts), np.nan)
    for i, text in enumerate(texts):
        if text is None:
            continue
        words = rpv2_normalize(text).split()
        feats = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
        idx = np.fromiter((_bucket(f, buckets) for f in feats), dtype=np.int64, count=len(feats))
        out[i] = float(np.bincount(idx, minlength=buckets) @ log_ratio) if len(idx) else 0.0
    return np.round(out, 8)
