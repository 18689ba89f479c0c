"""Exact shingle-set Jaccard of two documents, vectorised: a 64-bit hash per shingle, computed with numpy.

Why not hash each shingle string in Python (what pair verification does): a 5,000-character page has
~5,000 char 25-grams, and a Python call per shingle is most of the cost of checking a pair. Here the
text becomes an array of code points; a polynomial rolling hash mod 2^64 (odd base, so invertible) gives
every window's hash from two prefix sums. Word shingles hash each word the same way first, then roll
over the word hashes. Same shingling as the MinHash (`Shingling`: normalisation, unit, n, short
documents); the set differs from the set of shingle strings only on a 64-bit hash collision.
"""

from __future__ import annotations

import numpy as np

from curate.dedup.shingles import Shingling

U64 = np.uint64
BASE = U64(0x9E3779B97F4A7C15)        # odd: has an inverse mod 2^64
BASE_INV = U64(pow(int(BASE), -1, 1 << 64))
WORD_BASE = U64(0xC2B2AE3D27D4EB4F)
WORD_BASE_INV = U64(pow(int(WORD_BASE), -1, 1 << 64))


def _powers(base: np.uint64, n: int) -> np.ndarray:
    out = np.empty(n, U64)
    if n:
        out[0] = 1
        with np.errstate(over="ignore"):
            np.cumprod(np.full(n - 1, base, U64), out=out[1:])
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads the linear hash's bits (cheap insurance against structured collisions)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> U64(30))) * U64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> U64(27))) * U64(0x94D049BB133111EB)
        return x ^ (x >> U64(31))


def _windows(values: np.ndarray, starts: np.ndarray, ends: np.ndarray, base, base_inv) -> np.ndarray:
    """Hash of values[s:e] for each (s, e): sum values[s+k] * base^k, mod 2^64."""
    n = len(values)
    with np.errstate(over="ignore"):
        prefix = np.zeros(n + 1, U64)
        np.cumsum(values.astype(U64) * _powers(base, n), out=prefix[1:])
        inv = _powers(base_inv, n + 1)
        return (prefix[ends] - prefix[starts]) * inv[starts] + (ends - starts).astype(U64)


def shingle_hashes(text: str, shingling: Shingling) -> np.ndarray:
    """Sorted unique 64-bit hashes of the document's shingles (empty: no shingles)."""
    t = shingling.text_for_kernel(text)
    cps = np.frombuffer(t.encode("utf-32-le"), np.uint32)
    n = shingling.n
    if shingling.unit == "char":
        units, base, base_inv = cps, BASE, BASE_INV
    else:
        if not len(cps):
            return np.empty(0, U64)
        space = np.flatnonzero(cps == 32)  # text_for_kernel joins words by single spaces
        starts = np.r_[0, space + 1]
        ends = np.r_[space, len(cps)]
        units, base, base_inv = _mix(_windows(cps, starts, ends, BASE, BASE_INV)), WORD_BASE, WORD_BASE_INV
    count = len(units)
    if count >= n:
        s = np.arange(count - n + 1)
        h = _windows(units, s, s + n, base, base_inv)
    elif count and shingling.short_docs == "whole":
        h = _windows(units, np.array([0]), np.array([count]), base, base_inv)
    else:
        return np.empty(0, U64)
    return np.unique(_mix(h))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a & b| / |a | b| of two sorted unique hash arrays (two empty sets: 1)."""
    if not len(a) and not len(b):
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)
