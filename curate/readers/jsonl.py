"""JSON Lines reader (plain, gzip or zstd, sniffed): DCLM, Dolma and generic JSONL.

Parsing a JSON line is per-record work by nature; everything else (batching, typing, writing) is Arrow.
The reader implements `read_file`: each line it cannot make a record of is recorded at its line with a
reason: invalid_utf8, invalid_json, not_an_object, missing_text, bad_text_type, too_deep; and once per
file: truncated_file (the compressed stream is cut short or corrupt; every complete line before is read),
trailing_garbage (bytes after the end of the compressed stream). The base `Reader.read` finds the rest
(empty_text, duplicate_id) and keeps the ledger in line order.

orjson parses every line; the few lines it rejects get a second chance with Python's `json`, which
accepts what Python's `json.dumps` writes by default (`NaN`, `Infinity`, `-Infinity`; they become null).
Ids are kept exactly as strings: an integer id 12 is "12", and an id orjson would round (an integer
beyond 64 bits, a float) keeps the digits written in the file.
"""

from __future__ import annotations

import json
import math
from typing import Iterator

import orjson
import pyarrow as pa

from curate.io.lines import iter_byte_range, iter_lines
from curate.readers.base import BadRecords, Format, ReadOptions, Reader, ReadTask, register
from curate.readers.documents import POSITION
from curate.readers.split import split_jsonl


def field_getter(name: str):
    """`obj -> value` for a field name or a dotted path (`metadata.WARC-Record-ID`); None when missing.

    A key that is itself the whole name wins over the dotted path (a record may have a key "a.b")."""
    if "." not in name:
        return lambda obj: obj.get(name)
    parts = name.split(".")

    def get(obj):
        value = obj.get(name)
        if value is not None:
            return value
        node = obj
        for part in parts:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node
    return get


_BOM = "\ufeff"
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


class _Unrepresentable(ValueError):
    """A string (a lone surrogate escape such as "\\ud800") that has no UTF-8 form."""


def _tame(value):
    """A value from Python's `json` made like orjson's: non-finite floats -> None, integers beyond 64 bits
    -> float; a string with no UTF-8 form raises `_Unrepresentable`."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _Unrepresentable(f"{value[exc.start:exc.end]!r} is not valid Unicode") from None
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if _INT64_MIN <= value <= _UINT64_MAX:
            return value
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, dict):
        return {_tame(k): _tame(v) for k, v in value.items()}
    return [_tame(v) for v in value]


def _parse_slow(line: bytes, exc: Exception):
    """The second chance for a line orjson rejected: `(object, None)`, or `(None, (kind, message))`."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return None, ("invalid_utf8", f"invalid UTF-8 at byte {uexc.start}")
    try:
        return _tame(json.loads(text.removeprefix(_BOM))), None
    except (ValueError, RecursionError):  # JSONDecodeError and _Unrepresentable are ValueErrors
        return None, ("invalid_json", str(exc))


def _literal(line: bytes, getter) -> str | None:
    """The id as written in the line (an integer beyond 64 bits, a float): parsed again keeping number text."""
    try:
        obj = json.loads(line.decode("utf-8").removeprefix(_BOM), parse_int=str, parse_float=str, parse_constant=str)
        value = getter(obj) if isinstance(obj, dict) else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def id_text(value, line: bytes, getter) -> str:
    """A JSON id as a string, exactly: strings as they are, numbers as written, anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _literal(line, getter) or repr(value)
    return orjson.dumps(value).decode()


def output_schema(fmt: Format) -> pa.Schema:
    fields = [("id", pa.string()), ("text", pa.string())]
    if fmt.url:
        fields.append(("url", pa.string()))
    fields += list(fmt.promote)
    fields.append(("meta", pa.string()))
    return pa.schema(fields)


def _record_schema(fmt: Format) -> pa.Schema:
    """The columns of `read_file`'s tables: the id (when the source has one) and text as plain `id` and `text`,
    then the document's other columns and each record's line number."""
    fields = output_schema(fmt)
    if not fmt.id:
        fields = fields.remove(0)
    return fields.append(pa.field(POSITION, pa.int64()))


class _Columns:
    """Column buffers for one table of records."""

    def __init__(self, fmt: Format):
        self.fmt = fmt
        self.schema = _record_schema(fmt)
        self.cols = {name: [] for name in self.schema.names}

    def __len__(self):
        return len(self.cols[POSITION])

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


def read_jsonl(task: ReadTask, fmt: Format, handle, batch_rows: int, bad: BadRecords) -> Iterator[pa.Table]:
    """Yield tables of the records of one JSONL file (`_record_schema`); the lines that give no record with a
    text (not JSON, not an object, no text or a text that is not a string, fields nested too deep) and a
    cut-short stream or bytes after it go to `bad` at their line. Blank texts and repeated ids are left to
    the base `Reader.read`, which makes documents of these records."""
    consumed = {fmt.text} | {name for name, _ in fmt.promote}
    if fmt.id and "." not in fmt.id:
        consumed.add(fmt.id)
    if fmt.url and "." not in fmt.url:
        consumed.add(fmt.url)
    get_id = field_getter(fmt.id) if fmt.id else None
    get_text = field_getter(fmt.text)
    get_url = field_getter(fmt.url) if fmt.url else None
    cols = _Columns(fmt)
    result: dict = {}
    if task.byte_range is not None:
        lines = iter_byte_range(handle, *task.byte_range)
    else:
        lines = iter_lines(handle, result, *(task.line_range or (0, None)))
    for lineno, line in lines:
        fallback = f"{task.id_prefix}/{lineno}"
        where = f"line {lineno + 1}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            obj, problem = _parse_slow(line, exc)
            if problem is not None:
                bad.add(fallback, problem[0], where, problem[1], lineno)
                continue
        if not isinstance(obj, dict):
            bad.add(fallback, "not_an_object", where, f"expected a JSON object, got {type(obj).__name__}", lineno)
            continue
        doc_id = get_id(obj) if get_id else None
        if doc_id is None or doc_id == "":
            doc_id = fallback
        elif type(doc_id) is not str:
            doc_id = id_text(doc_id, line, get_id)
        text = get_text(obj)
        if text is None:
            bad.add(doc_id, "missing_text", where, f"no '{fmt.text}' field", lineno)
            continue
        if not isinstance(text, str):
            bad.add(doc_id, "bad_text_type", where, f"'{fmt.text}' is {type(text).__name__}, expected a string", lineno)
            continue
        rest = {k: v for k, v in obj.items() if k not in consumed}
        try:
            meta = orjson.dumps(rest).decode() if rest else None
        except orjson.JSONEncodeError as exc:  # nested past orjson's 255 levels: the record, not the run, is bad
            if text.strip():   # a blank text is the first fault: the base reports it (str.isspace is Arrow's whitespace)
                bad.add(doc_id, "too_deep", where, f"a field other than the text is nested too deeply to store ({exc})",
                        lineno)
                continue
            meta = None
        c = cols.cols
        if get_id:
            c["id"].append(doc_id)
        c["text"].append(text)
        if get_url:
            url = get_url(obj)
            c["url"].append(url if isinstance(url, str) else None)
        for name, _ in fmt.promote:
            c[name].append(obj.get(name))
        c["meta"].append(meta)
        c[POSITION].append(lineno)
        if len(cols) >= batch_rows:
            yield cols.table()
    if len(cols):
        yield cols.table()
    truncation = result.get("truncation")
    if truncation is not None:
        bad.add(f"{task.id_prefix}/truncated@{truncation.line}", "truncated_file", f"line {truncation.line + 1}",
                truncation.cause)
    trailing = result.get("trailing")
    if trailing is not None:
        bad.add(f"{task.id_prefix}/trailing@{trailing.offset}", "trailing_garbage", f"byte {trailing.offset}",
                trailing.describe())


@register
class JsonlReader(Reader):
    """JSON Lines: a large file is split by byte or line ranges (`readers/split.py`); text is < 16x its file."""

    kind = "jsonl"
    formats = (
        Format("dclm", "jsonl", text="text", id="metadata.WARC-Record-ID", url="url",
               promote=(("fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob", pa.float64()),),
               doc="DCLM-baseline global-shard_*/local-shard_*/*.jsonl.zst (also .gz, plain); metadata.WARC-Record-ID becomes id"),
        Format("dolma", "jsonl", text="text", id="id", url="metadata.url", doc="Dolma documents/*.json.gz"),
        Format("jsonl", "jsonl", text="text", id=None, url=None,
               doc="any JSON Lines (plain, .gz, .zst); map fields with fields: {text: ..., id: ..., url: ...}"),
    )

    def plan(self, whole: ReadTask, fmt: Format, storage_options: dict, target: int) -> list[ReadTask]:
        return [whole] if whole.size * 16 <= target else split_jsonl(whole, storage_options, target)

    def schema(self, fmt: Format) -> pa.Schema:
        return output_schema(fmt)

    def record_format(self, fmt: Format) -> Format:
        return Format(fmt.name, fmt.kind, "text", "id" if fmt.id else None, fmt.url, fmt.promote, fmt.doc)

    def where(self, position: int) -> str:
        return f"line {position + 1}"

    def read_file(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords) -> Iterator[pa.Table]:
        return read_jsonl(task, fmt, handle, options.batch_rows, bad)
