"""The line_filter steps: per source, documents whose text lost lines and the lines dropped by each rule (exact,
from the step's task markers), as a chart and a table."""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.context import RunView
from curate.report.section import Section
from curate.report.svg import Series
from curate.stages.edit import edit_counts
from curate.stages.line_filter import RULES


def gather(run: RunView) -> list[dict]:
    return [{"stage": step, "counts": {s: c for s in run.sources if (c := edit_counts(run.dir.markers(step)).get(s))}}
            for step in run.stages_of("line_filter") if step in run.stage_order]


def render(run: RunView, data: list[dict], colors: dict) -> str:
    body = []
    for d in data:
        counts = d["counts"]
        series = [Series(s, colors[s], [c["spans"].get(r, 0) for r in RULES]) for s, c in counts.items()]
        chart = svg.bars(list(RULES), series, value_label="lines dropped", stacked=True, label="lines dropped by rule")
        rows = [[page.source_cell(s, colors), f"{c['in']:,}", f"{c['documents']:,}",
                 f"{100 * c['documents'] / c['in']:.1f}%" if c["in"] else "-", *(f"{c['spans'].get(r, 0):,}" for r in RULES)]
                for s, c in counts.items()]
        body.append(f"<h3>Step <code>{escape(d['stage'])}</code></h3>"
                    + page.figure("Lines dropped by rule", chart, "A line counts under the first rule it breaks, in this order.")
                    + page.table(["source", "documents", "with lines dropped", "%", *RULES], rows, set(range(1, 4 + len(RULES))), raw=True))
    if not body:
        return ""
    return page.section("line-filter", "Line filter", "C4's line rules: lines dropped from documents (no document is removed; "
                        "every dropped line is in <code>edits/&lt;step&gt;/</code> and the <code>edits</code> view).", "".join(body))


SECTION = Section("line-filter", "Line filter", gather, render)
