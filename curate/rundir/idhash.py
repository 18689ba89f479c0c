"""The id index's hash of every id of a docs shard (`idindex.hashes`), one numba pass over the Arrow string buffers:
FNV-1a over the UTF-8 bytes, finished with murmur3's fmix64 (curate/signals/hash64.py). Its own module so a lookup,
which hashes one id in Python (`idindex.hash_one`), never imports numba."""

from __future__ import annotations

import numba as nb
import numpy as np
import pyarrow as pa

from curate.signals.hash64 import PRIME, SEED, U64, mix


@nb.njit(cache=True)
def _hash_strings(data, offsets, out):
    for i in range(len(offsets) - 1):
        h = SEED
        for j in range(offsets[i], offsets[i + 1]):
            h ^= U64(data[j])
            h *= PRIME
        out[i] = mix(h)


def hashes(ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The 64-bit hash of every id, as int64 (Parquet's statistics compare signed)."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    ids = ids.cast(pa.large_string())
    out = np.empty(len(ids), np.uint64)
    if len(ids):
        _, offsets, data = ids.buffers()
        offsets = np.frombuffer(offsets, np.int64)[ids.offset: ids.offset + len(ids) + 1]
        data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(1, np.uint8)
        _hash_strings(data, offsets, out)
    return out.view(np.int64)
