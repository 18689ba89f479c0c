"""Which documents of a cluster are removed, once every node carries its cluster's smallest rank.

- `cross_source` (Zyda-2): a cluster only acts when it spans sources; all documents of the
  highest-priority source present are kept, every document of another source is removed.
- `all`: one document per cluster is kept, the one of smallest rank (priority, then the tie-break).
"""

from __future__ import annotations

import numpy as np

from curate.dedup.nodes import priority_of

POLICIES = ("cross_source", "all")


def removed_mask(policy: str, node: np.ndarray, label_lo: np.ndarray) -> np.ndarray:
    if policy == "cross_source":
        return priority_of(node) != priority_of(label_lo)
    if policy == "all":
        return node != label_lo
    raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
