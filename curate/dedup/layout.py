"""Where MinHash and dedup intermediate files live, and how docs shards map to node numbers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.io import fs
from curate.io.parquet import write_table


def shard_numbers(tasks, priority: list[str]) -> dict[tuple[str, str], tuple[int, int]]:
    """(source, shard) -> (priority index, shard index within the source), from the planned shard tasks."""
    by_source: dict[str, list[str]] = {}
    for t in tasks:
        by_source.setdefault(t.source, []).append(t.shard)
    return {(source, shard): (priority.index(source), i)
            for source, shards in by_source.items() for i, shard in enumerate(sorted(shards))}


def shard_tag(priority: int, index: int) -> str:
    return f"{priority:02d}-{index:07d}"


def write_columns(path: str, **columns: np.ndarray) -> None:
    """Intermediate files are read once, soon: fast lz4 rather than the outputs' zstd."""
    write_table(path, pa.table({name: pa.array(col) for name, col in columns.items()}), compression="lz4")


def read_columns(pattern: str, names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    """Concatenate the named columns of every file matching `pattern` (empty arrays when none)."""
    parts: dict[str, list] = {n: [] for n in names}
    for path in fs.glob(pattern):
        with fs.open_input(path) as handle:
            table = pq.read_table(handle, columns=names)
        for n in names:
            parts[n].append(table.column(n).to_numpy())
    return {n: (np.concatenate(parts[n]).astype(dtypes[n], copy=False) if parts[n] else np.empty(0, dtypes[n]))
            for n in names}


def read_tables(pattern: str) -> pa.Table | None:
    """Every file matching `pattern` as one table (None when there is none)."""
    parts = []
    for path in fs.glob(pattern):
        with fs.open_input(path) as handle:
            parts.append(pq.read_table(handle))
    return pa.concat_tables(parts) if parts else None
