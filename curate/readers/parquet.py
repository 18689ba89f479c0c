"""Parquet reader (FineWeb, FineWeb-Edu, Zyda, generic): column projection and row-group streaming.

Large files are split into several tasks by row-group ranges at planning time; each task streams its
row groups in batches, so memory stays bounded whatever the file size. Checks run on whole Arrow
columns: null text -> missing_text, blank text -> empty_text, invalid UTF-8 -> invalid_utf8.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.readers.base import BadRecords, Format, ReadTask


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


def _projection(schema: pa.Schema, fmt: Format, columns: list[str] | None) -> list[str]:
    names = schema.names
    if fmt.text not in names:
        raise ValueError(f"no '{fmt.text}' column (columns: {', '.join(names)}); set fields.text")
    wanted = list(columns) if columns else list(names)
    for required in (fmt.text, fmt.id):
        if required and required in names and required not in wanted:
            wanted.append(required)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(f"columns {missing} not in file (columns: {', '.join(names)})")
    return wanted


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


def read_parquet(task: ReadTask, fmt: Format, handle, batch_rows: int, columns: list[str] | None,
                 bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
    pf = pq.ParquetFile(handle)
    wanted = _projection(pf.schema_arrow, fmt, columns)
    row = task.row_offset
    seen: set = set()
    groups = list(task.row_groups) if task.row_groups is not None else list(range(pf.num_row_groups))
    if not groups:
        return
    for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=wanted, use_threads=False):
        n = batch.num_rows
        stats["records"] = stats.get("records", 0) + n
        rows = np.arange(row, row + n)
        fallback = pc.binary_join_element_wise(task.id_prefix + "/", pc.cast(pa.array(rows), pa.string()), "")
        ids = fallback
        if fmt.id and fmt.id in batch.schema.names:
            ids = pc.coalesce(pc.cast(batch.column(fmt.id), pa.string()), fallback)
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
        others = [c for c in table.column_names if c not in (fmt.text, fmt.id, "id", "text")]
        out = pa.Table.from_arrays([ids, text] + [table.column(c) for c in others], names=["id", "text"] + others)
        if bad_mask.any():
            out = out.filter(pa.array(~bad_mask))
        row += n
        yield out
