"""Word n-gram hashes, vectorised: each word is hashed once (normalize.py), an n-gram combines n word hashes.

The hash of the k words starting at word i is `fmix64(sum_j w[i + j] * P^(k - 1 - j) + k)` over uint64 (wrapping):
a polynomial rolling hash. With the prefix sums `S[i + 1] = S[i] * P + w[i]` (one compiled pass over the words,
shared by every k), it is `S[i + k] - S[i] * P^k`, for every i at once in a few numpy operations; an n-gram that
would cross from one text into the next is dropped. Eval items are hashed here; training documents by the same
formula compiled into the lookup (lookup.py; tests check both agree), so equal word sequences have equal hashes
(and different ones collide with probability about 2^-64 per pair).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from curate.decontam.normalize import Words

P = np.uint64(0x9E3779B97F4A7C15 | 1)
M1, M2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)


def fmix64(h: np.ndarray) -> np.ndarray:
    """The murmur3 finaliser over a uint64 array."""
    h = h ^ (h >> np.uint64(33))
    h = h * M1
    h = h ^ (h >> np.uint64(33))
    h = h * M2
    return h ^ (h >> np.uint64(33))


@nb.njit(cache=True)
def prefix_sums(w):
    """`S[0] = 0, S[i + 1] = S[i] * P + w[i]` (uint64, wrapping)."""
    out = np.zeros(len(w) + 1, dtype=np.uint64)
    for i in range(len(w)):
        out[i + 1] = out[i] * P + w[i]
    return out


def gram_hashes(words: Words, k: int, prefix: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(hash, first word index) of every k-word sequence that lies inside one text (`prefix`: `prefix_sums` of the
    word hashes, when the caller computes several k)."""
    w = words.hash
    count = len(w) - k + 1
    if count <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    prefix = prefix_sums(w) if prefix is None else prefix
    with np.errstate(over="ignore"):
        acc = prefix[k:] - prefix[:count] * (P ** np.uint64(k))
        acc += np.uint64(k)
        acc = fmix64(acc)
    doc = words.doc
    inside = doc[:count] == doc[k - 1:]
    return acc[inside], np.flatnonzero(inside)
