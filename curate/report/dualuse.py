"""The dual-use step: its funnel (scanned, escalated to the classifier, flagged, cleared), how many
blocklist terms documents hit, the classifier's scores with the flag threshold, and the terms behind
escalations.

The funnel is exact (the step's task markers). Distributions read a sample of `RUN/dual_use/` (whole
shards spread over the run, at most `BUDGET` rows), scaled to each source's documents at the step.
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.palette import KEPT, NEUTRAL, REMOVED
from curate.report.section import Section
from curate.report.sections import num, pending, pending_note, swatch
from curate.report.svg import Mark, Series

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


# ---- dual use -------------------------------------------------------------------------------------

def section(data: list[dict], colors: dict, pending: list[str] = ()) -> str:
    if not data and not pending:
        return ""
    body = [pending_note(list(pending))]
    for d in data:
        f = d["funnel"]
        steps = ["scanned", "escalated", "flagged", "removed"]
        series = [Series(s, colors[s], [f["counts"][s][k] for k in steps]) for s in f["sources"]]
        chart = svg.bars(steps, series, value_label="documents", stacked=True, label="dual-use funnel")
        figs = [page.figure("Dual-use funnel", chart,
                            f"Every live document is scanned against the blocklist (<code>{escape(str(d['terms_file']))}</code>); "
                            f"those with at least {d['escalate_at']} distinct terms are escalated to the classifier; those it scores "
                            f"above {d['threshold']} are flagged, quarantined and removed. Exact, from the task markers.")]
        if d["hits"]:
            labels = [str(i) for i in range(len(d["hits"]) - 1)] + [f"≥{len(d['hits']) - 1}"]
            colors_hits = [Series("documents", NEUTRAL, d["hits"])]
            marks = [Mark(d["escalate_at"] - 0.5, f"escalate at {d['escalate_at']}")] if d["escalate_at"] is not None else []
            edges = [i - 0.5 for i in range(len(d["hits"]) + 1)]
            chart = svg.histogram(edges, colors_hits, x_label="distinct blocklist terms in the document", y_label="documents",
                                  integer=True, marks=marks, label="blocklist hits", x_ticks=list(enumerate(labels)))
            figs.append(page.figure("Blocklist terms per document", chart,
                                    f"Documents by how many distinct terms they contain (last bar: {len(d['hits']) - 1} or more); "
                                    f"scaled from {num(d['sampled'])} sampled rows of <code>dual_use/</code>."))
        if d["scores"]:
            s = d["scores"]
            series = [Series(name, REMOVED if name == "flagged" else KEPT, v) for name, v in s["groups"].items() if v]
            marks = [Mark(s["threshold"], f"flag above {s['threshold']:g}")] if s["threshold"] is not None else []
            figs.append(page.figure("Classifier score of escalated documents", svg.histogram(
                s["edges"], series, x_label="classifier_score", y_label="documents", stacked=True, marks=marks, label="dual-use scores"),
                f"{num(s['n'])} escalated documents scored; flagged when the score is above the threshold"
                + (" (or the model failed on them: fail_closed)" if d["fail_closed"] else "") + "."))
        if d["top_terms"]:
            terms = [t for t, _ in d["top_terms"]]
            chart = svg.bars(terms, [Series("escalated documents", "#8c6bb1", [n for _, n in d["top_terms"]])],
                             value_label="escalated documents containing the term", label="top blocklist terms")
            figs.append(page.figure("Terms behind escalations", chart, "The blocklist terms found most often in escalated documents."))
        rows = [[f"{swatch(colors[s])}{escape(s)}"] + [num(f["counts"][s][k]) for k in ("scanned", "escalated", "flagged", "backfilled",
                                                                                         "errors", "removed")] for s in f["sources"]]
        table = page.table(["source", "scanned", "escalated", "flagged", "cleared (backfilled)", "model errors", "removed"], rows,
                           {1, 2, 3, 4, 5, 6}, raw=True)
        costs = d["costs"] or {}
        cost = ""
        if costs:
            cost = (f"Blocklist scan {costs.get('scan_seconds', 0):.1f} task-seconds; classifier {costs.get('classifier_seconds', 0):.1f} "
                    f"task-seconds on {num(costs.get('classifier_documents'))} documents ({escape(str(costs.get('device')))}).")
        body.append(f"<h3>Step <code>{escape(d['stage'])}</code></h3>" + '<div class="grid">' + "".join(figs) + "</div>" + table
                    + (f'<p class="muted">{cost}</p>' if cost else ""))
    return page.section("dual-use", "Dual-use screening", "What the blocklist escalated and the classifier flagged.", "".join(body))


SECTION = Section("dual-use", "Dual-use", dual_uses, lambda run, data, colors: section(data, colors, pending(run, "dual_use")))
