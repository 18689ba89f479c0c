"""The distributed clustering of candidate pairs, as phase functions over files in a work directory.

Each function does one task of one phase (a hash partition of nodes, or a docs shard) and returns its
counts; it reads what earlier phases wrote and writes what later ones read, so no task ever holds more
than one partition of edges and labels. The phases, in order:

  buckets   per band partition: group (band, key), emit star edges and each node's rank by node partition
  init      per node partition: initial labels (every node its own rank)
  send/receive, repeated: min-label propagation until no label changes (`components`); or, for a graph of at most
            `IN_MEMORY` nodes and edges, `label` in one task
  decide    per node partition: the policy marks removed nodes (by the docs shard of the kept node)
  idrank, choose   (policy `all` with `tie_break: id`): the smallest id of the best source is kept
  resolve   per docs shard: the id of each member's representative (the kept document in a removed one's place)
The verify phases (exact Jaccard of candidate pairs) are in `curate.dedup.verify`; the sound mode's phases
(every removal checked against its cluster's representative) in `curate.dedup.sound`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from curate.dedup import bundles, components, mailbox, nodes, rowset
from curate.dedup.band_cache import candidates
from curate.dedup.candidates import stars
from curate.dedup.layout import WORK, read_columns, read_tables, tag_of, write_columns, write_frame
from curate.dedup.policy import removed_mask
from curate.dedup.shuffle import mix64, partition_of
from curate.io import fs

U64 = np.uint64
IN_MEMORY = 8_000_000
"""Nodes plus edges (each direction) up to which one task labels the whole graph (`label`): at the cap ~300 MB of
arrays and ~4 s, about a 10M-document corpus's graph. A 1M-document dedup's ~140,000 nodes took 13 rounds of P `send`
and P `receive` tasks (3 s, ~200 files) to do what `components.smallest` does in 0.1 s; a larger graph keeps the
rounds, one partition in memory a task."""


@dataclass(frozen=True)
class GraphDir:
    """The work files of one clustering: `root/<kind>/p=<partition>/...` or `root/<kind>/s=<shard tag>/...`."""

    root: str
    partitions: int

    def path(self, *parts: str) -> str:
        return fs.join(self.root, *parts)

    def adjacency(self, p: int) -> str:
        """Partition p's edges (both directions), gathered once by `init`."""
        return self.path("adjacency", f"p={p:05d}{WORK}")

    def labels(self, rnd: int, p: int) -> dict[str, np.ndarray]:
        """Partition p's nodes (sorted), ranks and labels before round `rnd`, and whether each label `moved` in the
        round before (so the node sends it: every node before round 0)."""
        names = ["node", "hi", "label_hi", "label_lo"]
        try:
            return read_columns(self._labels(rnd, p), [*names, "moved"], {**dict.fromkeys(names, U64), "moved": bool})
        except KeyError:   # written before `moved` (a run resumed across the change): every node sends
            cols = read_columns(self._labels(rnd, p), names, dict.fromkeys(names, U64))
            return {**cols, "moved": np.ones(len(cols["node"]), bool)}

    def write_labels(self, rnd: int, p: int, node, hi, label_hi, label_lo, moved=None) -> None:
        write_columns(self._labels(rnd, p), node=node, hi=hi, label_hi=label_hi, label_lo=label_lo,
                      moved=np.ones(len(node), bool) if moved is None else moved)

    def _labels(self, rnd: int, p: int) -> str:
        return self.path("labels", f"r={rnd:03d}", f"p={p:05d}{WORK}")


def buckets(g: GraphDir, bands: str, verify: bool, numbers: dict | None, keep: str | None, p: int) -> dict:
    """`numbers`: (source, shard) -> (priority, index) where the band files are a minhash step's; `keep`: where their
    rows are kept across runs, sorted by key (`curate.dedup.band_cache`); only the rows whose key another row has go
    into buckets."""
    cols, rows = candidates(bands, p, numbers, keep)
    u, v = stars(cols["band"], cols["key"], cols["node"])
    hi_u, hi_v = lookup(cols["node"], cols["hi"], u), lookup(cols["node"], cols["hi"], v)
    if verify:  # candidates go to the docs shard of u first
        bundles.send(g.path("candidates"), f"{p:05d}", by_shard(u, u=u, v=v, hi_u=hi_u, hi_v=hi_v))
    else:
        write_edges(g, f"{p:05d}", u, v, hi_u, hi_v)
    return {"in": rows, "edges": len(u)}


def write_edges(g: GraphDir, origin: str, u, v, hi_u, hi_v) -> None:
    """Edges in both directions by node partition, and each linked node's rank (`mailbox`: every band partition's or
    docs shard's task sends to every node partition)."""
    both_u, both_v = np.concatenate([u, v]), np.concatenate([v, u])
    mailbox.send(g.path("edges"), origin, partition_of(both_u, g.partitions), g.partitions, {"u": both_u, "v": both_v})
    linked, first = np.unique(both_u, return_index=True)
    hi = np.concatenate([hi_u, hi_v])[first]
    mailbox.send(g.path("nodes"), origin, partition_of(linked, g.partitions), g.partitions, {"node": linked, "hi": hi})


def init(g: GraphDir, p: int) -> dict:
    """The partition's first labels (each node its own), and its edges gathered into one file: every round's `send`
    reads that one file, not the partition's rows of each of the P edge mailboxes."""
    cols = received(g.path("nodes"), p, g.partitions, ["node", "hi"])
    node, first = np.unique(cols["node"], return_index=True)
    hi = cols["hi"][first]
    g.write_labels(0, p, node, hi, hi, node)
    edges = received(g.path("edges"), p, g.partitions, ["u", "v"])
    u, v = distinct_edges(edges["u"], edges["v"])
    write_columns(g.adjacency(p), u=u, v=v)
    return {"in": len(node), "edges": len(u)}


def distinct_edges(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each edge once, sorted by (u, v). Two documents that share keys in several bands are an edge of each band's
    partition: a near-copy's edge came ~4 times, and every round sent a message along each (at 100M documents the
    partition at the centre of the giant cluster's stars held 4.4M edges to its 1M members)."""
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    first = np.ones(len(u), bool)
    first[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    return u[first], v[first]


def received(folder: str, p: int, partitions: int, names: list[str], origins: list[str] | None = None) -> dict[str, np.ndarray]:
    """The uint64 columns every task sent node partition p under `folder` (one listing of it): their mailboxes, and the
    Arrow bundles an earlier version sent them as (a run resumed across the change reads both). `origins`: the senders
    this version's `send`s named, all mailboxes: the folder is not listed."""
    older: list[str] = []
    if origins is None:
        listed = [path.rsplit("/", 1)[-1].removeprefix("from-") for path in fs.glob(fs.join(folder, "from-*"))]
        origins = [name.removesuffix(mailbox.SUFFIX) for name in listed if name.endswith(mailbox.SUFFIX)]
        older = [name.removesuffix(WORK) for name in listed if name.endswith(WORK)]
    got = mailbox.receive(folder, p, partitions, names, origins)
    if not older:
        return got
    old = bundles.receive_from(folder, older, bundles.partition(p), names, dict.fromkeys(names, U64))
    return {n: np.concatenate([got[n], old[n]]) for n in names}


def label(g: GraphDir, task: str) -> dict:
    """Every partition's final labels (round 1, as the rounds leave them: each node its component's smallest rank
    `(hi, node)`), from all of `init`'s labels and edges at once (`IN_MEMORY`)."""
    parts = [g.labels(0, p) for p in range(g.partitions)]
    node, hi = np.concatenate([q["node"] for q in parts]), np.concatenate([q["hi"] for q in parts])
    edges = [read_columns(g.adjacency(p), ["u", "v"], {"u": U64, "v": U64}) for p in range(g.partitions)]
    rank = np.lexsort((node, hi))                  # rank order: (hi, node)
    place = np.empty(len(node), np.int64)
    place[rank] = np.arange(len(node))
    by_node = np.argsort(node)
    sorted_node = node[by_node]

    def placed(ids):   # (searchsorted with `sorter` took 2 us a query: 15 s at 8M)
        return place[by_node[np.searchsorted(sorted_node, ids)]]

    u, v = (np.concatenate([e[k] for e in edges]) for k in ("u", "v"))
    once = u < v   # (the adjacency holds each edge both ways)
    first = rank[components.smallest(len(node), placed(u[once]), placed(v[once]))[place]]   # each node's component's first
    at = 0
    for p, q in enumerate(parts):
        mine = first[at:at + len(q["node"])]
        g.write_labels(1, p, q["node"], q["hi"], hi[mine], node[mine])
        at += len(q["node"])
    return {"in": len(node), "edges": len(u)}


def send(g: GraphDir, rnd: int, p: int) -> dict:
    lab = g.labels(rnd, p)
    edges = read_columns(g.adjacency(p), ["u", "v"], {"u": U64, "v": U64})
    target, hi, lo = components.send(edges["u"], edges["v"], lab["node"], lab["label_hi"], lab["label_lo"], lab["moved"])
    counts = mailbox.send(g.path("messages", f"r={rnd:03d}"), bundles.partition(p), partition_of(target, g.partitions),
                          g.partitions, {"target": target, "hi": hi, "lo": lo})
    return {"in": len(lab["node"]), "messages": len(target), "p": p, "to": np.packbits(counts > 0).tobytes().hex()}


def senders(sent: list[dict], partitions: int) -> list[list[int]] | None:
    """For each node partition, the partitions whose `send` wrote it messages (each result's `to`: a bit a receiver),
    where most pairs sent nothing (the later rounds, once most labels settled): a receiver then reads only those
    mailboxes, not the head of each of P. None when the round was dense, or a result does not say (an earlier
    version's)."""
    if any("to" not in r for r in sent):
        return None
    wrote = np.zeros((partitions, partitions), bool)
    for r in sent:
        wrote[r["p"]] = np.unpackbits(np.frombuffer(bytes.fromhex(r["to"]), np.uint8), count=partitions).astype(bool)
    if wrote.sum() > wrote.size // 2:
        return None
    return [np.flatnonzero(wrote[:, q]).tolist() for q in range(partitions)]


def receive(g: GraphDir, rnd: int, job: int | tuple[int, list[int] | None]) -> dict:
    """Partition p's new labels from its round's messages (`job`: p, or p and the partitions that sent it any)."""
    p, origins = (job, None) if isinstance(job, int) else job
    lab = g.labels(rnd, p)
    msg = received(g.path("messages", f"r={rnd:03d}"), p, g.partitions, ["target", "hi", "lo"],
                   None if origins is None else [bundles.partition(q) for q in origins])
    hi, lo, moved = components.receive(lab["node"], lab["label_hi"], lab["label_lo"], msg["target"], msg["hi"], msg["lo"])
    g.write_labels(rnd + 1, p, lab["node"], lab["hi"], hi, lo, moved)
    return {"in": len(lab["node"]), "changed": int(moved.sum())}


def decide(g: GraphDir, policy: str, by_id: bool, rnd: int, p: int) -> dict:
    lab = g.labels(rnd, p)
    node, label = lab["node"], lab["label_lo"]
    if by_id:  # the kept document is chosen by id once ids are attached (phases idrank, choose)
        bundles.send(g.path("idrank"), f"{p:05d}", by_shard(node, node=node, label=label))
        return {"in": len(node)}
    gone = removed_mask(policy, node, label)
    write_decisions(g, f"{p:05d}", node, label, gone, label)
    return {"in": len(node), "removed": int(gone.sum())}


METHODS = ("", "representative", "minhash estimate", "exact jaccard")  # how a member's similarity was measured


def write_decisions(g: GraphDir, origin: str, node, label, gone, rep, sim=None, method=None, length=None, frozen_rep=None) -> None:
    """Every member with its representative (the kept node that replaced it, or that it was compared with) by the
    representative's shard, where `resolve` names it; members with their fate and evidence by their own shard.

    `sim`: similarity to the representative (NaN: not measured); `method`: index into METHODS; `length`: characters (-1: unknown);
    `frozen_rep`: removed for a frozen document (`curate.dedup.frozen`)."""
    n = len(node)
    sim = np.full(n, np.nan, np.float32) if sim is None else np.asarray(sim, np.float32)
    method = np.zeros(n, np.uint8) if method is None else np.asarray(method, np.uint8)
    length = np.full(n, -1, np.int64) if length is None else np.asarray(length, np.int64)
    frozen_rep = np.zeros(n, bool) if frozen_rep is None else np.asarray(frozen_rep, bool)
    bundles.send(g.path("reps"), origin, by_shard(rep, node=node, rep=rep, gone=gone), digests=True)
    bundles.send(g.path("members"), origin, by_shard(node, node=node, label=label, removed=gone, sim=sim, method=method,
                                                     length=length, frozen_rep=frozen_rep, rep=rep), digests=True)


def idrank(g: GraphDir, tag: str, ids: pa.Array) -> dict:
    """Attach each member's id (`ids`: the docs shard's id column), then send members to their cluster's partition."""
    m = bundles.receive(g.path("idrank"), tag, ["node", "label"], {"node": U64, "label": U64})
    member_ids = ids.take(pa.array(nodes.row_of(m["node"]))).to_pylist()
    part_of = partition_of(m["label"], g.partitions)
    for q in np.unique(part_of):
        rows = np.flatnonzero(part_of == q)
        table = pa.table({"node": pa.array(m["node"][rows]), "label": pa.array(m["label"][rows]),
                          "id": pa.array([member_ids[i] for i in rows], pa.string())})
        write_frame(g.path("choose", f"p={int(q):05d}", f"from-{tag}{WORK}"), table)
    return {"in": len(m["node"])}


def choose(g: GraphDir, p: int) -> dict:
    """Per cluster: keep the best source's smallest id; everything else is removed in its favour."""
    t = read_tables(g.path("choose", f"p={p:05d}", f"*{WORK}"))
    if t is None:
        return {"in": 0, "removed": 0}
    node, label, ids = t.column("node").to_numpy(), t.column("label").to_numpy(), t.column("id").to_pylist()
    prio = nodes.priority_of(node)
    kept_of: dict = {}
    for i in sorted(range(len(node)), key=lambda i: (int(label[i]), int(prio[i]), ids[i])):
        kept_of.setdefault(int(label[i]), node[i])
    kept = np.array([kept_of[int(x)] for x in label], dtype=U64)
    gone = node != kept
    write_decisions(g, f"{p:05d}", node, label, gone, kept)
    return {"in": len(node), "removed": int(gone.sum())}


def resolve(g: GraphDir, tag: str, ids: pa.Array, r: dict[str, np.ndarray] | None = None) -> dict:
    """Name the representative (id, source) of every member whose representative is one of this shard's documents
    (`r`: what `reps` returns, when the caller read it already)."""
    r = reps(g.root, tag) if r is None else r
    rep_id = ids.take(pa.array(nodes.row_of(r["rep"]))).cast(pa.string())   # (the source is the sender's: its priority)
    sent = bundles.send(g.path("resolved"), tag, by_shard(r["node"], node=r["node"], rep_id=rep_id), digests=True)
    return {"in": len(r["node"]), "removed": int(r["gone"].sum()), "sent": sent}


def resolved_digests(results: list[dict]) -> dict[str, str] | None:
    """Per receiving docs shard, the content of what the `resolve` tasks (their `results`) sent it (`rowset`: the
    senders' order does not count); None where a result names nothing (an earlier version's)."""
    if any("sent" not in result for result in results):
        return None
    parts: dict[str, list[np.ndarray]] = {}
    for result in results:
        for receiver, digest in result["sent"].items():
            parts.setdefault(receiver, []).append(np.frombuffer(bytes.fromhex(digest), np.uint64))
    return {receiver: rowset.add(p).tobytes().hex() for receiver, p in parts.items()}


def reps(root: str, tag: str) -> dict[str, np.ndarray]:
    """The members whose representative is one of this shard's documents (`rep`), and whether each was removed."""
    return bundles.receive(fs.join(root, "reps"), tag, ["node", "rep", "gone"], {"node": U64, "rep": U64, "gone": bool})


@dataclass
class ShardDecisions:
    """A docs shard's outcome, one entry per member node (sorted): cluster, fate, representative (id: Arrow strings,
    never made Python objects; source), similarity to it (NaN: not measured) and how, length (-1: unknown), and how
    many documents it stands for (1 + those removed in its favour; 0 for a removed one)."""

    node: np.ndarray
    label: np.ndarray
    removed: np.ndarray
    rep_id: pa.StringArray
    rep_source: np.ndarray
    sim: np.ndarray
    method: np.ndarray
    length: np.ndarray
    represents: np.ndarray
    frozen_rep: np.ndarray


def shard_decisions(root: str, tag: str, sources: list[str]) -> ShardDecisions:
    """What the graph phases decided for one docs shard (`root`: the GraphDir's root; `sources`: by priority, the
    source of a node's priority)."""
    m = bundles.receive(fs.join(root, "members"), tag,
                     ["node", "label", "removed", "sim", "method", "length", "frozen_rep", "rep"],
                     {"node": U64, "label": U64, "removed": bool, "sim": np.float32, "method": np.uint8, "length": np.int64,
                      "frozen_rep": bool, "rep": U64})
    order = np.argsort(m["node"])
    m = {k: v[order] for k, v in m.items()}
    senders = [tag_of(key) for key in np.unique(nodes.shard_key(m["rep"]))]   # the shards of its members' representatives
    resolved = bundles.receive_from(fs.join(root, "resolved"), senders, tag, ["node", "rep_id"],
                                    {"node": U64, "rep_id": pa.string()})
    by_node = np.argsort(resolved["node"])
    at = by_node[np.searchsorted(resolved["node"][by_node], m["node"])] if len(m["node"]) else np.empty(0, np.int64)
    rep_id, rep_source = resolved["rep_id"].take(pa.array(at)), np.array(sources, object)[nodes.priority_of(m["rep"])]
    mine = reps(root, tag)   # how many members each of its documents replaces
    rep, count = np.unique(mine["rep"][mine["gone"]], return_counts=True)
    represents = np.where(m["removed"], 0, 1).astype(np.int64)
    hit = np.isin(m["node"], rep)
    represents[hit] += count[np.searchsorted(rep, m["node"][hit])]
    return ShardDecisions(m["node"], m["label"], m["removed"], rep_id, rep_source, m["sim"], m["method"], m["length"], represents,
                          m["frozen_rep"])


def cluster_ids(labels: np.ndarray, names: dict[int, str]) -> np.ndarray:
    """Each label node as a cluster number that does not depend on how docs shards are numbered: node numbers follow
    the shards' order in the run, which a new file changes, but (source, shard name, row) of the label's document
    stays. `names`: shard key (`nodes.shard_key`) -> "source/shard"."""
    keys, at = np.unique(nodes.shard_key(labels), return_inverse=True)
    shard = np.array([int.from_bytes(hashlib.blake2b(names[int(k)].encode(), digest_size=8).digest(), "little") for k in keys],
                     np.uint64)
    with np.errstate(over="ignore"):
        return mix64(shard[at.reshape(-1)] ^ mix64(nodes.row_of(labels).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)))


def by_shard(keys_from: np.ndarray, **columns: np.ndarray):
    """Group columns by the docs shard of `keys_from` nodes: yields (shard key, {name: rows})."""
    keys = nodes.shard_key(keys_from)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    ends = np.r_[starts[1:], len(keys)]
    for s, e in zip(starts, ends):
        rows = order[s:e]
        yield int(keys[s]), {name: col.take(pa.array(rows)) if isinstance(col, pa.Array) else col[rows]
                             for name, col in columns.items()}


def lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys[order], wanted)
    return values[order][at]
