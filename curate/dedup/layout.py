"""Where MinHash and dedup intermediate files live, and how docs shards map to node numbers."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa

from curate.dedup import nodes
from curate.dedup.shuffle import partition_of, split
from curate.io import fs
from curate.io.ipc import LZ4, read_ipc, write_ipc
from curate.io.parquet import read_file, write_table


WORK = ".arrow"
"""The graph phases' work files (`GraphDir`): Arrow IPC with lz4 buffers, not Parquet. A 1M-document dedup wrote and
read ~30,000 small files a run (~14,000 since `bundles`); a small Parquet file costs ~0.8 ms to write and ~0.5 ms to read, an IPC file ~0.15
and ~0.1 (a profile of a 1M append put 50 of dedup's 85 seconds in Parquet's per-file costs). The minhash step's band
keys and signatures are IPC too (a shard's signatures: 2.9 ms to read as Parquet, 0.35 as IPC; an append's dedup
reads those of every shard holding a member of a component it settles again, and every shard's band keys). The
caches stay Parquet."""
IPC = LZ4
PLAIN = pa.ipc.IpcWriteOptions()
"""Work files of hashes (band keys, signatures) are written uncompressed: random bits do not compress, and undoing lz4
made reading a shard's band keys 9x slower (0.27 against 0.03 ms) and its signatures 6x (0.44 against 0.07 ms), a cost
an append pays for every shard's band keys. The other work files (node numbers, labels, counts) keep lz4."""

DOCS_PER_PARTITION = 250_000
MAX_PARTITIONS = 4096


def partitions_for(docs: int) -> int:
    """Hash partitions for `docs` documents: one per DOCS_PER_PARTITION, at most MAX_PARTITIONS."""
    return min(MAX_PARTITIONS, max(1, -(-docs // DOCS_PER_PARTITION)))


def partitions_kept(before: int | None, docs: int) -> int:
    """An earlier run's count while it holds at most twice DOCS_PER_PARTITION a partition, else `partitions_for`.
    Outputs do not depend on the count (only where work files lie), and a new count splits every shard's band keys
    again: an append that grows the corpus a little keeps it, and the count changes once per doubling."""
    need = partitions_for(docs)
    return before if before is not None and need <= 2 * before <= 2 * MAX_PARTITIONS else need


def shard_numbers(shards: list[dict], priority: list[str]) -> dict[tuple[str, str], tuple[int, int]]:
    """(source, shard) -> (priority index, shard index within the source), from the run's docs shards (the ingest
    record's: source, shard, input) in input order: by the path of the file each was read from, then by name (a
    large file's shards). Node order is what `tie_break: first` keeps, and shards are named by a hash of their file:
    numbered by name, a new dump's copy of a page kept from an earlier dump replaced it wherever its shard's name
    sorted first (a fresh run too); numbered by path, the earlier file's copy stays (dumps are named by date)."""
    by_source: dict[str, list[tuple[str, str]]] = {}
    for s in shards:
        by_source.setdefault(s["source"], []).append((s.get("input", ""), s["shard"]))
    return {(source, shard): (priority.index(source), i)
            for source, found in by_source.items() for i, (_, shard) in enumerate(sorted(found))}


def repartition(bands: str, old: int, partitions: int, source: str, shard: str) -> dict:
    """Split one docs shard's band rows again, from `bands/n=<old>/` into `bands/n=<partitions>/`: the rows are the
    same whatever the count, so an append that changes it moves them instead of computing the signatures again."""
    files = fs.glob(fs.join(bands, f"n={old}", "p=*", source, f"{shard}{WORK}"))
    cols = read_columns_of(files, ["band", "key", "row", "tie"], {"band": np.uint16, "key": np.uint64, "row": np.uint64, "tie": np.uint64})
    for p, part in split(partition_of(cols["key"], partitions), partitions, **cols):
        write_columns(fs.join(bands, f"n={partitions}", f"p={p:05d}", source, f"{shard}{WORK}"), PLAIN, **part)
    return {"in": len(cols["key"])}


def shard_tag(priority: int, index: int) -> str:
    return f"{priority:02d}-{index:07d}"


def tag_of(key: int) -> str:
    """The shard tag of a `nodes.shard_key` value."""
    return shard_tag(int(key) >> int(nodes.SHARD_BITS), int(key) & int(nodes.SHARD_MASK))


def tag_key(tag: str) -> int:
    """The `nodes.shard_key` value of a shard tag (`tag_of`'s inverse)."""
    priority, index = (int(x) for x in tag.split("-"))
    return (priority << int(nodes.SHARD_BITS)) | index


GROUP = 8
"""Consecutive docs shards of a source that one task of sound dedup's per-shard phases takes (`group_of`)."""


def group_of(key: int) -> str:
    """The group of a docs shard (its `nodes.shard_key` value): `GROUP` consecutive shards of its source, one task of
    `gather` and of `exact-a`, whose bundle goes by this name; a reader finds the bundle from the shard alone."""
    return f"{int(key) >> int(nodes.SHARD_BITS):02d}-g{(int(key) & int(nodes.SHARD_MASK)) // GROUP:06d}"


class PartitionedSink:
    """Collects a shard's rows, then writes them split by hash partition of column `by`, one file per partition.

    The rows of a shard are few next to its text (four integers per band), so they are held until the end.
    """

    def __init__(self, path_of: Callable[[int], str], partitions: int, by: str, options: pa.ipc.IpcWriteOptions = IPC):
        self.path_of, self.partitions, self.by, self.parts, self.options = path_of, partitions, by, [], options

    def __enter__(self):
        return self

    def write(self, table: pa.Table) -> None:
        self.parts.append({name: table.column(name).to_numpy() for name in table.column_names})

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and self.parts:
            columns = {name: np.concatenate([p[name] for p in self.parts]) for name in self.parts[0]}
            for p, part in split(partition_of(columns[self.by], self.partitions), self.partitions, **columns):
                write_columns(self.path_of(p), self.options, **part)
        return False


def write_frame(path: str, table: pa.Table, options: pa.ipc.IpcWriteOptions = IPC) -> None:
    """A work file: Arrow IPC where the name ends in `WORK` (`options`: lz4, or `PLAIN` for hashes), else Parquet;
    read once, soon: lz4, not the outputs' zstd."""
    if not path.endswith(WORK):
        write_table(path, table, compression="lz4")
        return
    write_ipc(path, table, options)


def read_frame(path: str, columns: list[str] | None = None) -> pa.Table:
    """One work file (`write_frame`), whole or some columns."""
    if not path.endswith(WORK):
        return read_file(path, columns)
    return read_ipc(path, columns)


def write_columns(path: str, options: pa.ipc.IpcWriteOptions = IPC, **columns: np.ndarray) -> None:
    write_frame(path, pa.table({name: pa.array(col) for name, col in columns.items()}), options)


def read_columns(pattern: str, names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    """Concatenate the named columns of every file matching `pattern` (empty arrays when none)."""
    return read_columns_of(fs.glob(pattern), names, dtypes)


def read_columns_of(paths: list[str], names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    parts: dict[str, list] = {n: [] for n in names}
    for path in paths:
        table = read_frame(path, names)
        for n in names:
            parts[n].append(table.column(n).to_numpy())
    return {n: (np.concatenate(parts[n]).astype(dtypes[n], copy=False) if parts[n] else np.empty(0, dtypes[n]))
            for n in names}


def read_tables(pattern: str) -> pa.Table | None:
    """Every file matching `pattern` as one table (None when there is none)."""
    parts = [read_frame(path) for path in fs.glob(pattern)]
    return pa.concat_tables(parts) if parts else None
