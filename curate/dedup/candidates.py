"""Band buckets to candidate edges: documents sharing any (band, key) bucket are joined by an edge.

Each bucket becomes a star (its smallest node to every other member), which connects the same
documents as all pairs would, with k-1 edges instead of k(k-1)/2.
"""

from __future__ import annotations

import numpy as np


def bucket_edges(band: np.ndarray, key: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return unique undirected edges (u < v) from rows of (band, key, node)."""
    rows = shared(key)
    return stars(band[rows], key[rows], node[rows])


def shared(key: np.ndarray) -> np.ndarray:
    """The rows whose key another row also has. Most rows share their key with no other: one sort of the keys alone
    finds the few that do, and only those are grouped by (band, key) (at 2M rows a partition, 0.54 -> 0.24 s)."""
    by_key = np.argsort(key)
    return by_key[shared_sorted(key[by_key])]


def shared_sorted(key: np.ndarray) -> np.ndarray:
    """`shared` of keys already sorted: a boolean mask, no sort."""
    if len(key) == 0:
        return np.zeros(0, bool)
    same = key[1:] == key[:-1]
    return np.r_[same, False] | np.r_[False, same]


def stars(band: np.ndarray, key: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The star edges of every (band, key) bucket of the rows (a row alone in its bucket gives none: rows whose key
    another row has in another band, or in a shard left out, may be among them)."""
    if len(node) == 0:
        return np.empty(0, np.uint64), np.empty(0, np.uint64)
    order = np.lexsort((node, key, band))
    band, key, node = band[order], key[order], node[order]
    starts = np.ones(len(node), dtype=bool)
    starts[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    group = np.cumsum(starts) - 1
    first = node[np.flatnonzero(starts)][group]  # the smallest node of each row's bucket
    member = node != first
    u, v = first[member], node[member]
    if len(u) == 0:
        return u, v
    pairs = np.unique(np.stack([u, v], axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()
