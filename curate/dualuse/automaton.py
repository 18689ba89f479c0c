"""An Aho-Corasick automaton over character classes, as flat arrays for the kernel.

Terms are case-folded strings. Each distinct character of the terms gets a class
``1..K-1``; every other character is class 0, on which every state goes back to
the root (no term contains it). Texts are folded per character with
:mod:`.casefold` and mapped straight to classes by one table, so the kernel
never builds the folded text.

States are the trie's nodes, numbered in depth-first preorder, so the only child
of a one-child state ``s`` is ``s + 1``. Two kinds:

- states *with a row*: the root, every state with two or more children, and
  every state within :data:`ROW_DEPTH` characters of the root (the ones text
  visits most). A row is the complete transition on each of the ``H`` most used
  classes (normally all ``K``), failure links resolved at build time: one array
  load per character;
- *chain* states (the rest: one child or none) keep just their child's class:
  the next character either continues the chain (``s + 1``) or the failure link
  is followed until a state that knows.

A trie of N terms has fewer than N states with two or more children, so rows
stay few where states are many, in the terms' tails (10,000 English terms:
138,000 states, 24,000 rows x 28 classes x 4 bytes = 2.7 MB, against 15 MB for a
row per state, and no slower). When ``rows x K`` would pass
:data:`DENSE_TABLE_BYTES` (term lists in many scripts), the rarest classes are
left out of the rows and resolved from the trie edges (binary search in sorted
keys) and failure links. The largest fixed cost is the class of every code
point: 4.5 MB.

The kernel carries a *handle* instead of a state: ``row * H`` (an offset into
the rows) for a state with a row that ends no term, which is all the hot loop
needs, else ``-(state + 1)``, which sends it to the slow path (chain states,
states that end terms, rare classes).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .casefold import fold_table

#: most bytes for the rows (the rarest classes leave them beyond this)
DENSE_TABLE_BYTES = 32 << 20

#: states this close to the root get a row even with one child (the text visits them most)
ROW_DEPTH = 6

# fields of Automaton.info, one int32 record per state
ROW, LABEL, FAIL, NEXT = range(4)


@dataclass(frozen=True, repr=False)
class Automaton:
    classes: np.ndarray  # int32 per code point: class of its fold, or -(k+1): expansion k
    exp_offsets: np.ndarray  # int64: expansion k's classes are exp_classes[exp_offsets[k]:exp_offsets[k+1]]
    exp_classes: np.ndarray  # int32
    delta: np.ndarray  # int32, n_rows * n_dense: the next state's handle
    n_dense: int  # H: classes 0..H-1 are in the rows, the others are "rare"
    info: np.ndarray  # int32, 4 per state: ROW (row index, -1 for chain states), LABEL (a chain
    #                   state's child's class, -1 for a leaf), FAIL (failure link), NEXT (handle of s + 1)
    row_state: np.ndarray  # int32 per row: its state
    rare_keys: np.ndarray  # int64 sorted, class * n_states + state: trie edges of states with a row, on rare classes
    rare_next: np.ndarray  # int32: the edge's target handle
    first_out: np.ndarray  # int32 per state: first state on its output chain (itself if it ends a term), -1
    out_link: np.ndarray  # int32 per state: next state on the output chain, -1
    term_at: np.ndarray  # int32 per state: the term that ends exactly here, -1
    max_outputs: int  # the most terms that end at one position
    n_classes: int  # K
    n_terms: int

    def __repr__(self) -> str:
        return (f"Automaton({self.n_terms} terms, {self.n_states} states, {self.n_rows} rows x {self.n_dense} of "
                f"{self.n_classes} classes, {self.nbytes / 1e6:.1f} MB)")

    @property
    def n_states(self) -> int:
        return len(self.first_out)

    @property
    def n_rows(self) -> int:
        return len(self.row_state)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in (
            "classes", "exp_offsets", "exp_classes", "delta", "info", "row_state", "rare_keys", "rare_next",
            "first_out", "out_link", "term_at"))


class _Tail:
    """One state alone at its depth, without a row (a long term's tail, past every other term): the level's
    work in scalars, as `go` does it for arrays, so a term of a million characters builds in seconds."""

    def __init__(self, row_of, label, rows, fail, rare_key, rare_child, h: int, n: int):
        self.row_of, self.label = row_of.tolist(), label.tolist()
        self.rows, self.fail, self.h, self.n = rows, fail, h, n
        self.rare_key, self.rare_child = rare_key.tolist(), rare_child.tolist()

    def go(self, s: int, c: int) -> int:
        while True:
            r = self.row_of[s]
            if r >= 0:
                if c < self.h:
                    return int(self.rows[r, c])
                key = c * self.n + s
                i = bisect_left(self.rare_key, key)
                if i < len(self.rare_key) and self.rare_key[i] == key:
                    return self.rare_child[i]
                if s == 0:
                    return 0
            elif self.label[s] == c:
                return s + 1
            s = int(self.fail[s])

    def step(self, s: int, first_out, out_link, n_out, term_at) -> None:
        f = int(self.fail[s])
        out_link[s] = first_out[f]
        ends = term_at[s] >= 0
        first_out[s] = s if ends else out_link[s]
        n_out[s] = int(ends) + n_out[f]
        if self.label[s] >= 0:  # its one edge, to s + 1
            self.fail[s + 1] = self.go(f, self.label[s])


def build(terms: list[str], dense_bytes: int | None = None, row_depth: int | None = None) -> Automaton:
    """Automaton over ``terms`` (already case-folded, distinct, non-empty); term ``i`` is id ``i``.

    ``dense_bytes``: the rows' budget (default :data:`DENSE_TABLE_BYTES`, read at call time).
    """
    if dense_bytes is None:
        dense_bytes = DENSE_TABLE_BYTES
    # trie over characters, states in creation order
    children: list[dict[str, int]] = [{}]
    ends = [-1]
    for tid, term in enumerate(terms):
        s = 0
        for ch in term:
            nxt = children[s].get(ch)
            if nxt is None:
                nxt = len(children)
                children[s][ch] = nxt
                children.append({})
                ends.append(-1)
            s = nxt
        ends[s] = tid
    n = len(children)

    # classes: most used (most trie edges) first, so that rows keep the busy ones
    uses = Counter(ch for kids in children for ch in kids)
    alphabet = sorted(uses, key=lambda ch: (-uses[ch], ord(ch)))
    cls = {ch: i + 1 for i, ch in enumerate(alphabet)}
    k = len(alphabet) + 1

    # renumber in depth-first preorder: a one-child state's child comes right after it
    preorder, depth_of, stack = [], [0] * n, [0]
    while stack:
        s = stack.pop()
        preorder.append(s)
        for c in children[s].values():
            depth_of[c] = depth_of[s] + 1
            stack.append(c)
    new_id = np.empty(n, dtype=np.int64)
    new_id[np.asarray(preorder)] = np.arange(n)
    depth = np.empty(n, dtype=np.int64)
    depth[new_id] = depth_of
    term_at = np.full(n, -1, dtype=np.int32)
    term_at[new_id] = np.asarray(ends, dtype=np.int32)
    edges = np.array([(new_id[p], cls[ch], new_id[c]) for p, kids in enumerate(children) for ch, c in kids.items()],
                     dtype=np.int64).reshape(-1, 3)
    parent, ecls, child = edges[:, 0], edges[:, 1], edges[:, 2]
    n_children = np.bincount(parent, minlength=n)
    has_row = n_children >= 2
    has_row[0] = True
    has_row |= depth <= (ROW_DEPTH if row_depth is None else row_depth)
    row_state = np.flatnonzero(has_row)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[row_state] = np.arange(len(row_state))
    label = np.full(n, -1, dtype=np.int64)
    single = ~has_row[parent]  # edges out of chain states (their only one)
    label[parent[single]] = ecls[single]
    assert (child[single] == parent[single] + 1).all()
    h = k if len(row_state) * k * 4 <= dense_bytes else max(2, min(k, dense_bytes // (4 * len(row_state))))
    rare = (ecls >= h) & has_row[parent]
    rare_key = ecls[rare] * n + parent[rare]
    rare_sort = np.argsort(rare_key)
    rare_key, rare_child = rare_key[rare_sort], child[rare][rare_sort]

    rows = np.zeros((len(row_state), h), dtype=np.int64)  # next states while building
    fail = np.zeros(n, dtype=np.int64)

    def go(states: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The automaton's transition, vectorised; needs the rows and failure links of ``states``' depths."""
        out = np.empty(len(states), dtype=np.int64)
        todo, s = np.arange(len(states)), states.copy()
        while todo.size:
            cc = c[todo]
            r = row_of[s]
            in_row = (r >= 0) & (cc < h)
            out[todo[in_row]] = rows[r[in_row], cc[in_row]]
            chained = (r < 0) & (label[s] == cc)
            out[todo[chained]] = s[chained] + 1
            rare_q = (r >= 0) & (cc >= h)
            key = cc[rare_q] * n + s[rare_q]
            at = np.minimum(np.searchsorted(rare_key, key), max(len(rare_key) - 1, 0))
            hit = np.zeros(len(key), dtype=bool) if not len(rare_key) else rare_key[at] == key
            got = np.where(hit, rare_child[at] if len(rare_key) else 0, -1)
            got = np.where((got < 0) & (s[rare_q] == 0), 0, got)
            out[todo[rare_q]] = got
            done = in_row | chained
            done[np.flatnonzero(rare_q)[got >= 0]] = True
            todo, s = todo[~done], fail[s[~done]]
        return out

    first_out = np.full(n, -1, dtype=np.int64)
    out_link = np.full(n, -1, dtype=np.int64)
    n_out = np.zeros(n, dtype=np.int64)  # terms ending at a state: its output chain's length
    top = (parent == 0) & (ecls < h)
    rows[0, ecls[top]] = child[top]
    # level by level, each level's states and edges a slice of one sort: linear in the terms' total length
    # (a mask over every edge per level would be quadratic in the longest term)
    levels = np.arange(depth.max() + 2)
    by_depth = np.argsort(depth, kind="stable")
    starts = np.searchsorted(depth[by_depth], levels)
    edge_depth = depth[parent]
    edges_by_depth = np.argsort(edge_depth, kind="stable")
    edge_starts = np.searchsorted(edge_depth[edges_by_depth], levels)
    tail = _Tail(row_of, label, rows, fail, rare_key, rare_child, h, n)
    for d in range(1, int(depth.max()) + 1):
        if starts[d + 1] - starts[d] == 1 and not has_row[by_depth[starts[d]]]:  # deep in one long term: no arrays
            tail.step(int(by_depth[starts[d]]), first_out, out_link, n_out, term_at)
            continue
        states = by_depth[starts[d]:starts[d + 1]]  # their failure links are known, and shallower
        f = fail[states]
        out_link[states] = first_out[f]
        first_out[states] = np.where(term_at[states] >= 0, states, out_link[states])
        n_out[states] = (term_at[states] >= 0) + n_out[f]
        level = edges_by_depth[edge_starts[d]:edge_starts[d + 1]]  # edges out of these states
        fail[child[level]] = go(fail[parent[level]], ecls[level])
        br = states[has_row[states]]
        if len(br):
            cols = np.tile(np.arange(h), len(br))
            rows[row_of[br]] = go(np.repeat(fail[br], h), cols).reshape(len(br), h)
            own = level[has_row[parent[level]] & (ecls[level] < h)]
            rows[row_of[parent[own]], ecls[own]] = child[own]

    handle = np.where(has_row & (first_out < 0), row_of * h, -(np.arange(n) + 1))
    info = np.stack([row_of, label, fail, np.append(handle[1:], 0)], axis=1).astype(np.int32)

    ft = fold_table()
    cls_table = np.zeros(len(ft.single), dtype=np.int32)
    cls_table[[ord(ch) for ch in alphabet]] = np.arange(1, k, dtype=np.int32)
    single_cp = ft.single
    classes = np.where(single_cp >= 0, cls_table[np.maximum(single_cp, 0)], single_cp).astype(np.int32)
    return Automaton(
        classes=classes, exp_offsets=ft.offsets, exp_classes=cls_table[ft.data].astype(np.int32),
        delta=handle[rows].astype(np.int32).ravel(), n_dense=h, info=np.ascontiguousarray(info).ravel(),
        row_state=row_state.astype(np.int32), rare_keys=rare_key.astype(np.int64),
        rare_next=handle[rare_child].astype(np.int32), first_out=first_out.astype(np.int32),
        out_link=out_link.astype(np.int32), term_at=term_at, max_outputs=int(n_out.max()), n_classes=k,
        n_terms=len(terms),
    )
