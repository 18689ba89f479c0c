"""Best-fit-decreasing bin packing of integer sizes (Ding et al. 2024, arXiv 2404.10830).

Exact BFD, but simulated per (size, capacity level) instead of per item, so millions of items
cost a few thousand Python steps plus numpy. Bins are kept in stacks keyed by remaining
capacity; the smallest capacity >= size is found by bisection over the non-empty levels.

Why batching is exact: when items of size s arrive and c is the smallest level >= s, no level
lies in [s, c), so the bin that takes one item (now at c - s) is again the best fit for the next
item until it drops below s. Each bin at level c therefore takes m = c // s items in a row, and
the next bin at level c is used only after that: a whole level is consumed in one numpy step.
"""

from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np


def best_fit_decreasing(sizes: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Pack items of `sizes` (each 1..capacity) into bins of `capacity`.

    Returns (order, bin_of, n_bins): `order` is the placement order (indices into sizes, largest
    first, ties by index) and `bin_of[j]` the bin of item order[j]. Bins are numbered by opening.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) and (sizes.min() < 1 or sizes.max() > capacity):
        raise ValueError(f"item sizes must lie in 1..{capacity}")
    order = np.argsort(-sizes, kind="stable")
    sorted_sizes = sizes[order]
    bin_of = np.empty(len(sizes), np.int64)
    group_starts = np.flatnonzero(np.diff(sorted_sizes, prepend=-1))
    group_ends = np.append(group_starts[1:], len(sizes))

    stacks: dict[int, list[int]] = {}  # remaining capacity -> bins there (capacity 0 is not tracked)
    levels: list[int] = []  # sorted non-empty capacities
    n_bins = 0

    def push(level: int, bins) -> None:
        if level <= 0 or not len(bins):
            return
        stack = stacks.get(level)
        if stack is None:
            stacks[level] = stack = []
            insort(levels, level)
        stack.extend(bins)

    for lo, hi in zip(group_starts.tolist(), group_ends.tolist()):
        s = int(sorted_sizes[lo])
        pos = lo
        while pos < hi:
            k = hi - pos
            i = bisect_left(levels, s)
            if i < len(levels):  # best fit: the fullest bin that still has room
                c = levels[i]
                stack = stacks[c]
                m = c // s
                q = min(len(stack) * m, k)
                nb = -(-q // m)
                taken = stack[len(stack) - nb :]
                del stack[len(stack) - nb :]
                if not stack:
                    del stacks[c], levels[i]
                bins = np.asarray(taken, np.int64)
            else:  # nothing fits: open bins, each filled with as many of these items as it holds
                c = capacity
                m = capacity // s
                q = k
                nb = -(-q // m)
                bins = np.arange(n_bins, n_bins + nb, dtype=np.int64)
                taken = bins.tolist()
                n_bins += nb
            bin_of[pos : pos + q] = bins[np.arange(q) // m]
            r = q - (nb - 1) * m  # items in the last bin (== m unless q ran out)
            if r == m:
                push(c - m * s, taken)
            else:
                push(c - m * s, taken[:-1])
                push(c - r * s, taken[-1:])
            pos += q
    return order, bin_of, n_bins
