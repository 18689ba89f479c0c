"""The mix step's measurements kept per docs shard, so an append measures only the shards that are new or changed.

A shard's measurement (characters, a tokenized sample, with rehydration its weights) follows from what the
shard's `live_batches` read and the tokenizer: its docs file, the ids earlier steps removed from it, the edits
of the steps that edit text, the batch size (the sample is the first batch's first documents, `mix.SAMPLE_CHARS` of
text), the rehydration table and the dedup clusters it weighs by. Mix plans across sources (`GLOBAL`), so any change
anywhere re-plans it; the plan is cheap, measuring is not (it reads every shard's text and tokenizes a sample of each). The
measurements live in `_work/<mix>/measured.json` as {source/shard: {key, stats}}, only those of the current shards.
"""

from __future__ import annotations

import hashlib
import logging

from curate.config.pipeline import canonical_json
from curate.rundir.digests import file_digest, removed_digest, text_digests

log = logging.getLogger("curate")
VERSION = 2   # bump when `measure` computes something else from the same inputs (2: a sample of SAMPLE_CHARS characters)
STATS = ("source", "in", "docs", "chars", "sample_chars", "sample_tokens", "weighted_chars", "by_weight")


def path(stage) -> str:
    return stage.run.work(stage.name, "measured.json")


def shard_key(stage, source: str, shard: str, tokenizer: str) -> str:
    """What the shard's measurement read, by content (its live documents, their text, what weighs them)."""
    run = stage.run
    rehydrate = stage.options["rehydrate"]
    docs, *edits = text_digests(run, source, shard, stage.editors)
    body = {"version": VERSION, "tokenizer": tokenizer, "batch_rows": stage.pipeline.execution["batch_rows"],
            "docs": docs,
            "removed": {step: removed_digest(run.ledger(step, source, shard)) for step in stage.previous},
            "edits": dict(zip(stage.editors, edits)),
            "rehydrate": None if rehydrate is None else {
                "table": {str(k): v for k, v in rehydrate.items()},
                "clusters": file_digest(run.clusters(stage.dedup_step(), source, shard))}}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def stored(stage, tasks) -> list[dict] | None:
    """Every task's kept measurement, unhashed, when the step's last finished run still holds (a no-op re-run: its
    measurements are those of these very shards); None when one is missing (a run made before they were kept)."""
    kept = stage.run.read_json(path(stage)) or {}
    return [kept[t.key]["stats"] for t in tasks] if all(t.key in kept for t in tasks) else None


def reuse(stage, tasks, tokenizer: str, measure) -> list[dict]:
    """Every task's measurement in task order: the kept ones whose key still holds, `measure(todo)` for the rest."""
    keys = {t.key: shard_key(stage, t.source, t.shard, tokenizer) for t in tasks}
    kept = stage.run.read_json(path(stage)) or {}
    held = {k: kept[k]["stats"] for k, key in keys.items() if (kept.get(k) or {}).get("key") == key}
    todo = [t for t in tasks if t.key not in held]
    fresh = dict(zip((t.key for t in todo), measure(todo))) if todo else {}
    if held and todo:
        log.info("[%s: measure] %d of %d shards reused, %d new", stage.name, len(held), len(tasks), len(todo))
    stats = [held[t.key] if t.key in held else {k: fresh[t.key][k] for k in STATS if k in fresh[t.key]} for t in tasks]
    stage.run.write_json(path(stage), {t.key: {"key": keys[t.key], "stats": s} for t, s in zip(tasks, stats)})
    return stats
