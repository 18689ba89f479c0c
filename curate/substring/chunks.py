"""A hash partition read in chunks of at most `cap` rows, so that no task holds more rows than that at once, however
often one key repeats (one boilerplate paragraph in 5% of the corpus puts all its copies in one partition).

A partition that fits is read once and held; a larger one is read twice, chunk by chunk: once to sum each key's
copies (and find its first copy), once to send each row on with what the first pass found. What a task holds is
then one chunk plus one row per distinct key of its partition, and distinct keys spread evenly over partitions.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq

from curate.io import fs


class Chunks:
    """The rows of `paths` (parquet files), as dicts of numpy columns of at most `cap` rows, in file order."""

    def __init__(self, paths: list[str], dtypes: dict, cap: int):
        self.paths, self.dtypes, self.cap = paths, dtypes, cap
        self.sizes = []
        for path in paths:
            with fs.open_input(path) as handle:
                self.sizes.append(pq.ParquetFile(handle).metadata.num_rows)
        self.rows = sum(self.sizes)
        self.count = max(1, -(-self.rows // cap))
        self.held = 0   # the most rows held at once
        self._whole = None

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        if self.count == 1:
            if self._whole is None:
                self._whole = self._join(list(self._batches()))
                self.held = self.rows
            yield self._whole
            return
        parts, n = [], 0
        for batch in self._batches():
            parts.append(batch)
            n += len(next(iter(batch.values())))
            while n >= self.cap:
                whole = self._join(parts)
                self.held = max(self.held, self.cap)
                yield {c: v[:self.cap] for c, v in whole.items()}
                rest = {c: v[self.cap:] for c, v in whole.items()}
                parts, n = [rest], n - self.cap
        if n:
            self.held = max(self.held, n)
            yield self._join(parts)

    def _batches(self) -> Iterator[dict[str, np.ndarray]]:
        for path, size in zip(self.paths, self.sizes):
            if not size:
                continue
            with fs.open_input(path) as handle:
                for batch in pq.ParquetFile(handle).iter_batches(batch_size=min(self.cap, 1 << 20), columns=list(self.dtypes)):
                    yield {c: batch.column(c).to_numpy().astype(t, copy=False) for c, t in self.dtypes.items()}

    def _join(self, parts: list[dict]) -> dict[str, np.ndarray]:
        if not parts:
            return {c: np.empty(0, t) for c, t in self.dtypes.items()}
        return {c: np.concatenate([p[c] for p in parts]) if len(parts) > 1 else parts[0][c] for c in self.dtypes}


def key128(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a, b) as one sortable 16-byte value (big-endian: byte order is (a, b) order)."""
    return np.stack([a, b], 1).astype(">u8").view("S16").ravel()


def find(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index into `sorted_keys`, whether found) of each of `keys`."""
    if not len(sorted_keys):
        return np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return at, sorted_keys[at] == keys
