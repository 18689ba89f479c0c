"""Exact-substring dedup across a whole corpus, partitioned by hash (never by document).

The unit is the word (a maximal run of non-whitespace characters): no tokenizer is needed, a cut never falls inside
a word or a character, and Lee et al.'s 50-token threshold is about 40 English words (GPT-2 BPE gives ~1.3 tokens a
word), so `min_words: 50` is slightly stricter than theirs. How the work is split is in `curate.substring.phases`;
the kernels are in `curate.substring.kernels`.
"""

from __future__ import annotations


def gram_and_window(min_words: int) -> tuple[int, int]:
    """(k, w): fingerprints are k-word grams winnowed over windows of w grams, with k + w - 1 = min_words, so that
    every repeated run of `min_words` words keeps a shared fingerprint. k = min_words / 4 (13 for 50): long enough
    that common phrases rarely share one by chance, short enough that about 2 / (w + 1) of positions (5%) are kept."""
    k = max(1, -(-min_words // 4))
    return k, min_words - k + 1
