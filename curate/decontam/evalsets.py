"""Evaluation sets: JSONL or Parquet files, local or remote (fsspec), each item's text fields named by the user.

    sets:
      mmlu: {path: s3://evals/mmlu.parquet, fields: {question: question, choices: choices, answer: answer}}
      squad: {path: evals/squad.jsonl, fields: {passage: context, question: question, answer: answers.text, id: id}}

A field is a column name or a dotted path into nested records; each defaults to its own name (`passage`, `question`,
`answer`, `choices`, `id`), a record without it simply has no such part, and `null` switches a field off. Each item becomes a list of text segments,
matched one by one (an n-gram never spans two fields): the passage, the question, the answer, every choice.
An integer answer with choices is the index of the right choice; a list (several gold answers) gives one
segment each. An item's id is its `id` field, else its row number in the file (0-based).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass

from curate.config.schema import Field
from curate.errors import CurateError
from curate.io import fs
from curate.readers.jsonl import field_getter
from curate.io.parquet import read_table

TEXT_FIELDS = ("passage", "question", "answer", "choices")
FIELDS = {"passage": Field((str,), default="passage", nullable=True, doc="a long context the question is about"),
          "question": Field((str,), default="question", nullable=True, doc="the question or prompt"),
          "answer": Field((str,), default="answer", nullable=True, doc="the gold answer: text, a list, or an index into choices"),
          "choices": Field((str,), default="choices", nullable=True, doc="multiple-choice options (a list)"),
          "id": Field((str,), default="id", nullable=True, doc="the item's id (a record without one: its row number)")}
SET_OPTIONS = {"path": Field((str,), doc="a JSONL (.jsonl, .jsonl.gz) or Parquet file, local or fsspec URI"),
               "format": Field((str,), default=None, nullable=True, choices=["jsonl", "parquet"], doc="default: from the suffix"),
               "fields": Field((dict,), default=dict, keys=FIELDS)}


@dataclass(frozen=True)
class EvalItem:
    set: str
    id: str
    segments: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.segments)


def load_set(name: str, spec: dict) -> list[EvalItem]:
    """Every item of one set; a missing file or a set with no text in the named fields is one line."""
    path = spec["path"]
    records = _records(name, path, spec.get("format") or ("parquet" if path.endswith(".parquet") else "jsonl"))
    fields = {**{k: f.default for k, f in FIELDS.items()}, **(spec.get("fields") or {})}
    get = {k: field_getter(v) for k, v in fields.items() if v}
    items = []
    for row, record in enumerate(records):
        segments = _segments({k: g(record) for k, g in get.items() if k != "id"})
        item_id = get["id"](record) if "id" in get else None
        items.append(EvalItem(name, str(row) if item_id is None else str(item_id), tuple(segments)))
    if not any(i.segments for i in items):
        named = ", ".join(f"{k}: {v}" for k, v in fields.items() if v and k != "id")
        raise CurateError(f"eval set '{name}' ({path}): no item has text in its fields ({named}); name them under "
                          f"sets.{name}.fields")
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


def _records(name: str, path: str, kind: str) -> list[dict]:
    if "://" not in path and not os.path.exists(path):
        raise CurateError(f"eval set '{name}': {path}: not found")
    try:
        with fs.open_input(path) as handle:
            if kind == "parquet":
                return read_table(handle).to_pylist()
            data = handle.read()
    except FileNotFoundError:
        raise CurateError(f"eval set '{name}': {path}: not found") from None
    except (OSError, ValueError) as exc:
        raise CurateError(f"eval set '{name}': cannot read {path}: {exc}") from None
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    out = []
    for line_no, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise CurateError(f"eval set '{name}': {path} line {line_no}: not JSON ({exc})") from None
        if isinstance(record, dict):
            out.append(record)
    return out
