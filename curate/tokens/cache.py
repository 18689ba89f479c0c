"""Token ids kept by text, so a tokenize step never tokenizes a document it has seen before.

A tokenize step redoes a shard whose live documents changed (after an append, a `weights` plan downsamples more or
fewer of a grown source's documents; dedup removes old documents that a new, higher-priority source copies), but
the token ids of a document depend only on its text and the tokenizer. Each shard's ids are kept in
`_work/<step>/tokens/<tokenizer key>/<source>/<shard>.arrow` (id, text_hash, tokens); a recomputed shard takes
the tokens of every document whose id and text hash match and tokenizes only the rest. What the step writes is the
same either way: token ids are a function of the text (checked by `text_hash`, xxh3 of the UTF-8 text). The file
also names (schema metadata `texts`) the digest of what gave its ids their texts: while that holds and every live
document of the shard has kept ids, the shard is written from them without reading its text (`TokenizeStage`).
The files are Arrow IPC (`curate.io.ipc`): every tokenized shard writes one and nothing outside curate reads them, and
Parquet's list encoding cost 12 ms a shard to write them (lz4 IPC: 7) and 4.5 to read them back (1).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.io import fs
from curate.io.ipc import read_ipc

SCHEMA = pa.schema([("id", pa.string()), ("text_hash", pa.uint64()), ("tokens", pa.large_list(pa.int32()))])
SUFFIX = ".arrow"
VERSION = 2   # 2: Arrow IPC, not Parquet (in the token key: the Parquet files of a run made before go whole)


def text_hashes(texts: pa.Array) -> np.ndarray:
    """xxh3 of each text's UTF-8 bytes (a null's: of b""), hashed in place in the Arrow data buffer: no Python string
    is made (decoding and encoding them again was most of the cost; 2.5x faster, the same values)."""
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    h, n = xxhash.xxh3_64_intdigest, len(texts)
    _, offsets, data = texts.buffers()
    width = 8 if pa.types.is_large_string(texts.type) else 4
    at = np.frombuffer(offsets, np.int64 if width == 8 else np.int32, n + 1, texts.offset * width).tolist() if n else [0]
    view = memoryview(data if data is not None else b"")
    out = np.fromiter(map(h, map(view.__getitem__, map(slice, at[:-1], at[1:]))), dtype=np.uint64, count=n)
    if texts.null_count:
        out[texts.is_null().to_numpy(zero_copy_only=False)] = h(b"")
    return out


TEXTS = b"texts"   # schema metadata: the digest of what gave each kept id its text (the docs file, the edits)


def schema_for(texts: str) -> pa.Schema:
    """The kept ids' schema, naming what their texts came from (`texts_of` reads it back)."""
    return SCHEMA.with_metadata({TEXTS: texts.encode()})


def texts_of(table: pa.Table | None) -> str | None:
    """The digest a kept table's texts came from, or None (a file written before it was recorded)."""
    meta = (table.schema.metadata or {}) if table is not None else {}
    return meta[TEXTS].decode() if TEXTS in meta else None


def load(path: str) -> pa.Table | None:
    """A shard's kept token ids (None when there are none)."""
    if not fs.exists(path):
        return None
    table = read_ipc(path)
    return table if table.schema.equals(SCHEMA) and table.num_rows else None


def lookup(cached: pa.Table | None, ids: pa.Array, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit, at): which documents have kept tokens for the same text, and their rows in `cached`."""
    if cached is None or not len(ids):
        return np.zeros(len(ids), bool), np.zeros(len(ids), np.int64)
    at = pc.fill_null(pc.index_in(ids.cast(pa.string()), value_set=cached.column("id").combine_chunks()), -1)
    at = at.to_numpy(zero_copy_only=False).astype(np.int64)
    hit = at >= 0
    hit[hit] = cached.column("text_hash").to_numpy()[at[hit]] == hashes[hit]
    return hit, at


def merge(cached: pa.Table | None, hit: np.ndarray, at: np.ndarray, fresh: pa.LargeListArray) -> pa.LargeListArray:
    """Every document's tokens in batch order: kept ones where `hit`, then `fresh` (the rest, in order)."""
    if not hit.any():
        return fresh
    reused = cached.column("tokens").combine_chunks().take(pa.array(at[hit]))
    order = np.empty(len(hit), np.int64)
    order[np.flatnonzero(hit)] = np.arange(int(hit.sum()))
    order[np.flatnonzero(~hit)] = int(hit.sum()) + np.arange(int((~hit).sum()))
    return pa.concat_arrays([reused, fresh.cast(reused.type)]).take(pa.array(order))
