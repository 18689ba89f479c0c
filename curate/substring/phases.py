"""The four global phases of substring dedup, each a function of one task's files (no state between tasks).

1. fingerprint (per docs shard): the winnowed k-gram hashes of each live document, (hash, node, word), written by
   hash partition: `fp/p=<part>/<shard tag>.parquet`. About 2 / (w + 1) of the words, 20 bytes each.
2. shared (per hash partition): the fingerprints that occur more than once anywhere (in two documents or twice in
   one) go back to the shard of each occurrence: `shared/s=<tag>/p=<part>.parquet`. A document with none holds no
   repeated window and is never read again.
3. windows (per docs shard with shared fingerprints): the 125-bit key of every `min_words`-word window that could
   hold one of them (the w starts before each), with the node, word and character offset, written by key
   partition: `win/p=<part>/<tag>.parquet`. This is the exact check: whole windows, not samples, are compared.
4. match (per key partition): windows sharing a key, in priority order (node = source priority, shard, row; then
   word). The first is the kept copy; each row goes back to its shard with the kept copy's node and offset and the
   number of copies: `rep/s=<tag>/p=<part>.parquet`.

No task holds more than its shard, or more than `task_rows` rows of its partition at once plus one row per distinct
key (`curate.substring.chunks`): a span repeated a million times is a million rows counted in chunks, never a
quadratic pair list, and never all in memory together. Every task rewrites the same files from the same inputs, so
a task killed half way is simply run again.
"""

from __future__ import annotations

import numpy as np

from curate.dedup import nodes
from curate.dedup.layout import read_columns, tag_of, write_columns
from curate.dedup.shuffle import partition_of, split
from curate.io import fs
from curate.substring.chunks import Chunks, find, key128

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


def by_shard(root: str, name: str, part: int, columns: dict[str, np.ndarray], piece: int = 0) -> None:
    """Write `columns` split by the docs shard of column `node` to `root/s=<tag>/p=<part>.parquet` (a partition read
    in chunks writes one file per chunk: `p=<part>-<piece>.parquet` after the first)."""
    keys = nodes.shard_key(columns["node"])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    bounds = np.flatnonzero(np.diff(keys)) + 1
    name_of = f"p={part:05d}.parquet" if piece == 0 else f"p={part:05d}-{piece:05d}.parquet"
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(keys)]):
        if hi > lo:
            rows = order[lo:hi]
            write_columns(fs.join(root, name, f"s={tag_of(keys[lo])}", name_of), **{c: v[rows] for c, v in columns.items()})


def shared(root: str, part: int, cap: int) -> dict:
    """Phase 2: the fingerprints of partition `part` that occur more than once, sent to their shards (in chunks of at
    most `cap` rows: `curate.substring.chunks`)."""
    chunks = Chunks(fs.glob(fs.join(root, "fp", f"p={part:05d}", "*.parquet")), FP, cap)
    keys, counts = np.empty(0, U64), np.empty(0, np.int64)
    for chunk in chunks:
        u, n = np.unique(chunk["hash"], return_counts=True)
        keys, inverse = np.unique(np.r_[keys, u], return_inverse=True)
        counts = np.bincount(inverse, weights=np.r_[counts, n], minlength=len(keys)).astype(np.int64)
    many = keys[counts > 1]
    sent = 0
    for piece, chunk in enumerate(chunks):
        _, dup = find(many, chunk["hash"])
        by_shard(root, "shared", part, {"node": chunk["node"][dup], "pos": chunk["pos"][dup]}, piece)
        sent += int(dup.sum())
    return {"fingerprints": chunks.rows, "shared": sent, "bytes_read": chunks.rows * 24, "chunks": chunks.count,
            "rows_held": chunks.held, "keys": len(keys)}


def _firsts(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One row per key (a, b), sorted by key: its first copy (by node, then word) and the sum of `copies`."""
    order = np.lexsort((cols["pos"], cols["node"], cols["b"], cols["a"]))
    a, b = cols["a"][order], cols["b"][order]
    start = np.ones(len(a), bool)
    start[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    heads = np.flatnonzero(start)
    out = {c: cols[c][order[heads]] for c in WIN}
    out["copies"] = np.add.reduceat(cols["copies"][order], heads) if len(heads) else np.empty(0, np.int64)
    return out


def match(root: str, part: int, cap: int) -> dict:
    """Phase 4: windows of partition `part` grouped by key; the first of each group (by node, then word) is kept. A
    key's copies are counted, never paired: a span in a million documents is a million rows, in chunks of `cap`."""
    chunks = Chunks(fs.glob(fs.join(root, "win", f"p={part:05d}", "*.parquet")), WIN, cap)
    first = {**{c: np.empty(0, t) for c, t in WIN.items()}, "copies": np.empty(0, np.int64)}
    for chunk in chunks:
        here = _firsts({**chunk, "copies": np.ones(len(chunk["a"]), np.int64)})
        first = _firsts({c: np.r_[first[c], here[c]] for c in first}) if len(first["a"]) else here
    keys = key128(first["a"], first["b"])
    repeated = 0
    for piece, chunk in enumerate(chunks):
        at, _ = find(keys, key128(chunk["a"], chunk["b"]))
        copies = first["copies"][at]
        keep = copies > 1
        head = at[keep]
        is_first = (chunk["node"][keep] == first["node"][head]) & (chunk["pos"][keep] == first["pos"][head])
        by_shard(root, "rep", part, {"node": chunk["node"][keep], "pos": chunk["pos"][keep], "first": is_first,
                                     "kept_node": first["node"][head], "kept_char": first["char"][head], "copies": copies[keep]}, piece)
        repeated += int(keep.sum())
    return {"windows": chunks.rows, "repeated": repeated, "groups": int((first["copies"] > 1).sum()),
            "bytes_read": chunks.rows * 40, "chunks": chunks.count, "rows_held": chunks.held, "keys": len(keys)}


def queued(root: str, name: str) -> set[str]:
    """The shard tags with files under `root/name/s=<tag>/`."""
    head = fs.join(root, name)
    return {path[len(head) + 1:].split("/")[0][2:] for path in fs.files_under(head)} if fs.exists(head) else set()


def read_rows(root: str, name: str, tag: str, dtypes: dict) -> dict[str, np.ndarray]:
    """What phase `name` sent to shard `tag`, sorted by node then word."""
    cols = read_columns(fs.join(root, name, f"s={tag}", "*.parquet"), list(dtypes), dtypes)
    order = np.lexsort((cols["pos"], cols["node"]))
    return {c: v[order] for c, v in cols.items()}
