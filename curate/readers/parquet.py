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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.io import fs
from curate.readers.base import BadRecords, Format, ReadOptions, Reader, ReadTask, register


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
    id_column = _id_column(schema, fmt)
    if id_column and id_column not in wanted:
        wanted.append(id_column)
        if id_column != fmt.id:  # the struct holding a dotted id: read for the id only
            hidden.add(id_column)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(f"columns {missing} not in file (columns: {', '.join(names)})")
    return wanted, hidden


def _id_column(schema: pa.Schema, fmt: Format) -> str | None:
    """The column the id comes from: `fmt.id` itself, or the struct column of a dotted id (`meta.id`)."""
    if not fmt.id:
        return None
    if fmt.id in schema.names:
        return fmt.id
    root = fmt.id.split(".", 1)[0]
    if "." in fmt.id and root in schema.names and pa.types.is_struct(schema.field(root).type):
        return root
    return None


def _source_ids(table, fmt: Format, fallback: pa.Array) -> pa.Array:
    """The source's own ids as strings; the positional id where the id is absent, null or empty."""
    column = _id_column(table.schema, fmt)
    if column is None:
        return fallback
    values = table.column(column)
    if column != fmt.id:
        try:
            values = pc.struct_field(values, fmt.id.split(".")[1:])
        except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError):  # no such field: positional ids, like a missing column
            return fallback
    values = pc.cast(values, pa.string())
    values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
    return pc.coalesce(values, fallback)


def _valid_utf8(text: pa.Array) -> np.ndarray:
    """Per-row UTF-8 validity; the fast path validates the whole column at once."""
    try:
        text.validate(full=True)
        return np.ones(len(text), dtype=bool)
    except pa.ArrowInvalid:
        raw = text.cast(pa.binary()).to_pylist()
        return np.array([v is None or _decodes(v) for v in raw], dtype=bool)


def _decodes(value: bytes) -> bool:
    try:
        value.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


_MESSAGES = {"missing_text": "text is null", "invalid_utf8": "text is not valid UTF-8",
             "empty_text": "text is empty or whitespace", "duplicate_id": "id {id!r} already seen in this file"}


def _duplicates(ids: list, seen: set) -> np.ndarray:
    """Rows whose id was already seen in this task; the common no-duplicate case costs two set operations."""
    fresh = set(ids)
    if len(fresh) == len(ids) and seen.isdisjoint(fresh):
        seen |= fresh
        return np.zeros(len(ids), dtype=bool)
    mask = np.zeros(len(ids), dtype=bool)
    for i, value in enumerate(ids):
        if value in seen:
            mask[i] = True
        else:
            seen.add(value)
    return mask


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


def _positions(prefix: str, first: int, n: int) -> pa.Array:
    return pc.binary_join_element_wise(prefix + "/", pc.cast(pa.array(np.arange(first, first + n)), pa.string()), "")


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
                out = _checked(task, fmt, batch, row, hidden, seen, bad, stats)
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
        yield _checked(task, fmt, empty, row, hidden, seen, bad, stats)


def _lost_rows(task: ReadTask, fmt: Format, pf: pq.ParquetFile, group: int, done: int, size: int, row: int,
               failure: Exception, seen: set, bad: BadRecords, stats: dict) -> None:
    """Every row of a row group that could not be read is a bad record; its id is the source's own when the
    id column alone still reads (`<positional>#dup` if a document already has it), else positional."""
    lost = size - done
    positions = _positions(task.id_prefix, row, lost)
    ids = positions
    column = _id_column(pf.schema_arrow, fmt)
    if column is not None:
        try:
            table = pf.read_row_group(group, columns=[column], use_threads=False).slice(done)
            if table.num_rows == lost:
                ids = _source_ids(table, fmt, positions)
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


def _checked(task: ReadTask, fmt: Format, batch: pa.RecordBatch, row: int, hidden: set, seen: set,
             bad: BadRecords, stats: dict) -> pa.Table:
    """One batch as documents: ids made, bad rows recorded and dropped."""
    n = batch.num_rows
    stats["records"] = stats.get("records", 0) + n
    fallback = _positions(task.id_prefix, row, n)
    ids = _source_ids(batch, fmt, fallback)
    text = batch.column(fmt.text)
    if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
        raise ValueError(f"column '{fmt.text}' is {text.type}, expected a string column")
    missing = pc.is_null(text).to_numpy(zero_copy_only=False)
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0), False).to_numpy(zero_copy_only=False)
    invalid = ~_valid_utf8(text)
    blank &= ~invalid
    dup = _duplicates(ids.to_pylist(), seen) if fmt.id else np.zeros(n, dtype=bool)
    bad_mask = missing | blank | invalid | dup
    if bad_mask.any():
        id_list = ids.to_pylist()
        for i in np.flatnonzero(bad_mask):
            kind = ("missing_text" if missing[i] else "invalid_utf8" if invalid[i] else "empty_text" if blank[i]
                    else "duplicate_id")
            record_id = id_list[i] if kind != "duplicate_id" else f"{task.id_prefix}/{row + i}#dup"
            bad.add(record_id, kind, f"row {row + i}", _MESSAGES[kind].format(id=id_list[i]))
    table = pa.Table.from_batches([batch])
    skip = {fmt.text, fmt.id, "id", "text"} | hidden
    others = [c for c in table.column_names if c not in skip]
    out = pa.Table.from_arrays([ids, text] + [table.column(c) for c in others], names=["id", "text"] + others)
    if bad_mask.any():
        out = out.filter(pa.array(~bad_mask))
    return out


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
