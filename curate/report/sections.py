"""Each report section from its gathered data: charts, captions saying what they show, tables, notes.

Every function takes the small dicts the gatherers return and returns HTML; nothing here reads the run.
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.dedup import alarms_html
from curate.report.palette import ESTIMATE, KEPT, NEUTRAL, REMOVED, shades
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


# ---- signals --------------------------------------------------------------------------------------

def signals(data: dict) -> str:
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


# ---- dedup ----------------------------------------------------------------------------------------

def pending_note(steps: list[str]) -> str:
    if not steps:
        return ""
    return page.note(f"Not run yet: {', '.join(steps)} (the run stopped before, or is still running).")


def dedup(data: list[dict], pending: list[str] = ()) -> str:
    if not data and not pending:
        return page.section("dedup", "Deduplication", "", page.note("The pipeline has no deduplication step (dedup or exact_dedup)."))
    body = [pending_note(list(pending))]
    for d in data:
        figs = []
        c = d["clusters"]
        if c is not None:
            series = [Series("within one source", shades(2, "#4e79a7")[0], c["within"]),
                      Series("across sources", "#f28e2b", c["across"])]
            chart = svg.bars(c["bins"], series, value_label="clusters", stacked=True, horizontal=False, label="cluster sizes")
            cap = (f"{num(c['clusters'])} duplicate clusters holding {num(c['documents'])} documents (largest: {num(c['largest'])}), "
                   f"from <code>{escape(d['stage'])}/clusters/</code>; one document per cluster survives the policy, or more "
                   "under cross_source when the best source holds several.")
            if c["sampled_every"] > 1:
                cap += f" Estimated from one cluster in {c['sampled_every']} (sampled by a hash of the cluster id)."
            figs.append(page.figure(f"Cluster sizes ({d['stage']})", chart, cap))
        m = d["matrix"]
        if m is not None and m["removed"]:
            notes = [[f"{pct(v, m['inputs'][x])} of {x}'s input" if v else "" for v in row] for x, row in zip(m["sources"], m["values"])]
            chart = svg.heatmap(m["sources"], m["sources"], m["values"], row_title="removed from", col_title="in favour of (kept copy)",
                                notes=notes, label="cross-source duplicates")
            figs.append(page.figure(f"Who lost documents to whom ({d['stage']})", chart,
                                    f"Documents of the row's source removed as <code>{escape(m['reason'] or '')}:&lt;column&gt;</code>: "
                                    f"a copy in the column's source was kept ({num(m['removed'])} in all; policy "
                                    f"<code>{escape(str(d['policy']))}</code>, priority decides). From the ledger reasons."))
        elif m is not None:
            figs.append(page.note(f"{d['stage']}: no document was removed as a duplicate."))
        if c is None:
            figs.append(page.note(f"{d['stage']}: no clusters table ({d['stage']}/clusters/) in the run."))
        body.append(alarms_html(d) + '<div class="grid">' + "".join(figs) + "</div>")
    return page.section("dedup", "Deduplication", "How large the duplicate clusters are and which source gave way to which.", "".join(body))


# ---- classifiers ----------------------------------------------------------------------------------

def classifiers(data: list[dict], pending: list[str] = ()) -> str:
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


# ---- dual use -------------------------------------------------------------------------------------

def dual_use(data: list[dict], colors: dict, pending: list[str] = ()) -> str:
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


# ---- mixture and packing --------------------------------------------------------------------------

def mixture(plan: dict | None, packing: dict | None, colors: dict) -> str:
    if plan is None and packing is None:
        return page.section("mixture", "Mixture and packing", "", page.note("The run has no mixture plan or packed output yet."))
    figs, tables = [], []
    if plan is not None:
        src = [s for s in colors if s in plan["sources"]]
        p = plan["sources"]
        series = [Series("available (estimated)", ESTIMATE, [p[s].get("available_tokens") for s in src]),
                  Series("planned", "#4e79a7", [p[s].get("chosen_tokens") for s in src])]
        if any("tokens" in p[s] for s in src):
            series.append(Series("written", "#102a43", [p[s].get("tokens") for s in src]))
        figs.append(page.figure("Mixture: plan against tokens written", svg.bars(src, series, value_label="tokens", horizontal=False,
                                                                                 label="mixture plan vs written"),
                                f"Per source: tokens available after the filters (estimated by the mix step from characters), "
                                f"the plan's tokens (mode <code>{escape(str(plan['mode']))}</code>) and the tokens written to "
                                "<code>tokens/</code> (EOS and repeated documents included)."))
        ep = Series("epochs", "#4e79a7", [p[s].get("epochs") for s in src])
        figs.append(page.figure("Epochs per source", svg.bars(src, [ep], value_label="epochs (planned)", horizontal=False,
                                                              marks=[Mark(1.0, "1 epoch")], fmt=lambda v: f"{v:.3g}", label="epochs"),
                                "How many times each source's available tokens are used: below 1 down-samples "
                                "(mix:downsampled in the ledger), above 1 repeats documents whole."))
        total_written = sum(p[s].get("tokens") or 0 for s in src)
        rows = [[f"{swatch(colors[s])}{escape(s)}", num(p[s].get("weight")), compact(p[s].get("available_tokens")),
                 compact(p[s].get("chosen_tokens")), compact(p[s].get("tokens")) if "tokens" in p[s] else "-",
                 pct(p[s].get("tokens") or 0, total_written) if total_written else "-", f"{p[s].get('epochs', 0):.3f}",
                 num(p[s].get("documents"))] for s in src]
        tables.append(page.table(["source", "weight", "available ≈", "planned", "written", "share written", "epochs", "documents"],
                                 rows, {1, 2, 3, 4, 5, 6, 7}, raw=True))
    if packing is not None:
        fill = packing["fill"]
        if fill:
            edges = [i / 20 for i in range(21)]
            src = [s for s in colors if s in fill]
            series = []
            for s in src:
                lengths = fill[s]["lengths"]
                counts = [0] * 20
                for v in (lengths / packing["seq_len"]).tolist():
                    counts[min(19, max(0, int(v * 20 - 1e-9)))] += 1
                series.append(Series(s, colors[s], counts))
            sampled = sum(len(fill[s]["lengths"]) for s in src)
            total = sum(fill[s]["total"] for s in src)
            how = (" With method none every document is its own sequence: this is document length over seq_len, longer "
                   "documents counted in the last bin." if packing["method"] == "none" else "")
            cap = (f"Packed sequences by how much of seq_len = {packing['seq_len']} they fill (method "
                   f"<code>{escape(packing['method'])}</code>), stacked by source; read from the Megatron <code>.idx</code> files"
                   + (f" ({num(sampled)} of {num(total)} sequences, in windows spread over each file)." if sampled < total else ".")
                   + how)
            figs.append(page.figure("Sequence fill", svg.histogram(edges, series, x_label="tokens / seq_len", y_label="sequences",
                                                                   stacked=True, label="sequence fill"), cap))
        items = [("packing density", f"{100 * packing.get('density', 0):.2f}%"), ("sequences", num(packing.get("sequences"))),
                 ("seq_len", num(packing["seq_len"])), ("method", str(packing["method"]))]
        if packing.get("split_share") is not None:
            items.append(("documents split", f"{100 * packing['split_share']:.2f}%"))
        tables.insert(0, page.cards(items))
    return page.section("mixture", "Mixture and packing", "The planned mixture against what was written, and how well it packs. "
                        "Density = tokens / (sequences x seq_len).", '<div class="grid">' + "".join(figs) + "</div>" + "".join(tables))


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
