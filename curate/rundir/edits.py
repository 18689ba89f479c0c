"""Edits: what a text-editing step changed, and how later steps see the edited text.

An editing step (pii, line_filter: any `curate.stages.edit.EditStage`) never rewrites `RUN/docs/`; it records
every span it replaces in `RUN/edits/<step>/<source>/<shard>.parquet` (source, id, kind, start, end, placeholder,
original_sha256, and `original` only when asked). Offsets are code points into the text as that step saw it
(after the edits of the editing steps before it). Every later step reads documents through
`ShardStage.live_batches`, which applies the edits of the editing steps before it, in order, to the documents
that have any: the text a later step sees is `apply_steps(original, rows, steps)`, with nothing stored twice and
nothing removed. Part of the run directory, not of any one stage: every editing stage writes and reads them alike.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.errors import CurateError
from curate.io import fs
from curate.io.parquet import read_table

EDITS = pa.schema([("id", pa.string()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                   ("placeholder", pa.string()), ("original_sha256", pa.string())])
WITH_ORIGINAL = EDITS.append(pa.field("original", pa.string()))

Spans = dict[str, list[tuple[int, int, str]]]   # id -> [(start, end, placeholder)], sorted by start
CHANGED = "it changed after its step wrote it (`curate manifest verify RUN` names every changed file)"


def apply_spans(text: str, spans) -> str:
    """`text` with each `(start, end, placeholder)` in place of `text[start:end]` (code points, not overlapping)."""
    out, at = [], 0
    for start, end, placeholder in sorted(spans):
        if start < at or end < start or end > len(text):
            raise ValueError(f"span {start}:{end} overlaps another or lies outside a text of {len(text)} characters")
        out += [text[at:start], placeholder]
        at = end
    out.append(text[at:])
    return "".join(out)


def apply_steps(text: str, rows, steps: list[str]) -> str:
    """`text` with the edits of several steps: `rows` are `(step, start, end, placeholder)` (the `edits` view's
    columns of one document), `steps` the editing steps in pipeline order. Each step's offsets are into the text
    the step before it left, so the steps are applied one after the other, never mixed."""
    by_step: dict[str, list] = {}
    for step, start, end, placeholder in rows:
        if step not in steps:
            raise ValueError(f"step {step!r} is not among the steps given ({', '.join(steps)}); give every editing step, in order")
        by_step.setdefault(step, []).append((start, end, placeholder))
    for step in steps:
        text = apply_spans(text, by_step.get(step, []))
    return text


def spans_by_id(edits: pa.Table) -> Spans:
    """The rows of an edits table, grouped by document id (edits are few next to the documents)."""
    out: Spans = defaultdict(list)
    for i, start, end, placeholder in zip(*(edits.column(c).to_pylist() for c in ("id", "start", "end", "placeholder"))):
        out[i].append((start, end, placeholder))
    return dict(out)


class FileSpans(dict):
    """Spans read from one edits file (`Spans`), which an error names: a span that does not fit its document
    means the file changed after its step wrote it."""

    path = ""


def read_spans(run, step: str, source: str, shard: str) -> Spans:
    """The spans `step` recorded for one docs shard (none when it recorded none)."""
    path = run.edits(step, source, shard)
    if not fs.exists(path):
        return {}
    try:
        with fs.open_input(path) as handle:
            spans = FileSpans(spans_by_id(read_table(handle, columns=["id", "start", "end", "placeholder"])))
    except (pa.ArrowException, OSError, KeyError) as exc:
        raise CurateError(f"{path}: not the spans file step {step!r} wrote ({str(exc).splitlines()[0]}); {CHANGED}") from None
    spans.path = path
    return spans


def apply_edits(table: pa.Table, spans: Spans) -> pa.Table:
    """`table` with the edited text in the rows that have spans; the other rows (most) are left as they are."""
    if not spans or "text" not in table.column_names or "id" not in table.column_names or not table.num_rows:
        return table
    ids = table.column("id").combine_chunks()
    mask = pc.is_in(ids, value_set=pa.array(list(spans), pa.string()))
    rows = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    if not len(rows):
        return table
    at = table.column_names.index("text")
    texts = table.column(at).combine_chunks()
    picked = pa.array(rows, pa.int64())
    edited = []
    for i, text in zip(ids.take(picked).to_pylist(), texts.take(picked).to_pylist()):
        try:
            edited.append(apply_spans(text, spans[i]))
        except (ValueError, TypeError) as exc:
            raise CurateError(f"{getattr(spans, 'path', '') or 'edits'}: document {i}: {exc}; {CHANGED}") from None
    return table.set_column(at, table.field(at), pc.replace_with_mask(texts, mask, pa.array(edited, texts.type)))
