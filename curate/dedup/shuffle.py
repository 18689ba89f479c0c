"""Hash partitioning of uint64 keys, so that global work is split into independent partition tasks."""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads structured keys (node numbers) evenly over partitions."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def partition_of(keys: np.ndarray, partitions: int) -> np.ndarray:
    return (mix64(keys) % np.uint64(partitions)).astype(np.int64)


def split(partition: np.ndarray, partitions: int, **columns: np.ndarray):
    """Yield (p, {name: column[rows of p]}) for each non-empty partition, rows kept in their order."""
    order = np.argsort(partition, kind="stable")
    bounds = np.searchsorted(partition[order], np.arange(partitions + 1))
    for p in range(partitions):
        lo, hi = bounds[p], bounds[p + 1]
        if hi > lo:
            rows = order[lo:hi]
            yield p, {name: col[rows] for name, col in columns.items()}
