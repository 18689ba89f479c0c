"""JSON Lines reader (plain, gzip or zstd, sniffed): DCLM, Dolma and generic JSONL.

Parsing a JSON line is per-record work by nature; everything else (batching, typing, writing) is Arrow.
Each rejected line is recorded with a reason: invalid_utf8, invalid_json, not_an_object, missing_text,
bad_text_type, empty_text, duplicate_id, truncated_file.
"""

from __future__ import annotations

from typing import Iterator

import orjson
import pyarrow as pa

from curate.io.lines import iter_lines
from curate.readers.base import BadRecords, Format, ReadTask


def get_path(obj: dict, dotted: str):
    """`metadata.url` -> obj["metadata"]["url"], None when any step is missing."""
    node = obj
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def output_schema(fmt: Format) -> pa.Schema:
    fields = [("id", pa.string()), ("text", pa.string())]
    if fmt.url:
        fields.append(("url", pa.string()))
    fields += list(fmt.promote)
    fields.append(("meta", pa.string()))
    return pa.schema(fields)


class _Columns:
    """Column buffers for one output batch."""

    def __init__(self, fmt: Format):
        self.fmt = fmt
        self.schema = output_schema(fmt)
        self.cols = {name: [] for name in self.schema.names}

    def __len__(self):
        return len(self.cols["id"])

    def table(self) -> pa.Table:
        arrays = []
        for f in self.schema:
            values = self.cols[f.name]
            try:
                arrays.append(pa.array(values, f.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                arrays.append(pa.array([_coerce(v, f.type) for v in values], f.type))
        self.cols = {name: [] for name in self.schema.names}
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _coerce(value, type_):
    """A promoted field of the wrong JSON type becomes null rather than failing the shard."""
    try:
        return pa.array([value], type_)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None


def read_jsonl(task: ReadTask, fmt: Format, handle, batch_rows: int, bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
    """Yield document batches from one JSONL file; bad lines go to `bad`; `stats["records"]` counts input records."""
    consumed = {fmt.text} | {name for name, _ in fmt.promote}
    if fmt.id and "." not in fmt.id:
        consumed.add(fmt.id)
    if fmt.url and "." not in fmt.url:
        consumed.add(fmt.url)
    cols = _Columns(fmt)
    seen_ids: set = set()
    result: dict = {}
    records = 0
    for lineno, line in iter_lines(handle, result):
        records += 1
        fallback = f"{task.id_prefix}/{lineno}"
        where = f"line {lineno + 1}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as uexc:
                bad.add(fallback, "invalid_utf8", where, f"invalid UTF-8 at byte {uexc.start}")
                continue
            bad.add(fallback, "invalid_json", where, str(exc))
            continue
        if not isinstance(obj, dict):
            bad.add(fallback, "not_an_object", where, f"expected a JSON object, got {type(obj).__name__}")
            continue
        doc_id = get_path(obj, fmt.id) if fmt.id else None
        doc_id = fallback if doc_id is None else str(doc_id)
        text = obj.get(fmt.text) if "." not in fmt.text else get_path(obj, fmt.text)
        if text is None:
            bad.add(doc_id, "missing_text", where, f"no '{fmt.text}' field")
            continue
        if not isinstance(text, str):
            bad.add(doc_id, "bad_text_type", where, f"'{fmt.text}' is {type(text).__name__}, expected a string")
            continue
        if not text.strip():
            bad.add(doc_id, "empty_text", where, "text is empty or whitespace")
            continue
        if fmt.id:
            if doc_id in seen_ids:
                bad.add(f"{fallback}#dup", "duplicate_id", where, f"id {doc_id!r} already seen in this file")
                continue
            seen_ids.add(doc_id)
        c = cols.cols
        c["id"].append(doc_id)
        c["text"].append(text)
        if fmt.url:
            url = get_path(obj, fmt.url)
            c["url"].append(url if isinstance(url, str) else None)
        for name, _ in fmt.promote:
            c[name].append(obj.get(name))
        rest = {k: v for k, v in obj.items() if k not in consumed}
        c["meta"].append(orjson.dumps(rest).decode() if rest else None)
        if len(cols) >= batch_rows:
            yield cols.table()
    if len(cols):
        yield cols.table()
    truncation = result.get("truncation")
    if truncation is not None:
        records += 1
        bad.add(f"{task.id_prefix}/truncated@{truncation.line}", "truncated_file", f"line {truncation.line + 1}",
                truncation.cause)
    stats["records"] = stats.get("records", 0) + records
