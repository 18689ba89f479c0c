"""The substring_dedup steps: per source, the share of text cut (exact, from the step's task markers), as a chart and
a table, and the most copied repeated spans (their kept copies, from RUN/<step>/repeats/)."""

from __future__ import annotations

from html import escape


from curate.io import fs
from curate.report import page, svg
from curate.report.context import RunView, files_sql
from curate.report.section import Section
from curate.report.svg import Series
from curate.stages.substring_dedup_facets import text_counts

TOP = 15


def _top(run: RunView, step: str, top: int = TOP) -> list[dict]:
    """The `top` most copied spans over every source's repeats files: a top-k in DuckDB per source (memory bounded
    by the connection's limit, whatever the run's size), then merged."""
    rows = []
    for source in run.sources:
        if files := sorted(fs.glob(run.dir.path(step, "repeats", source, "*.parquet"))):
            cursor = run.con.execute(f"SELECT * FROM read_parquet({files_sql(files)}) "
                                     f"ORDER BY copies DESC, words DESC, id, start LIMIT {int(top)}")
            names = [c[0] for c in cursor.description]
            rows += [{**dict(zip(names, r)), "source": source} for r in cursor.fetchall()]
    rows.sort(key=lambda r: (-r["copies"], -r["words"], r["source"], r["id"], r["start"]))
    return rows[:top]


def gather(run: RunView) -> list[dict]:
    return [{"stage": step, "counts": {s: c for s in run.sources if (c := text_counts(run.dir.markers(step)).get(s))},
             "top": _top(run, step)} for step in run.stages_of("substring_dedup") if step in run.stage_order]


def render(run: RunView, data: list[dict], colors: dict) -> str:
    body = []
    for d in data:
        counts = d["counts"]
        share = {s: (c["chars_cut"] + c["chars_removed"]) / c["chars"] if c["chars"] else 0.0 for s, c in counts.items()}
        chart = svg.bars(list(counts), [Series("cut", "#c0504d", [100 * share[s] for s in counts])], value_label="% of characters cut",
                         label="share of text cut per source")
        rows = [[page.source_cell(s, colors), f"{c['in']:,}", f"{c['edited']:,}", f"{c['removed']:,}", f"{c['chars']:,}",
                 f"{c['chars_cut']:,}", f"{c['chars_removed']:,}", f"{100 * share[s]:.1f}%"] for s, c in counts.items()]
        top = [[escape(t["source"]), escape(t["id"]), f"{t['copies']:,}", f"{t['words']:,}", f"<code>{escape(t['text'][:160])}</code>"]
               for t in d["top"]]
        body.append(f"<h3>Step <code>{escape(d['stage'])}</code></h3>"
                    + page.figure("Share of text cut", chart, "Characters cut from documents kept, plus those of documents left "
                                  "too short (removed), over all characters the step read.")
                    + page.table(["source", "documents", "edited", "removed", "characters", "cut", "in removed", "%"], rows,
                                 set(range(1, 8)), raw=True)
                    + ("<h3>Most repeated spans</h3>" + page.table(["kept in", "id", "copies", "words", "text (start)"], top, {2, 3}, raw=True)
                       if top else ""))
    if not body:
        return ""
    return page.section("substring-dedup", "Substring dedup", "Runs of words repeated anywhere in the corpus: the first copy "
                        "(by source priority) is kept, later copies are cut; every cut is in <code>edits/&lt;step&gt;/</code> "
                        "and the <code>edits</code> view, with where its kept copy is.", "".join(body))


SECTION = Section("substring-dedup", "Substring dedup", gather, render)
