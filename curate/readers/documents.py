"""What the base `Reader` does for every reader (readers/base.py): a batch of input records made documents.

Vectorised over the batch: the source's own id (`Format.id`, a column or a field of a struct column) or the
positional id `{source}/{relative file}/{position}`, records with a null, blank or non-UTF-8 text and ids of
documents kept before in the task recorded as bad records, the rest as (`id`, `text`, the other columns), and
every record counted in `stats["records"]`. A record's position is its row in the task (counted from the
task's `row_offset`), or what the batch's `POSITION` column says (a line number: JSON Lines skips blank lines
and hands the lines it rejects to the ledger itself).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.readers.work import BadRecords, Format, ReadTask

POSITION = "__position"
"""A column `Reader.read_file` may add: each record's place in its file (int64), for positional ids and the ledger."""


def source_id_column(schema: pa.Schema, fmt: Format) -> str | None:
    """The column the id comes from: `fmt.id` itself, or the struct column of a dotted id (`meta.id`)."""
    if not fmt.id:
        return None
    if fmt.id in schema.names:
        return fmt.id
    root = fmt.id.split(".", 1)[0]
    if "." in fmt.id and root in schema.names and pa.types.is_struct(schema.field(root).type):
        return root
    return None


def source_ids(table, fmt: Format, fallback: pa.Array) -> pa.Array:
    """The source's own ids as strings; the positional id where the id is absent, null or empty."""
    column = source_id_column(table.schema, fmt)
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
    """Rows whose id a document kept before in this task has; the common no-duplicate case costs two set operations."""
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


def positional_ids(prefix: str, first: int, n: int) -> pa.Array:
    return _joined(prefix, pa.array(np.arange(first, first + n)))


def _joined(prefix: str, positions: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(prefix + "/", pc.cast(positions, pa.string()), "")


def row_where(position: int) -> str:
    """Where a bad record is, as the ledger's detail says it: a row of the file (`Reader.where`'s default)."""
    return f"row {position}"


def documents(task: ReadTask, fmt: Format, batch: pa.RecordBatch, row: int, hidden: set, seen: set,
              bad: BadRecords, stats: dict, where=row_where) -> pa.Table:
    """One batch as documents: ids made, bad rows recorded (at their position) and dropped. `row` is the
    position of the batch's first record, unless the batch has a `POSITION` column."""
    n = batch.num_rows
    stats["records"] = stats.get("records", 0) + n
    if POSITION in batch.schema.names:
        positions = batch.column(POSITION)
        fallback = _joined(task.id_prefix, positions)
        positions = positions.to_numpy(zero_copy_only=False)
    else:
        positions = np.arange(row, row + n)
        fallback = positional_ids(task.id_prefix, row, n)
    ids = source_ids(batch, fmt, fallback)
    text = batch.column(fmt.text)
    if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
        raise ValueError(f"column '{fmt.text}' is {text.type}, expected a string column")
    missing = pc.is_null(text).to_numpy(zero_copy_only=False)
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0), False).to_numpy(zero_copy_only=False)
    invalid = ~_valid_utf8(text)
    blank &= ~invalid
    rejected = missing | blank | invalid
    dup = np.zeros(n, dtype=bool)
    if fmt.id:   # a rejected record's id is not a document's: a later record with it is kept
        kept = ids.filter(pa.array(~rejected)) if rejected.any() else ids
        dup[~rejected] = _duplicates(kept.to_pylist(), seen)
    bad_mask = rejected | dup
    if bad_mask.any():
        id_list = ids.to_pylist()
        for i in np.flatnonzero(bad_mask):
            kind = ("missing_text" if missing[i] else "invalid_utf8" if invalid[i] else "empty_text" if blank[i]
                    else "duplicate_id")
            at = int(positions[i])
            record_id = id_list[i] if kind != "duplicate_id" else f"{task.id_prefix}/{at}#dup"
            bad.add(record_id, kind, where(at), _MESSAGES[kind].format(id=id_list[i]), at)
    table = pa.Table.from_batches([batch])
    skip = {fmt.text, fmt.id, "id", "text", POSITION} | hidden
    others = [c for c in table.column_names if c not in skip]
    out = pa.Table.from_arrays([ids, text] + [table.column(c) for c in others], names=["id", "text"] + others)
    if bad_mask.any():
        out = out.filter(pa.array(~bad_mask))
    return out
