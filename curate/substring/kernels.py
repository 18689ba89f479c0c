"""The compiled kernels of substring dedup: words, winnowed fingerprints, whole-window hashes, cuts.

Self-contained on purpose (numba's cache does not track edits in other modules).

A word is a maximal run of characters that are not whitespace (Python's `str.split()`: `\\s` of `re`, Unicode
whitespace included), so a cut always starts and ends on a word, never inside a UTF-8 character. Offsets are code
points into the text, as edits record them. Word hashes are FNV-1a over the word's bytes, finished by splitmix64;
two independent ones (`a`, `b`) give each window a key of 125 bits: a polynomial of its word hashes modulo 2^64 (`a`)
and one modulo the prime 2^61 - 1 (`b`), both rolling (O(1) per step). Modulo 2^64 alone, a Thue-Morse sequence of two
words and its complement collide for every odd base once they are 512-1024 words long; modulo a prime they do not.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_FNV_A = np.uint64(0xCBF29CE484222325)
_FNV_B = np.uint64(0x84222325CBF29CE4)
_PRIME = np.uint64(0x100000001B3)
BASE_A = np.uint64(0x9E3779B97F4A7C15)
BASE_B = np.uint64(0xC2B2AE3D27D4EB4F)
P61 = np.uint64((1 << 61) - 1)
BASE_61 = np.uint64(0xC2B2AE3D27D4EB4F % ((1 << 61) - 1))


@nb.njit(cache=True, nogil=True)
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True)
def _mod61(x):
    """x modulo 2^61 - 1, for any 64-bit x."""
    x = (x & P61) + (x >> np.uint64(61))
    return x - P61 if x >= P61 else x


@nb.njit(cache=True, nogil=True)
def _mul61(a, b):
    """a * b modulo 2^61 - 1, for a, b < 2^61 (in 31- and 30-bit halves: no product passes 2^64)."""
    au, ad = a >> np.uint64(31), a & np.uint64(0x7FFFFFFF)
    bu, bd = b >> np.uint64(31), b & np.uint64(0x7FFFFFFF)
    mid = ad * bu + au * bd
    return _mod61(au * bu * np.uint64(2) + (mid >> np.uint64(30)) + ((mid & np.uint64(0x3FFFFFFF)) << np.uint64(31)) + ad * bd)


@nb.njit(cache=True, nogil=True)
def _space(cp):
    """Whether code point `cp` is whitespace as Python's `str.isspace` says."""
    if cp < 128:
        return (9 <= cp <= 13) or (28 <= cp <= 32)
    return (cp == 0x85 or cp == 0xA0 or cp == 0x1680 or (0x2000 <= cp <= 0x200A) or cp == 0x2028 or cp == 0x2029
            or cp == 0x202F or cp == 0x205F or cp == 0x3000)


@nb.njit(cache=True, nogil=True)
def _decode(data, i, end):
    """(code point, its length in bytes) at byte `i`; a stray byte is one code point of one byte."""
    b = np.int64(data[i])
    if b < 0x80:
        return b, 1
    if b >= 0xF0 and i + 3 < end:
        return ((b & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12) | ((np.int64(data[i + 2]) & 0x3F) << 6) \
            | (np.int64(data[i + 3]) & 0x3F), 4
    if b >= 0xE0 and b < 0xF0 and i + 2 < end:
        return ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F), 3
    if b >= 0xC0 and b < 0xE0 and i + 1 < end:
        return ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
    return b, 1


@nb.njit(cache=True, nogil=True)
def words(data, starts, ends):
    """Every word of every text: (word offsets per text (n + 1), char start, char end, hash a, hash b, chars per
    text). `starts`/`ends`: each text's bytes in `data`."""
    n = len(starts)
    cap = 0
    for d in range(n):
        cap += (ends[d] - starts[d] + 1) // 2 + 1
    cstart = np.empty(cap, np.int64)
    cend = np.empty(cap, np.int64)
    ha = np.empty(cap, np.uint64)
    hb = np.empty(cap, np.uint64)
    offsets = np.zeros(n + 1, np.int64)
    chars = np.zeros(n, np.int64)
    k = 0
    for d in range(n):
        i, end, c = starts[d], ends[d], 0
        inword = False
        a = _FNV_A
        bb = _FNV_B
        while i < end:
            cp, size = _decode(data, i, end)
            if _space(cp):
                if inword:
                    cend[k] = c
                    ha[k] = _mix(a)
                    hb[k] = _mix(bb ^ np.uint64(0x5BD1E995))
                    k += 1
                    inword = False
            else:
                if not inword:
                    cstart[k] = c
                    a = _FNV_A
                    bb = _FNV_B
                    inword = True
                for j in range(size):
                    a = (a ^ np.uint64(data[i + j])) * _PRIME
                    bb = (bb ^ np.uint64(data[i + j])) * _PRIME
            i += size
            c += 1
        if inword:
            cend[k] = c
            ha[k] = _mix(a)
            hb[k] = _mix(bb ^ np.uint64(0x5BD1E995))
            k += 1
        offsets[d + 1] = k
        chars[d] = c
    return offsets, cstart[:k], cend[:k], ha[:k], hb[:k], chars


@nb.njit(cache=True, nogil=True)
def _power(base, n):
    p = np.uint64(1)
    for _ in range(n):
        p = p * base
    return p


@nb.njit(cache=True, nogil=True)
def fingerprints(offsets, ha, k, w):
    """Winnowing (Schleimer et al. 2003): the hash of every k-word gram, and in every window of w consecutive grams
    the rightmost smallest one is kept. Any run of k + w - 1 words that two places share keeps one hash they share.
    Texts of fewer than k + w - 1 words are skipped (they hold no window to repeat). Returns (text, word, hash)."""
    n = len(offsets) - 1
    cap = 0
    for d in range(n):
        m = offsets[d + 1] - offsets[d] - k + 1
        if m >= w:
            cap += m
    out_doc = np.empty(cap, np.int64)
    out_pos = np.empty(cap, np.int64)
    out_hash = np.empty(cap, np.uint64)
    top = _power(BASE_A, k - 1)
    grams = np.empty(0, np.uint64)
    q = 0
    for d in range(n):
        lo = offsets[d]
        m = offsets[d + 1] - lo - k + 1
        if m < w:
            continue
        if len(grams) < m:
            grams = np.empty(max(m, 2 * len(grams)), np.uint64)
        h = np.uint64(0)
        for j in range(k):
            h = h * BASE_A + ha[lo + j]
        grams[0] = _mix(h)
        for i in range(1, m):
            h = (h - ha[lo + i - 1] * top) * BASE_A + ha[lo + i + k - 1]
            grams[i] = _mix(h)
        best = -1
        for s in range(m - w + 1):   # window [s, s + w)
            if best < s:
                best = s
                for j in range(s + 1, s + w):
                    if grams[j] <= grams[best]:
                        best = j
                out_doc[q], out_pos[q], out_hash[q] = d, best, grams[best]
                q += 1
            elif grams[s + w - 1] <= grams[best]:
                best = s + w - 1
                out_doc[q], out_pos[q], out_hash[q] = d, best, grams[best]
                q += 1
    return out_doc[:q], out_pos[:q], out_hash[:q]


@nb.njit(cache=True, nogil=True)
def windows(offsets, ha, hb, want_doc, want_pos, length, w):
    """The key (a, b) of the `length`-word window starting at each word `p - w + 1 .. p` of each wanted
    (text, word p) (a shared fingerprint: every repeated window holds one), each start once. `want_*` sorted by
    text then word. Returns (text, word, key a, key b)."""
    n_want = len(want_doc)
    cap = n_want * w
    out_doc = np.empty(cap, np.int64)
    out_pos = np.empty(cap, np.int64)
    out_a = np.empty(cap, np.uint64)
    out_b = np.empty(cap, np.uint64)
    top_a = _power(BASE_A, length - 1)
    top_b = np.uint64(1)
    for _ in range(length - 1):
        top_b = _mul61(top_b, BASE_61)
    q = 0
    t = 0
    while t < n_want:
        d = want_doc[t]
        u = t
        while u < n_want and want_doc[u] == d:
            u += 1
        lo = offsets[d]
        last = offsets[d + 1] - lo - length   # the last start of a whole window
        ha_, hb_ = np.uint64(0), np.uint64(0)
        at = -2   # the start whose key ha_/hb_ hold
        nxt = 0   # starts below this are done
        for v in range(t, u):
            s0 = max(want_pos[v] - w + 1, nxt)
            s1 = min(want_pos[v], last)
            for s in range(s0, s1 + 1):
                if at == s - 1:
                    ha_ = (ha_ - ha[lo + s - 1] * top_a) * BASE_A + ha[lo + s + length - 1]
                    hb_ = _mod61(hb_ + P61 - _mul61(_mod61(hb[lo + s - 1]), top_b))
                    hb_ = _mod61(_mul61(hb_, BASE_61) + _mod61(hb[lo + s + length - 1]))
                else:
                    ha_, hb_ = np.uint64(0), np.uint64(0)
                    for j in range(length):
                        ha_ = ha_ * BASE_A + ha[lo + s + j]
                        hb_ = _mod61(_mul61(hb_, BASE_61) + _mod61(hb[lo + s + j]))
                at = s
                out_doc[q], out_pos[q], out_a[q], out_b[q] = d, s, _mix(ha_), _mix(hb_)
                q += 1
            nxt = max(nxt, s1 + 1)
        t = u
    return out_doc[:q], out_pos[:q], out_a[:q], out_b[:q]


@nb.njit(cache=True, nogil=True)
def cuts(offsets, cstart, chars, win_doc, win_pos, win_first, length):
    """What to cut: every word a later copy of a repeated window covers and no kept (first) copy does, as runs.
    `win_*` sorted by text then word. A run's cut reaches to the next word's start (or the text's end; from the
    text's start when it begins at the first word), so no doubled whitespace is left. Returns per run (text, first
    word, end word, char start, char end, index of the later window covering its first word)."""
    n_win = len(win_doc)
    out_doc = np.empty(n_win, np.int64)
    out_w0 = np.empty(n_win, np.int64)
    out_w1 = np.empty(n_win, np.int64)
    out_c0 = np.empty(n_win, np.int64)
    out_c1 = np.empty(n_win, np.int64)
    out_win = np.empty(n_win, np.int64)
    later = np.zeros(0, np.int64)
    first = np.zeros(0, np.int64)
    cover = np.zeros(0, np.int64)
    q = 0
    t = 0
    while t < n_win:
        d = win_doc[t]
        u = t
        while u < n_win and win_doc[u] == d:
            u += 1
        lo = offsets[d]
        nw = offsets[d + 1] - lo
        if len(later) < nw + 1:
            size = max(nw + 1, 2 * len(later))
            later = np.zeros(size, np.int64)
            first = np.zeros(size, np.int64)
            cover = np.zeros(size, np.int64)
        for j in range(nw + 1):
            later[j] = 0
            first[j] = 0
            cover[j] = -1
        for v in range(t, u):
            p = win_pos[v]
            if win_first[v]:
                first[p] += 1
                first[p + length] -= 1
            else:
                later[p] += 1
                later[p + length] -= 1
                cover[p] = v
        run_l, run_f, cov = 0, 0, -1
        start = -1
        for j in range(nw + 1):
            cut = False
            if j < nw:
                run_l += later[j]
                run_f += first[j]
                if cover[j] >= 0:
                    cov = cover[j]
                cut = run_l > 0 and run_f == 0
            if cut and start < 0:
                start = j
                out_win[q] = cov
            elif not cut and start >= 0:
                out_doc[q], out_w0[q], out_w1[q] = d, start, j
                out_c0[q] = 0 if start == 0 else cstart[lo + start]
                out_c1[q] = chars[d] if j == nw else cstart[lo + j]
                q += 1
                start = -1
        t = u
    return out_doc[:q], out_w0[:q], out_w1[:q], out_c0[:q], out_c1[:q], out_win[:q]


def warm() -> None:
    data = np.frombuffer("Warm-up text: the kernels compile once.\nA second line, é x".encode() * 3, np.uint8)
    starts, ends = np.array([0], np.int64), np.array([len(data)], np.int64)
    offsets, cstart, _, ha, hb, chars = words(data, starts, ends)
    doc, pos, _ = fingerprints(offsets, ha, 2, 3)
    wd, wp, _, _ = windows(offsets, ha, hb, doc, pos, 4, 3)
    cuts(offsets, cstart, chars, wd, wp, np.arange(len(wd)) % 2 == 0, 4)
