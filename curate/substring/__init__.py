"""Exact-substring dedup across a whole corpus, partitioned by hash (never by document).

The unit is the word (a maximal run of non-whitespace characters): no tokenizer is needed, a cut never falls inside
a word or a character, and Lee et al.'s 50-token threshold is about 40 English words (GPT-2 BPE gives ~1.3 tokens a
word), so `min_words: 50` is slightly stricter than theirs. How the work is split is in `curate.substring.phases`;
the kernels are in `curate.substring.kernels`.

Windows are matched by a 125-bit key, not by reading both texts: a polynomial of 64-bit word hashes modulo 2^64 and
one of independent word hashes modulo the prime 2^61 - 1. Two different windows of natural text share a key with
chance about 2^-125, so among n windows some pair does with chance below n^2 / 2^126: 1.2e-14 at n = 10^12 windows
(a corpus of ~10^13 words, where only the windows around shared fingerprints are keyed at all), so no false cut is
expected in any real corpus. Modulo 2^64 alone this failed on purpose-built text (a Thue-Morse sequence of two words
and its complement share a key for every odd base from 1,024 words on: tests/substring/test_agreement.py); the
prime modulus closes that. The key is not a cryptographic hash: text crafted against these constants could collide.
bench/bench_substring.py checks a sample of the cuts word for word against their kept copies, and the tests check
every cut against an exact suffix array.
"""

from __future__ import annotations


def gram_and_window(min_words: int) -> tuple[int, int]:
    """(k, w): fingerprints are k-word grams winnowed over windows of w grams, with k + w - 1 = min_words, so that
    every repeated run of `min_words` words keeps a shared fingerprint. k = min_words / 4 (13 for 50): long enough
    that common phrases rarely share one by chance, short enough that about 2 / (w + 1) of positions (5%) are kept."""
    k = max(1, -(-min_words // 4))
    return k, min_words - k + 1
