"""What the graph's tasks send to every node partition, one raw file per sending task: `<folder>/from-<origin>.mail`.

Every band partition's `buckets` task (or docs shard's `verify-b`) sends edges and nodes to every node partition, and
every round of label propagation moves each node's label to the partitions of its neighbours: P senders to P
receivers, P^2 (sender, receiver) pairs, 160,000 a round at 100M documents (P = 400) and 16M at 1B. As Arrow IPC
bundles (`curate.dedup.bundles`) each pair cost a record batch built and written and, on the receiving side, a bundle
opened, its footer and tag index parsed and the batch taken: at 100M, `init` alone spent ~50 CPU-s on its 320,000
pairs. Here every column is a uint64, so a sender's rows, sorted by receiver, are one array of fixed-width records
behind a table of row offsets: written with one sort and one write, and a receiver reads two ranges at known offsets
of each sender's file (ranged reads on an object store too), whatever P is.

File: `MAGIC`; little-endian uint64 P (partitions) and K (columns); P + 1 uint64 row offsets (receiver p's rows are
`offsets[p]:offsets[p + 1]`); then the rows, K uint64 each, row after row.
"""

from __future__ import annotations

import os

import numpy as np

from curate.io import fs

MAGIC = b"CURMAIL1"
SUFFIX = ".mail"
HEAD = len(MAGIC) + 16
U64 = np.dtype("<u8")
CHUNK = 1 << 20   # rows a sender lays out at once


def send(folder: str, origin: str, receiver: np.ndarray, partitions: int, columns: dict[str, np.ndarray]) -> np.ndarray:
    """Write each row of `columns` (uint64, one value a row each) to partition `receiver[row]`, as the mailbox
    `folder/from-<origin>`: replaces what an earlier try of the same task sent (nothing to send removes it). Returns
    the rows each partition was sent."""
    path = fs.join(folder, f"from-{origin}{SUFFIX}")
    counts = np.bincount(receiver, minlength=partitions)
    if not len(receiver):
        fs.remove(path)
        return counts
    order = np.argsort(receiver, kind="stable")
    offsets = np.zeros(partitions + 1, U64)
    np.cumsum(counts, out=offsets[1:])
    with fs.AtomicWriter(path) as handle:
        handle.write(MAGIC + np.array([partitions, len(columns)], U64).tobytes())
        handle.write(offsets.tobytes())
        for start in range(0, len(order), CHUNK):   # rows made a chunk at a time: a task holds its columns, not twice
            rows = np.empty((min(CHUNK, len(order) - start), len(columns)), U64)
            for j, column in enumerate(columns.values()):
                rows[:, j] = column[order[start:start + CHUNK]]
            handle.write(rows.data)
    return counts


def receive(folder: str, p: int, partitions: int, names: list[str], origins: list[str] | None = None) -> dict[str, np.ndarray]:
    """The rows every sender under `folder` (or the named `origins` only: those that sent `p` rows) sent to partition
    `p`, as uint64 columns named `names` (in the order the senders gave them), concatenated in the senders' order."""
    paths = fs.glob(fs.join(folder, f"from-*{SUFFIX}")) if origins is None else \
        [fs.join(folder, f"from-{origin}{SUFFIX}") for origin in sorted(origins)]
    parts = [rows for path in paths if len(rows := _rows_for(path, p, partitions, len(names)))]
    rows = np.concatenate(parts) if parts else np.empty((0, len(names)), U64)
    return {name: np.ascontiguousarray(rows[:, j]) for j, name in enumerate(names)}


def _rows_for(path: str, p: int, partitions: int, columns: int) -> np.ndarray:
    """Partition p's rows of one mailbox: its head and p's two offsets in one read, then the rows in another."""
    with _Ranges(path) as read:
        head = read(0, HEAD + 8 * (p + 2))
        parts, width = np.frombuffer(head, U64, 2, len(MAGIC))
        if head[:len(MAGIC)] != MAGIC or parts != partitions or width != columns:
            raise ValueError(f"{path}: not a mailbox of {partitions} partitions and {columns} columns")
        lo, hi = np.frombuffer(head, U64, 2, HEAD + 8 * p)
        if hi == lo:
            return np.empty((0, columns), U64)
        start = HEAD + 8 * (partitions + 1) + int(lo) * 8 * columns
        return np.frombuffer(read(start, int(hi - lo) * 8 * columns), U64).reshape(-1, columns)


class _Ranges:
    """Reads of byte ranges of one file: `os.pread` on a local one, ranged reads (`cat_file`) on an object store."""

    def __init__(self, path: str):
        self.store, self.stripped = fs.filesystem(path)
        self.fd = os.open(self.stripped, os.O_RDONLY) if fs.is_local(self.store) else None

    def __enter__(self):
        return self.read

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def read(self, start: int, size: int) -> bytes:
        if self.fd is not None:
            got = os.pread(self.fd, size, start)
        else:   # start and end by name: s3fs's `cat_file` takes a version id second
            got = self.store.cat_file(self.stripped, start=start, end=start + size)
        if len(got) != size:
            raise ValueError(f"{self.stripped}: {len(got)} bytes at {start}, expected {size} (a mailbox cut short)")
        return got
