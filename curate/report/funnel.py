"""The per-source funnel: documents after every stage (exact, from the accounting) and tokens where known.

Tokens are exact only once tokenized (the pack step's count of tokens written, copies and EOS included)
and planned at the mix step (its plan). Before that they are estimated: characters of the live
documents x the tokens-per-character the mix step measured on a tokenized sample of each shard. The
characters of a stage's survivors come from a sample of docs shards (every shard on a small run) joined
with the ledger of the same shards, scaled to the stage's exact document count.
"""

from __future__ import annotations

from curate.report.context import RunView, files_sql
from curate.report.sampling import pick_shards, shard_files

DOC_BUDGET = 50_000  # documents per source whose text length is read


def documents(run: RunView) -> dict:
    """Per source: documents entering the run and kept after each stage (exact)."""
    stages = run.stage_order
    out = {}
    for source in run.sources:
        counts = []
        ingested = None
        for stage in stages:
            row = run.rows(stage).get(source)
            if row is None:
                counts.append(None)
                continue
            if ingested is None:
                ingested = row["in"]
            counts.append(row["kept"])
        if ingested is not None:
            out[source] = {"in": ingested, "kept": counts}
    return {"stages": stages, "sources": out}


def tokens_per_char(run: RunView) -> dict[str, float]:
    """Tokens per character of each source, as the mix step measured them (EOS included)."""
    out = {}
    for stage in run.stages_of("mix"):
        chars, toks = {}, {}
        for path in run.glob("_state", stage, "measure", "*", "*.json"):
            m = run.dir.read_json(path) or {}
            if m.get("sample_chars"):
                chars[m["source"]] = chars.get(m["source"], 0) + m["sample_chars"]
                toks[m["source"]] = toks.get(m["source"], 0) + m["sample_tokens"]
        out.update({s: toks[s] / chars[s] for s in chars if chars[s]})
    return out


def _removal_stage_chars(run: RunView, source: str) -> tuple[list[tuple[int, str | None]], int, bool] | None:
    """(characters, stage that removed it or None) of a sample of the source's ingested documents."""
    sample = pick_shards(run, "docs", source, DOC_BUDGET)
    if sample is None:
        return None
    docs = shard_files(run, ("docs",), sample)
    ledgers = [p for stage in run.stage_order for p in shard_files(run, ("ledger", stage), sample)]
    ledger_sql = (f"SELECT id, any_value(stage) AS stage FROM read_parquet({files_sql(ledgers)}) GROUP BY id"
                  if ledgers else "SELECT NULL::VARCHAR AS id, NULL::VARCHAR AS stage WHERE false")
    rows = run.sql(f"""
        WITH d AS (SELECT id, length(text) AS chars FROM read_parquet({files_sql(docs)}, union_by_name=true)),
             l AS ({ledger_sql})
        SELECT chars, l.stage FROM (SELECT * FROM d USING SAMPLE reservoir({DOC_BUDGET} ROWS) REPEATABLE (7)) d
        LEFT JOIN l USING (id)""")
    return [(int(c or 0), s) for c, s in rows], sample.rows, sample.complete


def tokens(run: RunView) -> dict:
    """Per source and stage: tokens after the stage, and whether the figure is an estimate; notes say how."""
    stages = run.stage_order
    tpc = tokens_per_char(run)
    mix = run.stages_of("mix")
    mix_stage = mix[0] if mix else None
    plan = _plan(run)
    written = _written(run)
    tokenized = [s for s in run.stages_of("tokenize", "pack") if s in stages]
    first_exact = stages.index(tokenized[0]) if tokenized else len(stages)
    out, notes, sampled = {}, [], {}
    for source in run.sources:
        values, estimate = [None] * len(stages), [False] * len(stages)
        chars = _removal_stage_chars(run, source) if source in tpc else None
        if chars is not None:
            docs, population, complete = chars
            sampled[source] = (len(docs), complete)
            alive = list(docs)
            for i, stage in enumerate(stages):
                if mix_stage is not None and i >= stages.index(mix_stage):
                    break
                alive = [(c, s) for c, s in alive if s != stage]
                row = run.rows(stage).get(source)
                if row is None or not alive:
                    continue
                mean = sum(c for c, _ in alive) / len(alive)
                values[i], estimate[i] = row["kept"] * mean * tpc[source], True
        if mix_stage is not None and source in plan:
            i = stages.index(mix_stage)
            values[i], estimate[i] = plan[source]["chosen_tokens"], True
        if source in written:
            for i in range(first_exact, len(stages)):
                values[i], estimate[i] = written[source], False
        if any(v is not None for v in values):
            out[source] = {"tokens": values, "estimate": estimate, "tokens_per_char": tpc.get(source)}
    if tpc:
        parts = ", ".join(f"{s} {n:,} documents" + ("" if complete else " (a sample of shards)") for s, (n, complete) in sampled.items())
        notes.append("Tokens before the mix step are estimates: characters of the surviving documents x the tokens per "
                     f"character the mix step measured on a tokenized sample of every shard ({parts} read for their "
                     "length). At the mix step: the plan's chosen tokens. From tokenize on: tokens written (exact).")
    else:
        notes.append("The run has no mix measurement (no mix step, or it has not run): tokens before tokenization are not "
                     "estimated; only documents are shown for those stages.")
    return {"stages": stages, "sources": out, "notes": notes}


def _plan(run: RunView) -> dict:
    if run.manifest and run.manifest.get("mixture"):
        return run.manifest["mixture"].get("sources") or {}
    from curate.rundir import MixRecord

    for stage in run.stages_of("mix"):
        record = run.dir.find_record(stage, MixRecord)
        if record is not None:
            return record.plan.get("sources") or {}
    return {}


def _written(run: RunView) -> dict[str, int]:
    if run.manifest and run.manifest.get("outputs"):
        return {s: o["tokens"] for s, o in run.manifest["outputs"].items()}
    from curate.rundir import PackRecord

    for stage in run.stages_of("pack"):
        record = run.dir.find_record(stage, PackRecord)
        if record is not None:
            return {s: o["tokens"] for s, o in record.outputs.items()}
    return {}
