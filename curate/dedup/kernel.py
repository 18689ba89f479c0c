"""The compiled signature kernel: UTF-8 bytes of an Arrow string buffer in, MinHash minima out.

Why a kernel: the cost of MinHash is permutations x shingles (128 x ~3,600 for a typical web page with
character 25-grams), far too much for per-shingle Python (datasketch: ~260 docs/s). Here, per document:

1. walk the UTF-8 bytes once, finding shingle boundaries (code points for ``char`` n-grams, single spaces
   for ``word`` n-grams of pre-joined tokens) with a small ring buffer of the last n unit starts. poly64
   values come straight from a running polynomial prefix (O(1) per shingle); for sha1/murmur3 the
   bounds are recorded and a second loop hashes the bytes in place (no Python strings, no copies);
2. for each permutation, a min-reduction over the shingle hashes. The inner loop has no stores and no
   branches beyond selects, so LLVM vectorises it across shingles (AVX2/AVX-512 where the CPU has
   them): about one cycle per (shingle, permutation) for the legacy scheme; for affine32, with its
   multiply kept in 32 bits (`_affine32`), ~30 billion (shingle, permutation) pairs a second on one
   AVX-512 core.

Character n-grams are over Unicode code points, like Python's ``text[i:i+n]``: a shingle is the bytes from
the lead byte of code point ``i`` to the lead byte of code point ``i+n``, which is exactly
``text[i:i+n].encode("utf-8")``. The input must be valid UTF-8 (Arrow strings are).

A document with fewer than ``n`` units (but at least one) gives one shingle, the whole text, when
``whole`` is set; otherwise none. No shingles: the minima stay at 2^32-1 (datasketch's empty MinHash) and
the count is 0, which callers use to flag the document.

Scratch memory per call is sized by the longest document of the range: 8 bytes per byte of it (poly64),
24 with sha1/murmur3 (shingle bounds), plus 4 for affine32.

``nogil=True`` everywhere: callers run disjoint document ranges on threads (see ``signatures.py``).
One compiled function serves every mode (unit, hash and scheme are runtime arguments), so a process
compiles once: ~5 s on first use, then loaded from numba's on-disk cache (``__pycache__`` next to this
file, or ``NUMBA_CACHE_DIR``) in well under a second.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .hashes import POLY_BASE, fmix32, murmur3_32, poly64_finish, sha1_32

HASH_SHA1 = 0
HASH_MURMUR3 = 1
HASH_POLY64 = 2
HASH_KINDS = {"sha1": HASH_SHA1, "murmur3": HASH_MURMUR3, "poly64": HASH_POLY64}

_M32 = np.uint64(0xFFFFFFFF)
_M61 = np.uint64((1 << 61) - 1)
_S61 = np.uint64(61)
_U1 = np.uint64(1)
_SPACE = np.uint8(0x20)
_CONT_MASK = np.uint8(0xC0)
_CONT = np.uint8(0x80)


@njit(cache=True, nogil=True)
def _pow(k):
    """POLY_BASE ** k mod 2^64, for shingles longer than the power table."""
    r = _U1
    x = POLY_BASE
    while k:
        if k & 1:
            r *= x
        x *= x
        k >>= 1
    return r


@njit(inline="always", cache=True)
def _emit(kind, seed, pw, st, p, pst, pp, m, hs, starts, ends):
    """Record shingle ``m`` = bytes ``[st, p)``: its poly64 value now (O(1) from the prefixes ``pst`` at
    ``st`` and ``pp`` at ``p``), or its bounds for the byte-wise hashes, computed in a second loop."""
    if kind == HASH_POLY64:
        k = p - st
        hs[m] = poly64_finish(pp - pst * (pw[k] if k < pw.shape[0] else _pow(k)), seed)
    else:
        starts[m] = st
        ends[m] = p


@njit(cache=True, nogil=True)
def _char_shingles(data, s, e, n, whole, kind, seed, pw, ring, ringp, hs, starts, ends):
    """The code-point n-grams of ``data[s:e]`` (see ``_emit``); returns how many."""
    cnt = 0      # code points seen so far
    slot = 0     # ring slot of code point (cnt - n): where the next shingle starts once cnt >= n
    m = 0
    pref = np.uint64(0)  # poly64 prefix of data[s:p]
    for p in range(s, e):
        x = data[p]
        if (x & _CONT_MASK) != _CONT:  # a lead byte: code point `cnt` starts at p
            if cnt >= n:
                _emit(kind, seed, pw, ring[slot], p, ringp[slot], pref, m, hs, starts, ends)
                m += 1
            ring[slot] = p
            ringp[slot] = pref
            slot += 1
            if slot == n:
                slot = 0
            cnt += 1
        pref = pref * POLY_BASE + np.uint64(x) + _U1
    if cnt >= n:
        _emit(kind, seed, pw, ring[slot], e, ringp[slot], pref, m, hs, starts, ends)
        m += 1
    elif cnt > 0 and whole:
        _emit(kind, seed, pw, s, e, np.uint64(0), pref, m, hs, starts, ends)
        m += 1
    return m


@njit(cache=True, nogil=True)
def _word_shingles(data, s, e, n, whole, kind, seed, pw, ring, ringp, hs, starts, ends):
    """The word n-grams of ``data[s:e]``, words separated by single spaces; returns how many.

    A shingle of words i..i+n-1 is the bytes from the start of word i to the end of word i+n-1, which is
    ``" ".join(words[i:i+n])`` because the text is the tokens joined by one space.
    """
    cnt = 0
    slot = 0
    m = 0
    ws = s
    pref = np.uint64(0)
    prefws = pref
    for p in range(s, e + 1):
        if p == e or data[p] == _SPACE:
            if p > ws:  # a word [ws, p)
                ring[slot] = ws
                ringp[slot] = prefws
                slot += 1
                if slot == n:
                    slot = 0
                cnt += 1
                if cnt >= n:
                    _emit(kind, seed, pw, ring[slot], p, ringp[slot], pref, m, hs, starts, ends)
                    m += 1
            ws = p + 1
            if p < e:
                pref = pref * POLY_BASE + np.uint64(data[p]) + _U1
            prefws = pref
        else:
            pref = pref * POLY_BASE + np.uint64(data[p]) + _U1
    if 0 < cnt < n and whole:
        _emit(kind, seed, pw, s, e, np.uint64(0), pref, m, hs, starts, ends)
        m += 1
    return m


@njit(cache=True, nogil=True)
def _hash_bounds(data, m, kind, seed, starts, ends, w, buf, hs):
    """The byte-wise hashes (sha1, murmur3) of the recorded shingles."""
    if kind == HASH_SHA1:
        for i in range(m):
            hs[i] = sha1_32(data, starts[i], ends[i] - starts[i], w, buf)
    elif kind == HASH_MURMUR3:
        for i in range(m):
            hs[i] = murmur3_32(data, starts[i], ends[i] - starts[i], seed)


@njit(inline="always", cache=True)
def _legacy_min(x, best):
    """Fold ``x = a*h + b`` (already wrapped mod 2^64) into a running minimum of
    ``(x mod (2^61 - 1)) & 0xFFFFFFFF``."""
    x = (x & _M61) + (x >> _S61)            # 2^61 = 1 (mod p): one fold leaves x < 2p
    x = x - _M61 if x >= _M61 else x
    x &= _M32
    return x if x < best else best


@njit(cache=True, nogil=True)
def _minima_legacy(hs, m, a, b, out, row):
    """datasketch's legacy permutation: low 32 bits of ((a*h + b) mod 2^64) mod (2^61-1).

    Two permutations per pass over the hashes (each loaded hash is used twice), ``hs`` already widened
    to uint64 (a plain vector load instead of a zero-extending one): ~20% faster than the plain loop.
    """
    p = a.shape[0]
    k = 0
    while k + 2 <= p:
        a0 = a[k]
        b0 = b[k]
        a1 = a[k + 1]
        b1 = b[k + 1]
        best0 = _M32
        best1 = _M32
        for i in range(m):
            h = hs[i]
            best0 = _legacy_min(a0 * h + b0, best0)  # a*h + b wraps mod 2^64, as numpy does in datasketch
            best1 = _legacy_min(a1 * h + b1, best1)
        out[row, k] = np.uint32(best0)
        out[row, k + 1] = np.uint32(best1)
        k += 2
    if k < p:
        a0 = a[k]
        b0 = b[k]
        best0 = _M32
        for i in range(m):
            best0 = _legacy_min(a0 * hs[i] + b0, best0)
        out[row, k] = np.uint32(best0)


@intrinsic
def _affine32(typingctx, a, h, b):
    """``a * h + b`` in 32-bit arithmetic. Written in numba, uint32 operands widen to 64 bits and the
    vectorised loop multiplies with AVX-512's slow 64-bit ``vpmullq``; in 32 bits it is ``vpmulld``, and the
    minima loop runs ~3x faster (same values: both wrap mod 2^32)."""
    def codegen(context, builder, signature, args):
        return builder.add(builder.mul(args[0], args[1]), args[2])
    return types.uint32(types.uint32, types.uint32, types.uint32), codegen


@njit(cache=True, nogil=True)
def _minima_affine32(hs, m, a, b, out, row):
    """datasketch 2.0's affine32 permutation: a * fmix32(h) + b mod 2^32 (``hs``: uint32, pre-mixed)."""
    for k in range(a.shape[0]):
        ak = np.uint32(a[k])
        bk = np.uint32(b[k])
        best = np.uint32(0xFFFFFFFF)
        for i in range(m):
            x = _affine32(ak, hs[i], bk)
            best = x if x < best else best
        out[row, k] = best


@njit(cache=True, nogil=True)
def signatures_range(data, offsets, nulls, lo, hi, word, n, whole, kind, seed, legacy, a, b, out, counts):
    """Signatures of documents ``lo..hi-1`` of one Arrow string array into ``out[lo:hi]``/``counts``.

    ``data``: the uint8 value buffer; ``offsets``: int64, already shifted by the array's offset;
    ``nulls``: bool per document or an empty array when there are none (nulls count as empty).
    """
    longest = 0
    for d in range(lo, hi):
        ln = offsets[d + 1] - offsets[d]
        if ln > longest:
            longest = ln
    hs = np.empty(longest + 1, dtype=np.uint64)  # shingle hashes (32-bit values)
    hs32 = np.empty(longest + 1 if not legacy else 1, dtype=np.uint32)
    ring = np.zeros(max(n, 1), dtype=np.int64)
    ringp = np.zeros(max(n, 1), dtype=np.uint64)
    w = np.zeros(16, dtype=np.uint64)
    buf = np.zeros(128, dtype=np.uint8)
    nb = 1 if kind == HASH_POLY64 else longest + 1
    starts = np.empty(nb, dtype=np.int64)
    ends = np.empty(nb, dtype=np.int64)
    # powers of the poly64 base for shingle lengths up to 4n bytes (n code points of valid UTF-8) or
    # 64 kB (word shingles); longer ones (rare, or invalid UTF-8) use _pow
    npw = 1
    if kind == HASH_POLY64:
        npw = min(longest, 1 << 16 if word else 4 * n) + 1
    pw = np.empty(npw, dtype=np.uint64)
    pw[0] = _U1
    for i in range(1, npw):
        pw[i] = pw[i - 1] * POLY_BASE
    has_nulls = nulls.shape[0] > 0
    for d in range(lo, hi):
        s = offsets[d]
        e = offsets[d + 1]
        if has_nulls and nulls[d]:
            e = s
        if word:
            m = _word_shingles(data, s, e, n, whole, kind, seed, pw, ring, ringp, hs, starts, ends)
        else:
            m = _char_shingles(data, s, e, n, whole, kind, seed, pw, ring, ringp, hs, starts, ends)
        _hash_bounds(data, m, kind, seed, starts, ends, w, buf, hs)
        counts[d] = m
        if legacy:
            _minima_legacy(hs, m, a, b, out, d)
        else:
            for i in range(m):
                hs32[i] = np.uint32(fmix32(hs[i]))
            _minima_affine32(hs32, m, a, b, out, d)
