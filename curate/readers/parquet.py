"""Parquet reader (FineWeb, FineWeb-Edu, Zyda, generic): column projection and row-group streaming.

Large files are split into several tasks by row-group ranges at planning time; each task streams its
row groups in batches, so memory stays bounded whatever the file size. Checks run on whole Arrow
columns: null text -> missing_text, blank text -> empty_text, invalid UTF-8 -> invalid_utf8.

A row group that cannot be decoded (a corrupt page, a bad checksum) is read a second time (a remote read
may fail once); if it fails again, each of its rows not yet read is recorded as `unreadable_row_group`
(the footer says how many rows it holds; the detail names the row group, its rows and the cause), and
reading goes on with the next row group, so `max_bad_fraction` decides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from curate.io import fs
from curate.readers.base import BadRecords, Format, ReadOptions, Reader, ReadTask, register
from curate.readers.documents import documents, positional_ids, source_id_column, source_ids


def plan_row_groups(metadata: pq.FileMetaData, target_bytes: int) -> list[tuple[tuple[int, ...], int]]:
    """Group consecutive row groups into ranges of about `target_bytes`; returns (row_groups, first_row)."""
    ranges, current, size, first, row = [], [], 0, 0, 0
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        if current and size + rg.total_byte_size > target_bytes:
            ranges.append((tuple(current), first))
            current, size, first = [], 0, row
        current.append(i)
        size += rg.total_byte_size
        row += rg.num_rows
    if current or not ranges:
        ranges.append((tuple(current), first))
    return ranges


def _projection(schema: pa.Schema, fmt: Format, columns: list[str] | None) -> tuple[list[str], set[str]]:
    """The columns to read, and those among them read only to make the id (not written out)."""
    names = schema.names
    if fmt.text not in names:
        raise ValueError(f"no '{fmt.text}' column (columns: {', '.join(names)}); set fields.text")
    wanted = list(columns) if columns else list(names)
    hidden = set()
    if fmt.text not in wanted:
        wanted.append(fmt.text)
    id_column = source_id_column(schema, fmt)
    if id_column and id_column not in wanted:
        wanted.append(id_column)
        if id_column != fmt.id:  # the struct holding a dotted id: read for the id only
            hidden.add(id_column)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(f"columns {missing} not in file (columns: {', '.join(names)})")
    return wanted, hidden


_READ_ERRORS = (OSError, pa.ArrowInvalid)  # what pyarrow raises on a corrupt page, header or checksum


def _group_batches(pf: pq.ParquetFile, group: int, batch_rows: int, columns: list[str], skip: int):
    """The batches of one row group, without its first `skip` rows (already read before a failure)."""
    for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns, use_threads=False):
        if skip >= batch.num_rows:
            skip -= batch.num_rows
            continue
        if skip:
            batch, skip = batch.slice(skip), 0
        yield batch


def read_parquet(task: ReadTask, fmt: Format, handle, batch_rows: int, columns: list[str] | None,
                 bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
    pf = pq.ParquetFile(handle)
    wanted, hidden = _projection(pf.schema_arrow, fmt, columns)
    row = task.row_offset
    seen: set = set()
    groups = list(task.row_groups) if task.row_groups is not None else list(range(pf.num_row_groups))
    yielded = False
    for group in groups:
        size = pf.metadata.row_group(group).num_rows
        done, failure = 0, None
        for _attempt in range(2):
            batches, failure = _group_batches(pf, group, batch_rows, wanted, done), None
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except _READ_ERRORS as exc:
                    failure = exc
                    break
                out = documents(task, fmt, batch, row, hidden, seen, bad, stats)
                done += batch.num_rows
                row += batch.num_rows
                yielded = True
                yield out
            if failure is None:
                break
        if failure is not None and done < size:
            _lost_rows(task, fmt, pf, group, done, size, row, failure, seen, bad, stats)
            row += size - done
    if not yielded:  # no rows (or none readable): an empty batch still gives the shard its columns
        schema = pa.schema([pf.schema_arrow.field(c) for c in wanted])
        empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
        yield documents(task, fmt, empty, row, hidden, seen, bad, stats)


def _lost_rows(task: ReadTask, fmt: Format, pf: pq.ParquetFile, group: int, done: int, size: int, row: int,
               failure: Exception, seen: set, bad: BadRecords, stats: dict) -> None:
    """Every row of a row group that could not be read is a bad record; its id is the source's own when the
    id column alone still reads (`<positional>#dup` if a document already has it), else positional."""
    lost = size - done
    positions = positional_ids(task.id_prefix, row, lost)
    ids = positions
    column = source_id_column(pf.schema_arrow, fmt)
    if column is not None:
        try:
            table = pf.read_row_group(group, columns=[column], use_threads=False).slice(done)
            if table.num_rows == lost:
                ids = source_ids(table, fmt, positions)
        except (*_READ_ERRORS, pa.ArrowTypeError):
            pass
    ids = [i if i not in seen else f"{p}#dup" for i, p in zip(ids.to_pylist(), positions.to_pylist())]
    cause = " ".join(f"{type(failure).__name__}: {failure}".split())
    after = f", after {done} read" if done else ""
    message = (f"unreadable (rows {row - done}-{row - done + size - 1} of the file; {lost} rows lost{after}): {cause}")
    where = f"row group {group}"
    for record_id in ids:
        bad.add(record_id, "unreadable_row_group", where, message)
    stats["records"] = stats.get("records", 0) + lost


@register
class ParquetReader(Reader):
    """Parquet: a large file is split by row-group ranges read from its footer; shards keep the file's columns."""

    kind = "parquet"
    formats = (
        Format("fineweb", "parquet", text="text", id="id", url="url",
               doc="FineWeb / FineWeb-Edu parquet (data/<dump>/*.parquet); keeps every column, e.g. int_score"),
        Format("zyda", "parquet", text="text", id="nemo_id", doc="Zyda / Zyda-2 parquet per component; nemo_id becomes id when present"),
        Format("parquet", "parquet", text="text", id=None, doc="any parquet; map columns with fields: {text: ..., id: ...}"),
    )

    def plan(self, whole: ReadTask, fmt: Format, storage_options: dict, target: int) -> list[ReadTask]:
        try:
            with fs.open_input(whole.path, storage_options, block_size=1 << 20) as handle:
                pf = pq.ParquetFile(handle)
                metadata, names = pf.metadata, tuple(pf.schema_arrow.names)
        except Exception as exc:  # a corrupt file is a bad record, found when its task runs
            return [replace(whole, unreadable=f"{type(exc).__name__}: {exc}")]
        return [replace(whole, shard=f"{whole.shard[:-4]}{part:04d}", row_groups=groups, row_offset=first, columns=names)
                for part, (groups, first) in enumerate(plan_row_groups(metadata, target))]

    def columns(self, fmt: Format, projection: list[str] | None, file_columns: tuple[str, ...] | None) -> list[str] | None:
        """`id`, `text` and the file's other columns (those projected), as `_checked` writes them."""
        if file_columns is not None:
            wanted, hidden = _projection(pa.schema([(c, pa.null()) for c in file_columns]), fmt, projection)
        elif projection:
            wanted, hidden = list(projection), set()
        else:
            return None
        skip = {fmt.text, fmt.id, "id", "text"} | hidden
        return ["id", "text"] + [c for c in wanted if c not in skip]

    def read(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
        return read_parquet(task, fmt, handle, options.batch_rows, options.columns, bad, stats)
