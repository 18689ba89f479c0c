"""Which docs shard holds an id, without reading every shard's ids: the index `curate why` looks a document up in.

The docs files' `id` statistics find a document when ids are sorted within shards (the reader's positional ids), but
random ids (UUIDs) defeat them and every shard's `id` column is read (1.7 s at 10M documents). So the ingest step
writes beside each docs shard `RUN/_work/<ingest>/index/<source>/<shard>.parquet`: the shard's ids hashed to 64 bits
(`hash`: a polynomial over the UTF-8 bytes finished with murmur3's fmix64, as int64, `hashes`) with their `row`, sorted by hash, in
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
PRIME = 0x100000001B3   # FNV's 64-bit prime: odd, so it has an inverse mod 2^64
INVERSE = pow(PRIME, -1, 1 << 64)
BATCH_BYTES = 1 << 20   # bytes of ids hashed at once: temporaries (and the tables of powers) of 8 bytes a byte
_MASK = (1 << 64) - 1
_FMIX = (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)
_POWERS: dict[int, np.ndarray] = {}   # base -> base^k mod 2^64 for k < len, grown as longer batches need


def hashes(ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 64-bit hash of every id, as int64 (Parquet's statistics compare signed): per id of UTF-8 bytes b_0..b_n-1
    the polynomial sum(b_j * INVERSE^j) * PRIME + n mod 2^64, finished with murmur3's fmix64 (`hash_one`). numpy over
    the Arrow buffers: each byte weighed by INVERSE^(its place in the batch), summed per id, and multiplied back by
    PRIME^(the id's start). No per-id Python and no numba (whose start-up, ~0.5 s a process, cost more than this)."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    ids = ids.cast(pa.large_string())
    offsets = np.frombuffer(ids.buffers()[1], np.int64)[ids.offset: ids.offset + len(ids) + 1] if len(ids) else None
    out, start = [np.empty(0, np.int64)], 0
    while start < len(ids):   # batches of about BATCH_BYTES (one longer id alone)
        end = max(start + 1, int(np.searchsorted(offsets, offsets[start] + BATCH_BYTES, "right")) - 1)
        out.append(_hashes(ids.slice(start, end - start)))
        start = end
    return np.concatenate(out)


def _powers(base: int, n: int) -> np.ndarray:
    if len(table := _POWERS.get(base, ())) < n:
        table = np.full(max(n, 2 * len(table), 1 << 16), base, np.uint64)
        table[0] = 1
        _POWERS[base] = table = np.cumprod(table, dtype=np.uint64)   # uint64 wraps: mod 2^64
    return table[:n]


def _hashes(ids: pa.LargeStringArray) -> np.ndarray:
    _, offsets, data = ids.buffers()
    offsets = np.frombuffer(offsets, np.int64)[ids.offset: ids.offset + len(ids) + 1]
    starts, lengths = offsets[:-1] - offsets[0], np.diff(offsets)
    with np.errstate(over="ignore"):
        sums = np.zeros(len(ids), np.uint64)
        full = lengths > 0
        if full.any():
            total = int(offsets[-1] - offsets[0])
            terms = np.frombuffer(data, np.uint8)[offsets[0]: offsets[-1]] * _powers(INVERSE, total)
            sums[full] = np.add.reduceat(terms, starts[full]) * _powers(PRIME, total)[starts[full]]
        h = sums * np.uint64(PRIME) + lengths.astype(np.uint64)
        for factor in _FMIX:
            h ^= h >> np.uint64(33)
            h *= np.uint64(factor)
        h ^= h >> np.uint64(33)
    return h.view(np.int64)


def hash_one(doc_id: str) -> int:
    """`hashes` of one id, in plain Python (a lookup hashes one id)."""
    data = doc_id.encode("utf-8", "surrogatepass")
    h, weight = 0, 1
    for byte in data:
        h, weight = (h + byte * weight) & _MASK, (weight * INVERSE) & _MASK
    h = (h * PRIME + len(data)) & _MASK
    for factor in _FMIX:
        h = ((h ^ (h >> 33)) * factor) & _MASK
    h ^= h >> 33
    return h - (1 << 64) if h >= 1 << 63 else h


def write_index(path: str, ids: pa.Array | pa.ChunkedArray) -> None:
    """The index of one docs shard whose `id` column is `ids` (rows in file order)."""
    h = hashes(ids)
    order = np.argsort(h)   # ties (nearly never) in a deterministic order all the same
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
