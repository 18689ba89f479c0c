"""The normalisation every eval item and training document goes through, and its words as 64-bit hashes.

Both sides are folded the same way, code point by code point, so that text matches whatever Unicode form it
was written in: NFC or NFD, fullwidth or halfwidth, ligatures and other compatibility forms (NFKC), any case.
Per code point (`fold`):
- whitespace (`str.isspace`) separates words;
- anything else becomes its NFKD decomposition, case-folded (`str.casefold`) and decomposed again, keeping only
  letters, numbers and spacing marks (Unicode L*, N*, Mc): nonspacing and enclosing marks (accents, Hebrew and
  Arabic vowel points) are dropped, so "café" = "CAFÉ" = "cafe" + U+0301 = "cafe", "Ｈｅｌｌｏ" = "hello",
  "ﬁ" = "fi", "ß" = "ss", "ｶﾞ" = "ガ" = "カ"; punctuation and symbols are dropped too and never split a word
  ("don't" is "dont", "U.S." is "us", "well-known" is "wellknown");
- a character of a script written without spaces between words (Chinese, Japanese kana, Thai, Lao, Khmer, Myanmar,
  Tibetan, Yi: `UNSPACED`) is a word of its own, so n-grams there are character n-grams, and `n` and
  `min_short_words` count characters ("東京大学" is four words; Korean, written with spaces, splits at spaces).
So "The  Cat's hat!" and "the cats hat" are the same three words. The tables come from the running interpreter's
Unicode database, like the reference code in tests; `NORMALIZATION` names the rules (it keys the scan).

`word_hashes` walks Arrow's UTF-8 buffer in one compiled pass (numba) and returns, per word, its hash (FNV-1a
over the folded code points, then the murmur3 finaliser) and its byte span in its document (a word of several
code points folded from one, as "㍻", has that code point's span), so a match can be shown in the original text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial

import numba as nb
import numpy as np
import pyarrow as pa

from curate.io.strings import string_buffers
from curate.signals.hash64 import PRIME, SEED, mix
from curate.signals.utf8 import decode

NORMALIZATION = "nfkd-casefold-no-nonspacing-marks-unspaced-characters/1"
DROP, WORD, SPACE, ALONE, MULTI = 0, 1, 2, 3, 4
N_CODEPOINTS = 0x110000
UNSPACED = ((0x0E00, 0x0EFF),                      # Thai, Lao
            (0x0F00, 0x0FFF),                      # Tibetan
            (0x1000, 0x109F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F),   # Myanmar
            (0x1780, 0x17FF), (0x19E0, 0x19FF),    # Khmer
            (0x2E80, 0x2FDF),                      # CJK and Kangxi radicals
            (0x3005, 0x3007), (0x3021, 0x3029), (0x3031, 0x3035), (0x3038, 0x303C),   # iteration marks, Hangzhou numerals
            (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x1B000, 0x1B16F),  # Hiragana, Katakana
            (0x3100, 0x312F), (0x31A0, 0x31BF),    # Bopomofo
            (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF),   # CJK ideographs
            (0xA000, 0xA4CF))                      # Yi


def unspaced() -> np.ndarray:
    """Per code point: whether it belongs to a script written without spaces (`UNSPACED`)."""
    out = np.zeros(N_CODEPOINTS, dtype=bool)
    for lo, hi in UNSPACED:
        out[lo:hi + 1] = True
    return out


def fold(ch: str) -> str:
    """What one non-space character becomes: its NFKD decomposition, case-folded and decomposed again, without
    nonspacing or enclosing marks, punctuation, symbols or anything else that is not a letter, number or spacing mark."""
    s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
    return "".join(c for c in s if unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Mc")


@dataclass(frozen=True)
class Tables:
    """`kind[cp]`: DROP, SPACE, WORD or ALONE (folds to the one code point `fold[cp]`), or MULTI (folds to
    several: `multi[offsets[i]:offsets[i + 1]]` with i = `fold[cp]`, each WORD or ALONE as `multi_kind` says)."""

    kind: np.ndarray        # int8, N_CODEPOINTS
    fold: np.ndarray        # int32, N_CODEPOINTS
    offsets: np.ndarray     # int64
    multi: np.ndarray       # int32
    multi_kind: np.ndarray  # int8


# Code points past these are unassigned (planes 4-13), tags and variation selectors (plane 14, never letters or
# spaces) or private use (planes 15-16): all dropped, without asking the database about each (tests check it).
ASSIGNED = ((0, 0x40000), (0xE0000, 0xE1000))


@lru_cache(maxsize=1)
def tables() -> Tables:
    """Built once per process (about 0.3 s): most code points fold to themselves or to nothing, so the database
    is asked per code point only whether it is one of them (in C, over one string), and `fold` runs on the rest."""
    kind = np.zeros(N_CODEPOINTS, dtype=np.int8)
    folded = np.arange(N_CODEPOINTS, dtype=np.int32)
    cps = np.concatenate([np.arange(lo, hi, dtype=np.int32) for lo, hi in ASSIGNED])
    cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
    chars = cps.astype("<u4").tobytes().decode("utf-32-le")
    cats = np.array(list(map(unicodedata.category, chars)), dtype="U2").view(np.uint32).reshape(-1, 2)
    word = np.isin(cats[:, 0], [ord("L"), ord("N")]) | ((cats[:, 0] == ord("M")) & (cats[:, 1] == ord("c")))
    alone = unspaced()
    kind[cps[word]] = np.where(alone[cps[word]], ALONE, WORD)
    kind[cps[np.fromiter(map(str.isspace, chars), dtype=bool, count=len(cps))]] = SPACE
    same = np.fromiter(map(partial(unicodedata.is_normalized, "NFKD"), chars), dtype=bool, count=len(cps))
    same &= np.fromiter(map(str.__eq__, chars, map(str.casefold, chars)), dtype=bool, count=len(cps))
    offsets, multi, multi_kind = [0], [], []
    for cp in cps[~same & (kind[cps] != SPACE)].tolist():
        out = fold(chr(cp))
        if len(out) == 1:
            kind[cp], folded[cp] = (ALONE if alone[ord(out)] else WORD), ord(out)
        elif out:
            kind[cp], folded[cp] = MULTI, len(offsets) - 1
            multi += [ord(c) for c in out]
            multi_kind += [ALONE if alone[ord(c)] else WORD for c in out]
            offsets.append(len(multi))
        else:
            kind[cp] = DROP
    return Tables(kind, folded, np.array(offsets, np.int64), np.array(multi, np.int32), np.array(multi_kind, np.int8))


def normalize(text: str) -> list[str]:
    """The words of `text` as strings (for people and tests; the hot path hashes them in `word_hashes`)."""
    t = tables()
    words, word = [], []
    for ch in text:
        k = t.kind[ord(ch)]
        if k == SPACE or k == DROP:
            if k == SPACE and word:
                words.append("".join(word))
                word = []
            continue
        if k == MULTI:
            i = t.fold[ord(ch)]
            parts = zip(t.multi[t.offsets[i]:t.offsets[i + 1]], t.multi_kind[t.offsets[i]:t.offsets[i + 1]])
        else:
            parts = [(t.fold[ord(ch)], k)]
        for c, ck in parts:
            if ck == ALONE:
                if word:
                    words.append("".join(word))
                    word = []
                words.append(chr(c))
            else:
                word.append(chr(c))
    if word:
        words.append("".join(word))
    return words


@dataclass(frozen=True)
class Words:
    """Every word of a batch of texts: `hash`, byte `start`/`end` in its text, and `bounds[d]:bounds[d + 1]`, the
    words of text d."""

    hash: np.ndarray    # uint64
    start: np.ndarray   # int32
    end: np.ndarray     # int32
    bounds: np.ndarray  # int64, len(texts) + 1

    @cached_property
    def doc(self) -> np.ndarray:
        """The text each word belongs to."""
        return np.repeat(np.arange(len(self.bounds) - 1, dtype=np.int64), np.diff(self.bounds))


def word_hashes(texts: pa.Array) -> Words:
    """The words of every text of `texts` (a string array; nulls have none)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    data, offsets, valid = string_buffers(texts, "decontaminate")
    n = len(offsets) - 1
    if not valid.all():  # a null's offsets span nothing
        offsets = offsets.copy()
        offsets[1:][~valid] = offsets[:-1][~valid]
        offsets = np.maximum.accumulate(offsets)
    t = tables()
    bounds = np.zeros(n + 1, dtype=np.int64)
    folds = (t.kind, t.fold, t.offsets, t.multi, t.multi_kind)
    total = _scan(data, offsets, *folds, bounds, np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int32), False)
    out = (np.empty(total, np.uint64), np.empty(total, np.int32), np.empty(total, np.int32))
    _scan(data, offsets, *folds, bounds, *out, True)
    return Words(*out, bounds)


@nb.njit(cache=True)
def _put(out_hash, out_start, out_end, count, h, start, end, fill):
    if fill:
        out_hash[count] = mix(h)
        out_start[count] = start
        out_end[count] = end
    return count + 1


@nb.njit(cache=True)
def _scan(data, offsets, kind, fold, multi_offsets, multi, multi_kind, bounds, out_hash, out_start, out_end, fill):
    """Count (fill=False) or write (fill=True) the words of every text; returns the number of words."""
    count = 0
    for d in range(len(offsets) - 1):
        base, end = offsets[d], offsets[d + 1]
        p = base
        h = SEED
        in_word = False
        w_start = 0
        w_end = 0
        while p < end:
            b = data[p]
            if b < 0x80:
                cp, width = np.int64(b), 1
            else:
                cp, width = decode(data, p, end)
            k = kind[cp]
            if k == WORD:   # most code points: one more character of the word under way
                if not in_word:
                    in_word = True
                    h = SEED
                    w_start = p - base
                h = (h ^ np.uint64(fold[cp])) * PRIME
                w_end = p + width - base
            elif k == SPACE:
                if in_word:   # written out: a call here costs the whole loop a factor of two
                    if fill:
                        out_hash[count] = mix(h)
                        out_start[count] = w_start
                        out_end[count] = w_end
                    count += 1
                    in_word = False
            elif k == ALONE:   # a word of its own: ends the word under way
                if in_word:
                    count = _put(out_hash, out_start, out_end, count, h, w_start, w_end, fill)
                    in_word = False
                count = _put(out_hash, out_start, out_end, count, (SEED ^ np.uint64(fold[cp])) * PRIME, p - base, p + width - base, fill)
            elif k == MULTI:
                for j in range(multi_offsets[fold[cp]], multi_offsets[fold[cp] + 1]):
                    if multi_kind[j] == ALONE:
                        if in_word:
                            count = _put(out_hash, out_start, out_end, count, h, w_start, w_end, fill)
                            in_word = False
                        count = _put(out_hash, out_start, out_end, count, (SEED ^ np.uint64(multi[j])) * PRIME, p - base,
                                     p + width - base, fill)
                    else:
                        if not in_word:
                            in_word = True
                            h = SEED
                            w_start = p - base
                        h = (h ^ np.uint64(multi[j])) * PRIME
                        w_end = p + width - base
            p += width
        if in_word:
            count = _put(out_hash, out_start, out_end, count, h, w_start, w_end, fill)
        bounds[d + 1] = count
    return count
