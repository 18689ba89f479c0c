"""An exact reference for substring dedup: a suffix array over word ids (prefix doubling, O(n log^2 n), numpy), its
LCP (Kasai), the repeated windows of `length` words, and the cuts the keep-the-first policy makes. Slow and simple on
purpose: it shares nothing with curate's kernels (words by `re`, no hashing)."""

from __future__ import annotations

import re

import numpy as np


def split_words(text: str) -> list[tuple[int, int, str]]:
    """(start, end, word) in code points: maximal runs of non-whitespace, as `str.split()` makes them."""
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]


def suffix_array(seq: np.ndarray) -> np.ndarray:
    """Prefix doubling: ranks of 2^k-prefixes, sorted by (rank, rank k ahead) until all are distinct."""
    n = len(seq)
    rank = np.unique(seq, return_inverse=True)[1].astype(np.int64)
    k = 1
    sa = np.arange(n)
    while True:
        ahead = np.full(n, -1, np.int64)
        ahead[:n - k] = rank[k:] if k < n else ahead[:0]
        sa = np.lexsort((ahead, rank))
        key = np.stack([rank[sa], ahead[sa]], axis=1)
        new = np.zeros(n, np.int64)
        new[sa] = np.r_[0, np.cumsum(np.any(key[1:] != key[:-1], axis=1))]
        rank = new
        if rank.max() == n - 1 or k >= n:
            return sa
        k *= 2


def lcp_array(seq: np.ndarray, sa: np.ndarray) -> np.ndarray:
    """lcp[i]: the common prefix of suffixes sa[i - 1] and sa[i] (Kasai et al. 2001)."""
    n = len(seq)
    rank = np.empty(n, np.int64)
    rank[sa] = np.arange(n)
    lcp = np.zeros(n, np.int64)
    h = 0
    for i in range(n):
        if rank[i] > 0:
            j = sa[rank[i] - 1]
            while i + h < n and j + h < n and seq[i + h] == seq[j + h]:
                h += 1
            lcp[rank[i]] = h
            h = max(h - 1, 0)
        else:
            h = 0
    return lcp


def repeated_windows(docs: list[str], length: int) -> dict[tuple, list[tuple[int, int]]]:
    """Every window of `length` words that occurs more than once: its words -> [(doc, word)], found with the suffix
    array (each document ends in a separator of its own, so no window crosses documents)."""
    words = [split_words(t) for t in docs]
    vocab: dict[str, int] = {}
    seq, where = [], []
    for d, ws in enumerate(words):
        for i, (_, _, w) in enumerate(ws):
            seq.append(len(docs) + vocab.setdefault(w, len(vocab)))
            where.append((d, i))
        seq.append(d)   # the separator of document d, unique
        where.append((d, -1))
    seq = np.array(seq, np.int64)
    if not len(seq):
        return {}
    sa = suffix_array(seq)
    lcp = lcp_array(seq, sa)
    starts = set()
    for i in np.flatnonzero(lcp >= length):
        starts.update((int(sa[i - 1]), int(sa[i])))
    out: dict[tuple, list] = {}
    for s in sorted(starts):
        d, i = where[s]
        out.setdefault(tuple(w for _, _, w in words[d][i:i + length]), []).append((d, i))
    return out


def expected_cuts(docs: list[str], order: list[int], length: int) -> dict[int, set[int]]:
    """doc -> the words the keep-the-first policy cuts: covered by a later copy of a repeated window and by no
    first copy, copies ordered by `order[doc]` (source priority, shard, row), then word."""
    later: dict[int, set] = {}
    first: dict[int, set] = {}
    for copies in repeated_windows(docs, length).values():
        copies = sorted(copies, key=lambda c: (order[c[0]], c[1]))
        d, i = copies[0]
        first.setdefault(d, set()).update(range(i, i + length))
        for d, i in copies[1:]:
            later.setdefault(d, set()).update(range(i, i + length))
    return {d: cut for d, ws in later.items() if (cut := ws - first.get(d, set()))}


def cut_words(text: str, spans: list[tuple[int, int]]) -> set[int]:
    """The words of `text` whose characters lie in the spans."""
    return {i for i, (s, e, _) in enumerate(split_words(text)) if any(a <= s and e <= b for a, b in spans)}
