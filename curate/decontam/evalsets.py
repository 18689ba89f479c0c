"""Evaluation sets: JSONL or Parquet files, local or remote (fsspec), each item's text fields named by the user.

    sets:
      mmlu: {path: s3://evals/mmlu.parquet, fields: {question: question, choices: choices, answer: answer}}
      squad: {path: evals/squad.jsonl, fields: {passage: context, question: question, answer: answers.text, id: id}}

A field is a column name or a dotted path into nested records; each defaults to its own name (`passage`, `question`,
`answer`, `choices`, `id`), a record without it simply has no such part, and `null` switches a field off. Each item becomes a list of text segments,
matched one by one (an n-gram never spans two fields): the passage, the question, the answer, every choice.
An integer answer with choices is the index of the right choice; a list (several gold answers) gives one
segment each. An item's id is its `id` field, else its row number in the file (0-based); ids are unique in a set
(a flag names its item by id: two items of one id are refused).

A JSONL file may be gzip or zstd compressed (sniffed from its bytes, whatever its name), start with a byte-order
mark and hold any character inside its strings (lines end at a line feed only, not at U+2028). It is streamed, and a set
that inflates to more than `max_mb` (256) is refused (a decompression bomb), as is a Parquet file whose row groups
or decoded batches are larger, and a set of more than `max_items` (1,000,000) items: what a set costs in memory is
bounded by these two (about 0.4 KB per item besides its text). A line that is JSON but not an object (a list, a
number) is skipped with a warning. Every problem with a set (not found, unreachable, truncated, not JSON, no text)
is one line naming the pipeline file and the set's option, exit code 2.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.parquet as pq

from curate.common.schema import Field
from curate.errors import ConfigError
from curate.io import fs
from curate.io.auth import bucket_of, is_auth_failure
from curate.io.bounded import TooLarge, Unreadable, inflate
from curate.models.spec import describe, one_line
from curate.readers.jsonl import field_getter

log = logging.getLogger("curate")
TEXT_FIELDS = ("passage", "question", "answer", "choices")
FIELDS = {"passage": Field((str,), default="passage", nullable=True, doc="a long context the question is about"),
          "question": Field((str,), default="question", nullable=True, doc="the question or prompt"),
          "answer": Field((str,), default="answer", nullable=True, doc="the gold answer: text, a list, or an index into choices"),
          "choices": Field((str,), default="choices", nullable=True, doc="multiple-choice options (a list)"),
          "id": Field((str,), default="id", nullable=True, doc="the item's id (a record without one: its row number)")}
SET_OPTIONS = {"path": Field((str,), doc="a JSONL (.jsonl, .jsonl.gz) or Parquet file, local or fsspec URI"),
               "format": Field((str,), default=None, nullable=True, choices=["jsonl", "parquet"], doc="default: from the suffix"),
               "fields": Field((dict,), default=dict, keys=FIELDS),
               "max_mb": Field((int,), default=256, min=1, max=1 << 20, doc="refuse a set that inflates to more than this (a "
                                                                            "decompression bomb)"),
               "max_items": Field((int,), default=1_000_000, min=1, max=1 << 40, doc="refuse a set of more items than this (each "
                                                                                     "costs memory, however short)")}


@dataclass(frozen=True)
class EvalItem:
    set: str
    id: str
    segments: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.segments)


def load_set(name: str, spec: dict, file: str = "", key: str | None = None) -> list[EvalItem]:
    """Every item of one set; any problem is a `ConfigError` naming `file` (the pipeline) and `key` (the set's
    option, `sets.<name>` by default)."""
    key = key or f"sets.{name}"
    path = spec["path"]
    kind = spec.get("format") or ("parquet" if path.endswith(".parquet") else "jsonl")
    records = _records(path, kind, (spec.get("max_mb") or SET_OPTIONS["max_mb"].default) << 20, file, key)
    fields = {**{k: f.default for k, f in FIELDS.items()}, **(spec.get("fields") or {})}
    get = {k: field_getter(v) for k, v in fields.items() if v}
    items, seen = [], {}
    most = spec.get("max_items") or SET_OPTIONS["max_items"].default
    for row, (where, record) in enumerate(records):
        if row == most:
            raise ConfigError(file, f"{key}.max_items", f"{path} has more than {most:,} items; raise {key}.max_items if the set "
                                                        "is really this large")
        segments = _segments({k: g(record) for k, g in get.items() if k != "id"})
        item_id = get["id"](record) if "id" in get else None
        item_id = str(row) if item_id is None else str(item_id)
        if item_id in seen:
            raise ConfigError(file, f"{key}.fields.id", f"{path}: two items have the id {item_id!r} ({seen[item_id]} and {where}): "
                                                        "a flag names its item by id; name a field with unique ids, or `id: null` "
                                                        "for row numbers")
        seen[item_id] = where
        items.append(EvalItem(name, item_id, tuple(segments)))
    if not any(i.segments for i in items):
        named = ", ".join(f"{k}: {v}" for k, v in fields.items() if v and k != "id")
        raise ConfigError(file, f"{key}.fields", f"no item of {path} has text in its fields ({named}); name them here")
    return items


def _segments(values: dict) -> list[str]:
    out = []
    for key in TEXT_FIELDS:
        value = values.get(key)
        if key == "answer" and isinstance(value, int) and not isinstance(value, bool) and values.get("choices") is not None:
            choices = _strings(values["choices"])
            value = choices[value] if 0 <= value < len(choices) else None
        out.extend(_strings(value))
    return [s for s in out if s.strip()]


def _strings(value) -> list[str]:
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, dict):   # e.g. ARC's choices: {"text": [...], "label": [...]}
        return _strings(value.get("text", list(value.values())))
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _records(path: str, kind: str, limit: int, file: str, key: str) -> Iterator[tuple[str, dict]]:
    """(where, record) of every record, streamed: JSONL objects by line number, Parquet rows by row number."""
    if "://" not in path and not os.path.exists(path):
        raise ConfigError(file, f"{key}.path", f"{path}: not found")
    try:
        with fs.open_input(path) as handle:
            yield from _parquet(handle, limit) if kind == "parquet" else _jsonl(handle, path, limit, file, key)
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError(file, f"{key}.path", f"{path}: not found") from None
    except TooLarge:
        raise ConfigError(file, f"{key}.max_mb", f"{path} inflates to more than {limit >> 20:,} MB; raise {key}.max_mb if the "
                                                 "set is really this large") from None
    except Unreadable as exc:
        raise ConfigError(file, f"{key}.path", f"{path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - fsspec, botocore, huggingface_hub and pyarrow alike: the one line a user reads
        cause = one_line(describe(exc))
        if is_auth_failure(exc):
            store = f"bucket {bucket_of(exc)!r}" if bucket_of(exc) else "the object store"
            raise ConfigError(file, f"{key}.path", f"{path}: this machine cannot authenticate to {store} ({cause})") from None
        raise ConfigError(file, f"{key}.path", f"{path}: cannot be read: {cause}") from None


def _parquet(handle, limit: int) -> Iterator[tuple[str, dict]]:
    """Refused by its row groups' sizes before any is read, and by what it decodes to (dictionary pages can inflate
    past what they say) a batch at a time."""
    parquet = pq.ParquetFile(handle)
    meta = parquet.metadata
    if sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) > limit:
        raise TooLarge()
    size, row = 0, 0
    for batch in parquet.iter_batches(batch_size=1024):
        size += batch.nbytes
        if size > limit:
            raise TooLarge()
        for record in batch.to_pylist():
            yield f"row {row}", record
            row += 1


def _jsonl(handle, path: str, limit: int, file: str, key: str) -> Iterator[tuple[str, dict]]:
    skipped, first = 0, None
    for line_no, line in _lines(inflate(handle, limit)):
        try:
            record = json.loads(line.decode("utf-8", errors="replace"))
        except ValueError as exc:
            raise ConfigError(file, f"{key}.path", f"{path} line {line_no}: not JSON ({exc})") from None
        if isinstance(record, dict):
            yield f"line {line_no}", record
        else:
            skipped += 1
            first = first or (line_no, type(record).__name__)
    if skipped:
        log.warning("eval set %s (%s): %d line%s not a JSON object, skipped (line %d: a %s)", key, path, skipped,
                    "s are" if skipped > 1 else " is", *first)


def _lines(pieces):
    """(line number from 1, bytes) of every non-blank line: lines end at b"\n" only (a JSON string may hold U+2028,
    which `str.splitlines` would cut at); a byte-order mark at the start is dropped."""
    pending, line_no, first = [], 0, True
    for piece in pieces:
        if first:
            piece, first = piece.removeprefix(b"\xef\xbb\xbf"), False
        parts = piece.split(b"\n")
        for part in parts[:-1]:
            line_no += 1
            line = b"".join([*pending, part]) if pending else part
            pending = []
            if line.strip():
                yield line_no, line
        if parts[-1]:
            pending.append(parts[-1])
    line = b"".join(pending)
    if line.strip():
        yield line_no + 1, line
