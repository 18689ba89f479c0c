"""Quality signals of kept documents against removed ones, with the thresholds the recipe states.

A sample of the signals table (at most `BUDGET` rows in all, split over the sources, whole shards
spread over the run, then a seeded reservoir) is joined by id with the document columns and model
scores of the same shards and with the ledger of the quality steps after the signals step (filter,
classify, dual_use). "Removed" means removed by one of those steps; the mix step's random
down-sampling is not a quality decision and counts as kept. Each source's rows are weighted by its
documents / its sampled rows, so the pooled shapes are those of the whole run.
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.palette import KEPT, REMOVED
from curate.report.section import Section
from curate.report.sections import num, threshold_marks
from curate.report.svg import Series

import re
from dataclasses import dataclass

import duckdb
import numpy as np

from curate.report.binning import make_bins
from curate.report.context import RunView, files_sql
from curate.report.sampling import pick_shards, shard_files
from curate.report.thresholds import IDENT, KEYWORDS, Threshold, filter_thresholds

BUDGET = 200_000
QUALITY_KINDS = ("filter", "classify", "dual_use")


@dataclass(frozen=True)
class Spec:
    expr: str
    title: str
    log: bool | None = None


SIGNALS = [
    Spec("rps_doc_word_count", "Words per document", log=True),
    Spec("rps_doc_mean_word_length", "Mean word length (characters)"),
    Spec("list_avg(rps_lines_ending_with_terminal_punctution_mark)", "Share of lines ending in terminal punctuation"),
    Spec("rps_doc_frac_unique_words", "Share of distinct words"),
    Spec("rps_doc_stop_word_fraction", "Share of stop words"),
    Spec("lang_score", "Language-id confidence (fastText lid.176)"),
]
MAX_CHARTS = 24


def roots(expr: str) -> set[str]:
    """Column names an expression reads (the part before a struct field's dot)."""
    names = set(re.findall(IDENT, re.sub(r"'[^']*'", "", expr)))
    words = {n.split(".")[0] for n in names}
    called = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", expr))
    return {w for w in words if w.lower() not in KEYWORDS and w not in called}


def quality_stages(run: RunView) -> list[str]:
    signal_steps = [s for s in run.stages_of("signals") if s in run.stage_order]
    later = run.after(signal_steps[0]) if signal_steps else run.stage_order
    return [s for s in later if run.kind(s) in QUALITY_KINDS]


def distributions(run: RunView, budget: int = BUDGET) -> dict:
    sources = [s for s in run.sources if run.glob("signals", s, "*.parquet")]
    if not sources:
        return {"charts": [], "notes": ["The run has no signals table (no signals step, or it has not run): no signal distributions."]}
    thresholds, notes = filter_thresholds(run)
    specs = list(SIGNALS)
    for t in thresholds:
        if t.expr not in {s.expr for s in specs}:
            specs.append(Spec(t.expr, t.expr))
    if len(specs) > MAX_CHARTS:
        notes.append(f"{len(specs) - MAX_CHARTS} more thresholded columns are not drawn: "
                     + ", ".join(s.expr for s in specs[MAX_CHARTS:]) + ".")
        specs = specs[:MAX_CHARTS]
    stages = quality_stages(run)
    per_source = max(1, budget // len(sources))
    values: dict[str, list] = {s.expr: [] for s in specs}
    sampled = {}
    for i, source in enumerate(sources):
        table = _sample(run, source, specs, stages, per_source, f"sample_{i}")
        if table is None:
            continue
        name, rows, population = table
        sampled[source] = (rows, population)
        weight = population / rows if rows else 1.0
        for spec in specs:
            try:
                got = run.sql(f"SELECT CAST(({spec.expr}) AS DOUBLE) AS v, removed FROM {name} WHERE v IS NOT NULL AND isfinite(v)")
            except duckdb.Error:
                continue  # a column this source does not have
            if got:
                arr = np.array([g[0] for g in got], dtype=float)
                removed = np.array([bool(g[1]) for g in got])
                values[spec.expr].append((source, arr, removed, weight))
        run.con.execute(f"DROP TABLE IF EXISTS {name}")
    charts = []
    for spec in specs:
        parts = values[spec.expr]
        if not parts:
            continue
        covered = [p[0] for p in parts]
        marks = [t for t in thresholds if t.expr == spec.expr and (t.scope == "all" or t.scope in covered)]
        allv = np.concatenate([p[1] for p in parts])
        kept = np.concatenate([p[1][~p[2]] for p in parts])
        bins = make_bins(allv, [t.value for t in marks], log=spec.log, core=kept)
        if bins is None:
            continue
        groups, counts = {}, {}
        for label, want in (("kept", False), ("removed", True)):
            v = np.concatenate([p[1][p[2] == want] for p in parts])
            w = np.concatenate([np.full(int((p[2] == want).sum()), p[3]) for p in parts])
            counts[label] = int(len(v))
            groups[label] = bins.shares(v, w) if len(v) else None
        charts.append({"expr": spec.expr, "title": spec.title, "edges": bins.edges, "log": bins.log, "integer": bins.integer,
                       "clipped": bins.clipped, "groups": groups, "n": counts, "sources": covered,
                       "thresholds": [_mark(t) for t in marks]})
    return {"charts": charts, "notes": notes, "stages": stages, "sampled": sampled}


def _mark(t: Threshold) -> dict:
    return {"op": t.op, "value": t.value, "rule": t.rule, "scope": t.scope}


def _sample(run: RunView, source: str, specs: list[Spec], stages: list[str], budget: int, name: str):
    sample = pick_shards(run, "signals", source, budget)
    if sample is None:
        return None
    signal_files = shard_files(run, ("signals",), sample)
    have_signals = run.columns_of(signal_files[0])
    wanted = set().union(*(roots(s.expr) for s in specs))
    parts = {"s": (signal_files, sorted(wanted & set(have_signals)))}
    taken = set(have_signals)
    for table in ("docs", "scores"):
        files = shard_files(run, (table,), sample)
        if files:
            cols = run.columns_of(files[0])
            use = sorted((wanted & set(cols)) - taken - {"id"})
            if use:
                parts[table[0]] = (files, use)
                taken |= set(use)
    ledgers = [p for stage in stages for p in shard_files(run, ("ledger", stage), sample)]
    select = ", ".join(f'{alias}."{c}"' for alias, (_, cols) in parts.items() for c in cols) or "s.id"
    joins = "".join(f' LEFT JOIN (SELECT id, {", ".join(chr(34) + c + chr(34) for c in cols)} FROM read_parquet({files_sql(files)}, '
                    f"union_by_name=true)) {alias} USING (id)"
                    for alias, (files, cols) in parts.items() if alias != "s")
    ledger = (f" LEFT JOIN (SELECT DISTINCT id FROM read_parquet({files_sql(ledgers)})) l ON l.id = s.id" if ledgers
              else " LEFT JOIN (SELECT NULL::VARCHAR AS id WHERE false) l ON l.id = s.id")
    signal_cols = ", ".join(['id'] + [f'"{c}"' for c in parts["s"][1]])
    run.con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {name} AS
        SELECT {select}, l.id IS NOT NULL AS removed
        FROM (SELECT {signal_cols} FROM read_parquet({files_sql(signal_files)}, union_by_name=true)
              USING SAMPLE reservoir({budget} ROWS) REPEATABLE (11)) s{joins}{ledger}""")
    rows = run.sql(f"SELECT count(*) FROM {name}")[0][0]
    signal_steps = [s for s in run.stages_of("signals") if s in run.stage_order]
    population = run.rows(signal_steps[0]).get(source, {}).get("kept") if signal_steps else None
    return name, rows, population or sample.rows


# ---- signals --------------------------------------------------------------------------------------

def section(data: dict) -> str:
    notes = "".join(page.note(n) for n in data.get("notes", []))
    if not data["charts"]:
        return page.section("signals", "Quality signals", "", notes or page.note("No signal could be read."))
    figs = []
    for c in data["charts"]:
        series = [Series(f"kept (n={num(c['n']['kept'])})", KEPT, c["groups"]["kept"] or [0] * (len(c["edges"]) - 1))]
        if c["groups"]["removed"]:
            series.append(Series(f"removed (n={num(c['n']['removed'])})", REMOVED, c["groups"]["removed"]))
        chart = svg.histogram(c["edges"], series, x_label=c["title"], y_label="share of the group", log_x=c["log"],
                              integer=c["integer"], marks=threshold_marks(c["thresholds"], c["integer"]),
                              y_format=lambda v: f"{100 * v:.0f}%", label=c["title"])
        caption = (f"<code>{escape(c['expr'])}</code> over {escape(', '.join(c['sources']))}; each group sums to 100%.")
        if c["thresholds"]:
            rules = [f"<code>{escape(t['rule'])}</code>" + (f" ({escape(t['scope'])})" if t["scope"] != "all" else "")
                     for t in c["thresholds"]]
            caption += " Dashed: " + "; ".join(rules) + "."
        if c["clipped"]:
            caption += " The axis covers the bulk of the values; those beyond are counted in the edge bins."
        figs.append(page.figure(c["title"], chart, caption))
    sampled = data.get("sampled") or {}
    total = sum(r for r, _ in sampled.values())
    population = sum(p for _, p in sampled.values())
    lead = ("Documents a quality step removed (red: " + escape(", ".join(data.get("stages") or []) or "none")
            + ") against the others (green: kept by those steps; documents the mixture later down-sampled count as kept), "
            f"from {num(total)} sampled rows of {num(population)} documents with signals; sources are weighted by their size. "
            "Dashed lines are the recipe's thresholds where its SQL states one (<code>column OP number</code>, <code>BETWEEN</code>).")
    return page.section("signals", "Quality signals", lead, notes + '<div class="grid">' + "".join(figs) + "</div>")


SECTION = Section("signals", "Quality signals", distributions, lambda run, data, colors: section(data))
