"""datatrove's English words, and the word statistics of its Gopher / FineWeb filters, for the recipes.

datatrove's ``GopherQualityFilter``, ``GopherRepetitionFilter`` and ``FineWebQualityFilter`` split a
document into words with spaCy's blank English tokenizer (``split_into_words``): whitespace chunks,
punctuation split off by spaCy's prefix / suffix / infix rules, URLs kept whole, and 1,347 tokenizer
exceptions (``Mr.``, ``U.S.``, ``don't`` -> ``do`` ``n't``, ``:)``). The filter recipes
(``filters/gopher_quality.yaml``, ``gopher_repetition.yaml``, ``fineweb.yaml``) need those words; RE2 in
SQL cannot express spaCy's look-arounds and exceptions, so this module computes them in a compiled
kernel (:mod:`.dtwords_kernel`) from spaCy's own rules, shipped as package data (:mod:`.dtwords_data`), and
returns per document only the counts the filters compare (one struct column, ``dt_words``).

This is a word split for the datatrove recipes only; the RedPajama-V2 signals keep theirs
(:func:`curate.signals.compute_signals`: RPv2's normalised words and NLTK's ``WordPunct`` tokens).

- :func:`datatrove_word_stats` (Arrow texts -> Arrow struct array, the ``dt_words`` column);
- :func:`datatrove_words` (one text -> its words: for tests and diagnostics).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa

from curate.io.strings import string_spans

from . import dtwords_kernel as K
from .dtwords_data import load_tables

#: the column the recipes read
COLUMN = "dt_words"
FIELDS = K.FIELDS
N_CODEPOINTS = 0x110000


def struct_type() -> pa.DataType:
    return pa.struct([pa.field(name, pa.int64()) for name in FIELDS])


def _fill(flags: np.ndarray, ranges, bit: int) -> None:
    for lo, hi in ranges:
        flags[lo:hi + 1] |= bit


def _python_flags() -> np.ndarray:
    """str.isalpha / isspace / re \\w / re \\d per code point (this interpreter's Unicode tables)."""
    from .unicode_tables import SPACE, WORD, get_tables

    cps = np.arange(N_CODEPOINTS, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
    chars = cps.astype("<u4").tobytes().decode("utf-32-le")

    def prop(fn) -> np.ndarray:
        return np.fromiter(map(fn, chars), dtype=bool, count=len(chars))

    flags = np.zeros(N_CODEPOINTS, np.uint16)
    flags[cps] = (prop(str.isalpha) * K.ISALPHA | prop(str.isdecimal) * K.DEC).astype(np.uint16)
    rpv2 = get_tables().flags  # the RPv2 kernels' table: str.isspace, and re \w (str.isalnum or "_")
    flags[rpv2 & SPACE != 0] |= np.uint16(K.SPACE)
    flags[rpv2 & WORD != 0] |= np.uint16(K.WORD)
    return flags


def _table(strings: list[str]):
    """Exact string -> index table: (slots, hashes, offsets, code points, mask)."""
    off = np.zeros(len(strings) + 1, np.int64)
    data = []
    keys = np.zeros(max(1, len(strings)), np.uint64)
    for i, s in enumerate(strings):
        cps = np.array([ord(c) for c in s], np.int64)
        keys[i] = K.hash_cps(cps, 0, len(cps)) if len(cps) else K.hash_cps(np.zeros(1, np.int64), 0, 0)
        data.append(cps)
        off[i + 1] = off[i] + len(cps)
    cap = 1
    while cap < 2 * len(strings) + 2:
        cap *= 2
    slots = np.full(cap, -1, np.int64)
    for i in range(len(strings)):
        j = int(keys[i] & np.uint64(cap - 1))
        while slots[j] >= 0:
            j = (j + 1) & (cap - 1)
        slots[j] = i
    return slots, keys, off, (np.concatenate(data) if data else np.zeros(1, np.int64)), cap - 1


def _length_masks(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per BMP code point, bit L set when some string of length L starts (first) / ends (last) with it."""
    first = np.zeros(0x10000, np.uint32)
    last = np.zeros(0x10000, np.uint32)
    for s in strings:
        if not s or len(s) > 31:
            continue
        for mask, c in ((first, s[0]), (last, s[-1])):
            if ord(c) < 0x10000:
                mask[ord(c)] |= np.uint32(1 << len(s))
    return first, last


@lru_cache(maxsize=1)
def _tables():
    T = load_tables()
    flags = _python_flags()
    bits = {"PRE1": K.PRE1, "SUF1": K.SUF1, "ICON": K.ICON, "LQ": K.LQ, "UQ": K.UQ, "ALPHA": K.ALPHA,
            "ALNUM": K.ALNUM, "TLD": K.TLD, "DOTPRE": K.DOTPRE, "AU": K.AU, "PUNCT": K.PUNCT}
    for name, bit in bits.items():
        _fill(flags, T["classes"][name], bit)

    names = list(T["specials"])
    sp_slots, sp_keys, sp_off, sp_data, sp_mask = _table(names)
    tok_len = [len(t) for s in names for t in T["specials"][s]]
    tok_off = np.cumsum([0] + [len(T["specials"][s]) for s in names]).astype(np.int64)
    first, last = _length_masks(names)
    sp = (sp_slots, sp_keys, sp_off, sp_data, np.int64(sp_mask), tok_off, np.array(tok_len, np.int64),
          np.int64(max(len(s) for s in names)), first, last)

    # the special-case matcher: patterns chained by the hash of their first token. A one-token pattern never
    # changes anything (its span is its token, the exception's tokens are that token, and spans are taken
    # longest first, so it blocks no other): left out.
    index = {s: i for i, s in enumerate(names)}
    assert all(T["specials"][s] == toks for s, toks in T["matcher"].items() if len(toks) == 1)
    pats = [(s, toks) for s, toks in T["matcher"].items() if len(toks) > 1]
    m_tok_off = np.cumsum([0] + [len(toks) for _, toks in pats]).astype(np.int64)
    flat = [t for _, toks in pats for t in toks]
    m_tok_cps_off = np.cumsum([0] + [len(t) for t in flat]).astype(np.int64)
    m_tok_cps = np.array([ord(c) for t in flat for c in t] or [0], np.int64)
    m_special = np.array([index[s] for s, _ in pats], np.int64)
    firsts = [np.array([ord(c) for c in toks[0]], np.int64) for _, toks in pats]
    hashes = [K.hash_cps(f, 0, len(f)) for f in firsts]
    cap = 1
    while cap < 2 * len(pats) + 2:
        cap *= 2
    m_slots = np.full(cap, -1, np.int64)
    m_keys = np.zeros(cap, np.uint64)
    m_next = np.full(len(pats), -1, np.int64)
    for pid in range(len(pats) - 1, -1, -1):
        j = int(hashes[pid] & np.uint64(cap - 1))
        while m_slots[j] >= 0 and m_keys[j] != hashes[pid]:
            j = (j + 1) & (cap - 1)
        m_next[pid] = m_slots[j]
        m_slots[j] = pid
        m_keys[j] = hashes[pid]
    m_first, m_last = _length_masks([toks[0] for _, toks in pats])
    seqs = [tuple(toks) for _, toks in pats]
    chain = max(sum(1 for q in seqs if q == p[:len(q)]) for p in seqs)  # patterns that can match at one token
    mt = (m_slots, m_keys, m_next, np.int64(cap - 1), m_tok_off, m_tok_cps_off, m_tok_cps, m_special, m_first, m_last,
          np.int64(chain))

    # suffix literals: those without a digit look-behind first
    lits = sorted(T["suffix_literals"], key=lambda x: (x[1] == K.LB_DIGIT, x[0], x[1]))
    lit_off = np.cumsum([0] + [len(s) for s, _ in lits]).astype(np.int64)
    lit_cps = np.array([ord(c) for s, _ in lits for c in s], np.int64)
    lit_lb = np.array([lb for _, lb in lits], np.int64)
    lit = (lit_cps, lit_off, lit_lb, np.int64(sum(lb != K.LB_DIGIT for _, lb in lits)))

    # quick rejections: characters that can start an infix, characters a suffix rule can end with
    flags2 = np.zeros(N_CODEPOINTS, np.uint8)
    flags2[flags & K.ICON != 0] |= K.INFIX_START
    for c in ".…+-*^,–—~:<>=/":
        flags2[ord(c)] |= K.INFIX_START
    flags2[flags & K.SUF1 != 0] |= K.SUF_END
    for lit_s, _ in lits:
        flags2[ord(lit_s[-1])] |= K.SUF_END
    # COMPLEX: every character a prefix, suffix, infix or URL rule needs (see the kernel's _tokenize_chunk)
    complex_ = (flags & (K.PRE1 | K.SUF1 | K.ICON) != 0) | (flags2 & K.INFIX_START != 0)
    for c in "0123456789.+$'’…":
        complex_[ord(c)] = True
    for lit_s, lb in lits:  # a rule's literal without a COMPLEX character needs one before it
        assert lb in (K.LB_DIGIT, K.LB_DOTPRE, K.LB_TWO_UPPER, K.LB_DEGREE) or any(complex_[ord(c)] for c in lit_s), lit_s
    flags[complex_] |= np.uint16(K.COMPLEX)

    stop = [np.array([ord(c) for c in w], np.int64) for w in T["stop_words"]]
    stop_off = np.cumsum([0] + [len(w) for w in stop]).astype(np.int64)
    return flags, flags2, sp, mt, lit, (np.concatenate(stop), stop_off)


def datatrove_word_stats(texts: pa.Array | pa.ChunkedArray) -> pa.StructArray:
    """Per text, the word statistics datatrove's Gopher / FineWeb filters compute from
    ``split_into_words`` (struct fields, all int64, lengths in code points):

    - ``words``: number of words (``len(words)``, punctuation tokens included);
    - ``non_symbol_words`` / ``non_symbol_chars``: words with a character outside datatrove's
      ``PUNCTUATION_SET``, and their total length (GopherQuality's word count and mean word length);
    - ``alpha_words``: words with an ``str.isalpha`` character;
    - ``stop_words``: how many distinct of Gopher's 8 stop words occur (case-sensitive);
    - ``top_{2,3,4}gram_chars``: ``find_top_duplicate`` of the space-joined n-grams (0 without n-grams);
    - ``dupe_{5..10}gram_chars``: ``find_all_duplicate`` (greedy scan over concatenated n-grams).

    Null texts give null rows. One pass per document; no Python per document.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    flags, flags2, sp, mt, lit, stop = _tables()
    if len(texts) == 0:
        return pa.StructArray.from_arrays([pa.array([], pa.int64()) for _ in FIELDS], fields=list(struct_type()))
    data, starts, ends, valid = string_spans(texts, "dt_words")
    out = K.stats_pass(data, starts, ends, flags, flags2, sp, mt, *lit, *stop)
    mask = None if valid.all() else pa.array(~valid)
    return pa.StructArray.from_arrays([pa.array(out[:, k]) for k in range(len(FIELDS))],
                                      fields=list(struct_type()), mask=mask)


def datatrove_words(text: str) -> list[str]:
    """datatrove's ``split_into_words(text)`` (English), computed by the same kernel."""
    flags, flags2, sp, mt, lit, _ = _tables()
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int32)
    cap = len(cps) + 1
    tok_s, tok_e, tok_sep = np.zeros(cap, np.int32), np.zeros(cap, np.int32), np.zeros(cap, np.int8)
    n = K.tokenize(np.append(cps, np.int32(0)), len(cps), flags, flags2, sp, mt, *lit, tok_s, tok_e, tok_sep,
                   K.new_work(cap), K.new_cache(1024, 1 << 14))
    return [text[a:b] for a, b in zip(tok_s[:n].tolist(), tok_e[:n].tolist())]


__all__ = ["COLUMN", "FIELDS", "datatrove_word_stats", "datatrove_words", "struct_type"]
