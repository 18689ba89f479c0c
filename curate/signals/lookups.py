"""Word sets turned into the flat hash tables the kernels probe.

Why here: the kernels take plain arrays; building them is done once per word
set (cached), using the builder that lives next to each kernel so that the
hash function used to build and to probe is the same compiled code.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import raw_kernel, words_kernel


class StopWordTable(NamedTuple):
    slots: np.ndarray
    keys: np.ndarray
    data: np.ndarray  # UTF-8 bytes of the words, concatenated
    off: np.ndarray
    max_len: int  # longest word in bytes: longer tokens are not looked up
    first: np.ndarray  # uint8[256]: 1 for bytes some word starts with


class PhraseTable(NamedTuple):
    slots: np.ndarray
    hashes: np.ndarray
    fw_slots: np.ndarray
    fw_hash: np.ndarray
    fw_mask: np.ndarray
    phrase_off: np.ndarray  # phrase k = words phrase_off[k] .. phrase_off[k+1]-1
    cps: np.ndarray  # code points of all words
    word_off: np.ndarray


@lru_cache(maxsize=16)
def stop_word_table(words: frozenset[str]) -> StopWordTable:
    encoded = [w.encode("utf-8") for w in sorted(words)]
    off = np.zeros(len(encoded) + 1, np.int64)
    off[1:] = np.cumsum([len(b) for b in encoded])
    data = np.frombuffer(b"".join(encoded), np.uint8).copy() if encoded else np.zeros(1, np.uint8)
    slots, keys = raw_kernel.build_word_set(data, off)
    max_len = max((len(b) for b in encoded), default=0)
    first = np.zeros(256, np.uint8)
    first[[b[0] for b in encoded if b]] = 1
    return StopWordTable(slots, keys, data, off, max_len, first)


@lru_cache(maxsize=16)
def phrase_table(phrases: frozenset[str]) -> PhraseTable:
    """RPv2 matches an entry with n-1 spaces against word n-grams joined by
    single spaces; an entry with an empty part (double or edge space) can never
    match a non-empty normalised word, so it is dropped."""
    kept = [p.split(" ") for p in sorted(phrases)]
    kept = [parts for parts in kept if all(parts)]
    words = [w for parts in kept for w in parts]
    phrase_off = np.zeros(len(kept) + 1, np.int64)
    phrase_off[1:] = np.cumsum([len(parts) for parts in kept])
    word_cps = [np.frombuffer(w.encode("utf-32-le"), np.uint32) for w in words]
    word_off = np.zeros(len(words) + 1, np.int64)
    word_off[1:] = np.cumsum([len(c) for c in word_cps])
    cps = np.concatenate(word_cps).astype(np.int32) if words else np.zeros(1, np.int32)
    tables = words_kernel.build_phrase_set(cps, word_off, phrase_off)
    return PhraseTable(*tables, phrase_off, cps, word_off)
