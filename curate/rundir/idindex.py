"""Which docs shard holds an id, without reading every shard's ids: the index `curate why` looks a document up in.

The docs files' `id` statistics find a document when ids are sorted within shards (the reader's positional ids), but
random ids (UUIDs) defeat them and every shard's `id` column is read (1.7 s at 10M documents). So the ingest step
writes beside each docs shard `RUN/_work/<ingest>/index/<source>/<shard>.parquet`: the shard's ids hashed to 64 bits
(`hash`: FNV-1a over the UTF-8 bytes, finished with murmur3's fmix64, as int64) with their `row`, sorted by hash, in
row groups of `ROW_GROUP` with statistics on `hash` only. A lookup reads each shard's footer and the one row group
whose hash range can hold the id (about 100 KB), then checks the id at the row it names (`why.locate`).

Per shard, written by the task that settles the docs shard (after its duplicate ids are dropped): a resumed or
appended run rewrites exactly the shards it rewrites. A run made before it has none; `why` reads those shards' ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.io import fs

ROW_GROUP = 8192   # rows a lookup reads: 96 KB of (hash, row)
SCHEMA = pa.schema([("hash", pa.int64()), ("row", pa.int32())])
_MASK = (1 << 64) - 1
_SEED, _PRIME = 0x9E3779B97F4A7C15, 0x100000001B3   # curate/signals/hash64.py's, as idhash.py hashes with them


def hash_one(doc_id: str) -> int:
    """`idhash.hashes` of one id, in plain Python: a lookup never imports numba."""
    h = _SEED
    for byte in doc_id.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * _PRIME) & _MASK
    for shift, factor in ((33, 0xFF51AFD7ED558CCD), (33, 0xC4CEB9FE1A85EC53)):
        h = ((h ^ (h >> shift)) * factor) & _MASK
    h ^= h >> 33
    return h - (1 << 64) if h >= 1 << 63 else h


def write_index(path: str, ids: pa.Array | pa.ChunkedArray) -> None:
    """The index of one docs shard whose `id` column is `ids` (rows in file order)."""
    from .idhash import hashes

    h = hashes(ids)
    order = np.argsort(h, kind="stable")
    table = pa.table([pa.array(h[order]), pa.array(order.astype(np.int32))], schema=SCHEMA)
    with fs.AtomicWriter(path) as handle:
        pq.write_table(table, handle, row_group_size=ROW_GROUP, compression="none", write_statistics=["hash"])


def rows_of(path: str, doc_id: str) -> list[int]:
    """The rows of the shard whose id hashes as `doc_id` does (nearly always none or one), reading one row group."""
    h = hash_one(doc_id)
    filesystem, stripped = fs.filesystem(path)
    handle = pq.ParquetFile(stripped, filesystem=filesystem)
    meta, rows = handle.metadata, []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(0).statistics
        if stats is None or not stats.has_min_max or stats.min <= h <= stats.max:
            table = handle.read_row_group(g)
            found = table.column("hash").to_numpy()
            lo, hi = np.searchsorted(found, h, "left"), np.searchsorted(found, h, "right")
            rows += table.column("row").to_numpy()[lo:hi].tolist()
    return rows
