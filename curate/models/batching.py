"""Token-budget batching over ragged token sequences, in numpy: no per-document Python.

The tokens of a call are one flat array plus offsets. A *row* is a slice of one document's tokens
(the whole truncated document, or one window of it) that gets the tokenizer's special tokens around
it. Rows are sorted by length over the whole call (longest first, so the largest batch runs first and
an out-of-memory error shows at once), cut into batches whose padded size (rows x longest row) fits
the token budget, and each batch is padded only to its own longest row.
"""

from __future__ import annotations

import numpy as np


def rows_for(lengths: np.ndarray, capacity: int, mode: str = "truncate", side: str = "right",
             stride: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc, start, length) of the rows to score, given each document's content length in tokens.

    - truncate: one row per document, its first `capacity` tokens (its last ones when side="left").
    - max: windows of `capacity` tokens every `stride` tokens (default capacity // 2, so windows
      overlap by half); the last window is aligned to the document's end, so no window is shorter
      than capacity unless the document is. A document that fits has exactly one row.
    Every document yields at least one row, an empty one included.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    if capacity < 1:
        raise ValueError("capacity must be at least one token")
    if mode == "truncate":
        length = np.minimum(lengths, capacity)
        start = lengths - length if side == "left" else np.zeros(n, dtype=np.int64)
        return np.arange(n, dtype=np.int64), start, length
    if mode != "max":
        raise ValueError(f"unknown window mode {mode!r}")
    stride = max(1, capacity // 2) if stride is None else stride
    extra = np.maximum(lengths - capacity, 0)
    count = 1 + -(-extra // stride)  # windows per document: ceil((len - capacity) / stride) + 1
    doc = np.repeat(np.arange(n, dtype=np.int64), count)
    first = np.cumsum(count) - count
    k = np.arange(len(doc), dtype=np.int64) - first[doc]  # window number inside its document
    start = np.minimum(k * stride, extra[doc])
    length = np.minimum(lengths[doc], capacity)
    return doc, start, length


def plan_batches(lengths: np.ndarray, batch_tokens: int) -> list[np.ndarray]:
    """Row indices per batch: sorted longest first, each batch's rows x longest row <= batch_tokens
    (a single row longer than the budget is a batch of its own)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    sorted_len = lengths[order]
    batches, i, n = [], 0, len(order)
    while i < n:
        rows = max(1, batch_tokens // max(int(sorted_len[i]), 1))
        batches.append(order[i:i + rows])
        i += rows
    return batches


def pad_rows(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, prefix: np.ndarray,
             suffix: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids, attention_mask) [rows, width]: prefix + flat[start:start+length] + suffix per row,
    right-padded with pad_id to the batch's longest row."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    p, s = len(prefix), len(suffix)
    total = lengths + p + s
    rows, width = len(lengths), int(total.max()) if len(lengths) else 0
    ids = np.full((rows, width), pad_id, dtype=np.int64)
    col = np.arange(width, dtype=np.int64)
    mask = col[None, :] < total[:, None]
    if p:
        ids[:, :p] = prefix
    n_content = int(lengths.sum())
    if n_content:
        r = np.repeat(np.arange(rows, dtype=np.int64), lengths)
        within = np.arange(n_content, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        ids[r, p + within] = flat[np.repeat(starts, lengths) + within]
    if s:
        ids[np.arange(rows)[:, None], (p + lengths)[:, None] + np.arange(s)] = suffix
    return ids, mask.astype(np.int64)
