"""A matrix of rows on local disk, read by index chunk by chunk: a giant cluster's signatures outside memory.

Why: settling a cluster compares its members with a few kept ones (`curate.dedup.settle`), a chunk of rows at a
time, but the rows of a 10M-member cluster are 5 GiB of signatures. Here they live in a file mapped into memory;
after each write or read the mapped pages are given back (`MADV_DONTNEED`: they stay in the page cache, not in
the task's resident memory), so a task's memory is one chunk's rows, whatever the cluster's size.
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np


class DiskRows:
    """An (n, width) array in a temporary local file; `rows[idx]` copies rows out, `fill(at, rows)` writes them."""

    def __init__(self, n: int, width: int, dtype=np.uint32, folder: str | None = None):
        self.shape, self.dtype = (n, width), np.dtype(dtype)
        size = max(1, n * width * self.dtype.itemsize)
        fd, self.path = tempfile.mkstemp(prefix="curate-rows-", suffix=".bin", dir=folder)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._rows = np.frombuffer(self._map, self.dtype, count=n * width).reshape(n, width)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> np.ndarray:
        out = np.array(self._rows[idx])
        self._release()
        return out

    def fill(self, at: np.ndarray, rows: np.ndarray) -> None:
        self._rows[at] = rows
        self._release()

    def _release(self) -> None:
        self._map.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        del self._rows
        self._map.close()
        os.unlink(self.path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
