"""A digest of a set of rows that neither their order nor their split among files changes: sums of row hashes.

What a docs shard is sent by the graph's partitions arrives in several bundles, in an order and a split that an append
can change where the rows do not (a component recalled from an earlier run is sent from its partition's `-reused`
bundle, a partition count moves rows between partitions). Each row is hashed from its columns (names and values); a set
of rows is the two sums of its rows' hashes under two mixes, and its count (`LANES` uint64 words, added without carry
past 64 bits): the digest of a union is the sum of its parts' (`add`), whoever sent them.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from curate.dedup.shuffle import mix64

LANES = 3
_PRIME = np.uint64(0x100000001B3)
_OTHER = np.uint64(0x9E3779B97F4A7C15)


def digest(names: list[str], columns: list[np.ndarray | pa.Array]) -> np.ndarray:
    """The `LANES` words of these rows (columns of one length, by name)."""
    return digests(names, [columns])[0]


def digests(names: list[str], parts: list[list[np.ndarray | pa.Array]]) -> np.ndarray:
    """The `LANES` words of each part's rows (parts of the same columns, by name), hashed together: a sender's parts
    are many and small (a partition sends ~10 rows to each of a thousand docs shards)."""
    if not parts:
        return np.zeros((0, LANES), np.uint64)
    sizes = np.array([len(part[0]) for part in parts], np.int64)
    h = np.zeros(int(sizes.sum()), np.uint64)
    with np.errstate(over="ignore"):
        for k, name in enumerate(names):
            col = [part[k] for part in parts]
            col = pa.concat_arrays([c.cast(pa.large_string()) for c in col]) if isinstance(col[0], pa.Array) else np.concatenate(col)
            salt = np.uint64(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little"))
            h = mix64(h * _PRIME + mix64(_bits(col) ^ salt))
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        out = np.zeros((len(parts), LANES), np.uint64)
        nonempty = sizes > 0
        if nonempty.any():
            out[nonempty, 0] = np.add.reduceat(h, starts[nonempty])
            out[nonempty, 1] = np.add.reduceat(mix64(h ^ _OTHER), starts[nonempty])
        out[:, 2] = sizes.astype(np.uint64)
        return out


def add(parts: list[np.ndarray]) -> np.ndarray:
    """The digest of the union of disjoint sets of rows."""
    with np.errstate(over="ignore"):
        return np.sum(parts, axis=0, dtype=np.uint64) if parts else np.zeros(LANES, np.uint64)


def _bits(col) -> np.ndarray:
    """Each value as 64 bits, alike for equal values whatever the sender's dtype (receivers cast): an integer's or a
    bool's value, a float's as a float64's bits, a string's polynomial hash of its bytes (nulls: a value of their own)."""
    if isinstance(col, pa.Array):
        return _strings(col)
    a = np.asarray(col)
    return a.astype(np.float64).view(np.uint64) if a.dtype.kind == "f" else a.astype(np.uint64)


def _strings(col: pa.Array) -> np.ndarray:
    if col.type != pa.large_string() or col.offset:   # offsets from 0, 64-bit (`digests` concatenated them so)
        col = pa.concat_arrays([col.cast(pa.large_string())])
    offsets = np.frombuffer(col.buffers()[1], np.int64, len(col) + 1)
    data = np.frombuffer(col.buffers()[2], np.uint8, offsets[-1]) if offsets[-1] else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    with np.errstate(over="ignore"):
        position = np.arange(len(data), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        powers = np.cumprod(np.full(int(lengths.max(initial=0)) + 1, _PRIME, np.uint64)) if len(data) else np.ones(1, np.uint64)
        terms = (data.astype(np.uint64) + np.uint64(1)) * powers[position]
        sums = np.zeros(len(col), np.uint64)
        nonempty = lengths > 0
        if nonempty.any():
            sums[nonempty] = np.add.reduceat(terms, offsets[:-1][nonempty])
        out = sums ^ (lengths.astype(np.uint64) << np.uint64(48))
    if col.null_count:
        out[np.asarray(col.is_null())] = _OTHER
    return out
