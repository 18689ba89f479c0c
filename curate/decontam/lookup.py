"""The scan's inner loop, compiled: every k-gram of a batch hashed from the prefix sums and looked up, hits only out.

Per length k and word position i (inside one text): `h = fmix64(S[i + k] - S[i] * P^k + k)`, exactly the hash
`ngrams.gram_hashes` gives (tests check that), then a bitset on h's top bits (bit-packed: a few MB, so it stays
in cache), then a binary search in the sorted grams. Fused, nothing of size "every n-gram of the batch" is ever
materialised: one pass over the words per length.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from curate.signals.hash64 import mix


@nb.njit(cache=True)
def find_grams(prefix, doc, lengths, powers, bitmap, shift, keys):
    """(first word, length, hash) of every k-gram (k in `lengths`) of the batch that is in `keys`."""
    cap = 1024
    first = np.empty(cap, np.int64)
    length = np.empty(cap, np.int16)
    found = np.empty(cap, np.uint64)
    n = 0
    words = len(doc)
    for li in range(len(lengths)):
        k = lengths[li]
        pk = powers[li]
        for i in range(words - k + 1):
            if doc[i] != doc[i + k - 1]:
                continue
            h = mix(prefix[i + k] - prefix[i] * pk + np.uint64(k))
            top = h >> shift
            if not (bitmap[top >> np.uint64(6)] >> (top & np.uint64(63))) & np.uint64(1):
                continue
            lo, hi = 0, len(keys)
            while lo < hi:
                mid = (lo + hi) >> 1
                if keys[mid] < h:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == len(keys) or keys[lo] != h:
                continue
            if n == cap:
                cap *= 2
                first, length, found = _grow(first, cap), _grow(length, cap), _grow(found, cap)
            first[n], length[n], found[n] = i, k, h
            n += 1
    return first[:n], length[:n], found[:n]


@nb.njit(cache=True)
def _grow(a, cap):
    out = np.empty(cap, a.dtype)
    out[:len(a)] = a
    return out
