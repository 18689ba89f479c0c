"""Each report section from its gathered data: charts, captions saying what they show, tables, notes.

Every function takes the small dicts the gatherers return and returns HTML; nothing here reads the run.
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.svg import Mark, Series, compact

OPS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "=": "=", "!=": "≠"}


def num(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:,.3g}"
    return f"{int(v):,}"


def pct(part, whole) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def swatch(color: str) -> str:
    return f'<span class="swatch" style="background:{color}"></span>'


def mark_position(op: str, value: float, integer: bool) -> float:
    """Where a threshold line goes: on integer bins, between the bars it separates."""
    if not integer or op in ("=", "!="):
        return value
    return value - 0.5 if op in (">=", "<") else value + 0.5


def threshold_marks(thresholds: list[dict], integer: bool) -> list[Mark]:
    out = []
    for t in thresholds:
        rule = t["rule"]
        short = rule.split(":")[0] if rule.startswith(("where:", "keep:")) else rule
        scope = "" if t["scope"] == "all" else f", {t['scope']}"
        out.append(Mark(mark_position(t["op"], t["value"], integer), f"{OPS[t['op']]} {t['value']:g} ({short}{scope})"))
    return out


# ---- overview -------------------------------------------------------------------------------------

def overview(run, docs: dict, timing: dict, removals: dict, colors: dict) -> str:
    sources = docs["sources"]
    entered = sum(v["in"] for v in sources.values())
    kept = sum(v["kept"][-1] or 0 for v in sources.values())
    last_stage = docs["stages"][-1] if docs["stages"] else None
    kept_label = "documents kept (unique)" if last_stage == "kept" else f"documents live after {last_stage}"
    manifest = run.manifest or {}
    items = [("documents entering the run", num(entered)), (kept_label, f"{num(kept)}  ({pct(kept, entered)})")]
    if manifest.get("outputs"):
        items.append(("tokens written", compact(sum(o["tokens"] for o in manifest["outputs"].values()))))
    if manifest.get("packing"):
        items.append(("packing density", f"{100 * manifest['packing']['density']:.1f}%"))
    if timing["wall_known"]:
        items.append(("wall time (this invocation)", f"{sum(r['wall_seconds'] for r in timing['rows']):,.1f} s"))
    bad = sum(r["total"] for r in removals["rows"] if r["reason"].startswith("bad_record:"))
    items.append(("bad records", num(bad)))
    rows = []
    for s, v in sources.items():
        last = v["kept"][-1] or 0
        out = (manifest.get("outputs") or {}).get(s, {})
        rows.append([f"{swatch(colors[s])}{escape(s)}", num(v["in"]), num(last), pct(last, v["in"]),
                     compact(out["tokens"]) if out else "-"])
    flow = " → ".join(f"<code>{escape(name)}</code>" + (f' <span class="muted">({escape(kind)})</span>' if kind != name else "")
                      for name, kind in run.steps)
    body = (page.cards(items) + f'<p class="muted">Steps: {flow}</p>'
            + page.table(["source", "documents in", "kept" if last_stage == "kept" else f"live after {last_stage}", "%",
                          "tokens written"], rows, {1, 2, 3, 4}, raw=True))
    notes = "".join(page.note(n) for n in run.notes)
    if not run.manifest:
        notes += page.note("The run has no manifest.json (it stopped before the manifest step, or the pipeline has none): "
                           "mixture, packing and tokens written are shown only where the mix and pack records exist.")
    return page.section("overview", "Overview", "What went in, what came out, per source.", notes + body)


# ---- funnel ---------------------------------------------------------------------------------------

def funnel(docs: dict, tokens: dict, colors: dict) -> str:
    stages = docs["stages"]
    if not stages:
        return page.section("funnel", "Funnel", "", page.note("No stage has finished a task yet."))
    series = []
    for s, v in docs["sources"].items():
        series.append(Series(s, colors[s], [None if k is None else 100 * k / v["in"] if v["in"] else 0 for k in v["kept"]]))
    chart = svg.lines(stages, series, y_label="documents remaining (% of entering)", fmt=lambda x: f"{x:.0f}%",
                      label="documents remaining after each stage")
    figs = [page.figure("Documents after each stage", chart,
                        "Share of each source's entering documents (bad records included) still live after each stage; exact, "
                        "from the run's accounting. Hover a point for the value.")]
    tok = tokens["sources"]
    if tok:
        tseries = [Series(s, colors[s], v["tokens"], v["estimate"]) for s, v in tok.items()]
        figs.append(page.figure("Tokens after each stage", svg.lines(stages, tseries, y_label="tokens", label="tokens after each stage"),
                                "Hollow points joined by dashes are estimates; filled points are exact tokens written "
                                "(copies of up-weighted documents and EOS included). " + escape(" ".join(tokens["notes"]))))
    header = ["stage"] + [h for s in docs["sources"] for h in (f"{s} docs", f"{s} tokens")]
    rows = []
    for i, stage in enumerate(stages):
        row = [escape(stage)]
        for s, v in docs["sources"].items():
            k = v["kept"][i]
            before = v["in"] if i == 0 else v["kept"][i - 1]
            gone = (before - k) if (k is not None and before is not None) else 0
            row.append(num(k) + (f' <span class="sub">−{num(gone)}</span>' if gone else ""))
            t = tok.get(s, {}).get("tokens", [None] * len(stages))[i]
            est = tok.get(s, {}).get("estimate", [False] * len(stages))[i]
            row.append(("≈" if est and t is not None else "") + (compact(t) if t is not None else "-"))
        rows.append(row)
    table = page.table(header, rows, set(range(1, len(header))), raw=True)
    notes = "" if tok else "".join(page.note(n) for n in tokens["notes"])
    return page.section("funnel", "Funnel", "Every source through every stage, in documents and in tokens. "
                        "Documents: kept after the stage, with the number it removed (−n). Tokens: ≈ marks an estimate.",
                        notes + '<div class="grid">' + "".join(figs) + "</div>" + table)


# ---- removals -------------------------------------------------------------------------------------

def removals(data: dict, bad: dict, sources: list[str], colors: dict) -> str:
    rows = data["rows"]
    if not rows:
        return page.section("removals", "Removals", "", page.note("Nothing was removed."))
    cats = [f"{r['stage']} · {r['reason']}" for r in rows]
    used = [s for s in sources if any(s in r["by_source"] for r in rows)]
    series = [Series(s, colors[s], [r["by_source"].get(s) for r in rows]) for s in used]
    chart = svg.bars(cats, series, value_label="documents removed", stacked=True, width=1200, label="removed documents by stage and reason")
    fig = page.figure("Documents removed, by stage and reason", chart,
                      f"Every ledger reason of every stage, in run order, split by source ({num(data['total'])} documents removed "
                      f"of {num(data['entered'])} entering, {pct(data['total'], data['entered'])}). A document is removed once, "
                      "by the first stage and rule that rejects it; mix:downsampled is the mixture's sampling, not a quality decision.")
    table_rows = [[escape(r["stage"]), f"<code>{escape(r['reason'])}</code>"] + [num(r["by_source"].get(s)) if r["by_source"].get(s) else ""
                                                                               for s in used] + [num(r["total"])] for r in rows]
    table = page.table(["stage", "reason"] + used + ["total"], table_rows, set(range(2, len(used) + 3)), raw=True)
    body = fig + table
    if bad["counts"]:
        brows = []
        for kind, per in sorted(bad["counts"].items()):
            examples = "<br>".join(f"<code>{escape(s)}: {escape(d)}</code>" for s, d in bad["examples"].get(kind, []))
            brows.append([f"<code>{escape(kind)}</code>", ", ".join(f"{escape(s)} {num(n)}" for s, n in per.items()), examples])
        body += "<h3>Bad records</h3>" + page.table(["kind", "per source", "examples (ledger detail)"], brows, raw=True)
    return page.section("removals", "Removals", "Why documents left the run: every ledger reason, bad records included.", body)


# ---- helpers of the stages' sections ------------------------------------------------------

def pending(run, *kinds: str) -> list[str]:
    """The steps of these kinds that have not run yet (the run stopped before them, or is still running)."""
    return [s for s in run.stages_of(*kinds) if s not in run.stage_order]


def pending_note(steps: list[str]) -> str:
    if not steps:
        return ""
    return page.note(f"Not run yet: {', '.join(steps)} (the run stopped before, or is still running).")



# ---- performance ----------------------------------------------------------------------------------

def performance(data: dict) -> str:
    rows = data["rows"]
    if not rows:
        return ""
    figs = ""
    if data["wall_known"]:
        series = [Series("stage work", "#4e79a7", [r["wall_seconds"] - r["compile_seconds"] for r in rows]),
                  Series("compiling kernels (once)", "#e0b400", [r["compile_seconds"] or None for r in rows])]
        series = series if any(r["compile_seconds"] for r in rows) else series[:1]
        chart = svg.bars([r["stage"] for r in rows], series, value_label="wall seconds", stacked=True, fmt=lambda v: f"{v:.3g}",
                         label="wall time per stage")
        figs = '<div class="grid">' + page.figure("Wall time per stage", chart, "Seconds this invocation spent in each stage (from "
                                                  "summary.json): a stage finished by an earlier invocation of a resumed run shows "
                                                  "about 0. Yellow: compiling the stage's numba kernels before its tasks (the first "
                                                  "run on a machine; then loaded from the cache), charged to no source.") + "</div>"
    table_rows = []
    for r in rows:
        phases = ", ".join(f"{p['phase']} {p['tasks']}" + (f" ({p['task_seconds']:.2f}s)" if p["task_seconds"] is not None else "")
                           for p in r["phases"])
        table_rows.append([escape(r["stage"]), escape(r["kind"]), f"{r['wall_seconds']:.2f}" if data["wall_known"] else "-",
                           f"{r['compile_seconds']:.2f}" if r["compile_seconds"] else "-",
                           num(r["documents"]), num(round(r["docs_per_second"])) if r["docs_per_second"] else "-",
                           num(sum(p["tasks"] for p in r["phases"]) or r["tasks"]), f"{r['compute_seconds'] or r['task_seconds']:.2f}",
                           f'<span class="sub">{escape(phases)}</span>',
                           f'<span style="white-space:nowrap">{escape(r["retries"])}</span>'])
    table = page.table(["stage", "kind", "wall s", "of which compiling", "documents in", "documents/s", "tasks", "task-seconds",
                        "phases: tasks (seconds)", "retries"], table_rows, {2, 3, 4, 5, 6, 7}, raw=True)
    lead = ("Where the time went. Documents/s = documents entering the stage / its wall seconds less compiling. Task-seconds sum "
            "every task of every "
            "phase (from the task markers). Retries are not recorded by the run: Ray retries a task whose worker died "
            f"(up to execution.retries = {escape(str(data['retries_setting']))}) and only the attempt that finished writes a marker.")
    return page.section("performance", "Performance", lead, figs + table)
