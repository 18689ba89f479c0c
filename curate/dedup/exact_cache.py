"""Exact-Jaccard results kept across runs: an append exact-checks only the pairs with a new or changed member.

A pair's exact Jaccard follows from its two texts (as dedup reads them: the docs shard, edited by the editing steps
before it) and the shingling alone; the threshold and margin only decide which pairs are asked. So each side of a
pair is named by what an append cannot move: a 64-bit id of its docs shard (`shard_id`: source, shard name, the
digests of the shard's docs file and edits, the shingling, `KERNEL`) and its row there. Never by node numbers: a
shard or source sorting in earlier renumbers the others. A changed docs shard (or edit, or shingling) gets a new
id, so an old result can never pass for a new pair; a result kept under a stale id is just never asked for.

The results live in `<cache>/p=<partition>.parquet` (columns sa, ra, sb, rb, jaccard; each pair in one order, the
smaller side first), each written whole by that partition's `finalize` from every pair it used (found here or
checked now), and `r=<partition>.parquet`, the pairs of the components it recalled (`carry`): the cache holds the
last run's pairs, so it does not grow with stale ones. Its content never decides
a result, only how much is checked again (a file lost to kill -9 is a cache miss).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from curate.dedup import nodes
from curate.dedup.layout import read_columns, write_columns
from curate.io import fs

U64 = np.uint64
KERNEL = 1   # the exact kernel's shingle hashing: bump when `exact_kernel` would give another value for a pair
COLUMNS = {"sa": U64, "ra": U64, "sb": U64, "rb": U64, "jaccard": np.float64}


def shard_id(source: str, shard: str, digests: list, shingling: dict) -> int:
    """The id of a docs shard's texts as the exact check sees them (`digests`: its docs file's and edits' contents)."""
    body = json.dumps([KERNEL, source, shard, digests, shingling], sort_keys=True, default=list)
    return int.from_bytes(hashlib.sha256(body.encode()).digest()[:8], "little")


def write_ids(path: str, ids: dict[int, int]) -> None:
    """The run's shard ids by shard key (`nodes.shard_key`), for the partitions' tasks."""
    keys = np.array(sorted(ids), U64)
    write_columns(path, key=keys, sid=np.array([ids[int(k)] for k in keys], U64))


def read_ids(path: str) -> tuple[np.ndarray, np.ndarray]:
    c = read_columns(path, ["key", "sid"], {"key": U64, "sid": U64})
    return c["key"], c["sid"]


def sides(ids: tuple[np.ndarray, np.ndarray], node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(shard id, row) of each node."""
    keys, sids = ids
    k = nodes.shard_key(node).astype(U64)
    at = np.minimum(np.searchsorted(keys, k), max(len(keys) - 1, 0))
    if len(k) and (not len(keys) or not np.array_equal(keys[at], k)):
        raise ValueError("a cluster member's docs shard has no shard id (re-run the dedup step)")
    return sids[at], nodes.row_of(node).astype(U64)


def pair_keys(ids: tuple[np.ndarray, np.ndarray], member: np.ndarray, rep: np.ndarray) -> dict[str, np.ndarray]:
    """Each pair's stable key, the smaller side first (the Jaccard is symmetric: a pair whose roles swap is found)."""
    sa, ra = sides(ids, member)
    sb, rb = sides(ids, rep)
    swap = (sa > sb) | ((sa == sb) & (ra > rb))
    return {"sa": np.where(swap, sb, sa), "ra": np.where(swap, rb, ra), "sb": np.where(swap, sa, sb), "rb": np.where(swap, ra, rb)}


def lookup(cache: str, ids: tuple[np.ndarray, np.ndarray], member: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """The kept exact Jaccard of each pair (member, rep), NaN where the cache has none: every partition's file is read
    (40 bytes a pair) and joined with the queries by one sort."""
    q = pair_keys(ids, member, rep)
    c = read_columns(fs.join(cache, "*.parquet"), list(COLUMNS), COLUMNS)
    if not len(c["sa"]) or not len(member):
        return np.full(len(member), np.nan)
    every = np.unique(np.concatenate([c["sa"], c["sb"], q["sa"], q["sb"]]))   # shard ids as small numbers: one u64 a side

    def side(s, r):
        return (np.searchsorted(every, s).astype(U64) << U64(32)) | r.astype(U64)

    return pair_lookup(side(c["sa"], c["ra"]), side(c["sb"], c["rb"]), c["jaccard"], side(q["sa"], q["ra"]),
                       side(q["sb"], q["rb"]), np.ones(len(member), bool))


def store(cache: str, p: int, ids: tuple[np.ndarray, np.ndarray], member: np.ndarray, rep: np.ndarray, jaccard: np.ndarray) -> None:
    """Partition `p`'s pairs of this run, in place of its last run's (written atomically: whole or not at all)."""
    write_columns(fs.join(cache, f"p={p:05d}.parquet"), **pair_keys(ids, member, rep), jaccard=np.asarray(jaccard, np.float64))


def carry(cache: str, p: int, ids: tuple[np.ndarray, np.ndarray], member: np.ndarray) -> None:
    """The kept pairs both of whose sides are `member`s (partition `p`'s recalled components, `curate.dedup.settled`,
    which ask no pair this run), kept for a later run that touches their components (`r=<p>.parquet`)."""
    c = read_columns(fs.join(cache, "*.parquet"), list(COLUMNS), COLUMNS)
    sid, row = sides(ids, member)
    every = np.unique(np.concatenate([c["sa"], c["sb"], sid]))

    def side(s, r):
        return (np.searchsorted(every, s).astype(U64) << U64(32)) | r.astype(U64)

    mine = side(sid, row)
    keep = np.isin(side(c["sa"], c["ra"]), mine) & np.isin(side(c["sb"], c["rb"]), mine)
    write_columns(fs.join(cache, f"r={p:05d}.parquet"), **{k: v[keep] for k, v in c.items()})


def prune(cache: str, partitions: int) -> None:
    """Files of partitions the graph no longer has (the count grew or shrank)."""
    for path in fs.glob(fs.join(cache, "*.parquet")):
        if int(path.rstrip("/").rsplit("/", 1)[-1][2:7]) >= partitions:
            fs.remove(path)


def pair_lookup(ka: np.ndarray, kb: np.ndarray, value: np.ndarray, qa: np.ndarray, qb: np.ndarray, use: np.ndarray) -> np.ndarray:
    """value of the key (qa, qb) among the keys (ka, kb), the last one where a key repeats (as a dict built from them
    would), NaN where absent or not `use`d: one sort of keys and queries together, not a dict lookup per member."""
    n = len(ka)
    a, b = np.concatenate([ka, qa]).astype(np.uint64), np.concatenate([kb, qb]).astype(np.uint64)
    query = np.arange(n + len(qa)) >= n
    order = np.lexsort((np.arange(len(a)), query, b, a))  # per key: its entries in file order, then the queries
    pos = np.where(query[order], -1, np.arange(len(order)))
    last = np.maximum.accumulate(pos)  # the latest entry at or before each sorted position
    out = np.full(len(qa), np.nan)
    qs = np.flatnonzero(query[order])
    hit = last[qs] >= 0
    src = order[np.where(hit, last[qs], 0)]
    hit &= (a[src] == a[order[qs]]) & (b[src] == b[order[qs]])
    qi = order[qs] - n
    out[qi[hit]] = np.asarray(value, np.float64)[src[hit]]
    out[~np.asarray(use, bool)] = np.nan
    return out
