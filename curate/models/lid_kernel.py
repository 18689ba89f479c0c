"""fastText's supervised prediction (top label, hierarchical softmax) compiled with numba, bit for bit.

Why: language id was half of the signals stage, and most of fastText's time per page goes to building a
`std::string` per character n-gram and looking it up in an `unordered_map` (the pruned buckets of lid.176).
Here a page is one pass over its UTF-8 bytes: FNV-1a hashes computed in place, dense lookup arrays, the
product-quantized rows added as fastText adds them. Same float32 operations in the same order as
fastText 0.9 (`Dictionary::getLine`, `computeSubwords`, `QuantMatrix::addRowToVector`,
`Model::computeHidden`, `HierarchicalSoftmaxLoss::dfs`), so labels and probabilities are equal, checked
against fastText itself in tests/models/test_lid_kernel.py.

Each text is read as fastText reads it as one line, its own newlines made spaces (`text + "\\n"`): tokens split
on ' ', '\\n', '\\r', '\\t', '\\v', '\\f' and NUL, then the end-of-sentence token `</s>`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from curate.signals.utf8 import same_bytes

_FNV_OFFSET = np.uint32(2166136261)
_FNV_PRIME = np.uint32(16777619)
LABEL_PREFIX = np.frombuffer(b"__label__", np.uint8)


def fnv1a(word: bytes) -> int:
    """fastText's `Dictionary::hash`: 32-bit FNV-1a over the bytes taken as signed chars."""
    h = 2166136261
    for c in word:
        h = ((h ^ (c if c < 128 else c | 0xFFFFFF00)) * 16777619) & 0xFFFFFFFF
    return h


def word_table(words: list[bytes]) -> np.ndarray:
    """Open-addressing table of word ids by FNV hash (a power of two, at most a quarter full; -1: empty)."""
    size = 1 << max(4, (4 * len(words) - 1).bit_length())
    table = np.full(size, -1, np.int64)
    for w, word in enumerate(words):
        slot = fnv1a(word) & (size - 1)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = w
    return table


@njit(inline="always", cache=True)
def _fnv_byte(h, b):
    # fastText hashes `uint32_t(int8_t(c))`: bytes >= 0x80 are sign-extended
    v = np.uint32(b) if b < 128 else np.uint32(b) | np.uint32(0xFFFFFF00)
    return np.uint32(np.uint32(h ^ v) * _FNV_PRIME)


@njit(inline="always", cache=True)
def _is_space(b):
    return b == 32 or b == 10 or b == 13 or b == 9 or b == 11 or b == 12 or b == 0


def decode_rows(codes: np.ndarray, centroids: np.ndarray, norms: np.ndarray, nsubq: int, dsub: int, lastdsub: int) -> np.ndarray:
    """The product-quantized input matrix decoded, each row times its norm: float32 (rows, dim). The products are
    the float32 products `QuantMatrix::addRowToVector` forms before adding (no fused multiply-add), so adding a
    decoded row gives the same sums; one contiguous row per input instead of 8 centroid lookups."""
    rows = codes.shape[0]
    dim = (nsubq - 1) * dsub + lastdsub
    out = np.empty((rows, dim), np.float32)
    for m in range(nsubq):
        width = lastdsub if m == nsubq - 1 else dsub
        block = centroids[m * 256 * dsub:m * 256 * dsub + 256 * width].reshape(256, width)
        out[:, m * dsub:m * dsub + width] = norms[:, None] * block[codes[:, m]]
    return out


@njit(inline="always", cache=True)
def _add_row(hidden, rows, row):
    for k in range(hidden.shape[0]):
        hidden[k] = hidden[k] + rows[row, k]


@njit(inline="always", cache=True)
def _find_word(data, s, e, h, table, word_data, word_starts, word_ends):
    """The id of the word data[s:e] with FNV hash `h`, or -1 (open addressing over `table`)."""
    mask = table.shape[0] - 1
    slot = h & mask
    while True:
        w = table[slot]
        if w < 0:
            return -1
        ws = word_starts[w]
        if word_ends[w] - ws == e - s and same_bytes(word_data, ws, data, s, e - s):
            return w
        slot = (slot + 1) & mask


@njit(inline="always", cache=True)
def _ngram_rows(data, s, e, minn, maxn, bucket, present, prune, nwords, word, out, count):
    """`computeSubwords("<" + token + ">")`: the input rows of the bracketed token's character n-grams (minn..maxn
    code points), each hashed, bucketed and mapped through the pruned buckets, appended to `out` from `count`;
    returns the new count. `present`: a bit per bucket kept (most n-grams are not, and the bitmap stays in cache).
    `word`: scratch for the bracketed token's bytes."""
    size = e - s + 2
    word[0] = 60
    for k in range(e - s):
        word[k + 1] = data[s + k]
    word[size - 1] = 62
    for i in range(size):
        if (word[i] & 0xC0) == 0x80:
            continue
        h = _FNV_OFFSET
        j = i
        n = 1
        while j < size and n <= maxn:
            h = _fnv_byte(h, word[j])
            j += 1
            while j < size and (word[j] & 0xC0) == 0x80:
                h = _fnv_byte(h, word[j])
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == size)):
                idx = np.int64(h % np.uint32(bucket))
                if (present[idx >> 3] >> (idx & 7)) & 1:
                    out[count] = nwords + prune[idx]
                    count += 1
            n += 1
    return count


@njit(cache=True)
def vocabulary_rows(word_data, word_starts, word_ends, eos, minn, maxn, bucket, present, prune, nwords):
    """Each vocabulary word's input rows, as fastText precomputes them (`initNgrams`): the word's own row, then
    its n-grams' (none for `</s>`). CSR: (starts, rows)."""
    longest = 0
    for w in range(nwords):
        longest = max(longest, word_ends[w] - word_starts[w])
    scratch = np.empty(3 * (longest + 2) * (maxn + 1), np.int64)
    word = np.empty(longest + 2, np.uint8)
    starts = np.zeros(nwords + 1, np.int64)
    parts = []
    for w in range(nwords):
        scratch[0] = w
        count = 1
        if w != eos:
            count = _ngram_rows(word_data, word_starts[w], word_ends[w], minn, maxn, bucket, present, prune, nwords, word, scratch, 1)
        parts.append(scratch[:count].copy())
        starts[w + 1] = starts[w] + count
    rows = np.empty(starts[nwords], np.int64)
    for w in range(nwords):
        rows[starts[w]:starts[w + 1]] = parts[w]
    return starts, rows


@njit(cache=True, nogil=True)
def predict_top(data, starts, ends, table, word_data, word_starts, word_ends, vocab_starts, vocab_rows, eos, minn, maxn,
                bucket, present, prune, nwords, rows, output, left, right, osz, label_prefix):
    """Per text: the top label (-1: no input, fastText predicts nothing) and its probability (float32)."""
    n_docs = starts.shape[0]
    labels = np.full(n_docs, -1, np.int32)
    probs = np.zeros(n_docs, np.float32)
    dim = output.shape[1]
    hidden = np.zeros(dim, np.float32)
    stack_node = np.empty(2 * osz + 2, np.int64)
    stack_score = np.empty(2 * osz + 2, np.float32)
    floor = np.float32(math.log(0.0 + 1e-5))  # std_log(threshold 0)
    plen = label_prefix.shape[0]
    longest = 0
    for d in range(n_docs):
        longest = max(longest, ends[d] - starts[d])
    scratch = np.empty(3 * (longest + 2) * (maxn + 1), np.int64)  # one token's n-gram rows
    word = np.empty(longest + 2, np.uint8)
    for d in range(n_docs):
        for k in range(dim):
            hidden[k] = np.float32(0.0)
        count = 0
        i = starts[d]
        end = ends[d]
        while True:  # the tokens of the text, then </s>
            while i < end and _is_space(data[i]):
                i += 1
            if i >= end:
                break
            s = i
            h = _FNV_OFFSET
            while i < end and not _is_space(data[i]):
                h = _fnv_byte(h, data[i])
                i += 1
            is_label = i - s >= plen
            if is_label:
                for k in range(plen):
                    if data[s + k] != label_prefix[k]:
                        is_label = False
                        break
            if is_label:
                continue  # a label token (`__label__...`) is not a word of the line
            if i - s == 4 and data[s] == 60 and data[s + 1] == 47 and data[s + 2] == 115 and data[s + 3] == 62:
                break  # a literal `</s>` ends the line, as the newline would (and is added below)
            w = _find_word(data, s, i, h, table, word_data, word_starts, word_ends)
            if w >= 0:  # a vocabulary word: its rows are known
                for r in range(vocab_starts[w], vocab_starts[w + 1]):
                    _add_row(hidden, rows, vocab_rows[r])
                count += vocab_starts[w + 1] - vocab_starts[w]
            else:
                m = _ngram_rows(data, s, i, minn, maxn, bucket, present, prune, nwords, word, scratch, 0)
                for r in range(m):
                    _add_row(hidden, rows, scratch[r])
                count += m
        if eos >= 0:  # </s>: a word of the vocabulary, without n-grams
            _add_row(hidden, rows, eos)
            count += 1
        if count == 0:
            continue
        scale = np.float32(1.0 / count)
        for k in range(dim):
            hidden[k] = hidden[k] * scale
        best_score = np.float32(0.0)
        best = -1
        top = 0
        stack_node[0] = 2 * osz - 2
        stack_score[0] = np.float32(0.0)
        while top >= 0:  # dfs, left child first, pruned as fastText prunes
            node = stack_node[top]
            score = stack_score[top]
            top -= 1
            if score < floor:
                continue
            if best >= 0 and score < best_score:
                continue
            if left[node] == -1 and right[node] == -1:
                best_score = score
                best = node
                continue
            row = node - osz
            f = np.float32(0.0)
            for k in range(dim):
                f = f + output[row, k] * hidden[k]
            e = np.float32(math.exp(np.float32(-f)))
            f = np.float32(1.0 / np.float64(np.float32(np.float32(1.0) + e)))
            x_left = np.float32(1.0 - np.float64(f))
            s_left = np.float32(score + np.float32(math.log(np.float64(x_left) + 1e-5)))
            s_right = np.float32(score + np.float32(math.log(np.float64(f) + 1e-5)))
            top += 1
            stack_node[top] = right[node]
            stack_score[top] = s_right
            top += 1
            stack_node[top] = left[node]
            stack_score[top] = s_left
        labels[d] = best
        probs[d] = np.float32(math.exp(best_score))
    return labels, probs
