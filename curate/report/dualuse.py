"""The dual-use step: its funnel (scanned, escalated to the classifier, flagged, cleared), how many
blocklist terms documents hit, the classifier's scores with the flag threshold, and the terms behind
escalations.

The funnel is exact (the step's task markers). Distributions read a sample of `RUN/dual_use/` (whole
shards spread over the run, at most `BUDGET` rows), scaled to each source's documents at the step.
"""

from __future__ import annotations

import numpy as np

from curate.report.binning import make_bins
from curate.report.context import RunView, files_sql
from curate.report.sampling import pick_shards, shard_files

BUDGET = 200_000
FUNNEL = ("scanned", "escalated", "flagged", "backfilled", "errors")
MAX_HITS = 10
TOP_TERMS = 15


def funnel(run: RunView, stage: str) -> dict:
    by_source: dict[str, dict[str, int]] = {}
    for m in run.dir.markers(stage):
        row = by_source.setdefault(m["source"], dict.fromkeys((*FUNNEL, "removed"), 0))
        for k in FUNNEL:
            row[k] += int(m.get(k) or 0)
        row["removed"] += sum(m.get("removed", {}).values())
    order = [s for s in run.sources if s in by_source]
    return {"sources": order, "counts": {s: by_source[s] for s in order}}


def dual_use(run: RunView, stage: str, budget: int = BUDGET) -> dict:
    options = run.options(stage)
    escalate_at, threshold = options.get("escalate_at"), options.get("threshold")
    from curate.rundir import DualUseRecord

    record = run.dir.find_record(stage, DualUseRecord)
    sources = [s for s in run.sources if run.glob("dual_use", s, "*.parquet")]
    hits = np.zeros(MAX_HITS + 1)
    scores, terms = [], {}
    sampled = 0
    per_source = max(1, budget // max(len(sources), 1))
    for source in sources:
        sample = pick_shards(run, "dual_use", source, per_source)
        files = shard_files(run, ("dual_use",), sample)
        got = run.sql(f"""SELECT blocklist_hits, escalated, classifier_score, flagged, blocklist_terms
                          FROM read_parquet({files_sql(files)}) USING SAMPLE reservoir({per_source} ROWS) REPEATABLE (3)""")
        if not got:
            continue
        sampled += len(got)
        population = (run.rows(stage).get(source) or {}).get("in") or sample.rows
        weight = population / len(got)
        for h, escalated, score, flagged, found in got:
            hits[min(int(h or 0), MAX_HITS)] += weight
            if score is not None:
                scores.append((float(score), bool(flagged), weight))
            if escalated:
                for t in found or []:
                    terms[t] = terms.get(t, 0.0) + weight
    score_chart = None
    if scores:
        arr = np.array([s[0] for s in scores])
        bins = make_bins(arr, [threshold] if threshold is not None else [], unit=True)
        groups = {}
        for name, want in (("not flagged", False), ("flagged", True)):
            v = np.array([s[0] for s in scores if s[1] == want])
            w = np.array([s[2] for s in scores if s[1] == want])
            groups[name] = [float(x) for x in bins.counts(v, w)] if len(v) else None
        score_chart = {"edges": bins.edges, "groups": groups, "n": len(scores), "threshold": threshold}
    top = sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TERMS]
    return {"stage": stage, "funnel": funnel(run, stage), "escalate_at": escalate_at, "threshold": threshold,
            "fail_closed": options.get("fail_closed"), "backfill": options.get("backfill"), "terms_file": options.get("terms"),
            "model": options.get("model"), "costs": record.costs if record else None,
            "hits": [float(x) for x in hits] if sampled else None, "scores": score_chart, "top_terms": top, "sampled": sampled}


def dual_uses(run: RunView) -> list[dict]:
    return [dual_use(run, s) for s in run.stages_of("dual_use") if s in run.stage_order]
