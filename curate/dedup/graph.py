"""The distributed clustering of candidate pairs, as phase functions over files in a work directory.

Each function does one task of one phase (a hash partition of nodes, or a docs shard) and returns its
counts; it reads what earlier phases wrote and writes what later ones read, so no task ever holds more
than one partition of edges and labels. The phases, in order:

  buckets   per band partition: group (band, key), emit star edges and each node's rank by node partition
  init      per node partition: initial labels (every node its own rank)
  send/receive, repeated: min-label propagation until no label changes (`components`)
  decide    per node partition: the policy marks removed nodes (by the docs shard of the kept node)
  idrank, choose   (policy `all` with `tie_break: id`): the smallest id of the best source is kept
  resolve   per docs shard: the id of the document kept in each removed node's place
The verify phases (exact Jaccard of candidate pairs) are in `curate.dedup.verify`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from curate.dedup import components, nodes
from curate.dedup.candidates import bucket_edges
from curate.dedup.layout import read_columns, read_tables, tag_of, write_columns
from curate.dedup.policy import removed_mask
from curate.dedup.shuffle import partition_of, split
from curate.io import fs
from curate.io.parquet import write_table

U64 = np.uint64


@dataclass(frozen=True)
class GraphDir:
    """The work files of one clustering: `root/<kind>/p=<partition>/...` or `root/<kind>/s=<shard tag>/...`."""

    root: str
    partitions: int

    def path(self, *parts: str) -> str:
        return fs.join(self.root, *parts)

    def labels(self, rnd: int, p: int) -> dict[str, np.ndarray]:
        return read_columns(self.path("labels", f"r={rnd:03d}", f"p={p:05d}.parquet"), ["node", "hi", "label_hi", "label_lo"],
                            {"node": U64, "hi": U64, "label_hi": U64, "label_lo": U64})


def buckets(g: GraphDir, bands: str, verify: bool, p: int) -> dict:
    cols = read_columns(fs.join(bands, f"p={p:05d}", "*.parquet"), ["band", "key", "node", "hi"],
                        {"band": np.uint16, "key": U64, "node": U64, "hi": U64})
    u, v = bucket_edges(cols["band"], cols["key"], cols["node"])
    hi_u, hi_v = lookup(cols["node"], cols["hi"], u), lookup(cols["node"], cols["hi"], v)
    if verify:  # candidates go to the docs shard of u first
        for key, part in by_shard(u, u=u, v=v, hi_u=hi_u, hi_v=hi_v):
            write_columns(g.path("candidates", f"s={tag_of(key)}", f"from-{p:05d}.parquet"), **part)
    else:
        write_edges(g, f"{p:05d}", u, v, hi_u, hi_v)
    return {"in": len(cols["node"]), "edges": len(u)}


def write_edges(g: GraphDir, origin: str, u, v, hi_u, hi_v) -> None:
    """Edges in both directions by node partition, and each linked node's rank."""
    both_u, both_v = np.concatenate([u, v]), np.concatenate([v, u])
    for q, part in split(partition_of(both_u, g.partitions), g.partitions, u=both_u, v=both_v):
        write_columns(g.path("edges", f"p={q:05d}", f"from-{origin}.parquet"), **part)
    linked, first = np.unique(both_u, return_index=True)
    hi = np.concatenate([hi_u, hi_v])[first]
    for q, part in split(partition_of(linked, g.partitions), g.partitions, node=linked, hi=hi):
        write_columns(g.path("nodes", f"p={q:05d}", f"from-{origin}.parquet"), **part)


def init(g: GraphDir, p: int) -> dict:
    cols = read_columns(g.path("nodes", f"p={p:05d}", "*.parquet"), ["node", "hi"], {"node": U64, "hi": U64})
    node, first = np.unique(cols["node"], return_index=True)
    hi = cols["hi"][first]
    write_columns(g.path("labels", "r=000", f"p={p:05d}.parquet"), node=node, hi=hi, label_hi=hi, label_lo=node)
    return {"in": len(node)}


def send(g: GraphDir, rnd: int, p: int) -> dict:
    lab = g.labels(rnd, p)
    edges = read_columns(g.path("edges", f"p={p:05d}", "*.parquet"), ["u", "v"], {"u": U64, "v": U64})
    target, hi, lo = components.send(edges["u"], edges["v"], lab["node"], lab["label_hi"], lab["label_lo"])
    for q, part in split(partition_of(target, g.partitions), g.partitions, target=target, hi=hi, lo=lo):
        write_columns(g.path("messages", f"r={rnd:03d}", f"p={q:05d}", f"from-{p:05d}.parquet"), **part)
    return {"in": len(lab["node"]), "messages": len(target)}


def receive(g: GraphDir, rnd: int, p: int) -> dict:
    lab = g.labels(rnd, p)
    msg = read_columns(g.path("messages", f"r={rnd:03d}", f"p={p:05d}", "*.parquet"), ["target", "hi", "lo"],
                       {"target": U64, "hi": U64, "lo": U64})
    hi, lo, changed = components.receive(lab["node"], lab["label_hi"], lab["label_lo"], msg["target"], msg["hi"], msg["lo"])
    write_columns(g.path("labels", f"r={rnd + 1:03d}", f"p={p:05d}.parquet"), node=lab["node"], hi=lab["hi"],
                  label_hi=hi, label_lo=lo)
    return {"in": len(lab["node"]), "changed": changed}


def decide(g: GraphDir, policy: str, by_id: bool, rnd: int, p: int) -> dict:
    lab = g.labels(rnd, p)
    node, label = lab["node"], lab["label_lo"]
    if by_id:  # the kept document is chosen by id once ids are attached (phases idrank, choose)
        for key, part in by_shard(node, node=node, label=label):
            write_columns(g.path("idrank", f"s={tag_of(key)}", f"from-{p:05d}.parquet"), **part)
        return {"in": len(node)}
    gone = removed_mask(policy, node, label)
    write_decisions(g, f"{p:05d}", node, label, gone, label)
    return {"in": len(node), "removed": int(gone.sum())}


def write_decisions(g: GraphDir, origin: str, node, label, gone, kept) -> None:
    """Removed nodes (with the node kept in their place) by the kept node's shard; members by their own."""
    for key, part in by_shard(kept[gone], node=node[gone], label=kept[gone]):
        write_columns(g.path("removed", f"s={tag_of(key)}", f"from-{origin}.parquet"), **part)
    for key, part in by_shard(node, node=node, label=label, removed=gone):
        write_columns(g.path("members", f"s={tag_of(key)}", f"from-{origin}.parquet"), **part)


def idrank(g: GraphDir, tag: str, ids: pa.Array) -> dict:
    """Attach each member's id (`ids`: the docs shard's id column), then send members to their cluster's partition."""
    m = read_columns(g.path("idrank", f"s={tag}", "*.parquet"), ["node", "label"], {"node": U64, "label": U64})
    member_ids = ids.take(pa.array(nodes.row_of(m["node"]))).to_pylist()
    part_of = partition_of(m["label"], g.partitions)
    for q in np.unique(part_of):
        rows = np.flatnonzero(part_of == q)
        table = pa.table({"node": pa.array(m["node"][rows]), "label": pa.array(m["label"][rows]),
                          "id": pa.array([member_ids[i] for i in rows], pa.string())})
        write_table(g.path("choose", f"p={int(q):05d}", f"from-{tag}.parquet"), table, compression="lz4")
    return {"in": len(m["node"])}


def choose(g: GraphDir, p: int) -> dict:
    """Per cluster: keep the best source's smallest id; everything else is removed in its favour."""
    t = read_tables(g.path("choose", f"p={p:05d}", "*.parquet"))
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


def resolve(g: GraphDir, tag: str, source: str, ids: pa.Array) -> dict:
    """Name the kept document (id, source) of every node removed in favour of one of this shard's documents."""
    removed = read_columns(g.path("removed", f"s={tag}", "*.parquet"), ["node", "label"], {"node": U64, "label": U64})
    kept_id = ids.take(pa.array(nodes.row_of(removed["label"]))).to_numpy(zero_copy_only=False)
    for key, part in by_shard(removed["node"], node=removed["node"], kept=kept_id.astype(object)):
        write_table(g.path("resolved", f"s={tag_of(key)}", f"from-{tag}.parquet"),
                    pa.table({"node": pa.array(part["node"]), "kept_id": pa.array(list(part["kept"]), pa.string()),
                              "kept_source": pa.array([source] * len(part["node"]), pa.string())}))
    return {"in": len(removed["node"])}


@dataclass
class ShardDecisions:
    """A docs shard's outcome: every member node (sorted) with its cluster and fate, and who replaced the removed."""

    node: np.ndarray
    label: np.ndarray
    removed: np.ndarray
    kept_by: dict  # removed node -> (kept id, kept source)


def shard_decisions(root: str, tag: str) -> ShardDecisions:
    """What the graph phases decided for one docs shard (`root`: the GraphDir's root)."""
    m = read_columns(fs.join(root, "members", f"s={tag}", "*.parquet"), ["node", "label", "removed"],
                     {"node": U64, "label": U64, "removed": bool})
    order = np.argsort(m["node"])
    table = read_tables(fs.join(root, "resolved", f"s={tag}", "*.parquet"))
    kept_by = {} if table is None else dict(zip(table.column("node").to_pylist(), zip(
        table.column("kept_id").to_pylist(), table.column("kept_source").to_pylist())))
    return ShardDecisions(m["node"][order], m["label"][order], m["removed"][order], kept_by)


def by_shard(keys_from: np.ndarray, **columns: np.ndarray):
    """Group columns by the docs shard of `keys_from` nodes: yields (shard key, {name: rows})."""
    keys = nodes.shard_key(keys_from)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    ends = np.r_[starts[1:], len(keys)]
    for s, e in zip(starts, ends):
        rows = order[s:e]
        yield int(keys[s]), {name: col[rows] for name, col in columns.items()}


def lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys[order], wanted)
    return values[order][at]
