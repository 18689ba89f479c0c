"""The four global phases of substring dedup, each a function of one task's files (no state between tasks).

1. fingerprint (per docs shard): the winnowed k-gram hashes of each live document, (hash, node, word), written by
   hash partition: `fp/p=<part>/<shard tag>.parquet`. About 2 / (w + 1) of the words, 20 bytes each.
2. shared (per hash partition): the fingerprints that occur more than once anywhere (in two documents or twice in
   one) go back to the shard of each occurrence: `shared/s=<tag>/p=<part>.parquet`. A document with none holds no
   repeated window and is never read again.
3. windows (per docs shard with shared fingerprints): the 128-bit key of every `min_words`-word window that could
   hold one of them (the w starts before each), with the node, word and character offset, written by key
   partition: `win/p=<part>/<tag>.parquet`. This is the exact check: whole windows, not samples, are compared.
4. match (per key partition): windows sharing a key, in priority order (node = source priority, shard, row; then
   word). The first is the kept copy; each row goes back to its shard with the kept copy's node and offset and the
   number of copies: `rep/s=<tag>/p=<part>.parquet`.

No task holds more than its partition (or its shard); a span repeated a million times is a million rows spread as
its keys fall, never a quadratic pair list. Every task rewrites the same files from the same inputs, so a task killed
half way is simply run again.
"""

from __future__ import annotations

import numpy as np

from curate.dedup import nodes
from curate.dedup.layout import read_columns, tag_of, write_columns
from curate.dedup.shuffle import partition_of, split
from curate.io import fs

U64 = np.uint64
FP = {"hash": U64, "node": U64, "pos": np.int64}
WIN = {"a": U64, "b": U64, "node": U64, "pos": np.int64, "char": np.int64}
REP = {"node": U64, "pos": np.int64, "first": np.bool_, "kept_node": U64, "kept_char": np.int64, "copies": np.int64}


def by_partition(root: str, name: str, tag: str, partitions: int, key: str, columns: dict[str, np.ndarray]) -> int:
    """Write `columns` split by the hash partition of column `key` to `root/p=<part>/<tag>.parquet`; rows written."""
    n = 0
    for p, part in split(partition_of(columns[key], partitions), partitions, **columns):
        write_columns(fs.join(root, name, f"p={p:05d}", f"{tag}.parquet"), **part)
        n += len(part[key])
    return n


def by_shard(root: str, name: str, part: int, columns: dict[str, np.ndarray]) -> None:
    """Write `columns` split by the docs shard of column `node` to `root/s=<tag>/p=<part>.parquet`."""
    keys = nodes.shard_key(columns["node"])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    bounds = np.flatnonzero(np.diff(keys)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(keys)]):
        if hi > lo:
            rows = order[lo:hi]
            write_columns(fs.join(root, name, f"s={tag_of(keys[lo])}", f"p={part:05d}.parquet"),
                          **{c: v[rows] for c, v in columns.items()})


def shared(root: str, part: int) -> dict:
    """Phase 2: the fingerprints of partition `part` that occur more than once, sent to their shards."""
    fp = read_columns(fs.join(root, "fp", f"p={part:05d}", "*.parquet"), list(FP), FP)
    order = np.argsort(fp["hash"], kind="stable")
    h = fp["hash"][order]
    dup = np.zeros(len(h), bool)
    if len(h) > 1:
        same = h[1:] == h[:-1]
        dup[1:] |= same
        dup[:-1] |= same
    rows = order[dup]
    by_shard(root, "shared", part, {"node": fp["node"][rows], "pos": fp["pos"][rows]})
    return {"fingerprints": len(h), "shared": int(dup.sum()), "bytes_read": int(len(h) * 24)}


def match(root: str, part: int) -> dict:
    """Phase 4: windows of partition `part` grouped by key; the first of each group (by node, then word) is kept."""
    win = read_columns(fs.join(root, "win", f"p={part:05d}", "*.parquet"), list(WIN), WIN)
    order = np.lexsort((win["pos"], win["node"], win["b"], win["a"]))
    a, b = win["a"][order], win["b"][order]
    n = len(a)
    if n == 0:
        return {"windows": 0, "repeated": 0, "groups": 0, "bytes_read": 0}
    start = np.ones(n, bool)
    start[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    group = np.cumsum(start) - 1
    heads = np.flatnonzero(start)
    sizes = np.diff(np.r_[heads, n])
    copies = sizes[group]
    keep = copies > 1
    rows = order[keep]
    head = order[heads[group[keep]]]
    by_shard(root, "rep", part, {"node": win["node"][rows], "pos": win["pos"][rows], "first": start[keep],
                                 "kept_node": win["node"][head], "kept_char": win["char"][head], "copies": copies[keep]})
    return {"windows": n, "repeated": int(keep.sum()), "groups": int((sizes > 1).sum()), "bytes_read": int(n * 40)}


def queued(root: str, name: str) -> set[str]:
    """The shard tags with files under `root/name/s=<tag>/`."""
    head = fs.join(root, name)
    return {path[len(head) + 1:].split("/")[0][2:] for path in fs.files_under(head)} if fs.exists(head) else set()


def read_rows(root: str, name: str, tag: str, dtypes: dict) -> dict[str, np.ndarray]:
    """What phase `name` sent to shard `tag`, sorted by node then word."""
    cols = read_columns(fs.join(root, name, f"s={tag}", "*.parquet"), list(dtypes), dtypes)
    order = np.lexsort((cols["pos"], cols["node"]))
    return {c: v[order] for c, v in cols.items()}
