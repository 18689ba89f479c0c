"""Classifier scores of each classify step: score histograms of kept against removed documents with the
thresholds of its `keep` predicates, label counts, and which model decided (cascades).

Scores are read from `RUN/scores/` (a sample of shards, at most `BUDGET` rows per model), joined with the
step's ledger of the same shards: "removed" = removed by this step. Counts are scaled to each source's
documents at the step.
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.palette import KEPT, NEUTRAL, REMOVED
from curate.report.section import Section
from curate.report.sections import num, pending, pending_note, threshold_marks
from curate.report.svg import Series

import duckdb
import numpy as np

from curate.report.binning import make_bins
from curate.report.context import RunView, files_sql
from curate.report.sampling import pick_shards, shard_files
from curate.report.thresholds import keep_rules

BUDGET = 200_000


def models_info(run: RunView, stage: str) -> dict:
    """What ran for each model (kind, path, stand-in, device, cost) from the manifest or the step's record."""
    info = {}
    for key, value in ((run.manifest or {}).get("models") or {}).items():
        if value.get("stage") == stage:
            info[key.split(".", 1)[-1]] = value
    if not info:
        from curate.rundir import ClassifyRecord

        record = run.dir.find_record(stage, ClassifyRecord)
        if record is not None:
            info = dict(record.models)
    return info


def classifier(run: RunView, stage: str, budget: int = BUDGET) -> dict:
    options = run.options(stage)
    thresholds, labels = keep_rules(run, stage)
    rows = run.rows(stage)
    out = {"stage": stage, "keep": options.get("keep") or {}, "models": [], "info": models_info(run, stage), "notes": []}
    for model, spec in (options.get("models") or {}).items():
        sources = [s for s in (spec or {}).get("sources") or run.sources if run.glob("scores", s, "*.parquet")]
        numeric = [f"{model}_score"] + sorted({t.expr for t in thresholds if t.expr.startswith(model + "_") and t.expr != f"{model}_score"})
        values = {c: [] for c in numeric}
        label_counts: dict[str, dict[str, float]] = {}
        decided: dict[str, float] = {}
        per_source = max(1, budget // max(len(sources), 1))
        for source in sources:
            sample = pick_shards(run, "scores", source, per_source)
            files = shard_files(run, ("scores",), sample)
            columns = run.columns_of(files[0])
            if f"{model}_score" not in columns:
                continue
            ledgers = shard_files(run, ("ledger", stage), sample)
            ledger = (f"LEFT JOIN (SELECT DISTINCT id FROM read_parquet({files_sql(ledgers)})) l USING (id)" if ledgers
                      else "LEFT JOIN (SELECT NULL::VARCHAR AS id WHERE false) l USING (id)")
            label = f'"{model}_label"' if f"{model}_label" in columns else "NULL"
            by = "decided_by" if "decided_by" in columns else "NULL"
            cols = ", ".join(f'"{c}"' for c in numeric if c in columns)
            try:
                got = run.sql(f"""
                    SELECT {cols}, {label}, {by}, l.id IS NOT NULL AS removed FROM (
                        SELECT * FROM read_parquet({files_sql(files)}, union_by_name=true)
                        WHERE "{model}_score" IS NOT NULL USING SAMPLE reservoir({per_source} ROWS) REPEATABLE (5)) s {ledger}""")
            except duckdb.Error as exc:
                out["notes"].append(f"{model} scores of {source} could not be read: {str(exc).splitlines()[0]}")
                continue
            if not got:
                continue
            population = (rows.get(source) or {}).get("in") or len(got)
            scored_total = run.sql(f'SELECT count(*) FROM read_parquet({files_sql(files)}, union_by_name=true) '
                                   f'WHERE "{model}_score" IS NOT NULL')[0][0]
            weight = (population / sample.rows) * (scored_total / len(got)) if sample.rows else 1.0
            present = [c for c in numeric if c in columns]
            removed = np.array([bool(r[-1]) for r in got])
            for k, c in enumerate(present):
                arr = np.array([np.nan if r[k] is None else float(r[k]) for r in got])
                values[c].append((source, arr, removed, weight))
            for r in got:
                lab = r[len(present)]
                if lab is not None:
                    slot = label_counts.setdefault(str(lab), {"kept": 0.0, "removed": 0.0})
                    slot["removed" if r[-1] else "kept"] += weight
                by = r[len(present) + 1]
                decided[str(by)] = decided.get(str(by), 0.0) + weight
        charts = []
        for column in numeric:
            parts = values[column]
            if not parts:
                continue
            covered = [p[0] for p in parts]
            marks = [t for t in thresholds if t.expr == column and (t.scope == "all" or t.scope in covered)]
            allv = np.concatenate([p[1] for p in parts])
            bins = make_bins(allv, [t.value for t in marks], unit=not column.endswith("_int_score"))
            if bins is None:
                continue
            groups, n = {}, {}
            for name, want in (("kept", False), ("removed", True)):
                v = np.concatenate([p[1][(p[2] == want) & np.isfinite(p[1])] for p in parts])
                w = np.concatenate([np.full(int(((p[2] == want) & np.isfinite(p[1])).sum()), p[3]) for p in parts])
                n[name] = int(len(v))
                groups[name] = [float(x) for x in bins.counts(v, w)] if len(v) else None
            charts.append({"column": column, "edges": bins.edges, "log": bins.log, "integer": bins.integer,
                           "clipped": bins.clipped, "groups": groups, "n": n, "sources": covered,
                           "thresholds": [{"op": t.op, "value": t.value, "rule": t.rule, "scope": t.scope} for t in marks]})
        keep_labels = [{"column": lr.column, "op": lr.op, "value": lr.value, "scope": lr.scope} for lr in labels
                       if lr.column == f"{model}_label"]
        out["models"].append({"model": model, "sources": sources, "charts": charts, "labels": label_counts,
                              "keep_labels": keep_labels, "decided_by": decided if len(decided) > 1 else {}})
    return out


def classifiers(run: RunView) -> list[dict]:
    return [classifier(run, s) for s in run.stages_of("classify") if s in run.stage_order]


# ---- classifiers ----------------------------------------------------------------------------------

def section(data: list[dict], pending: list[str] = ()) -> str:
    if not data and not pending:
        return ""
    body = [pending_note(list(pending))]
    for c in data:
        info_rows = []
        for model, i in c["info"].items():
            standin = f"yes: stands in for {escape(str(i.get('replaces')))}" if i.get("standin") else "no"
            info_rows.append([escape(model), escape(str(i.get("kind"))), f"<code>{escape(str(i.get('path')))}</code>", standin,
                              escape(str(i.get("device"))), num(i.get("documents")), num(i.get("seconds_per_1000"))])
        if info_rows:
            body.append(page.table(["model", "kind", "path", "stand-in", "device", "documents", "s per 1,000 docs"], info_rows,
                                   {5, 6}, raw=True))
        keep = "; ".join(f"{escape(s)}: <code>{escape(p)}</code>" for s, p in c["keep"].items()) or "none"
        figs = []
        for m in c["models"]:
            for ch in m["charts"]:
                series = [Series(f"kept (n={num(ch['n']['kept'])})", KEPT, ch["groups"]["kept"] or [0] * (len(ch["edges"]) - 1))]
                if ch["groups"]["removed"]:
                    series.append(Series(f"removed (n={num(ch['n']['removed'])})", REMOVED, ch["groups"]["removed"]))
                chart = svg.histogram(ch["edges"], series, x_label=ch["column"], y_label="documents", stacked=True, integer=ch["integer"],
                                      marks=threshold_marks(ch["thresholds"], ch["integer"]), label=ch["column"])
                cap = (f"{escape(m['model'])} on {escape(', '.join(ch['sources']))}, stacked: kept and removed by "
                       f"<code>{escape(c['stage'])}</code> (keep: {keep}). Documents scaled from the sampled rows.")
                if not ch["thresholds"]:
                    cap += " No keep predicate compares this column with a number, so no threshold line is drawn."
                figs.append(page.figure(f"{m['model']}: {ch['column']}", chart, cap))
            if m["labels"]:
                labels = sorted(m["labels"])
                kept_labels = {lr["value"] for lr in m["keep_labels"] if lr["op"] == "="}
                cats = [f"{lb} (keep)" if lb in kept_labels else lb for lb in labels]
                series = [Series("kept", KEPT, [m["labels"][lb]["kept"] for lb in labels]),
                          Series("removed", REMOVED, [m["labels"][lb]["removed"] for lb in labels])]
                figs.append(page.figure(f"{m['model']}: labels", svg.bars(cats, series, value_label="documents", stacked=True,
                                                                         label=f"{m['model']} labels"),
                                        f"Top label of {escape(m['model'])} per document, split by the keep decision (keep: {keep})."))
            if m["decided_by"]:
                cats = sorted(m["decided_by"])
                chart = svg.bars(cats, [Series("documents", NEUTRAL, [m["decided_by"][k] for k in cats])], value_label="documents",
                                 label="decided by")
                figs.append(page.figure(f"{m['model']}: decided by", chart, "Which model of the cascade decided each document."))
        body.append(f"<h3>Step <code>{escape(c['stage'])}</code></h3>" + "".join(page.note(n) for n in c["notes"])
                    + '<div class="grid">' + "".join(figs) + "</div>")
    return page.section("classify", "Classifiers", "Model scores of kept and removed documents, with the keep thresholds.", "".join(body))


SECTION = Section("classify", "Classifiers", classifiers, lambda run, data, colors: section(data, pending(run, "classify")))
