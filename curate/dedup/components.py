"""Connected components by distributed min-label propagation over hash partitions.

Every node starts labelled with its own rank `(hi, node)`. Each round, a partition sends the labels of its
nodes whose label moved in the round before along their edges (`send`; every node's in the first round), and each
partition keeps, for each of its nodes, the smaller of its label and the smallest it received (`receive`). When no
label changes, each component carries its smallest rank. No step needs more than one partition's nodes, edges and
messages in memory. A graph small enough for one task's memory takes `smallest` instead: the same components, in a
few passes over its edges, without a round's files.
"""

from __future__ import annotations

import numpy as np


def lexmin_by(target: np.ndarray, hi: np.ndarray, lo: np.ndarray):
    """For each distinct target, the lexicographically smallest (hi, lo); returns (targets, hi, lo) sorted by target."""
    order = np.lexsort((lo, hi, target))
    target, hi, lo = target[order], hi[order], lo[order]
    first = np.ones(len(target), dtype=bool)
    first[1:] = target[1:] != target[:-1]
    return target[first], hi[first], lo[first]


def send(edge_u: np.ndarray, edge_v: np.ndarray, node: np.ndarray, label_hi: np.ndarray, label_lo: np.ndarray,
         moved: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Messages (target, hi, lo): the label of each node whose label `moved` in the round before to every neighbour.
    A label that stayed was sent already, and its neighbours keep what they took from it: once most labels have
    settled, few nodes send.

    `node` is sorted and holds every `edge_u` of this partition (edges are stored in both directions).
    """
    at = _positions(node, edge_u, "an edge starts at a node this partition has no label for")
    go = moved[at]
    at = at[go]
    return edge_v[go], label_hi[at], label_lo[at]


def receive(node: np.ndarray, label_hi: np.ndarray, label_lo: np.ndarray,
            target: np.ndarray, msg_hi: np.ndarray, msg_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """New labels for this partition's nodes, each the smaller of its own and the smallest it was sent, and whether
    each moved."""
    t, hi, lo = lexmin_by(target, msg_hi, msg_lo)
    at = _positions(node, t, "a message for a node this partition has no label for")
    smaller = (hi < label_hi[at]) | ((hi == label_hi[at]) & (lo < label_lo[at]))
    at = at[smaller]
    new_hi, new_lo, moved = label_hi.copy(), label_lo.copy(), np.zeros(len(node), bool)
    new_hi[at], new_lo[at], moved[at] = hi[smaller], lo[smaller], True
    return new_hi, new_lo, moved


def _positions(node: np.ndarray, keys: np.ndarray, missing: str) -> np.ndarray:
    """Where each of `keys` is in the sorted `node`; ValueError(`missing`) when one is not there."""
    at = np.searchsorted(node, keys)
    if len(keys) and (not len(node) or not np.array_equal(node[np.minimum(at, len(node) - 1)], keys)):
        raise ValueError(missing)
    return at


def smallest(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """For each of nodes 0..n-1, the smallest node of its component (edges `u`-`v`, in either direction): each edge's
    larger root is hooked under the smaller, then every node jumps to its root, until no edge joins two roots. A
    node's parent never grows, so a root is its component's smallest node; each pass hooks every root that an edge
    still joins to a smaller one (a handful of passes where propagation took a round per hop of the widest cluster)."""
    parent = np.arange(n, dtype=np.int64)
    u, v = u.astype(np.int64, copy=False), v.astype(np.int64, copy=False)
    while True:
        pu, pv = parent[u], parent[v]
        apart = pu != pv
        if not apart.any():
            return parent
        np.minimum.at(parent, np.maximum(pu[apart], pv[apart]), np.minimum(pu[apart], pv[apart]))
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
