"""Deciding from stored values: blocklist hits, classifier scores and errors -> flagged, removed, counted.

Nothing here runs a model except `score_escalated`, which fails closed: a batch that raises is retried
document by document, and a document that still raises gets `error = true` and no score.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.io import fs
from curate.io.parquet import read_table

SCORES = pa.schema([("id", pa.string()), ("classifier_score", pa.float64()), ("error", pa.bool_())])
DECISIONS = pa.schema([("id", pa.string()), ("blocklist_hits", pa.int32()), ("blocklist_terms", pa.list_(pa.string())),
                       ("escalated", pa.bool_()), ("classifier_score", pa.float64()), ("flagged", pa.bool_()),
                       ("decided_by", pa.string())])


def score_escalated(model, docs: pa.Table) -> pa.Table:
    """(id, classifier_score, error) for `docs` (id, text); the model's `<name>_score` is the score."""
    texts = docs.column("text").combine_chunks()
    column = f"{model.spec.name}_score"
    try:
        score = model.score(texts).column(column).combine_chunks().cast(pa.float64())
        error = pa.array(np.zeros(len(texts), bool))
    except Exception:  # noqa: BLE001 - find the documents that fail; each is flagged, not lost
        values, errors = [], []
        for i in range(len(texts)):
            try:
                values.append(model.score(texts.slice(i, 1)).column(column)[0].as_py())
                errors.append(False)
            except Exception:  # noqa: BLE001
                values.append(None)
                errors.append(True)
        score, error = pa.array(values, pa.float64()), pa.array(errors, pa.bool_())
    return pa.Table.from_arrays([docs.column("id").combine_chunks(), score, error], schema=SCORES)


def read_scores(cache: str, shard) -> pa.Table:
    """Every score this model has cached for a docs shard (written in parts, one per run that added some)."""
    parts = []
    for path in fs.glob(fs.join(cache, shard.source, shard.shard, "*.parquet")):
        with fs.open_input(path) as handle:
            parts.append(read_table(handle))
    return pa.concat_tables(parts) if parts else SCORES.empty_table()


def _at(ids: pa.Array, table: pa.Table | None, column: str, default):
    """`table[column]` aligned to `ids` (by id); `default` (or null) where an id is absent."""
    if table is None or not table.num_rows:
        return pa.nulls(len(ids), table.schema.field(column).type if table is not None else pa.float64()) \
            if default is None else pa.array([default] * len(ids))
    where = pc.index_in(ids, value_set=table.column("id").combine_chunks())
    values = table.column(column).combine_chunks().take(pc.fill_null(where, 0))
    missing = pc.is_null(where)
    if default is None:
        return pc.if_else(missing, pa.scalar(None, values.type), values)
    return pc.if_else(missing, pa.scalar(default, values.type), values)


def decide(live: pa.Table, scan: pa.Table, scores: pa.Table | None, escalate_at: int, threshold: float,
           fail_closed: bool, backfill: bool) -> tuple[pa.Table, pa.Table, dict]:
    """Decisions for the documents of `live` (their ids, in order): the dual_use rows, the removals, the funnel."""
    ids = live.column("id").combine_chunks()
    hits = _at(ids, scan, "blocklist_hits", 0)
    terms = _at(ids, scan, "blocklist_terms", None)
    escalated = pc.greater_equal(hits, escalate_at).to_numpy(zero_copy_only=False).astype(bool)  # bool even when empty
    if scores is None:  # no classifier: the blocklist decides
        score, error = pa.nulls(len(ids), pa.float64()), np.zeros(len(ids), bool)
        flagged = escalated
        by = np.where(escalated, "blocklist", "blocklist")
    else:
        score = _at(ids, scores, "classifier_score", None)
        error = _at(ids, scores, "error", False).to_numpy(zero_copy_only=False).astype(bool) & escalated
        above = pc.fill_null(pc.greater(score, threshold), False).to_numpy(zero_copy_only=False).astype(bool)
        flagged = escalated & ((error & fail_closed) | above)
        by = np.where(~escalated, "blocklist", np.where(error, "error", "classifier"))
        score = pc.if_else(pa.array(escalated), score, pa.scalar(None, pa.float64()))
    decided = pa.Table.from_arrays([ids, hits.cast(pa.int32()), terms, pa.array(escalated), score, pa.array(flagged),
                                    pa.array(by, pa.string())], schema=DECISIONS)
    cleared = escalated & ~flagged
    gone = flagged | (cleared & (not backfill))
    reason = np.where(flagged, np.char.add("dual_use:", by.astype(str)), "dual_use:escalated")[gone]
    rows = decided.filter(pa.array(gone))
    n = rows.num_rows
    detail = pc.binary_join_element_wise(
        pa.array(["terms: "] * n, pa.string()),
        pc.binary_join(pc.fill_null(rows.column("blocklist_terms"), pa.scalar([], pa.list_(pa.string()))), ", "),
        pa.array(["; score "] * n, pa.string()),
        pc.fill_null(pc.cast(pc.round(rows.column("classifier_score"), 4), pa.string()), "none"), "")
    removed = pa.table({"id": rows.column("id"), "reason": pa.array(reason, pa.string()), "detail": detail})
    counts = {"scanned": len(ids), "escalated": int(escalated.sum()), "flagged": int(flagged.sum()),
              "errors": int(error.sum()), "backfilled": int(cleared.sum()) if backfill and scores is not None else 0}
    return decided, removed, counts
