"""The normalisation every eval item and training document goes through, and its words as 64-bit hashes.

A text is lowercased, punctuation and symbols are dropped (they never split a word: "don't" is "dont",
"U.S." is "us", "well-known" is "wellknown"), and whitespace splits words, so "The  Cat's hat!" and "the cats
hat" are the same three words. Per code point: whitespace (`str.isspace`) separates; letters, marks and numbers (Unicode categories
L*, M*, N*) are word characters, lowercased when `str.lower` gives one character (simple case mapping);
everything else is dropped. The tables come from the running interpreter, like the reference code in tests.

`word_hashes` walks Arrow's UTF-8 buffer in one compiled pass (numba) and returns, per word, its hash
(FNV-1a over the lowercased code points, then the murmur3 finaliser) and its byte span in its document, so a
match can be shown in the original text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numba as nb
import numpy as np
import pyarrow as pa

from curate.io.strings import string_buffers
from curate.signals.hash64 import PRIME, SEED, mix
from curate.signals.utf8 import decode

DROP, WORD, SPACE = 0, 1, 2
N_CODEPOINTS = 0x110000


@lru_cache(maxsize=1)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """(class per code point: DROP / WORD / SPACE, lowercase code point per code point)."""
    kind = np.zeros(N_CODEPOINTS, dtype=np.int8)
    lower = np.arange(N_CODEPOINTS, dtype=np.int32)
    for cp in range(N_CODEPOINTS):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        if ch.isspace():
            kind[cp] = SPACE
        elif unicodedata.category(ch)[0] in "LMN":
            kind[cp] = WORD
            low = ch.lower()
            if len(low) == 1:
                lower[cp] = ord(low)
    return kind, lower


def normalize(text: str) -> list[str]:
    """The words of `text` as strings (for people and errors; the hot path hashes them in `word_hashes`)."""
    kind, lower = tables()
    words, word = [], []
    for ch in text:
        k = kind[ord(ch)]
        if k == WORD:
            word.append(chr(lower[ord(ch)]))
        elif k == SPACE and word:
            words.append("".join(word))
            word = []
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
    kind, lower = tables()
    bounds = np.zeros(n + 1, dtype=np.int64)
    total = _scan(data, offsets, kind, lower, bounds, np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros(0, np.int32), False)
    out = (np.empty(total, np.uint64), np.empty(total, np.int32), np.empty(total, np.int32))
    _scan(data, offsets, kind, lower, bounds, *out, True)
    return Words(*out, bounds)


@nb.njit(cache=True)
def _scan(data, offsets, kind, lower, bounds, out_hash, out_start, out_end, fill):
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
            if k == 1:
                if not in_word:
                    in_word = True
                    h = SEED
                    w_start = p - base
                h ^= np.uint64(lower[cp])
                h *= PRIME
                w_end = p + width - base
            elif k == 2 and in_word:
                if fill:
                    out_hash[count] = mix(h)
                    out_start[count] = w_start
                    out_end[count] = w_end
                count += 1
                in_word = False
            p += width
        if in_word:
            if fill:
                out_hash[count] = mix(h)
                out_start[count] = w_start
                out_end[count] = w_end
            count += 1
        bounds[d + 1] = count
    return count
