"""Split a batch's rows over threads for kernels that release the GIL (numba `nogil`, tiktoken): contiguous
row ranges, results in row order. One place for the split, so every kernel that a task spreads over its cores
(`stages.resources.task_cores`) splits the same way."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")


def shares(n: int, parts: int) -> list[tuple[int, int]]:
    """[start, end) row ranges: `parts` near-equal contiguous shares of n rows (fewer when n is smaller)."""
    cuts = np.linspace(0, n, max(1, min(parts, n)) + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def map_in_order(fn: Callable[[T], R], items: Sequence[T], threads: int) -> list[R]:
    """fn over items, on `threads` threads when more than one (and more than one item), results in item order."""
    if threads <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(min(threads, len(items))) as pool:
        return list(pool.map(fn, items))
