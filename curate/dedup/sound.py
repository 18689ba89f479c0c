"""Sound dedup: a document is removed only if it is a near-duplicate of a document that is kept.

Connected components of LSH candidates are transitive: in a chain A~B~C, C may share little with A, and a
policy that keeps A (or A's source) would remove C for resembling nothing kept. Here the components only
propose; each component's representative (the document the policy keeps: best source, then the tie-break)
is compared with every other member, and a member may go only if its similarity to the representative is
at least `threshold`. The MinHash signatures the minhash stage kept give the estimate (fraction of equal
slots); within `margin` of the threshold the exact shingle Jaccard decides. Members that fail are not
removed: they form the next round's sub-cluster (its own representative, checked again), up to `rounds`
rounds; whatever is left after that is kept. Work per cluster is at most `rounds` x members x num_perm.

Phases (after the components converge):
  decide    per node partition: each member's component label, sent to its docs shard
  gather    per docs shard: attach each member's signature and length, send it to its component's partition
  settle    per partition of components: representatives and estimates, round by round; certain decisions are
            written (`graph.write_decisions`), pairs near the threshold go to the representative's shard
  exact-a   per docs shard of representatives: attach their shingle hashes, send to the member's shard
  exact-b   per docs shard of members: exact Jaccard; remove at or above the threshold, else keep
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from curate.dedup import nodes
from curate.dedup.exact import jaccard, shingle_hashes
from curate.dedup.graph import GraphDir, by_shard, write_decisions
from curate.dedup.layout import read_columns, read_tables, tag_of, write_columns
from curate.dedup.shingles import Shingling
from curate.dedup.shuffle import partition_of
from curate.dedup.signature_store import fixed_lists, read_signatures, signature_matrix
from curate.io import fs
from curate.io.parquet import write_table

U64 = np.uint64
KEPT, REMOVED, CHECK = 0, 1, 2
REPRESENTATIVE, ESTIMATE, EXACT = 1, 2, 3   # indexes into graph.METHODS
CHUNK = 1 << 15                              # members compared at once (bounds the temporary memory)
LARGEST = 5                                  # largest component sizes each partition reports


@dataclass(frozen=True)
class Sound:
    threshold: float     # the least similarity to a kept document that allows a removal
    margin: float        # estimates within this of the threshold are decided by the exact Jaccard
    rounds: int          # sub-cluster rounds per component; members still unsettled after them are kept
    signatures: str      # the minhash stage's signature files: s=<shard tag>.parquet
    shingling: dict      # how that stage shingled (the exact Jaccard uses the same shingles)


def equal_fraction(sig: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fraction of equal slots between signature rows a[i] and b[i]: the MinHash estimate of their Jaccard."""
    out = np.empty(len(a), np.float32)
    for i in range(0, len(a), CHUNK):
        out[i:i + CHUNK] = (sig[a[i:i + CHUNK]] == sig[b[i:i + CHUNK]]).mean(axis=1)
    return out


def settle_members(comp: np.ndarray, priority: np.ndarray, sig: np.ndarray, policy: str, threshold: float,
                   margin: float, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Members sorted by (component, rank): each member's representative (an index), fate and similarity to it.

    Each round, the best-ranked unsettled member of every component is a representative (kept); the
    policy keeps what it always keeps (`cross_source`: the representative's source; `all`: nothing else);
    every other unsettled member is removed when its estimate is at least threshold + margin, sent to
    the exact check when within the margin, and otherwise left for the next round's sub-cluster."""
    n = len(comp)
    rep, fate, sim = np.arange(n), np.full(n, KEPT, np.int8), np.ones(n, np.float32)
    pending = np.ones(n, bool)
    for _ in range(rounds):
        idx = np.flatnonzero(pending)
        if not len(idx):
            break
        c = comp[idx]
        first = np.r_[True, c[1:] != c[:-1]]
        rep_of = idx[first][np.cumsum(first) - 1]
        est = equal_fraction(sig, idx, rep_of)
        kept = idx == rep_of
        if policy == "cross_source":
            kept |= priority[idx] == priority[rep_of]
        sure = ~kept & (est >= threshold + margin)
        close = ~kept & ~sure & (est >= threshold - margin)
        rep[idx], sim[idx] = rep_of, np.where(idx == rep_of, 1.0, est)
        fate[idx[sure]], fate[idx[close]] = REMOVED, CHECK
        pending[idx[kept | sure | close]] = False
    left = np.flatnonzero(pending)  # unsettled after the last round: kept, each its own representative
    rep[left], sim[left] = left, 1.0
    return rep, fate, sim


def route(g: GraphDir, rnd: int, p: int) -> dict:
    """Send each member's component label (and rank) to its docs shard."""
    lab = g.labels(rnd, p)
    for key, part in by_shard(lab["node"], node=lab["node"], label=lab["label_lo"], hi=lab["hi"]):
        write_columns(g.path("sound", "route", f"s={tag_of(key)}", f"from-{p:05d}.parquet"), **part)
    return {"in": len(lab["node"])}


def gather(g: GraphDir, s: Sound, tag: str, ids: pa.Array | None) -> dict:
    """Attach this shard's members' signatures (and ids when the policy ranks by id); send them by component."""
    m = read_columns(g.path("sound", "route", f"s={tag}", "*.parquet"), ["node", "label", "hi"], {"node": U64, "label": U64, "hi": U64})
    if not len(m["node"]):
        return {"in": 0}
    sig_node, length, sig = read_signatures(fs.join(s.signatures, f"s={tag}.parquet"))
    at = np.searchsorted(sig_node, m["node"])
    if len(sig_node) == 0 or not np.array_equal(sig_node[np.minimum(at, len(sig_node) - 1)], m["node"]):
        raise ValueError(f"shard {tag}: a cluster member has no stored signature (re-run the minhash step)")
    table = pa.table({"node": m["node"], "label": m["label"], "hi": m["hi"], "length": length[at], "sig": fixed_lists(sig[at])})
    if ids is not None:
        table = table.append_column("id", ids.take(pa.array(nodes.row_of(m["node"]))).cast(pa.string()))
    part = partition_of(m["label"], g.partitions)
    order = np.argsort(part, kind="stable")
    bounds = np.flatnonzero(np.r_[True, part[order][1:] != part[order][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        rows = order[a:b]
        write_table(g.path("sound", "gathered", f"p={int(part[rows[0]]):05d}", f"from-{tag}.parquet"), table.take(pa.array(rows)),
                    compression="lz4")
    return {"in": len(m["node"])}


def settle(g: GraphDir, s: Sound, policy: str, by_id: bool, p: int) -> dict:
    """Decide one partition of components: certain decisions are written, near-threshold pairs queued for exact."""
    t = read_tables(g.path("sound", "gathered", f"p={p:05d}", "*.parquet"))
    if t is None:
        return {"in": 0, "removed": 0, "checks": 0, "largest": []}
    if by_id:
        t = t.append_column("prio", pa.array(nodes.priority_of(t.column("node").to_numpy())))
        t = t.sort_by([("label", "ascending"), ("prio", "ascending"), ("id", "ascending"), ("node", "ascending")])
    else:
        t = t.take(pa.array(np.lexsort((t.column("node").to_numpy(), t.column("hi").to_numpy(), t.column("label").to_numpy()))))
    node, label, length = (t.column(k).to_numpy() for k in ("node", "label", "length"))
    starts = np.r_[True, label[1:] != label[:-1]]
    comp = np.cumsum(starts) - 1
    rep, fate, sim = settle_members(comp, nodes.priority_of(node), signature_matrix(t.column("sig")), policy,
                                    s.threshold, s.margin, s.rounds)
    method = np.where(rep == np.arange(len(node)), REPRESENTATIVE, ESTIMATE).astype(np.uint8)
    certain, check = fate != CHECK, fate == CHECK
    write_decisions(g, f"{p:05d}", node[certain], label[certain], fate[certain] == REMOVED, node[rep][certain], sim[certain],
                    method[certain], length[certain])
    for key, part in by_shard(node[rep][check], node=node[check], rep=node[rep][check], label=label[check], length=length[check]):
        write_columns(g.path("sound", "exact", f"s={tag_of(key)}", f"from-{p:05d}.parquet"), **part)
    sizes = np.bincount(comp)
    return {"in": len(node), "removed": int((fate == REMOVED).sum()), "checks": int(check.sum()),
            "largest": sorted(sizes.tolist(), reverse=True)[:LARGEST]}


def _hashes(shingling: Shingling, texts: pa.Array, rows: np.ndarray) -> dict[int, np.ndarray]:
    wanted = np.unique(rows)
    return {int(r): shingle_hashes(t or "", shingling) for r, t in zip(wanted, texts.take(pa.array(wanted)).to_pylist())}


def shingling_of(s: Sound) -> Shingling:
    return Shingling(**{**s.shingling, "normalize": tuple(s.shingling["normalize"])})


def exact_a(g: GraphDir, s: Sound, tag: str, texts: pa.Array) -> dict:
    """Per shard of representatives: attach each queued pair's representative shingle hashes, send to the member's shard."""
    c = read_columns(g.path("sound", "exact", f"s={tag}", "*.parquet"), ["node", "rep", "label", "length"],
                     {"node": U64, "rep": U64, "label": U64, "length": np.int64})
    sets = _hashes(shingling_of(s), texts, nodes.row_of(c["rep"]))
    for key, part in by_shard(c["node"], **c):
        hashes = [sets[int(r)] for r in nodes.row_of(part["rep"])]
        table = pa.table({**{k: pa.array(v) for k, v in part.items()}, "rep_hashes": pa.array(hashes, pa.list_(pa.uint64()))})
        write_table(g.path("sound", "exact-b", f"s={tag_of(key)}", f"from-{tag}.parquet"), table, compression="lz4")
    return {"in": len(c["node"])}


def exact_b(g: GraphDir, s: Sound, tag: str, texts: pa.Array) -> dict:
    """Per shard of members: the exact Jaccard with the representative decides; the decision is written with it."""
    t = read_tables(g.path("sound", "exact-b", f"s={tag}", "*.parquet"))
    if t is None:
        return {"in": 0, "removed": 0}
    node = t.column("node").to_numpy()
    sets = _hashes(shingling_of(s), texts, nodes.row_of(node))
    rep_hashes = t.column("rep_hashes").to_pylist()
    sim = np.array([jaccard(sets[int(r)], np.asarray(h, U64)) for r, h in zip(nodes.row_of(node), rep_hashes)], np.float64)
    gone = sim >= s.threshold
    write_decisions(g, f"x{tag}", node, t.column("label").to_numpy(), gone, t.column("rep").to_numpy(), sim,
                    np.full(len(node), EXACT, np.uint8), t.column("length").to_numpy())
    return {"in": len(node), "removed": int(gone.sum())}


def has_work(g: GraphDir, kind: str, tag: str) -> bool:
    """Whether an exact phase has anything queued for this shard (so its text need not be read otherwise)."""
    return bool(fs.glob(g.path("sound", kind, f"s={tag}", "*.parquet")))
