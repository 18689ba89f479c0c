"""The pii steps: per source, documents edited and spans by kind (exact, from the task markers), and a few
of the recorded edits as `curate query` shows them (never the original text, only its hash)."""

from __future__ import annotations

from html import escape

from curate.io import fs
from curate.stages.edit import edit_counts
from curate.report import page
from curate.report.section import Section
from curate.report.context import RunView, files_sql
from curate.rundir import EditsRecord

PER_SOURCE = 3   # recorded edits shown per source


def pii_steps(run: RunView) -> list[dict]:
    out = []
    for stage in run.stages_of("pii"):
        record = run.dir.find_record(stage, EditsRecord)
        if stage not in run.stage_order or record is None:
            continue
        files = fs.glob(run.dir.path("edits", stage, "*", "*.parquet"))
        examples = run.sql(f"""SELECT source, id, kind, "start", "end", placeholder, original_sha256 FROM (
                                   SELECT *, row_number() OVER (PARTITION BY source ORDER BY id, "start") AS n
                                   FROM read_parquet({files_sql(files)})) WHERE n <= {PER_SOURCE} ORDER BY source, id, "start" """) if files else []
        counts = edit_counts(run.dir.markers(stage))
        out.append({"stage": stage, "kinds": record.kinds, "counts": {s: counts[s] for s in run.sources if s in counts},
                    "examples": examples})
    return out


def section(data: list[dict], colors: dict) -> str:
    if not data:
        return ""
    body = []
    for d in data:
        counts = d["counts"]
        kinds = sorted({k for c in counts.values() for k in c["spans"]} | set(d["kinds"]))
        docs, edited = sum(c["in"] for c in counts.values()), sum(c["documents"] for c in counts.values())
        spans = sum(n for c in counts.values() for n in c["spans"].values())
        cards = page.cards([("documents edited", f"{edited:,}"), ("of documents seen", f"{docs:,}"), ("spans replaced", f"{spans:,}")])
        rows = [[page.source_cell(s, colors), f"{c['in']:,}",
                 f"{c['documents']:,}", f"{100 * c['documents'] / c['in']:.1f}%" if c["in"] else "-",
                 *(f"{c['spans'].get(k, 0):,}" for k in kinds)] for s, c in counts.items()]
        table = page.table(["source", "documents", "documents edited", "%", *(f"{k} spans" for k in kinds)], rows,
                           set(range(1, 4 + len(kinds))), raw=True)
        examples = page.table(["source", "id", "kind", "start", "end", "placeholder", "original sha256"],
                              [[*r[:6], r[6][:16] + "…"] for r in d["examples"]], {3, 4}) if d["examples"] else \
            '<p class="muted">No span was replaced: no document had an address these kinds match (exceptions aside).</p>'
        body.append(f"<h3>Step <code>{escape(d['stage'])}</code> ({escape(', '.join(d['kinds']))})</h3>" + cards + table
                    + f"<h3>Recorded edits (the first of each source)</h3>{examples}"
                    + f'<p class="muted">Offsets are code points into the text the step saw; every edit is in '
                      f'<code>edits/{escape(d["stage"])}/</code> and the <code>edits</code> view of <code>curate query</code>.</p>')
    return page.section("pii", "PII", "E-mail and IP addresses replaced by placeholders (no document is removed, but one a pattern "
                        "of yours ran past its time budget on; later steps see the edited text).", "".join(body))


SECTION = Section("pii", "PII", pii_steps, lambda run, data, colors: section(data, colors))
