"""Ids seen in more than one file (or task) of a source: the later copies are bad records.

A reader catches a repeated id inside its own task; across tasks, each task hands its (id, row) pairs
to hash partitions of the id (`partitioned`), and each partition keeps the first copy of every id in
plan order and names the later ones (`later_copies`). No process holds every id of a source.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from curate.io import fs
from curate.io.parquet import DOCS_PLAIN, read_table, write_table

BYTES_PER_PARTITION = 2 << 30  # about 600,000 web documents: one partition of ids stays small in memory


def id_partitions(input_bytes: int) -> int:
    return int(min(4096, max(1, -(-input_bytes // BYTES_PER_PARTITION))))


def partitioned(ids: pa.Array, order: int, partitions: int):
    """(partition, table of id, order, row) for the ids of one task (`order`: the task's place in the plan)."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    h = xxhash.xxh3_64_intdigest
    part = np.fromiter((h(i.encode("utf-8", "surrogatepass")) % partitions for i in ids.to_pylist()), np.int64, len(ids))
    rows = np.arange(len(ids), dtype=np.int64)
    for p in np.unique(part):
        mask = part == p
        yield int(p), pa.table({"id": ids.filter(pa.array(mask)), "order": pa.array(np.full(int(mask.sum()), order, np.int64)),
                                "row": pa.array(rows[mask])})


def later_copies(table: pa.Table) -> pa.Table:
    """Rows (id, order, row, first_order) whose id an earlier row (in order, row) of the table already has."""
    if not table.num_rows:
        return table.append_column("first_order", pa.array([], pa.int64()))
    table = table.sort_by([("id", "ascending"), ("order", "ascending"), ("row", "ascending")])
    ids = table.column("id").combine_chunks()
    same = pc.equal(ids.slice(1), ids.slice(0, len(ids) - 1)).to_numpy(zero_copy_only=False)
    repeat = np.concatenate([[False], same])
    first = np.flatnonzero(~repeat)
    first_of = first[np.cumsum(~repeat) - 1]
    orders = table.column("order").to_numpy()
    return table.filter(pa.array(repeat)).append_column("first_order", pa.array(orders[first_of][repeat]))


def later_copies_in(paths: list[str]) -> pa.Table:
    """`later_copies` over every (id, order, row) file of one partition."""
    parts = []
    for path in paths:
        with fs.open_input(path) as handle:
            parts.append(read_table(handle))
    empty = pa.table({"id": pa.array([], pa.string()), "order": pa.array([], pa.int64()), "row": pa.array([], pa.int64())})
    return later_copies(pa.concat_tables(parts) if parts else empty)


def apply_duplicates(parts: list[str], docs: str, ledger: str, rows_read: int, source: str, stage: str,
                     relative: str) -> int:
    """Drop a docs shard's later copies (the `parts` a partition found) and ledger each as
    `bad_record:duplicate_id`; safe to repeat (a resumed task changes nothing twice). Returns how many."""
    dups = pa.concat_tables([_read(p) for p in parts])
    table = _read(docs)
    if table.num_rows == rows_read:  # not yet rewritten
        keep = np.ones(table.num_rows, dtype=bool)
        keep[dups.column("row").to_numpy()] = False
        write_table(docs, table.filter(pa.array(keep)), plain=DOCS_PLAIN)
    ids, rows, first = (dups.column(c).to_pylist() for c in ("id", "row", "first_input"))
    from curate.common.ledger import ledger_table, write_ledger

    extra = ledger_table(source, stage, [f"{i}#dup@{relative}" for i in ids], ["bad_record:duplicate_id"] * len(ids),
                         [f"{relative} row {r}: id {i!r} already seen in {f}" for i, r, f in zip(ids, rows, first)])
    existing = _read(ledger)
    new = extra.filter(pc.invert(pc.is_in(extra.column("id"), value_set=existing.column("id"))))
    if new.num_rows:
        write_ledger(ledger, pa.concat_tables([existing, new]))
    return len(ids)


def take_columns(path: str, like: str) -> None:
    """Give an empty docs shard the columns of another shard of its source."""
    with fs.open_input(like) as handle:
        schema = pq.read_schema(handle)
    with fs.open_input(path) as handle:
        if pq.read_schema(handle).equals(schema):
            return
    write_table(path, schema.empty_table(), plain=DOCS_PLAIN)


def _read(path: str) -> pa.Table:
    with fs.open_input(path) as handle:
        return read_table(handle)


def content_hash(path: str, storage_options: dict | None = None) -> str:
    """sha256 of a file's bytes, for `execution.fingerprint: content` (reads the whole file once)."""
    digest = hashlib.sha256()
    with fs.open_input(path, storage_options) as handle:
        while chunk := handle.read(8 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()
