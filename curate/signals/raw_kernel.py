"""One compiled pass over the raw UTF-8 text: everything RPv2 derives from raw
words, raw lines and raw characters.

Why one pass: the reference code runs a regex or a Python loop per signal; here
each byte is decoded once and feeds every counter at the same time (WordPunct
tokens, the sentence regex as a state machine, line tails and heads, symbol
counts). Results are integer counts; ratios are formed later with numpy so
that they are computed with exactly the operations the reference uses.

Self-contained on purpose: numba's on-disk cache does not notice edits in other
modules, so a kernel and the helpers it calls live in the same file.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .unicode_tables import LOWER_OR_TITLE, SPACE, UPPER, WORD
from .utf8 import decode as _decode, same_bytes

#: per-document integer outputs, column order of the ``doc`` matrix
DOC_FIELDS = (
    "n_chars",  # len(text) in code points
    "n_words",  # WordPunct tokens
    "n_alpha_words",  # tokens containing [a-zA-Z]
    "n_caps_words",  # tokens with str.isupper()
    "n_stop_words",  # tokens in the stop-word set
    "n_sentences",  # len(re.findall(r"\b[^.!?]+[.!?]*", text))
    "n_symbols",  # text.count("#") + text.count("...") + text.count("…")
    "n_curly",  # text.count("{") + text.count("}")
    "n_lines",
    "n_ellipsis_lines",  # lines whose rstrip() ends with "..." or "…"
)
_NDOC = len(DOC_FIELDS)

_BULLETS = (0x2022, 0x2023, 0x25B6, 0x25C0, 0x25E6, 0x25A0, 0x25A1, 0x25AA, 0x25AB, 0x2013)

_U64 = np.uint64


@nb.njit(cache=True)
def _pack(data, start, end):
    """First 16 bytes of ``data[start:end]`` as two little-endian integers:
    with the length, an exact key for short byte strings."""
    k0 = _U64(0)
    k1 = _U64(0)
    for t in range(min(end - start, 16)):
        if t < 8:
            k0 |= _U64(data[start + t]) << _U64(8 * t)
        else:
            k1 |= _U64(data[start + t]) << _U64(8 * (t - 8))
    return k0, k1


@nb.njit(cache=True)
def _slot(k0, k1, length, mask):
    h = k0 ^ (k1 * _U64(0x9E3779B97F4A7C15)) ^ (_U64(length) * _U64(0xC2B2AE3D27D4EB4F))
    h ^= h >> _U64(33)
    h *= _U64(0xFF51AFD7ED558CCD)
    h ^= h >> _U64(29)
    return np.int64(h & _U64(mask))


@nb.njit(cache=True)
def build_word_set(data, offsets):
    """Open-addressing table over byte strings ``data[offsets[k]:offsets[k+1]]``.

    Returns (slots, keys) where ``keys[k] = (first 8 bytes, next 8 bytes,
    length)``; strings longer than 16 bytes are also compared byte by byte.
    """
    n = len(offsets) - 1
    size = 16
    while size < 4 * n:
        size *= 2
    slots = np.full(size, -1, np.int64)
    keys = np.zeros((max(n, 1), 3), np.uint64)
    for k in range(n):
        s, e = offsets[k], offsets[k + 1]
        k0, k1 = _pack(data, s, e)
        keys[k, 0] = k0
        keys[k, 1] = k1
        keys[k, 2] = e - s
        j = _slot(k0, k1, e - s, size - 1)
        while slots[j] >= 0:
            j = (j + 1) & (size - 1)
        slots[j] = k
    return slots, keys


@nb.njit(cache=True, inline="always")
def _in_word_set(k0, k1, text, s, e, slots, keys, set_data, set_off):
    """Is ``text[s:e]`` (whose first 16 bytes pack to k0, k1) in the set?"""
    mask = len(slots) - 1
    j = _slot(k0, k1, e - s, mask)
    while slots[j] >= 0:
        k = slots[j]
        if keys[k, 0] == k0 and keys[k, 1] == k1 and keys[k, 2] == e - s:
            if e - s <= 16 or same_bytes(set_data, set_off[k] + 16, text, s + 16, e - s - 16):
                return True
        j = (j + 1) & mask
    return False


@nb.njit(cache=True)
def _is_bullet(cp):
    for b in _BULLETS:
        if cp == b:
            return True
    return False


@nb.njit(cache=True)
def _one_doc(data, start, end, flags, sw_slots, sw_keys, sw_data, sw_off, sw_max, sw_first,
             doc, line0, upper_cnt, line_len, terminal, bullet):
    n_chars = 0
    n_words = 0
    n_alpha = 0
    n_caps = 0
    n_stop = 0
    n_sent = 0
    n_sym = 0
    n_curly = 0
    n_lines = 0
    n_ell_lines = 0
    # WordPunct token state: 0 none, 1 \w+ run, 2 [^\w\s]+ run
    tok = 0
    tok_start = 0
    tok_len = 0
    tok_alpha = False
    tok_kill = False
    tok_cased = False
    tok_first_upper = False
    tok_k0 = _U64(0)
    tok_k1 = _U64(0)
    # sentence regex state: 0 searching, 1 in [^.!?]+, 2 in [.!?]*
    sent = 0
    prev_word = False
    dots = 0
    # current line
    ln_len = 0
    ln_upper = 0
    ln_first = -1
    ln_last = -1
    ln_tail_dots = False
    prev1 = 0
    prev2 = 0
    p = start
    while p <= end:
        if p < end:
            cp, w = _decode(data, p, end)
        else:
            cp, w = -1, 0  # sentinel: flush everything
        f = flags[cp] if cp >= 0 else np.uint8(SPACE)
        is_space = (f & SPACE) != 0
        is_word = (f & WORD) != 0
        ctype = 0 if is_space else (1 if is_word else 2)
        # --- WordPunct tokens
        if ctype != tok:
            if tok != 0:
                n_words += 1
                if tok_alpha:
                    n_alpha += 1
                if (tok_first_upper if tok_len == 1 else (tok_cased and not tok_kill)):
                    n_caps += 1
                if (p - tok_start <= sw_max and sw_first[data[tok_start]]
                        and _in_word_set(tok_k0, tok_k1, data, tok_start, p, sw_slots, sw_keys, sw_data, sw_off)):
                    n_stop += 1
            tok = ctype
            tok_start = p
            tok_len = 0
            tok_alpha = False
            tok_kill = False
            tok_cased = False
            tok_first_upper = (f & UPPER) != 0
            tok_k0 = _U64(0)
            tok_k1 = _U64(0)
        if cp < 0:
            break
        if ctype != 0:
            # pack the token's first 16 bytes as we go (its stop-word key)
            nb_ = p - tok_start
            if nb_ < 16:
                if w == 1:
                    if nb_ < 8:
                        tok_k0 |= _U64(data[p]) << _U64(8 * nb_)
                    else:
                        tok_k1 |= _U64(data[p]) << _U64(8 * (nb_ - 8))
                else:
                    for t in range(min(w, 16 - nb_)):
                        q = nb_ + t
                        if q < 8:
                            tok_k0 |= _U64(data[p + t]) << _U64(8 * q)
                        else:
                            tok_k1 |= _U64(data[p + t]) << _U64(8 * (q - 8))
            tok_len += 1
            if (65 <= cp <= 90) or (97 <= cp <= 122):
                tok_alpha = True
            if (f & LOWER_OR_TITLE) != 0:
                tok_kill = True
            elif (f & UPPER) != 0:
                tok_cased = True
        # --- sentences: findall(r"\b[^.!?]+[.!?]*")
        is_end = cp == 46 or cp == 33 or cp == 63
        if sent == 1:
            if is_end:
                sent = 2
        elif sent == 2 and not is_end:
            sent = 0
        if sent == 0 and not is_end and is_word != prev_word:
            n_sent += 1
            sent = 1
        prev_word = is_word
        # --- symbols
        if cp == 46:
            dots += 1
        else:
            n_sym += dots // 3
            dots = 0
            if cp == 35 or cp == 0x2026:
                n_sym += 1
            elif cp == 123 or cp == 125:
                n_curly += 1
        # --- lines
        n_chars += 1
        ln_len += 1
        if (f & UPPER) != 0:
            ln_upper += 1
        if not is_space:
            if ln_first < 0:
                ln_first = cp
            ln_last = cp
            ln_tail_dots = cp == 46 and prev1 == 46 and prev2 == 46
        prev2 = prev1
        prev1 = cp
        if cp == 10:
            k = line0 + n_lines
            upper_cnt[k] = ln_upper
            line_len[k] = ln_len
            terminal[k] = ln_last == 46 or ln_last == 33 or ln_last == 63 or ln_last == 0x201D
            bullet[k] = ln_first >= 0 and _is_bullet(ln_first)
            if ln_tail_dots or ln_last == 0x2026:
                n_ell_lines += 1
            n_lines += 1
            ln_len = 0
            ln_upper = 0
            ln_first = -1
            ln_last = -1
            ln_tail_dots = False
            prev1 = 0
            prev2 = 0
        p += w
    n_sym += dots // 3
    if ln_len > 0:  # last line without a trailing newline
        k = line0 + n_lines
        upper_cnt[k] = ln_upper
        line_len[k] = ln_len
        terminal[k] = ln_last == 46 or ln_last == 33 or ln_last == 63 or ln_last == 0x201D
        bullet[k] = ln_first >= 0 and _is_bullet(ln_first)
        if ln_tail_dots or ln_last == 0x2026:
            n_ell_lines += 1
        n_lines += 1
    doc[0] = n_chars
    doc[1] = n_words
    doc[2] = n_alpha
    doc[3] = n_caps
    doc[4] = n_stop
    doc[5] = n_sent
    doc[6] = n_sym
    doc[7] = n_curly
    doc[8] = n_lines
    doc[9] = n_ell_lines


@nb.njit(cache=True, nogil=True)
def scan_docs(data, starts, ends):
    """Per document: number of lines (RPv2's ``([^\n]*\n|[^\n]+$)`` matches) and
    whether it contains GREEK CAPITAL SIGMA (UTF-8 CE A3), whose lowercase
    depends on context and is left to Python."""
    n = len(starts)
    n_lines = np.zeros(n, np.int64)
    sigma = np.zeros(n, np.bool_)
    for i in range(n):
        s, e = starts[i], ends[i]
        k = 0
        has = False
        for p in range(s, e):
            b = data[p]
            if b == 10:
                k += 1
            elif b == 0xCE and p + 1 < e and data[p + 1] == 0xA3:
                has = True
        if e > s and data[e - 1] != 10:
            k += 1
        n_lines[i] = k
        sigma[i] = has
    return n_lines, sigma


@nb.njit(cache=True, nogil=True)
def raw_pass(data, starts, ends, line_off, flags, sw_slots, sw_keys, sw_data, sw_off, sw_max, sw_first):
    """Counts for documents ``data[starts[i]:ends[i]]``.

    ``line_off`` (len n+1) gives where each document's lines go in the per-line
    outputs; it must hold the exact line counts (see ``scan_docs``). Stop words:
    the table from ``build_word_set``, the longest word's byte length, and a
    256-entry mask of the bytes they start with (a cheap pre-filter).
    """
    n = len(starts)
    doc = np.zeros((n, _NDOC), np.int64)
    total = line_off[n]
    upper_cnt = np.zeros(total, np.int64)
    line_len = np.zeros(total, np.int64)
    terminal = np.zeros(total, np.bool_)
    bullet = np.zeros(total, np.bool_)
    for i in range(n):
        _one_doc(data, starts[i], ends[i], flags, sw_slots, sw_keys, sw_data, sw_off, sw_max, sw_first,
                 doc[i], line_off[i], upper_cnt, line_len, terminal, bullet)
    return doc, upper_cnt, line_len, terminal, bullet
