"""Settled components kept across runs: an append gathers, settles and finalizes only the components it touched.

A component's decisions (who is kept, each member's representative, similarity and method) follow from its members
in their settling order (rank, then node), which of them share a source, their texts and signatures, and the
step's options: nothing outside the component (`curate.dedup.settle` settles components independently). So a
component is named by what an append cannot move: each member's docs shard id (`exact_cache.shard_id`: the shard's
content) and row, its position in that order and its source's place in the component's run of sources, hashed
with the step's options (`context`). Node numbers and labels never enter the key: a shard or source sorting in
earlier renumbers them and leaves the key alone. A new member, a member of a changed shard, a merged component or
another option gives another key, so an old decision can never pass for a new component.

Phase `recall` (per partition of components, between `decide` and `gather`): each partition's members (node,
label, rank; no signatures) are keyed; the components found in `<cache>/*.parquet` write their decisions
straight away (the rep by its position in the component, mapped to this run's node) and are neither gathered nor
settled; the rest are routed to their docs shards for `gather` as before. `finalize` stores the components it
settled (`p=<p>.parquet`), `recall` those it reused (`r=<p>.parquet`): the cache holds the last run's components.
A row's content follows from its key alone, so files left by a killed run, or read while rewritten, are sound.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from curate.dedup import bundles, exact_cache, nodes
from curate.dedup.graph import GraphDir, by_shard, write_decisions
from curate.dedup.layout import WORK, read_columns, write_columns
from curate.dedup.shuffle import mix64, partition_of, split
from curate.io import fs

U64 = np.uint64
VERSION = 1   # bump when settling or finishing would decide a component differently
COLUMNS = {"key": U64, "pos": np.int64, "removed": bool, "rep": np.int64, "sim": np.float32, "method": np.uint8,
           "length": np.int64}
_GOLDEN = U64(0x9E3779B97F4A7C15)


def context(options: dict) -> int:
    """The options a component's decisions depend on (threshold, margin, rounds, policy, the signatures' step), as 64 bits."""
    body = json.dumps([VERSION, options], sort_keys=True, default=list)
    return int.from_bytes(hashlib.sha256(body.encode()).digest()[:8], "little")


def _mix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return mix64(x.astype(U64) + _GOLDEN)


def component_keys(ids: tuple[np.ndarray, np.ndarray], node: np.ndarray, label: np.ndarray, ctx: int):
    """Members sorted by (label, rank, node): the components' starts, each member's component start and position, and
    each component's key."""
    if not len(label):
        return (np.empty(0, np.int64),) * 3 + (np.empty(0, U64),)
    start = np.flatnonzero(np.r_[True, label[1:] != label[:-1]])
    size = np.diff(np.r_[start, len(label)])
    first = np.repeat(start, size)
    pos = np.arange(len(label)) - first
    prio = nodes.priority_of(node)
    ran = np.cumsum(np.r_[False, prio[1:] != prio[:-1]] & (pos > 0))
    run = ran - ran[first]   # which run of equal sources within its component (cross_source keeps a source's together)
    sid, row = exact_cache.sides(ids, node)
    with np.errstate(over="ignore"):
        member = _mix(_mix(_mix(sid) ^ row) ^ (pos.astype(U64) | (run.astype(U64) << U64(32))))
        key = _mix(np.add.reduceat(member, start) ^ size.astype(U64)) ^ U64(ctx)
    return start, first, pos, key


def route(g: GraphDir, rnd: int, p: int) -> dict:
    """Send each member (label, rank) to its component's partition, where `recall` sees whole components."""
    lab = g.labels(rnd, p)
    for q, part in split(partition_of(lab["label_lo"], g.partitions), g.partitions, node=lab["node"], label=lab["label_lo"],
                         hi=lab["hi"]):
        write_columns(g.path("sound", "components", f"p={q:05d}", f"from-{p:05d}{WORK}"), **part)
    return {"in": len(lab["node"])}


def recall(g: GraphDir, cache: str, ids_path: str, ctx: int, exact: str | None, p: int) -> dict:
    """Partition `p`'s components: the ones settled before write their decisions (and keep their exact checks in
    `exact`, `exact_cache.carry`); the others go to `gather`."""
    m = read_columns(g.path("sound", "components", f"p={p:05d}", f"*{WORK}"), ["node", "label", "hi"],
                     {"node": U64, "label": U64, "hi": U64})
    if not len(m["node"]):
        return {"in": 0, "components": 0, "reused": 0}
    order = np.lexsort((m["node"], m["hi"], m["label"]))
    node, label, hi = m["node"][order], m["label"][order], m["hi"][order]
    ids = exact_cache.read_ids(ids_path)
    start, first, pos, key = component_keys(ids, node, label, ctx)
    c = read_columns(fs.join(cache, "*.parquet"), list(COLUMNS), COLUMNS)
    at = np.lexsort((c["pos"], c["key"]))
    c = {k: v[at] for k, v in c.items()}
    keep = np.r_[True, (c["key"][1:] != c["key"][:-1]) | (c["pos"][1:] != c["pos"][:-1])] if len(at) else np.empty(0, bool)
    c = {k: v[keep] for k, v in c.items()}   # a row repeated by a killed run's files: the same content
    found = np.searchsorted(c["key"], key)
    size = np.diff(np.r_[start, len(node)])
    count = np.searchsorted(c["key"], key, side="right") - found
    hit = count == size                       # (a key's rows are positions 0..size-1: unique, sorted)
    member_hit = np.repeat(hit, size)
    row = np.repeat(found, size) + pos
    if member_hit.any():
        r = {k: v[row[member_hit]] for k, v in c.items()}
        reused = np.flatnonzero(member_hit)
        rep = node[first[reused] + r["rep"]]
        write_decisions(g, f"{p:05d}-reused", node[reused], label[reused], r["removed"], rep, r["sim"], r["method"], r["length"])
    write_columns(fs.join(cache, f"r={p:05d}.parquet"), **({k: v[row[member_hit]] for k, v in c.items()} if member_hit.any()
                                                            else {k: np.empty(0, t) for k, t in COLUMNS.items()}))
    if exact is not None:
        exact_cache.carry(exact, p, ids, node[member_hit])
    new = np.flatnonzero(~member_hit)
    bundles.send(g.path("sound", "route"), f"{p:05d}", by_shard(node[new], node=node[new], label=label[new], hi=hi[new]))
    return {"in": len(node), "components": len(start), "reused": int(hit.sum())}


def store(cache: str, ids: tuple[np.ndarray, np.ndarray], ctx: int, p: int, node: np.ndarray, label: np.ndarray,
          removed: np.ndarray, rep: np.ndarray, sim: np.ndarray, method: np.ndarray, length: np.ndarray) -> None:
    """Partition `p`'s settled components (members in settling order; `rep`: an index into them), for the next run."""
    start, first, pos, key = component_keys(ids, node, label, ctx)
    write_columns(fs.join(cache, f"p={p:05d}.parquet"), key=np.repeat(key, np.diff(np.r_[start, len(node)])),
                  pos=pos, removed=np.asarray(removed, bool), rep=(rep - first).astype(np.int64),
                  sim=np.asarray(sim, np.float32), method=np.asarray(method, np.uint8), length=np.asarray(length, np.int64))


def prune(cache: str, partitions: int) -> None:
    """Files of partitions the graph no longer has."""
    for path in fs.glob(fs.join(cache, "*.parquet")):
        if int(path.rstrip("/").rsplit("/", 1)[-1][2:7]) >= partitions:
            fs.remove(path)
