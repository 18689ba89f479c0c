"""A partition's band rows of every docs shard in one file, kept across runs: an append reads this file and the band
files of its new or changed shards, not one small file per docs shard.

The minhash step writes a docs shard's band rows as one file per partition (an append reuses those of every unchanged
shard), so a 1M-document dedup's `buckets` opened 1,167 files a partition. Read cold, days after they were written (as
an append reads them), each cost ~4 ms on the disks measured: 6.1 of a 1M append's 18.9 s of dedup, against 2.1 warm
(through this file: 1.9-2.3 s, read cold).
The kept file (`<keep>/p=<partition>.arrow`, Arrow IPC, uncompressed: random bits) holds the rows (band, key, row,
tie) of each shard it was made from, with each band file's `stat` when it was read; a shard's rows are taken from it
while its band file's `stat` is the same and the file had settled before it was read (`fs.SETTLED_NS`, the kept
digests' rule: curate replaces a file by renaming a new one over it, never in place). The rows are the band files' own, so the graph
is the same with or without it; on an object store (no `stat` to trust) the band files are read as before."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pyarrow as pa

from curate.dedup import nodes
from curate.dedup.layout import PLAIN, WORK, read_columns, read_frame
from curate.io import fs
from curate.io.fs import SETTLED_NS   # a band file unchanged this long before it was read may be trusted by its stat
from curate.io.ipc import read_ipc, write_ipc

COLUMNS = {"band": np.uint16, "key": np.uint64, "row": np.uint64, "tie": np.uint64}
SHARDS = b"shards"   # schema metadata: [source, shard, stat identity, rows] of each shard, in row order
BANDS = b"bands"     # schema metadata: the minhash folder the rows came from


def read_bands(bands: str, p: int, numbers: dict[tuple[str, str], tuple[int, int]] | None, keep: str | None = None) -> dict[str, np.ndarray]:
    """Partition `p`'s band rows (band, key, node, hi). With `numbers`, files are a minhash step's, one per docs shard
    (`p=<p>/<source>/<shard>.arrow`: rows and ranks within the source), read through the kept file in `keep` (`read`) and
    numbered here: node from the shard's (priority, index) and row, hi from the priority and the rank. Shards the run
    no longer has are skipped."""
    dtypes = {"band": np.uint16, "key": np.uint64, "node": np.uint64, "hi": np.uint64}
    if numbers is None:   # exact_dedup's keys: written with their node numbers
        return read_columns(fs.join(bands, f"p={p:05d}", "*.parquet"), ["band", "key", "node", "hi"], dtypes)
    shards, cols = read(bands, p, keep)
    at = [numbers.get(s) for s in shards]
    has = np.array([a is not None for a in at] + [False])
    base = np.array([nodes.pack(*a, np.zeros(1, np.uint64))[0] if a is not None else 0 for a in at] + [0], np.uint64)
    high = np.array([np.uint64(a[0]) << np.uint64(32) if a is not None else 0 for a in at] + [0], np.uint64)
    live = has[cols["shard"]]
    shard = cols["shard"][live]
    return {"band": cols["band"][live], "key": cols["key"][live], "node": base[shard] | cols["row"][live],
            "hi": high[shard] | cols["tie"][live]}


def kept_path(keep: str, p: int) -> str:
    return fs.join(keep, f"p={p:05d}{WORK}")


def read(bands: str, p: int, keep: str | None) -> tuple[list[tuple[str, str]], dict[str, np.ndarray]]:
    """Partition `p`'s band rows of every docs shard under `bands` (`p=<p>/<source>/<shard>.arrow`): the shards in
    (source, shard) order, and their rows, concatenated in that order with `shard` (an index into the shards). With
    `keep` (a local folder), through the kept file there, which is written again when a shard was read or dropped."""
    files = {}
    for path in fs.glob(fs.join(bands, f"p={p:05d}", "*", f"*{WORK}")):
        source, name = path.rstrip("/").rsplit("/", 2)[-2:]
        files[(source, name.removesuffix(WORK))] = path
    shards = sorted(files)
    local = keep is not None and fs.is_local(fs.filesystem(bands)[0]) and fs.is_local(fs.filesystem(keep)[0])
    kept, entries = _load(kept_path(keep, p), bands) if local else (None, {})
    stats = [_identity(files[shard]) if local else None for shard in shards]
    trusted = [st is not None and (e := entries.get(shard)) is not None and e["stat"] == list(st[:4]) and e["settled"]
               for shard, st in zip(shards, stats)]
    fs.prefetch([files[shard] for shard, ok in zip(shards, trusted) if not ok])
    parts, seen = [], []
    for (source, shard), st, ok in zip(shards, stats, trusted):
        if ok:
            entry = entries[(source, shard)]
            cols = {n: kept[n][entry["start"]:entry["start"] + entry["rows"]] for n in COLUMNS}
        else:
            table = read_frame(files[(source, shard)], list(COLUMNS))
            cols = {n: table.column(n).to_numpy() for n in COLUMNS}
        parts.append(cols)
        seen.append({"source": source, "shard": shard, "stat": list(st[:4]) if st else None,
                     "settled": bool(st) and st[4], "rows": len(cols["key"])})
    out = {n: (np.concatenate([c[n] for c in parts]).astype(d, copy=False) if parts else np.empty(0, d)) for n, d in COLUMNS.items()}
    out["shard"] = np.repeat(np.arange(len(shards), dtype=np.int64), [e["rows"] for e in seen])
    if local and (not all(trusted) or set(entries) != set(shards)):
        _write(kept_path(keep, p), bands, out, seen)
    return shards, out


def _identity(path: str) -> tuple | None:
    """(size, modification ns, change ns, inode, settled): settled when the file had not changed for SETTLED_NS as it
    is read here (a file written again within the clock's tick could otherwise keep its stat)."""
    try:
        st = os.stat(fs.filesystem(path)[1])
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS


def _load(path: str, bands: str) -> tuple[dict | None, dict]:
    """The kept rows and {(source, shard): entry with its start row}; nothing when there is no file for these bands."""
    try:
        table = read_ipc(path)
    except (FileNotFoundError, OSError, pa.ArrowInvalid):
        return None, {}
    meta = table.schema.metadata or {}
    if meta.get(BANDS, b"").decode() != bands or SHARDS not in meta:
        return None, {}
    entries, start = {}, 0
    for e in json.loads(meta[SHARDS]):
        entries[(e["source"], e["shard"])] = {**e, "start": start}
        start += e["rows"]
    return {n: table.column(n).to_numpy() for n in COLUMNS}, entries


def _write(path: str, bands: str, cols: dict[str, np.ndarray], seen: list[dict]) -> None:
    schema = pa.schema([(n, pa.from_numpy_dtype(d)) for n, d in COLUMNS.items()],
                       metadata={BANDS: bands.encode(), SHARDS: json.dumps(seen).encode()})
    write_ipc(path, pa.table({n: cols[n] for n in COLUMNS}, schema=schema), PLAIN)


def prune(keep: str, partitions: int) -> None:
    """Remove the kept files of partitions a run no longer has (the count changed)."""
    for path in fs.glob(fs.join(keep, f"p=*{WORK}")):
        if int(path.rsplit("p=", 1)[1].removesuffix(WORK)) >= partitions:
            fs.remove(path)
