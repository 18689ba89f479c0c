"""Compiled kernel: datatrove's English words (spaCy's blank-English tokenizer) and the statistics its
Gopher / FineWeb filters take from them, per document.

Tokenizer (spaCy 3.8 ``Tokenizer.__call__``, re-implemented step by step):
- the text is cut into runs of non-space characters (``str.isspace``); a run that is a tokenizer exception
  (``SPECIALS``) becomes its tokens;
- otherwise ``_split_affixes``: strip one prefix and/or one suffix per round (the suffix searched on the
  string after the prefix), stopping when the rest is an exception or nothing changes;
- ``_attach_tokens``: prefixes, then the rest (an exception, a URL per spaCy's ``URL_MATCH``, or the rest cut
  at its infixes, an infix at position 0 ignored), then the suffixes in reverse;
- ``_apply_special_cases``: runs of tokens that spell an exception containing affixes (``MATCHER``: ``''``,
  ``Mr.``, ``:)`` ...) are found, filtered longest-first, and merged back when nothing separates them.
Which characters are prefixes, suffixes and infixes comes from spaCy's own regexes (``data/dtwords_tables.json``),
as per-code-point flags; the rules' order and look-arounds are written out below. Like spaCy, a chunk's
tokens are cached (per batch): repeated chunks ("the", "said,") cost a hash lookup.

Statistics (datatrove 0.10.1 ``GopherQualityFilter``, ``GopherRepetitionFilter``, ``FineWebQualityFilter``):
word count, non-symbol words (a character outside ``PUNCTUATION_SET``) and their characters, words with a
letter (``str.isalpha``), distinct Gopher stop words, ``find_top_duplicate`` over space-joined 2/3/4-grams
(``Counter.most_common``: the first-seen n-gram among the most frequent) and ``find_all_duplicate`` over
concatenated 5..10-grams (the greedy scan, a repeat being an n-gram string seen at a position it visited).
All lengths are in code points, as Python's ``len``. N-gram identity is exact: token ids are interned
by comparing code points, and concatenated n-grams whose hashes match are compared character by character.

Self-contained on purpose (numba's cache does not notice edits in other modules), like the other kernels.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .hash64 import PRIME as _PRIME
from .hash64 import SEED as _SEED
from .hash64 import U64 as _U64
from .hash64 import mix as _mix
from .utf8 import decode as _decode

# per-code-point flag bits (curate.signals.dtwords builds the table; the kernel compiles these values in)
PRE1 = 1  # a one-character prefix (spaCy prefix_search), '+' excepted
SUF1 = 2  # a one-character suffix without look-behind
ICON = 4  # infix: a symbol of spaCy's LIST_ICONS
LQ = 8  # infix '.': allowed before it (ALPHA_LOWER or a quote)
UQ = 16  # infix '.': allowed after it (ALPHA_UPPER or a quote)
ALPHA = 32  # spaCy's ALPHA
ALNUM = 64  # spaCy's ALPHA or [0-9]
TLD = 128  # URL top-level domain: spaCy's ALPHA_LOWER
DOTPRE = 256  # suffix '.': allowed before it
AU = 512  # suffix '.': after two of these (ALPHA_UPPER)
PUNCT = 1024  # datatrove's PUNCTUATION_SET
ISALPHA = 2048  # str.isalpha
SPACE = 4096  # str.isspace
WORD = 8192  # re \w
DEC = 16384  # re \d (str.isdecimal)
COMPLEX = 32768  # a character some prefix / suffix / infix / URL rule needs (a run without one is one token)
# second flag table (uint8): quick rejections
INFIX_START = 1  # can start an English infix match
SUF_END = 2  # ends a suffix rule's match (a one-character suffix, or the last character of a literal)

#: per-document outputs, in this order (the struct's fields)
FIELDS = (
    "words", "non_symbol_words", "non_symbol_chars", "alpha_words", "stop_words",
    "top_2gram_chars", "top_3gram_chars", "top_4gram_chars",
    "dupe_5gram_chars", "dupe_6gram_chars", "dupe_7gram_chars", "dupe_8gram_chars", "dupe_9gram_chars",
    "dupe_10gram_chars",
)
NFIELDS = len(FIELDS)

# suffix look-behind kinds (curate.signals.dtwords_build)
LB_NONE, LB_DIGIT, LB_DEGREE, LB_DOTPRE, LB_TWO_UPPER = 0, 1, 2, 3, 4

_BASE = _U64(0x100000001B3 * 2 + 1)  # odd: the concatenation hash's base



@nb.njit(cache=True, inline="always")
def hash_cps(cps, s, e):
    """The strings' hash (FNV-1a over code points, mixed with the length): table keys are built with it."""
    h = _SEED
    for i in range(s, e):
        h = (h ^ _U64(cps[i])) * _PRIME
    return _mix(h ^ _U64(e - s))


@nb.njit(cache=True, inline="always")
def _is_digit09(c):
    return 48 <= c <= 57


# --- spaCy's URL_MATCH --------------------------------------------------------------------------------

@nb.njit(cache=True, inline="always")
def _url_char(c):
    # [A-Za-z0-9\u00a1-\uffff]
    return (65 <= c <= 90) or (97 <= c <= 122) or (48 <= c <= 57) or (0xA1 <= c <= 0xFFFF)


@nb.njit(cache=True)
def _tail_ok(cps, t, e, flags):
    """r"(?::\\d{2,5})?(?:[/?#]\\S*)?$" at t."""
    if t == e:
        return True
    c = cps[t]
    if c == 47 or c == 63 or c == 35:
        return True
    if c == 58:
        d = 0
        while t + 1 + d < e and d < 5 and flags[cps[t + 1 + d]] & DEC:
            d += 1
        for k in range(d, 1, -1):
            u = t + 1 + k
            if u == e or cps[u] == 47 or cps[u] == 63 or cps[u] == 35:
                return True
    return False


@nb.njit(cache=True)
def _lit(cps, p, e, a, b, c):
    """cps[p:] starts with the ASCII characters a, b, c (c < 0: two characters)."""
    if p + 1 >= e or cps[p] != a or cps[p + 1] != b:
        return False
    if c < 0:
        return True
    return p + 2 < e and cps[p + 2] == c


@nb.njit(cache=True)
def _dot_groups(cps, p, e, k, flags):
    """r"(?:\\.\\d{1,3}){k}" matches at p (a prefix match)."""
    for g in range(k):
        if p >= e or cps[p] != 46:
            return False
        p += 1
        d = 0
        while p + d < e and d < 3 and flags[cps[p + d]] & DEC:
            d += 1
        if d == 0:
            return False
        if g == k - 1:
            return True
        # the next group needs '.' right after the digits: take the longest run (a shorter one leaves a digit)
        p += d
    return True


@nb.njit(cache=True)
def _octet_lengths(cps, p, e, kind, flags):
    """Bit L set: octet `kind` (0 first, 1 middle, 2 last) of the IP rule can match L characters at p."""
    if p >= e:
        return 0
    m = 0
    c0 = cps[p]
    d0 = (flags[c0] & DEC) != 0
    d1 = p + 1 < e and (flags[cps[p + 1]] & DEC) != 0
    d2 = p + 2 < e and (flags[cps[p + 2]] & DEC) != 0
    c1 = cps[p + 1] if p + 1 < e else -1
    c2 = cps[p + 2] if p + 2 < e else -1
    if kind == 0:  # [1-9]\d?|1\d\d|2[01]\d|22[0-3]
        if 49 <= c0 <= 57:
            m |= 2
            if d1:
                m |= 4
        if (c0 == 49 and d1 and d2) or (c0 == 50 and (c1 == 48 or c1 == 49) and d2) or (
                c0 == 50 and c1 == 50 and 48 <= c2 <= 51):
            m |= 8
    elif kind == 1:  # 1?\d{1,2}|2[0-4]\d|25[0-5]
        if c0 == 49 and d1:
            m |= 4
            if d2:
                m |= 8
        if d0:
            m |= 2
            if d1:
                m |= 4
        if (c0 == 50 and 48 <= c1 <= 52 and d2) or (c0 == 50 and c1 == 53 and 48 <= c2 <= 53):
            m |= 8
    else:  # [1-9]\d?|1\d\d|2[0-4]\d|25[0-4]
        if 49 <= c0 <= 57:
            m |= 2
            if d1:
                m |= 4
        if (c0 == 49 and d1 and d2) or (c0 == 50 and 48 <= c1 <= 52 and d2) or (c0 == 50 and c1 == 53 and 48 <= c2 <= 52):
            m |= 8
    return m


@nb.njit(cache=True)
def _ip_host(cps, h, e, flags):
    """spaCy's IP-address alternative (with its private-range exclusions) and the tail, at h."""
    if (_lit(cps, h, e, 49, 48, -1) and _dot_groups(cps, h + 2, e, 3, flags)) or (
            _lit(cps, h, e, 49, 50, 55) and _dot_groups(cps, h + 3, e, 3, flags)):
        return False
    if ((_lit(cps, h, e, 49, 54, 57) and h + 7 <= e and cps[h + 3] == 46 and _lit(cps, h + 4, e, 50, 53, 52))
            or (_lit(cps, h, e, 49, 57, 50) and h + 7 <= e and cps[h + 3] == 46 and _lit(cps, h + 4, e, 49, 54, 56))) \
            and _dot_groups(cps, h + 7, e, 2, flags):
        return False
    if _lit(cps, h, e, 49, 55, 50) and h + 5 < e and cps[h + 3] == 46:
        a = cps[h + 4]
        b = cps[h + 5]
        if ((a == 49 and 54 <= b <= 57) or (a == 50 and (flags[b] & DEC)) or (a == 51 and 48 <= b <= 49)) and \
                _dot_groups(cps, h + 6, e, 2, flags):
            return False
    m0 = _octet_lengths(cps, h, e, 0, flags)
    for l0 in range(1, 4):
        p1 = h + l0
        if not (m0 >> l0) & 1 or p1 >= e or cps[p1] != 46:
            continue
        m1 = _octet_lengths(cps, p1 + 1, e, 1, flags)
        for l1 in range(1, 4):
            p2 = p1 + 1 + l1
            if not (m1 >> l1) & 1 or p2 >= e or cps[p2] != 46:
                continue
            m2 = _octet_lengths(cps, p2 + 1, e, 1, flags)
            for l2 in range(1, 4):
                p3 = p2 + 1 + l2
                if not (m2 >> l2) & 1 or p3 >= e or cps[p3] != 46:
                    continue
                m3 = _octet_lengths(cps, p3 + 1, e, 2, flags)
                for l3 in range(1, 4):
                    if (m3 >> l3) & 1 and _tail_ok(cps, p3 + 1 + l3, e, flags):
                        return True
    return False


@nb.njit(cache=True)
def _host_ok(cps, h, e, flags):
    """The host (IP or domain + TLD), port and path of spaCy's URL pattern match cps[h:e]."""
    if h >= e:
        return False
    if 49 <= cps[h] <= 57 and _ip_host(cps, h, e, flags):
        return True
    pos = h
    while True:
        q = pos
        while q < e and cps[q] != 46 and (_url_char(cps[q]) or cps[q] == 95 or cps[q] == 45):
            q += 1
        if q >= e or cps[q] != 46:
            return False
        n = q - pos
        if n < 1 or n > 64 or not _url_char(cps[pos]) or not _url_char(cps[q - 1]):
            return False
        t = q + 1
        while t < e and flags[cps[t]] & TLD:
            t += 1
        if 2 <= t - q - 1 <= 63 and _tail_ok(cps, t, e, flags):
            return True
        pos = q + 1


@nb.njit(cache=True)
def _url_match(cps, s, e, flags):
    """spaCy's URL_MATCH on cps[s:e] (no whitespace inside)."""
    dot = False
    for p in range(s, e):
        if cps[p] == 46:
            dot = True
            break
    if not dot:  # both the IP and the domain form need a '.'
        return False
    if _host_ok(cps, s, e, flags):
        return True
    k = s
    while k < e and (flags[cps[k]] & WORD or cps[k] == 43 or cps[k] == 45 or cps[k] == 46):
        k += 1
    if k - s >= 2 and k + 2 < e and cps[k] == 58 and cps[k + 1] == 47 and cps[k + 2] == 47 and \
            _host_ok(cps, k + 3, e, flags):
        return True
    for q in range(s + 1, e):  # noqa: SIM110 (numba: no generators)
        if cps[q] == 64 and _host_ok(cps, q + 1, e, flags):
            return True
    return False


# --- spaCy's special-case matcher ------------------------------------------------------------------------------------

@nb.njit(cache=True)
def _apply_special_cases(cps, n, tok_s, tok_e, tok_sep, sp_tok_off, sp_tok_len, m_slots, m_keys, m_next, m_mask,
                         m_tok_off, m_tok_cps_off, m_tok_cps, m_special, m_first, m_last, m_chain, out_s, out_e,
                         out_sep):
    """spaCy's special-case matcher: runs of tokens spelling an exception with affixes (patterns of two
    tokens or more: a one-token span never changes anything), filtered longest first, then leftmost."""
    # at most m_chain patterns match at one token (they are token-prefixes of each other)
    ms = np.empty(n * m_chain + 1, np.int64)
    me = np.empty(n * m_chain + 1, np.int64)
    mp = np.empty(n * m_chain + 1, np.int64)
    nm = 0
    # (written out without helper calls: an array passed to a helper in a hot loop costs reference counting)
    for i in range(n - 1):
        if tok_sep[i + 1] == 2:
            continue
        a = tok_s[i]
        b = tok_e[i]
        ln = b - a
        if ln > 31:
            continue
        c0 = cps[a]
        c1 = cps[b - 1]
        if c0 < 0x10000 and c1 < 0x10000 and ((np.int64(m_first[c0]) & np.int64(m_last[c1])) >> ln) & 1 == 0:
            continue
        h = _SEED
        for p in range(a, b):
            h = (h ^ _U64(cps[p])) * _PRIME
        h = _mix(h ^ _U64(ln))
        slot = np.int64(h & _U64(m_mask))
        while m_slots[slot] >= 0:
            if m_keys[slot] == h:
                pid = m_slots[slot]
                while pid >= 0:
                    t0 = m_tok_off[pid]
                    k = m_tok_off[pid + 1] - t0
                    ok = i + k <= n
                    j = 0
                    while ok and j < k:
                        if j > 0 and tok_sep[i + j] == 2:
                            ok = False
                            break
                        q0 = m_tok_cps_off[t0 + j]
                        ql = m_tok_cps_off[t0 + j + 1] - q0
                        if tok_e[i + j] - tok_s[i + j] != ql:
                            ok = False
                        else:
                            for u in range(ql):
                                if m_tok_cps[q0 + u] != cps[tok_s[i + j] + u]:
                                    ok = False
                                    break
                        j += 1
                    if ok:
                        ms[nm] = i
                        me[nm] = i + k
                        mp[nm] = pid
                        nm += 1
                    pid = m_next[pid]
                break
            slot = (slot + 1) & m_mask
    if nm == 0:
        return n
    # filter: longest first, then leftmost; every span marks its tokens, kept or not
    order = np.argsort(-(me[:nm] - ms[:nm]) * (n + 1) + ms[:nm], kind="mergesort")
    seen = np.zeros(n, np.bool_)
    keep = np.zeros(nm, np.bool_)
    for o in order:
        a = ms[o]
        b = me[o]
        if not seen[a] and not seen[b - 1]:
            keep[o] = True
        for t in range(a, b):
            seen[t] = True
    # retokenize the kept spans whose tokens touch (their text is then the exception's)
    repl = np.full(n, -1, np.int64)
    for o in range(nm):
        if keep[o]:
            glued = True
            for t in range(ms[o] + 1, me[o]):
                if tok_sep[t] != 0:
                    glued = False
            if glued:
                repl[ms[o]] = o
    m = 0
    i = 0
    while i < n:
        o = repl[i]
        if o < 0:
            out_s[m] = tok_s[i]
            out_e[m] = tok_e[i]
            out_sep[m] = tok_sep[i]
            m += 1
            i += 1
            continue
        k = m_special[mp[o]]
        p = tok_s[i]
        sep = tok_sep[i]
        for j in range(sp_tok_off[k], sp_tok_off[k + 1]):
            out_s[m] = p
            out_e[m] = p + sp_tok_len[j]
            out_sep[m] = sep
            sep = 0
            p += sp_tok_len[j]
            m += 1
        i = me[o]
    for t in range(m):
        tok_s[t] = out_s[t]
        tok_e[t] = out_e[t]
        tok_sep[t] = out_sep[t]
    return m


# --- the tokenizer ------------------------------------------------------------------------------------
# Written out as one function on purpose: numba reference-counts every array handed to a helper, which in a
# per-chunk loop costs more than the rules themselves. Only the (rare) URL check is a helper.

#: chunk cache limits (spaCy caches chunks too): distinct chunks and their characters per batch
CACHE_ENTRIES = 1 << 16
CACHE_CHARS = 1 << 20


@nb.njit(cache=True)
def new_cache(entries, chars):
    """An empty chunk -> tokens cache. A chunk's tokens depend on the chunk alone and web text repeats its
    chunks ("the", "said,", "it."), so each distinct chunk goes through the rules once per batch."""
    cap = 1
    while cap < 2 * entries:
        cap *= 2
    return (np.full(cap, -1, np.int64), np.zeros(entries, np.uint64), np.zeros(entries + 1, np.int64),
            np.zeros(chars, np.int32), np.zeros(entries + 1, np.int64), np.zeros(chars, np.int32),
            np.zeros(1, np.int64))


@nb.njit(cache=True)
def new_work(cap):
    """Scratch arrays for `tokenize`, for texts of up to cap code points: prefixes, suffixes (start, end),
    the special-case matcher's output (start, end, separator)."""
    return (np.zeros(cap, np.int32), np.zeros(cap, np.int32), np.zeros(cap, np.int32), np.zeros(cap, np.int32),
            np.zeros(cap, np.int32), np.zeros(cap, np.int32), np.zeros(cap, np.int8))


@nb.njit(cache=True, inline="always")
def _emit(tok_s, tok_e, tok_sep, n, s, e, sep):
    """Token n is cps[s:e]; `sep` says what separates it from the one before. Returns n + 1."""
    tok_s[n] = s
    tok_e[n] = e
    tok_sep[n] = sep
    return n + 1


@nb.njit(cache=True, inline="always")
def _cached_chunk(cps, a, e, h, slot, c_slots, c_hash, c_off, c_cps, c_toff, c_tlen, c_mask, tok_s, tok_e, tok_sep, n, sep):
    """A chunk seen before in this batch: its tokens from the cache. Returns the token count after it (-1: not
    cached) and the slot where probing stopped (where a chunk not cached is remembered)."""
    ln = e - a
    while c_slots[slot] >= 0:
        k = c_slots[slot]
        if c_hash[k] == h and c_off[k + 1] - c_off[k] == ln:
            same = True
            base = c_off[k]
            for j in range(ln):
                if c_cps[base + j] != cps[a + j]:
                    same = False
                    break
            if same:
                p = a
                for j in range(c_toff[k], c_toff[k + 1]):
                    n = _emit(tok_s, tok_e, tok_sep, n, p, p + c_tlen[j], sep)
                    p += c_tlen[j]
                    sep = 0
                return n, slot
        slot = (slot + 1) & c_mask
    return -1, slot


@nb.njit(cache=True, inline="always")
def _remember_chunk(cps, a, e, h, slot, n0, n, tok_s, tok_e, c_slots, c_hash, c_off, c_cps, c_toff, c_tlen, c_state):
    """Store a chunk's tokens in the cache while it has room."""
    ln = e - a
    m = c_state[0]
    if m < len(c_hash) and c_off[m] + ln <= len(c_cps) and c_toff[m] + (n - n0) <= len(c_tlen):
        c_hash[m] = h
        for j in range(ln):
            c_cps[c_off[m] + j] = cps[a + j]
        c_off[m + 1] = c_off[m] + ln
        for j in range(n - n0):
            c_tlen[c_toff[m] + j] = tok_e[n0 + j] - tok_s[n0 + j]
        c_toff[m + 1] = c_toff[m] + (n - n0)
        c_slots[slot] = m
        c_state[0] = m + 1


@nb.njit(cache=True, inline="always")
def _exception(cps, qs, qe, sp_slots, sp_keys, sp_off, sp_data, sp_mask):
    """The tokenizer exception (SPECIALS) that cps[qs:qe] spells, or -1."""
    qn = qe - qs
    hq = hash_cps(cps, qs, qe)   # the table's own key function
    j = np.int64(hq & _U64(sp_mask))
    while sp_slots[j] >= 0:
        kk = sp_slots[j]
        if sp_keys[kk] == hq and sp_off[kk + 1] - sp_off[kk] == qn:
            ok = True
            for u in range(qn):
                if sp_data[sp_off[kk] + u] != cps[qs + u]:
                    ok = False
                    break
            if ok:
                return kk
        j = (j + 1) & sp_mask
    return -1


@nb.njit(cache=True, inline="always")
def _prefix_len(cps, cs, ce, flags):
    """spaCy's prefix_search at cs: the length of the first alternative that matches (0: none)."""
    c = cps[cs]
    if c == 46:  # r"\.\.+"
        q = cs
        while q < ce and cps[q] == 46:
            q += 1
        if q - cs >= 2:
            return q - cs
    elif c == 43:  # r"\+(?![0-9])"
        if not (cs + 1 < ce and _is_digit09(cps[cs + 1])):
            return 1
    elif c == 85 and cs + 2 < ce and cps[cs + 1] == 83 and cps[cs + 2] == 36:  # US$
        return 3
    elif (c == 67 or c == 65) and cs + 1 < ce and cps[cs + 1] == 36:  # C$ A$
        return 2
    elif flags[c] & PRE1:
        return 1
    return 0


@nb.njit(cache=True, inline="always")
def _literal_at(cps, p, lit_cps, lit_off, j):
    """Suffix literal j is spelled at cps[p:]."""
    for u in range(lit_off[j + 1] - lit_off[j]):
        if lit_cps[lit_off[j] + u] != cps[p + u]:
            return False
    return True


@nb.njit(cache=True, inline="always")
def _suffix_len(cps, xs, ce, flags, flags2, lit_cps, lit_off, lit_lb, n_plain):
    """spaCy's suffix_search on cps[xs:ce]: the length from the leftmost start of a rule matching up to the end."""
    if ce <= xs:
        return 0
    q = ce
    while q > xs and cps[q - 1] == 46:
        q -= 1
    if ce - q >= 2:  # r"\.\.+$" (no other rule ends in two dots)
        return ce - q
    c = cps[ce - 1]
    if not flags2[c] & SUF_END:
        return 0
    best = ce - 1 if flags[c] & SUF1 else ce
    for j in range(n_plain):  # literals without a digit look-behind
        p = ce - (lit_off[j + 1] - lit_off[j])
        if p < xs or p >= best or lit_cps[lit_off[j + 1] - 1] != c or not _literal_at(cps, p, lit_cps, lit_off, j):
            continue
        lb = lit_lb[j]
        if lb == LB_NONE:
            best = p
        elif lb == LB_DEGREE:
            if p - 2 >= xs and cps[p - 2] == 0xB0 and (
                    cps[p - 1] == 70 or cps[p - 1] == 102 or cps[p - 1] == 67
                    or cps[p - 1] == 99 or cps[p - 1] == 75 or cps[p - 1] == 107):
                best = p
        elif lb == LB_DOTPRE:
            if p - 1 >= xs and flags[cps[p - 1]] & DOTPRE:
                best = p
        elif lb == LB_TWO_UPPER and p - 2 >= xs and flags[cps[p - 2]] & AU and flags[cps[p - 1]] & AU:
            best = p
    digit = False
    for p in range(max(xs, ce - 7), ce - 1):
        if _is_digit09(cps[p]):
            digit = True
            break
    if digit:  # literals after [0-9]: units, currencies, '+'
        for j in range(n_plain, len(lit_lb)):
            p = ce - (lit_off[j + 1] - lit_off[j])
            if p - 1 < xs or p >= best or lit_cps[lit_off[j + 1] - 1] != c or not _is_digit09(cps[p - 1]):
                continue
            if _literal_at(cps, p, lit_cps, lit_off, j):
                best = p
    return ce - best


@nb.njit(cache=True, inline="always")
def _infix_end(cps, cs, ce, p, flags):
    """Where the first English infix rule matching at p ends (-1: none); a caller skips a match at cs."""
    c = cps[p]
    m = -1
    if c == 46 and p + 1 < ce and cps[p + 1] == 46:  # r"\.\.+"
        m = p
        while m < ce and cps[m] == 46:
            m += 1
    elif c == 0x2026 or flags[c] & ICON:  # "…", LIST_ICONS
        m = p + 1
    elif p > cs:
        b = cps[p - 1]
        nx = cps[p + 1] if p + 1 < ce else -1
        fn = flags[nx] if nx >= 0 else 0
        # one branch per spaCy rule, in its order
        if _is_digit09(b) and (c == 43 or c == 45 or c == 42 or c == 94) and (  # noqa: SIM114
                _is_digit09(nx) or nx == 45):  # (?<=[0-9])[+\-*^](?=[0-9-])
            m = p + 1
        elif c == 46 and flags[b] & LQ and fn & UQ:  # noqa: SIM114 (?<=[{al}{q}])\.(?=[{au}{q}])
            m = p + 1
        elif c == 44 and flags[b] & ALPHA and fn & ALPHA:  # noqa: SIM114 (?<=[{a}]),(?=[{a}])
            m = p + 1
        elif flags[b] & ALNUM:
            # (?<=[{a}0-9])(?:-|–|—|--|---|——|~)(?=[{a}]): the first alternative followed by a letter
            if c == 45:
                for qn in range(1, 4):
                    if p + qn - 1 >= ce or cps[p + qn - 1] != 45:
                        break
                    if p + qn < ce and flags[cps[p + qn]] & ALPHA:
                        m = p + qn
                        break
            elif c == 0x2013 or c == 0x7E:
                if fn & ALPHA:
                    m = p + 1
            elif c == 0x2014:
                if fn & ALPHA:
                    m = p + 1
                elif nx == 0x2014 and p + 2 < ce and flags[cps[p + 2]] & ALPHA:
                    m = p + 2
            elif (c == 58 or c == 60 or c == 62 or c == 61 or c == 47) and fn & ALPHA:
                m = p + 1  # (?<=[{a}0-9])[:<>=/](?=[{a}])
    return m


@nb.njit(cache=True, inline="always")
def _split_infixes(cps, cs, ce, flags, flags2, tok_s, tok_e, tok_sep, n, sep):
    """spaCy's infix_finditer over cps[cs:ce]: the pieces between infixes and the infixes, as tokens.
    Returns the token count and the separator for the next token."""
    start = cs
    p = cs
    while p < ce:
        if not (flags2[cps[p]] & INFIX_START):
            p += 1
            continue
        m = _infix_end(cps, cs, ce, p, flags)
        if m < 0:
            p += 1
            continue
        if p != cs:
            if p != start:
                n = _emit(tok_s, tok_e, tok_sep, n, start, p, sep)
                sep = 0
            n = _emit(tok_s, tok_e, tok_sep, n, p, m, sep)
            sep = 0
            start = m
        p = m
    if start < ce:
        n = _emit(tok_s, tok_e, tok_sep, n, start, ce, sep)
        sep = 0
    return n, sep


@nb.njit(cache=True)
def tokenize(cps, ncp, flags, flags2, sp, mt, lit_cps, lit_off, lit_lb, n_plain, tok_s, tok_e, tok_sep, work, cache):
    """spaCy's tokens of cps[:ncp] (whitespace tokens left out, as datatrove's strip does): their count; the
    spans are in tok_s/tok_e. `work`: scratch from `new_work`; `cache`: from `new_cache` (kept across calls).

    Per chunk (a run of non-space characters): the chunk cache, then `_split_affixes` (prefixes and
    suffixes, with the exception lookups each round needs), `_attach_tokens` (prefixes, the rest: an
    exception, a URL or its infix pieces, then the suffixes), then the chunk is remembered; at the end
    `_apply_special_cases` merges exceptions that span tokens."""
    pre_s, pre_e, suf_s, suf_e, out_s, out_e, out_sep = work
    sp_slots, sp_keys, sp_off, sp_data, sp_mask, sp_tok_off, sp_tok_len, sp_max, sp_first, sp_last = sp
    m_slots, m_keys, m_next, m_mask, m_tok_off, m_tok_cps_off, m_tok_cps, m_special, m_first, m_last, m_chain = mt
    c_slots, c_hash, c_off, c_cps, c_toff, c_tlen, c_state = cache
    c_mask = len(c_slots) - 1
    n = 0
    pos = 0
    sep = 2
    while pos < ncp:
        if flags[cps[pos]] & SPACE:
            a = pos
            while pos < ncp and flags[cps[pos]] & SPACE:
                pos += 1
            # one ' ' sets the previous token's `spacy`; anything else leaves a whitespace token between
            sep = 1 if (pos - a == 1 and cps[a] == 32) else 2
            continue
        # a chunk: a run of non-space characters; its hash and how many COMPLEX characters it holds
        a = pos
        ncomplex = 0
        h = _SEED
        while pos < ncp:
            c = cps[pos]
            f = flags[c]
            if f & SPACE:
                break
            if f & COMPLEX:
                ncomplex += 1
            h = (h ^ _U64(c)) * _PRIME
            pos += 1
        e = pos
        h = _mix(h ^ _U64(e - a))
        slot = np.int64(h & _U64(c_mask))
        hit, slot = _cached_chunk(cps, a, e, h, slot, c_slots, c_hash, c_off, c_cps, c_toff, c_tlen, c_mask, tok_s, tok_e, tok_sep, n, sep)
        if hit >= 0:
            n = hit
            sep = 2
            continue
        n0 = n

        # ---- spaCy's _split_affixes on cps[a:e] --------------------------------------------------------
        # Each round needs the exceptions lookup of the string (k_cur), of the string minus its prefix
        # (k_pre) and minus its suffix (k_suf); prefix and suffix are pure, so all are computed up front.
        # A string without COMPLEX characters has no prefix, suffix, infix or URL: the loop ends there.
        npre = 0
        nsuf = 0
        cs = a
        ce = e
        last = -1
        k_cur = -1
        cur_known = False
        while ce > cs and ce - cs != last:
            pre = 0
            suf = 0
            if ncomplex > 0:
                pre = _prefix_len(cps, cs, ce, flags)
                suf = _suffix_len(cps, cs + pre, ce, flags, flags2, lit_cps, lit_off, lit_lb, n_plain)
            # exception lookups: 0 the string (unless known), 1 minus the prefix, 2 minus the suffix
            k_pre = -1
            k_suf = -1
            for qi in range(3):
                if qi == 0:
                    if cur_known:
                        continue
                    qs = cs
                    qe = ce
                elif qi == 1:
                    if pre == 0 or ce <= cs + pre:
                        continue
                    qs = cs + pre
                    qe = ce
                else:
                    if suf == 0 or ce - suf <= cs:
                        continue
                    qs = cs
                    qe = ce - suf
                kq = -1
                qn = qe - qs
                if qn <= sp_max:
                    c0 = cps[qs]
                    c1 = cps[qe - 1]
                    if c0 >= 0x10000 or c1 >= 0x10000 or \
                            ((np.int64(sp_first[c0]) & np.int64(sp_last[c1])) >> qn) & 1 != 0:
                        kq = _exception(cps, qs, qe, sp_slots, sp_keys, sp_off, sp_data, sp_mask)
                if qi == 0:
                    k_cur = kq
                    cur_known = True
                elif qi == 1:
                    k_pre = kq
                else:
                    k_suf = kq
            if k_cur >= 0:
                break
            last = ce - cs
            if k_pre >= 0:
                pre_s[npre] = cs
                pre_e[npre] = cs + pre
                npre += 1
                cs += pre
                k_cur = k_pre
                break
            if k_suf >= 0:
                suf_s[nsuf] = ce - suf
                suf_e[nsuf] = ce
                nsuf += 1
                ce -= suf
                k_cur = k_suf
                break
            if pre:
                pre_s[npre] = cs
                pre_e[npre] = cs + pre
                npre += 1
                for p in range(cs, cs + pre):
                    if flags[cps[p]] & COMPLEX:
                        ncomplex -= 1
                cs += pre
                cur_known = False
            if suf:
                suf_s[nsuf] = ce - suf
                suf_e[nsuf] = ce
                nsuf += 1
                for p in range(ce - suf, ce):
                    if flags[cps[p]] & COMPLEX:
                        ncomplex -= 1
                ce -= suf
                cur_known = False

        # ---- spaCy's _attach_tokens --------------------------------------------------------------------
        for j in range(npre):
            n = _emit(tok_s, tok_e, tok_sep, n, pre_s[j], pre_e[j], sep)
            sep = 0
        if ce > cs:
            if not cur_known:  # only when the loop ended on an emptied or unchanged string: look it up
                k_cur = _exception(cps, cs, ce, sp_slots, sp_keys, sp_off, sp_data, sp_mask) if ce - cs <= sp_max else -1
            dot = False
            if k_cur < 0 and ncomplex > 0:
                for p in range(cs, ce):
                    if cps[p] == 46:
                        dot = True
                        break
            if k_cur >= 0:
                p = cs
                for j in range(sp_tok_off[k_cur], sp_tok_off[k_cur + 1]):
                    n = _emit(tok_s, tok_e, tok_sep, n, p, p + sp_tok_len[j], sep)
                    p += sp_tok_len[j]
                    sep = 0
            elif ncomplex == 0 or (dot and _url_match(cps, cs, ce, flags)):
                n = _emit(tok_s, tok_e, tok_sep, n, cs, ce, sep)
                sep = 0
            else:
                n, sep = _split_infixes(cps, cs, ce, flags, flags2, tok_s, tok_e, tok_sep, n, sep)
        for j in range(nsuf - 1, -1, -1):
            n = _emit(tok_s, tok_e, tok_sep, n, suf_s[j], suf_e[j], sep)
            sep = 0

        _remember_chunk(cps, a, e, h, slot, n0, n, tok_s, tok_e, c_slots, c_hash, c_off, c_cps, c_toff, c_tlen, c_state)
        sep = 2
    return _apply_special_cases(cps, n, tok_s, tok_e, tok_sep, sp_tok_off, sp_tok_len, m_slots, m_keys, m_next,
                                m_mask, m_tok_off, m_tok_cps_off, m_tok_cps, m_special, m_first, m_last, m_chain,
                                out_s, out_e, out_sep)


# --- statistics ---------------------------------------------------------------------------------------

@nb.njit(cache=True)
def _stats(cps, n, tok_s, tok_e, flags, stop_cps, stop_off, out, ids, lvl, cnt, first, slots, skeys, prefix_h,
           prefix_c, pw):
    out[0] = n
    nonsym = 0
    nonsym_chars = 0
    alpha = 0
    stop_mask = 0
    for t in range(n):
        a = tok_s[t]
        b = tok_e[t]
        ns = False
        al = False
        for p in range(a, b):
            f = flags[cps[p]]
            if not (f & PUNCT):
                ns = True
            if f & ISALPHA:
                al = True
        if ns:
            nonsym += 1
            nonsym_chars += b - a
        if al:
            alpha += 1
        if 2 <= b - a <= 4:
            for w in range(len(stop_off) - 1):
                if stop_off[w + 1] - stop_off[w] == b - a:
                    same = True
                    for u in range(b - a):
                        if stop_cps[stop_off[w] + u] != cps[a + u]:
                            same = False
                            break
                    if same:
                        stop_mask |= 1 << w
    out[1] = nonsym
    out[2] = nonsym_chars
    out[3] = alpha
    sw = 0
    while stop_mask:
        sw += stop_mask & 1
        stop_mask >>= 1
    out[4] = sw
    for k in range(5, 14):
        out[k] = 0
    if n == 0:
        return
    cap = 1
    while cap < 2 * n + 2:
        cap *= 2
    mask = cap - 1
    # token ids (exact: code points compared), numbered in first-occurrence order
    for i in range(cap):
        slots[i] = -1
    nid = 0
    for t in range(n):
        a = tok_s[t]
        ln = tok_e[t] - a
        h = _SEED
        for p in range(a, a + ln):
            h = (h ^ _U64(cps[p])) * _PRIME
        h = _mix(h ^ _U64(ln))
        i = np.int64(h & _U64(mask))
        while True:
            r = slots[i]
            if r < 0:
                slots[i] = t
                skeys[i] = nid
                ids[t] = nid
                first[nid] = t
                nid += 1
                break
            if tok_e[r] - tok_s[r] == ln:
                b = tok_s[r]
                same = True
                for u in range(ln):
                    if cps[b + u] != cps[a + u]:
                        same = False
                        break
                if same:
                    ids[t] = skeys[i]
                    break
            i = (i + 1) & mask
    # top 2/3/4-grams over space-joined words: level-by-level interning of (previous level id, next word id)
    for t in range(n):
        lvl[t] = ids[t]
    for g in range(2, 5):
        m = n - g + 1
        if m <= 0:
            break
        for i in range(cap):
            slots[i] = -1
        nid = 0
        for t in range(m):
            key = lvl[t] * (n + 1) + ids[t + g - 1]
            i = np.int64(_mix(_U64(key)) & _U64(mask))
            while True:
                r = slots[i]
                if r < 0:
                    slots[i] = nid
                    skeys[i] = key
                    lvl[t] = nid
                    cnt[nid] = 1
                    first[nid] = t
                    nid += 1
                    break
                if skeys[i] == key:
                    lvl[t] = r
                    cnt[r] += 1
                    break
                i = (i + 1) & mask
        best = 0
        for j in range(1, nid):
            if cnt[j] > cnt[best]:
                best = j
        t = first[best]
        chars = g - 1  # " ".join
        for u in range(t, t + g):
            chars += tok_e[u] - tok_s[u]
        out[3 + g] = chars * cnt[best]
    # duplicate 5..10-grams over concatenated words: datatrove's greedy scan
    prefix_h[0] = _U64(0)
    prefix_c[0] = 0
    for t in range(n):
        h = prefix_h[t]
        for p in range(tok_s[t], tok_e[t]):
            h = h * _BASE + _U64(cps[p])
        prefix_h[t + 1] = h
        prefix_c[t + 1] = prefix_c[t] + tok_e[t] - tok_s[t]
    for g in range(5, 11):
        if n - g + 1 <= 0:
            break
        for i in range(cap):
            slots[i] = -1
        total = 0
        idx = 0
        while idx < n - g + 1:
            ln = prefix_c[idx + g] - prefix_c[idx]
            h = prefix_h[idx + g] - prefix_h[idx] * pw[ln]
            key = _mix(h ^ _U64(ln))
            i = np.int64(key & _U64(mask))
            found = False
            while True:
                r = slots[i]
                if r < 0:
                    break
                if skeys[i] == np.int64(key) and prefix_c[r + g] - prefix_c[r] == ln:
                    # "".join(tokens[r:r+g]) == "".join(tokens[idx:idx+g]), character by character
                    same = True
                    ti = r
                    pi = tok_s[r]
                    tj = idx
                    pj = tok_s[idx]
                    while ti < r + g and tj < idx + g:
                        if pi == tok_e[ti]:
                            ti += 1
                            if ti < r + g:
                                pi = tok_s[ti]
                            continue
                        if pj == tok_e[tj]:
                            tj += 1
                            if tj < idx + g:
                                pj = tok_s[tj]
                            continue
                        if cps[pi] != cps[pj]:
                            same = False
                            break
                        pi += 1
                        pj += 1
                    if same:
                        found = True
                        break
                i = (i + 1) & mask
            if found:
                total += ln
                idx += g
            else:
                slots[i] = idx
                skeys[i] = np.int64(key)
                idx += 1
        out[g + 3] = total


@nb.njit(cache=True, nogil=True)
def stats_pass(data, starts, ends, flags, flags2, sp, mt, lit_cps, lit_off, lit_lb, n_plain, stop_cps, stop_off):
    """Per document (rows of the result): the FIELDS above."""
    ndoc = len(starts)
    out = np.zeros((ndoc, NFIELDS), np.int64)
    longest = 1
    total = 0
    for d in range(ndoc):
        longest = max(longest, ends[d] - starts[d])
        total += ends[d] - starts[d]
    # scratch for the longest document (code points <= UTF-8 bytes, tokens <= code points): ~90 bytes per byte
    cap = longest + 1
    cps = np.zeros(cap, np.int32)
    tok_s = np.zeros(cap, np.int32)
    tok_e = np.zeros(cap, np.int32)
    tok_sep = np.zeros(cap, np.int8)
    work = new_work(cap)
    cache = new_cache(min(CACHE_ENTRIES, total // 2 + 16), min(CACHE_CHARS, total + 16))
    ids = np.zeros(cap, np.int32)
    lvl = np.zeros(cap, np.int32)
    cnt = np.zeros(cap, np.int32)
    first = np.zeros(cap, np.int32)
    tcap = 1
    while tcap < 2 * cap + 2:
        tcap *= 2
    slots = np.zeros(tcap, np.int32)
    skeys = np.zeros(tcap, np.int64)
    prefix_h = np.zeros(cap + 1, np.uint64)
    prefix_c = np.zeros(cap + 1, np.int32)
    pw = np.zeros(cap + 1, np.uint64)
    pw[0] = _U64(1)
    for i in range(1, cap + 1):
        pw[i] = pw[i - 1] * _BASE
    for d in range(ndoc):
        p = starts[d]
        end = ends[d]
        ncp = 0
        while p < end:
            c, w = _decode(data, p, end)
            cps[ncp] = c
            ncp += 1
            p += w
        n = tokenize(cps, ncp, flags, flags2, sp, mt, lit_cps, lit_off, lit_lb, n_plain, tok_s, tok_e, tok_sep, work,
                     cache)
        _stats(cps, n, tok_s, tok_e, flags, stop_cps, stop_off, out[d], ids, lvl, cnt, first, slots, skeys,
               prefix_h, prefix_c, pw)
    return out
