"""The compiled exact-Jaccard kernels: shingle hash sets of many documents at once, then pairs by a sorted merge.

Why compiled: sound dedup checks the pairs near the threshold by their exact shingle Jaccard. Done per
document in numpy (`exact.shingle_hashes`), a 3,000-character page costs a dozen array passes and two
sorts, and `np.intersect1d` sorts both sets again for every pair: ~1,300 pairs/s. Here each document's
UTF-8 bytes are read once, its window hashes roll (O(1) per shingle), its set is sorted once, and a pair
costs one merge of two sorted arrays: at most |a| + |b| steps, no allocation, no sort (`overlap` cuts both to
the range of values they share first).

The hashes are `exact.shingle_hashes`' to the bit (same polynomial mod 2^64, same mixing), so Jaccards,
decisions and evidence do not change: `exact.py` is the definition the tests hold this against.
`nogil=True`: the graph phases run tasks on threads.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

from curate.dedup.exact import BASE, BASE_INV, WORD_BASE, WORD_BASE_INV
from curate.dedup.shingles import Shingling
from curate.dedup.signatures import _buffers

_U1 = np.uint64(1)
_SPACE = np.uint32(32)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_X1, _X2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@njit(inline="always", cache=True)
def _mix(x):
    """splitmix64's finaliser (`exact._mix`)."""
    x = (x ^ (x >> _S30)) * _X1
    x = (x ^ (x >> _S27)) * _X2
    return x ^ (x >> _S31)


@njit(cache=True, nogil=True)
def _code_points(data, s, e, out):
    """Decode valid UTF-8 bytes data[s:e] into `out`; returns how many code points."""
    m = 0
    p = s
    while p < e:
        x = np.uint32(data[p])
        if x < 0x80:
            p += 1
        elif x < 0xE0:
            x = ((x & 0x1F) << 6) | (np.uint32(data[p + 1]) & 0x3F)
            p += 2
        elif x < 0xF0:
            x = ((x & 0x0F) << 12) | ((np.uint32(data[p + 1]) & 0x3F) << 6) | (np.uint32(data[p + 2]) & 0x3F)
            p += 3
        else:
            x = (((x & 0x07) << 18) | ((np.uint32(data[p + 1]) & 0x3F) << 12) | ((np.uint32(data[p + 2]) & 0x3F) << 6)
                 | (np.uint32(data[p + 3]) & 0x3F))
            p += 4
        out[m] = x
        m += 1
    return m


@njit(cache=True, nogil=True)
def _poly(values, s, e, base):
    """sum values[s+k] * base^k mod 2^64 (Horner from the end)."""
    h = np.uint64(0)
    for k in range(e - 1, s - 1, -1):
        h = h * base + np.uint64(values[k])
    return h


@njit(cache=True, nogil=True)
def _windows(units, count, n, whole, base, base_inv, out):
    """Mixed hashes of every n-window of units[:count] (rolling), or of the whole when shorter and `whole`; returns how many."""
    if count >= n:
        top = _U1  # base^(n-1)
        for _ in range(n - 1):
            top *= base
        h = _poly(units, 0, n, base)
        ln = np.uint64(n)
        out[0] = _mix(h + ln)
        for s in range(1, count - n + 1):
            h = (h - np.uint64(units[s - 1])) * base_inv + np.uint64(units[s + n - 1]) * top
            out[s] = _mix(h + ln)
        return count - n + 1
    if count > 0 and whole:
        out[0] = _mix(_poly(units, 0, count, base) + np.uint64(count))
        return 1
    return 0


@njit(cache=True, nogil=True)
def _sorted_unique(h, m, out, at, counts, tmp):
    """Sort h[:m] and write its distinct values to out[at:]; returns the new end. The hashes are mixed (uniform), so
    one counting pass on their top bits (about one bucket per value) leaves every value in its bucket and buckets of
    a few values; one insertion pass over the whole then moves each value at most across its bucket (a branch per
    value that is almost always the same, not a loop per bucket: ~1.5x faster). A bucket over 32 values (np.sort
    each) keeps the worst case n log n. ~6x faster than np.sort of the whole."""
    if m == 0:
        return at
    bits = 1
    while bits < 16 and (1 << bits) < m:
        bits += 1
    shift = np.uint64(64 - bits)
    counts[:(1 << bits) + 1] = 0
    for i in range(m):
        counts[np.int64(h[i] >> shift) + 1] += 1
    largest = 0
    for k in range(1 << bits):
        largest = max(largest, counts[k + 1])
        counts[k + 1] += counts[k]
    for i in range(m):
        k = np.int64(h[i] >> shift)
        tmp[counts[k]] = h[i]
        counts[k] += 1
    if largest > 32:
        lo = 0
        for k in range(1 << bits):   # counts[k] is now the end of bucket k
            if counts[k] - lo > 32:
                tmp[lo:counts[k]].sort()
            lo = counts[k]
    for i in range(1, m):
        x = tmp[i]
        j = i - 1
        while j >= 0 and tmp[j] > x:
            tmp[j + 1] = tmp[j]
            j -= 1
        tmp[j + 1] = x
    out[at] = tmp[0]
    at += 1
    for i in range(1, m):
        if tmp[i] != tmp[i - 1]:
            out[at] = tmp[i]
            at += 1
    return at


@njit(cache=True, nogil=True)
def hash_sets(data, offsets, nulls, word, n, whole):
    """Sorted unique shingle hashes of each document of one Arrow string array (already the kernel text:
    `Shingling.prepare`): (values, offsets) of a list array, document d's set at values[offsets[d]:offsets[d+1]]."""
    docs = offsets.shape[0] - 1
    longest = 0
    for d in range(docs):
        longest = max(longest, offsets[d + 1] - offsets[d])
    cps = np.empty(longest + 1, np.uint32)
    units = np.empty(longest + 1, np.uint64)
    h = np.empty(longest + 1, np.uint64)
    tmp = np.empty(longest + 1, np.uint64)
    counts = np.empty((1 << 16) + 1, np.int64)
    out = np.empty(max(offsets[docs] - offsets[0], 0) + docs, np.uint64)  # at most one hash per byte, or one whole
    starts = np.zeros(docs + 1, np.int64)
    at = 0
    for d in range(docs):
        c = 0
        if nulls.shape[0] == 0 or not nulls[d]:
            c = _code_points(data, offsets[d], offsets[d + 1], cps)
        if word:
            count, ws = 0, 0
            for p in range(c + 1):
                if p == c or cps[p] == _SPACE:  # the kernel text joins words by single spaces
                    if c:
                        units[count] = _mix(_poly(cps, ws, p, BASE) + np.uint64(p - ws))
                        count += 1
                    ws = p + 1
            m = _windows(units, count, n, whole, WORD_BASE, WORD_BASE_INV, h)
        else:
            m = _windows(cps, c, n, whole, BASE, BASE_INV, h)
        at = _sorted_unique(h, m, out, at, counts, tmp)
        starts[d + 1] = at
    return out[:at], starts   # a view: unique shingles are about one per byte, little of `out` goes unused


@njit(cache=True, nogil=True)
def overlap(a, a0, a1, b, b0, b1):
    """The bound on a pair's work: runs a[a0:a1] and b[b0:b1] (sorted, unique) cut to the values both ranges span
    (two binary searches each). Every common value stays inside; a pair whose ranges meet only at their ends
    merges a handful of values, not |a| + |b|."""
    if a1 == a0 or b1 == b0:
        return a0, a0, b0, b0
    a0 += np.searchsorted(a[a0:a1], b[b0])
    a1 = a0 + np.searchsorted(a[a0:a1], b[b1 - 1], side="right")
    if a1 == a0:
        return a0, a0, b0, b0
    b0 += np.searchsorted(b[b0:b1], a[a0])
    b1 = b0 + np.searchsorted(b[b0:b1], a[a1 - 1], side="right")
    return a0, a1, b0, b1


@njit(cache=True, nogil=True)
def _intersection(a, a0, a1, b, b0, b1):
    """|a[a0:a1] & b[b0:b1]|: one merge of the overlapping parts, at most (a1 - a0) + (b1 - b0) steps, no allocation."""
    i, a1, j, b1 = overlap(a, a0, a1, b, b0, b1)
    inter = 0
    while i < a1 and j < b1:
        x, y = a[i], b[j]
        if x == y:
            inter += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return inter


@njit(cache=True, nogil=True)
def jaccard_pairs(a, a_off, a_row, b, b_off, b_row):
    """Exact Jaccard of pair i: the set a_row[i] of (a, a_off) with the set b_row[i] of (b, b_off) (two empty sets: 1)."""
    out = np.empty(a_row.shape[0], np.float64)
    for i in range(a_row.shape[0]):
        a0, a1 = a_off[a_row[i]], a_off[a_row[i] + 1]
        b0, b1 = b_off[b_row[i]], b_off[b_row[i] + 1]
        if a1 == a0 and b1 == b0:
            out[i] = 1.0
            continue
        inter = _intersection(a, a0, a1, b, b0, b1)
        out[i] = inter / ((a1 - a0) + (b1 - b0) - inter)
    return out


def shingle_sets(texts: pa.Array, shingling: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """`exact.shingle_hashes` of every document of a string array at once: a list array's (values, offsets);
    nulls are empty documents."""
    data, offsets, nulls = _buffers(shingling.prepare(texts))
    return hash_sets(data, offsets, nulls, shingling.unit == "word", shingling.n, shingling.short_docs == "whole")


def warm() -> None:
    """Compile (or load) the kernels on a tiny input, with the argument types the exact phases pass (both sides of
    a pair from one `shingle_sets`): `curate.runner.kernels`."""
    for shingling in (Shingling(n=2), Shingling(unit="word", n=2)):
        values, offsets = shingle_sets(pa.array(["ab cd ef", None]), shingling)
        rows = np.arange(2, dtype=np.int64)
        jaccard_pairs(values, offsets, rows, values, offsets, rows)
