"""Documents as 64-bit node numbers: source priority, shard and row packed so that order means priority.

`node = priority << 60 | shard << 32 | row`. The smallest node of a cluster belongs to its
highest-priority source, and a node says where its document lives (source, docs shard, row) without
any lookup table of every document.
"""

from __future__ import annotations

import numpy as np

PRIORITY_SHIFT = np.uint64(60)
SHARD_SHIFT = np.uint64(32)
SHARD_BITS = np.uint64(28)
MAX_SOURCES = 16
MAX_SHARDS = 1 << int(SHARD_BITS)
ROW_MASK = np.uint64((1 << 32) - 1)
SHARD_MASK = np.uint64(MAX_SHARDS - 1)


def pack(priority: int, shard: int, rows: np.ndarray) -> np.ndarray:
    if not 0 <= priority < MAX_SOURCES:
        raise ValueError(f"at most {MAX_SOURCES} sources can be deduplicated together")
    if not 0 <= shard < MAX_SHARDS:
        raise ValueError(f"at most {MAX_SHARDS} shards per source")
    base = (np.uint64(priority) << PRIORITY_SHIFT) | (np.uint64(shard) << SHARD_SHIFT)
    return base | rows.astype(np.uint64)


def priority_of(nodes: np.ndarray) -> np.ndarray:
    return (nodes >> PRIORITY_SHIFT).astype(np.int64)


def shard_of(nodes: np.ndarray) -> np.ndarray:
    return ((nodes >> SHARD_SHIFT) & SHARD_MASK).astype(np.int64)


def row_of(nodes: np.ndarray) -> np.ndarray:
    return (nodes & ROW_MASK).astype(np.int64)


def shard_key(nodes: np.ndarray) -> np.ndarray:
    """(priority, shard) as one integer: which docs shard holds each node."""
    return (nodes >> SHARD_SHIFT).astype(np.int64)
