"""The minhash stage's per-shard outputs: band rows by hash partition of key, and the shard's signatures.

The signatures (`<source>/<shard>.arrow`: row, length in characters, sig as fixed_size_list<uint32>) are
kept so that a sound dedup can check each cluster member against its representative from the
signatures it already has (the fraction of equal slots estimates the Jaccard), without re-reading text.

Both hold rows of the docs shard (`row`) and, in the band rows, the rank within a source (`tie`), never node
numbers: a shard's files follow from its own documents alone, so an append reuses those of every unchanged shard
(the dedup step numbers the nodes, `curate.dedup.band_cache.candidates`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa

from curate.dedup.layout import PLAIN, WORK, PartitionedSink, read_frame, write_frame
from curate.io import fs


def fixed_lists(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """An (n, width) array as a fixed_size_list column of its dtype (signatures: uint32; band keys: uint64)."""
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(matrix).reshape(-1)), matrix.shape[1])


def signature_matrix(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A fixed_size_list<uint32> column back as an (n, num_perm) uint32 array."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    width = arr.type.list_size
    return arr.flatten().to_numpy().reshape(-1, width)


class MinhashSink:
    """Takes per-document rows (row, tie, keys: the band keys, sig, length); writes band rows (band, key,
    row, tie) split by partition of key, and the signatures in one file, sorted by row."""

    def __init__(self, bands_path_of: Callable[[int], str], partitions: int, signatures_path: str):
        self.bands = PartitionedSink(bands_path_of, partitions, "key", PLAIN)
        self.signatures_path, self.parts = signatures_path, []

    def __enter__(self):
        return self

    def write(self, table: pa.Table) -> None:
        keys = table.column("keys").combine_chunks()
        b = keys.type.list_size
        row, tie = table.column("row").to_numpy(), table.column("tie").to_numpy()
        self.bands.write(pa.table({"band": np.tile(np.arange(b, dtype=np.uint16), len(row)), "key": keys.flatten().to_numpy(),
                                   "row": np.repeat(row, b), "tie": np.repeat(tie, b)}))
        self.parts.append(table.select(["row", "length", "sig"]))

    def __exit__(self, exc_type, exc, tb):
        self.bands.__exit__(exc_type, exc, tb)
        if exc_type is None and self.parts:
            table = pa.concat_tables(self.parts).combine_chunks()
            write_frame(self.signatures_path, table.take(pa.array(np.argsort(table.column("row").to_numpy(), kind="stable"))), PLAIN)
        return False


def signatures_path(root: str, source: str, shard: str) -> str:
    """A docs shard's signature file under the minhash step's `signatures` folder."""
    return fs.join(root, source, f"{shard}{WORK}")


def read_signatures(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row sorted, length, sig matrix) of one shard's signature file; empty arrays when it has none."""
    if not fs.exists(path):
        return np.empty(0, np.uint64), np.empty(0, np.int64), np.empty((0, 0), np.uint32)
    t = read_frame(path)
    return t.column("row").to_numpy(), t.column("length").to_numpy(), signature_matrix(t.column("sig"))
