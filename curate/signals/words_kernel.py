"""One compiled pass per document over the RPv2 *normalised* text: the
normalised words, their per-line aggregates, and the repetition signals.

How:
- Normalisation (drop ASCII punctuation, ``lower()``, NFD) is done per code point
  with tables built from Python itself (:mod:`.unicode_tables`), plus NFD's
  canonical reordering of combining marks. Whitespace and newlines are kept, so
  words are the non-space runs and each word knows its raw line. Splitting at
  whitespace before or after NFD gives the same words (NFD never creates or
  removes whitespace; checked in the tests), which is what lets per-line and
  whole-document normalisation share one pass. Documents whose normalisation is
  context dependent (capital sigma) are normalised by Python and handed in.
- Words are interned to exact ids (hash + comparison). Word n-grams for n = 2..10
  are interned level by level: an n-gram is the pair (class of its (n-1)-gram
  prefix, id of its last word), an exact integer key. Only positions whose two
  (n-1)-grams both repeat can hold a repeated n-gram, so each level only looks at
  those candidates; ordinary prose stops after a few levels.
- Classes are numbered in first-occurrence order, which reproduces
  ``Counter.most_common(1)``'s tie-break (first inserted wins).

Self-contained on purpose (numba's cache does not track edits in other modules).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .unicode_tables import NUMERIC, SPACE
from .hash64 import PRIME as _PRIME
from .hash64 import SEED as _SEED
from .hash64 import U64 as _U64
from .hash64 import mix as _mix
from .utf8 import decode as _decode

#: per-document integer outputs, column order of the ``doc`` matrix
DOC_FIELDS = (
    "n_words",  # normalised words
    "n_word_chars",  # sum of their lengths
    "n_unique",  # distinct normalised words
    "lorem_pairs",  # adjacent words "...lorem" "ipsum..." (exact substring hits)
    "n_ldnoobw",  # LDNOOBW n-gram hits
    "top2_num", "top3_num", "top4_num",  # chars(top n-gram) * its count, 0 if count <= 1
    "dupe5", "dupe6", "dupe7", "dupe8", "dupe9", "dupe10",  # chars covered by repeated n-grams
)
_NDOC = len(DOC_FIELDS)
_TOP0 = 5
_DUPE0 = 8
_TERM_CACHE = 4096  # entropy terms cached for word counts below this


_JAVASCRIPT = np.array([ord(c) for c in "javascript"], np.int32)
_LOREM = np.array([ord(c) for c in "lorem"], np.int32)
_IPSUM = np.array([ord(c) for c in "ipsum"], np.int32)



@nb.njit(cache=True)
def _hash_cps(buf, start, end):
    h = _SEED
    for i in range(start, end):
        h = (h ^ _U64(buf[i])) * _PRIME
    return _mix(h)


@nb.njit(cache=True)
def _combine(acc, h):
    return _mix((acc ^ h) * _PRIME + _U64(0x632BE59BD9B4E019))


@nb.njit(cache=True)
def _same(a, a0, b, b0, n):
    for t in range(n):
        if a[a0 + t] != b[b0 + t]:
            return False
    return True


@nb.njit(cache=True)
def _pow2_at_least(n):
    size = 16
    while size < n:
        size *= 2
    return size


@nb.njit(cache=True)
def build_phrase_set(cps, word_off, phrase_off):
    """Tables to find phrases (LDNOOBW entries) among a document's words.

    ``cps[word_off[w]:word_off[w+1]]`` is word ``w``; phrase ``k`` is words
    ``phrase_off[k]..phrase_off[k+1]-1``. Returns (slots, phrase hashes,
    first-word slots, first-word hashes, first-word length masks).
    """
    n_phr = len(phrase_off) - 1
    size = _pow2_at_least(4 * n_phr)
    slots = np.full(size, -1, np.int64)
    phash = np.zeros(max(n_phr, 1), np.uint64)
    fw_slots = np.full(size, -1, np.int64)
    fw_hash = np.zeros(max(n_phr, 1), np.uint64)
    fw_mask = np.zeros(max(n_phr, 1), np.uint64)
    n_fw = 0
    for k in range(n_phr):
        w0, w1 = phrase_off[k], phrase_off[k + 1]
        h0 = _hash_cps(cps, word_off[w0], word_off[w0 + 1])
        acc = _SEED
        for w in range(w0, w1):
            acc = _combine(acc, _hash_cps(cps, word_off[w], word_off[w + 1]))
        phash[k] = acc
        j = np.int64(acc & _U64(size - 1))
        while slots[j] >= 0:
            j = (j + 1) & (size - 1)
        slots[j] = k
        # first word -> bit mask of phrase lengths starting with it
        j = np.int64(h0 & _U64(size - 1))
        while fw_slots[j] >= 0 and fw_hash[fw_slots[j]] != h0:
            j = (j + 1) & (size - 1)
        if fw_slots[j] < 0:
            fw_slots[j] = n_fw
            fw_hash[n_fw] = h0
            n_fw += 1
        fw_mask[fw_slots[j]] |= _U64(1) << _U64(min(w1 - w0, 63))
    return slots, phash, fw_slots, fw_hash, fw_mask


@nb.njit(cache=True)
def _normalize(data, start, end, nfd_lower, exp_off, exp_data, ccc, punct, out):
    """NFD(lower(text without ASCII punctuation)) into ``out``; returns its length."""
    n = 0
    p = start
    while p < end:
        cp, w = _decode(data, p, end)
        p += w
        if cp < 128:
            if punct[cp]:
                continue
            if 65 <= cp <= 90:
                cp += 32
            out[n] = cp
            n += 1
            continue
        m = nfd_lower[cp]
        if m >= 0:  # one code point (the common case)
            k0, k1 = np.int64(0), np.int64(1)
        else:  # several: exp_data[k0:k1]
            k0, k1 = exp_off[-m - 1], exp_off[-m]
        for k in range(k0, k1):
            c = m if m >= 0 else exp_data[k]
            cc = ccc[c]
            j = n
            if cc != 0:  # canonical ordering: stable sort of non-starters by class
                while j > 0 and ccc[out[j - 1]] > cc:
                    out[j] = out[j - 1]
                    j -= 1
            out[j] = c
            n += 1
    return n


@nb.njit(cache=True)
def _intern(buf, w_start, w_len, w_hash, n_words, slots, ids, counts, rep):
    """Exact word ids in first-occurrence order; returns the number of distinct words."""
    size = _pow2_at_least(2 * n_words)
    mask = size - 1
    slots[:size] = -1
    n_ids = 0
    for i in range(n_words):
        h = w_hash[i]
        j = np.int64(h & _U64(mask))
        while True:
            s = slots[j]
            if s < 0:
                slots[j] = n_ids
                rep[n_ids] = i
                counts[n_ids] = 1
                ids[i] = n_ids
                n_ids += 1
                break
            r = rep[s]
            if w_hash[r] == h and w_len[r] == w_len[i] and _same(buf, w_start[r], buf, w_start[i], w_len[i]):
                ids[i] = s
                counts[s] += 1
                break
            j = (j + 1) & mask
    return n_ids


@nb.njit(cache=True)
def _ngram_level(n, ids, n_ids, pos_prev, k_prev, cls_prev, cls_new, cand, cnt, first, keys, vals, pos_new):
    """Intern the n-grams that may repeat; returns (classes, repeated positions).

    ``pos_prev[:k_prev]`` lists, ascending, the positions whose (n-1)-gram
    repeats; an n-gram can only repeat where the (n-1)-grams at ``i`` and
    ``i+1`` both do. Its key ``cls_prev[i] * n_ids + ids[i+n-1]`` is exact
    (word ids are below ``n_ids``). Classes are numbered in first-occurrence
    order; ``pos_new`` receives the positions whose n-gram repeats.
    """
    size = _pow2_at_least(2 * k_prev)
    mask = size - 1
    keys[:size] = -1
    n_cls = 0
    n_cand = 0
    width = np.int64(n_ids)
    for k in range(k_prev - 1):
        i = pos_prev[k]
        if pos_prev[k + 1] != i + 1:
            continue
        key = np.int64(cls_prev[i]) * width + ids[i + n - 1]
        j = np.int64(_mix(_U64(key)) & _U64(mask))
        while True:
            if keys[j] < 0:
                keys[j] = key
                vals[j] = n_cls
                cnt[n_cls] = 1
                first[n_cls] = i
                cls_new[i] = n_cls
                n_cls += 1
                break
            if keys[j] == key:
                c = vals[j]
                cnt[c] += 1
                cls_new[i] = c
                break
            j = (j + 1) & mask
        cand[n_cand] = i
        n_cand += 1
    k_new = 0
    for k in range(n_cand):
        i = cand[k]
        if cnt[cls_new[i]] >= 2:
            pos_new[k_new] = i
            k_new += 1
    return n_cls, k_new


@nb.njit(cache=True)
def _split_words(buf, n_cp, flags, w_start, w_len, w_hash, line0, n_lines, line_words, line_chars,
                 line_numeric, line_js):
    """Words = runs of non-space; each feeds the aggregates of its line."""
    n_words = 0
    line = 0
    i = 0
    while i < n_cp:
        cp = buf[i]
        if (flags[cp] & SPACE) != 0:
            if cp == 10:
                line += 1
            i += 1
            continue
        j = i + 1
        numeric = 1 if (flags[cp] & NUMERIC) != 0 else 0
        h = (_SEED ^ _U64(cp)) * _PRIME  # _hash_cps, computed on the way
        while j < n_cp:
            c = buf[j]
            f = flags[c]
            if (f & SPACE) != 0:
                break
            numeric += (f & NUMERIC) != 0
            h = (h ^ _U64(c)) * _PRIME
            j += 1
        w_start[n_words] = i
        w_len[n_words] = j - i
        w_hash[n_words] = _mix(h)
        if line < n_lines:
            k = line0 + line
            line_words[k] += 1
            line_chars[k] += j - i
            line_numeric[k] += numeric
            if j - i == 10 and _same(buf, i, _JAVASCRIPT, 0, 10):
                line_js[k] += 1
        n_words += 1
        i = j
    return n_words


@nb.njit(cache=True)
def _lorem_pairs(buf, w_start, w_len, n_words):
    """Exact occurrences of "lorem ipsum" in " ".join(words)."""
    pairs = 0
    for w in range(n_words - 1):
        if (w_len[w] >= 5 and w_len[w + 1] >= 5
                and _same(buf, w_start[w] + w_len[w] - 5, _LOREM, 0, 5)
                and _same(buf, w_start[w + 1], _IPSUM, 0, 5)):
            pairs += 1
    return pairs


@nb.njit(cache=True)
def _phrase_hits(buf, w_start, w_len, w_hash, n_words, ph_slots, ph_hash, fw_slots, fw_hash, fw_mask,
                 ph_off, ph_cps, ph_woff):
    """Number of (n, position) whose word n-gram is one of the phrases."""
    hits = 0
    fmask = len(fw_slots) - 1
    pmask = len(ph_slots) - 1
    for w in range(n_words):
        h0 = w_hash[w]
        j = np.int64(h0 & _U64(fmask))
        lengths = _U64(0)
        while fw_slots[j] >= 0:
            if fw_hash[fw_slots[j]] == h0:
                lengths = fw_mask[fw_slots[j]]
                break
            j = (j + 1) & fmask
        if lengths == 0:
            continue
        for n in range(1, 64):
            if (lengths >> _U64(n)) & _U64(1) == 0 or w + n > n_words:
                continue
            acc = _SEED
            for t in range(n):
                acc = _combine(acc, w_hash[w + t])
            j = np.int64(acc & _U64(pmask))
            while ph_slots[j] >= 0:
                k = ph_slots[j]
                if ph_hash[k] == acc and ph_off[k + 1] - ph_off[k] == n:
                    ok = True
                    for t in range(n):
                        pw = ph_off[k] + t
                        a0, a1 = ph_woff[pw], ph_woff[pw + 1]
                        if a1 - a0 != w_len[w + t] or not _same(ph_cps, a0, buf, w_start[w + t], a1 - a0):
                            ok = False
                            break
                    if ok:
                        hits += 1
                        break
                j = (j + 1) & pmask
    return hits


@nb.njit(cache=True)
def _repetition(ids, n_ids, counts, w_len, n_words, cls_a, cls_b, pos_a, pos_b, cand, cnt, first, keys, vals,
                doc):
    """Top n-gram (n = 2..4) and duplicated n-gram (n = 5..10) character counts."""
    k_a = 0
    for w in range(n_words):
        cls_a[w] = ids[w]
        if counts[ids[w]] >= 2:
            pos_a[k_a] = w
            k_a += 1
    for n in range(2, 11):
        if n_words < n or k_a < 2:
            break
        n_cls, k_b = _ngram_level(n, ids, n_ids, pos_a, k_a, cls_a, cls_b, cand, cnt, first, keys, vals, pos_b)
        if n <= 4:
            best = -1
            best_cnt = 1
            for c in range(n_cls):
                if cnt[c] > best_cnt:  # strict: the earliest of equal counts wins
                    best_cnt = cnt[c]
                    best = c
            if best >= 0:
                chars = 0
                for t in range(first[best], first[best] + n):
                    chars += w_len[t]
                doc[_TOP0 + n - 2] = chars * best_cnt
        else:
            covered_until = 0
            duped = 0
            for k in range(k_b):
                i = pos_b[k]
                for t in range(max(i, covered_until), i + n):
                    duped += w_len[t]
                covered_until = i + n
            doc[_DUPE0 + n - 5] = duped
        cls_a, cls_b = cls_b, cls_a
        pos_a, pos_b = pos_b, pos_a
        k_a = k_b


@nb.njit(cache=True)
def _entropy(counts, n_ids, n_words, term, term_doc, doc_index):
    """sum(-c/T * log(c/T)) in Counter order (first occurrence), left to right
    like ``sum()``; each distinct count's term is computed once per document."""
    e = 0.0
    for c in range(n_ids):
        x = counts[c]
        if x >= _TERM_CACHE:
            e += -x / n_words * np.log(x / n_words)
            continue
        if term_doc[x] != doc_index:
            term[x] = -x / n_words * np.log(x / n_words)
            term_doc[x] = doc_index
        e += term[x]
    return e


@nb.njit(cache=True, nogil=True)
def words_pass(data, starts, ends, py_cps, py_start, py_end, line_off, flags, nfd_lower, exp_off, exp_data,
               ccc, punct, ph_slots, ph_hash, fw_slots, fw_hash, fw_mask, ph_off, ph_cps, ph_woff):
    """Signals of documents ``data[starts[i]:ends[i]]``.

    Where ``py_start[i] >= 0`` the document's normalised code points are taken
    from ``py_cps[py_start[i]:py_end[i]]`` (normalised by Python) instead.
    Returns (doc counts, entropy, per-line words, chars, numeric chars, javascript).
    """
    n = len(starts)
    doc = np.zeros((n, _NDOC), np.int64)
    entropy = np.zeros(n, np.float64)
    total_lines = line_off[n]
    line_words = np.zeros(total_lines, np.int64)
    line_chars = np.zeros(total_lines, np.int64)
    line_numeric = np.zeros(total_lines, np.int64)
    line_js = np.zeros(total_lines, np.int64)
    cap = 16
    wmax = 16
    for i in range(n):
        nbytes = ends[i] - starts[i]
        size = nbytes * 2 + 16  # see unicode_tables: <= 2 code points per byte
        if py_start[i] >= 0:
            size = max(size, py_end[i] - py_start[i] + 16)
        cap = max(cap, size)
        # a word comes from a run of non-space raw characters, runs are separated
        wmax = max(wmax, nbytes // 2 + 2)
    buf = np.empty(cap, np.int32)
    tsize = _pow2_at_least(2 * wmax)
    w_start = np.empty(wmax, np.int32)
    w_len = np.empty(wmax, np.int32)
    w_hash = np.empty(wmax, np.uint64)
    ids = np.empty(wmax, np.int32)
    counts = np.empty(wmax, np.int32)
    rep = np.empty(wmax, np.int32)
    cls_a = np.empty(wmax, np.int32)
    cls_b = np.empty(wmax, np.int32)
    pos_a = np.empty(wmax, np.int32)
    pos_b = np.empty(wmax, np.int32)
    cand = np.empty(wmax, np.int32)
    cnt = np.empty(wmax, np.int32)
    first = np.empty(wmax, np.int32)
    keys = np.empty(tsize, np.int64)
    vals = np.empty(tsize, np.int32)
    slots = vals  # word interning is done before the n-gram levels reuse it
    term = np.zeros(_TERM_CACHE, np.float64)
    term_doc = np.full(_TERM_CACHE, -1, np.int64)
    for i in range(n):
        if py_start[i] >= 0:
            n_cp = py_end[i] - py_start[i]
            for k in range(n_cp):  # (a slice assignment would compile numba's shape-error machinery)
                buf[k] = py_cps[py_start[i] + k]
        else:
            n_cp = _normalize(data, starts[i], ends[i], nfd_lower, exp_off, exp_data, ccc, punct, buf)
        n_words = _split_words(buf, n_cp, flags, w_start, w_len, w_hash, line_off[i], line_off[i + 1] - line_off[i],
                               line_words, line_chars, line_numeric, line_js)
        d = doc[i]
        d[0] = n_words
        chars = 0
        for w in range(n_words):
            chars += w_len[w]
        d[1] = chars
        if n_words == 0:
            continue
        n_ids = _intern(buf, w_start, w_len, w_hash, n_words, slots, ids, counts, rep)
        d[2] = n_ids
        d[3] = _lorem_pairs(buf, w_start, w_len, n_words)
        d[4] = _phrase_hits(buf, w_start, w_len, w_hash, n_words, ph_slots, ph_hash, fw_slots, fw_hash, fw_mask,
                            ph_off, ph_cps, ph_woff)
        _repetition(ids, n_ids, counts, w_len, n_words, cls_a, cls_b, pos_a, pos_b, cand, cnt, first, keys, vals, d)
        entropy[i] = _entropy(counts, n_ids, n_words, term, term_doc, i)
    return doc, entropy, line_words, line_chars, line_numeric, line_js
