"""Deduplication: how big the duplicate clusters are, and which source lost documents to which.

Cluster sizes come from each dedup step's clusters table (`RUN/<step>/clusters/`: id, source, cluster,
kept; every document of every cluster). On a large run, clusters are sampled by a hash of their id (a
cluster is read whole or not at all) and the counts scaled up, which the notes say. The cross-source
matrix counts the ledger reasons `<kind>_duplicate_of:<source>`: documents of the row's source removed
in favour of a copy kept in the column's source.
"""

from __future__ import annotations

from html import escape

from curate.report import svg
from curate.report.palette import shades
from curate.report.section import Section
from curate.report.sections import num, pct, pending, pending_note
from curate.report.svg import Series

import math

from curate.report import page
from curate.report.context import RunView, files_sql
from curate.rundir import DedupRecord

DEDUP_KINDS = ("dedup", "exact_dedup")
MAX_ROWS = 5_000_000   # cluster rows read before sampling clusters
SIZE_BINS = [(2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 1000), (1001, None)]


def size_label(lo: int, hi: int | None) -> str:
    return str(lo) if hi == lo else (f"{lo}-{hi}" if hi is not None else f">{lo - 1}")


def clusters(run: RunView, stage: str) -> dict | None:
    files = run.glob(stage, "clusters", "*", "*.parquet")
    if not files:
        return None
    rows = run.sql(f"SELECT count(*) FROM read_parquet({files_sql(files)})")[0][0]
    every = max(1, math.ceil(rows / MAX_ROWS))
    where = f"WHERE hash(cluster) % {every} = 0" if every > 1 else ""
    found = run.sql(f"""
        SELECT size, spans, count(*) FROM (
            SELECT cluster, count(*) AS size, count(DISTINCT source) > 1 AS spans
            FROM read_parquet({files_sql(files)}) {where} GROUP BY cluster)
        GROUP BY ALL""")
    largest = max((s for s, _, _ in found), default=2)
    bins = [b for b in SIZE_BINS if b[0] <= largest]
    within, across = [0] * len(bins), [0] * len(bins)
    for size, spans, n in found:
        for i, (lo, hi) in enumerate(bins):
            if lo <= size and (hi is None or size <= hi):
                (across if spans else within)[i] += n * every
    total_clusters = sum(n for _, _, n in found) * every
    documents = sum(s * n for s, _, n in found) * every
    return {"stage": stage, "bins": [size_label(*b) for b in bins], "within": within, "across": across,
            "clusters": total_clusters, "documents": documents, "rows": rows, "sampled_every": every,
            "largest": largest if found else 0}


def matrix(run: RunView, stage: str) -> dict | None:
    """Documents of source X (rows) removed in favour of source Y (columns), from the stage's reasons."""
    cells: dict[tuple[str, str], int] = {}
    prefix = None
    for source, row in run.rows(stage).items():
        for reason, n in row["removed"].items():
            head, _, target = reason.partition(":")
            if head.endswith("_duplicate_of") and target:
                prefix = head
                cells[(source, target)] = cells.get((source, target), 0) + n
    if not run.rows(stage):
        return None
    sources = [s for s in run.sources if s in run.rows(stage) or any(s == t for _, t in cells)]
    values = [[cells.get((x, y)) for y in sources] for x in sources]
    inputs = {s: run.rows(stage).get(s, {}).get("in", 0) for s in sources}
    return {"stage": stage, "reason": prefix, "sources": sources, "values": values, "inputs": inputs,
            "removed": sum(cells.values())}


def dedup(run: RunView) -> list[dict]:
    out = []
    for stage in run.stages_of(*DEDUP_KINDS):
        if stage not in run.stage_order:
            continue
        out.append({"stage": stage, "kind": run.kind(stage), "policy": run.options(stage).get("policy"),
                    "clusters": clusters(run, stage), "matrix": matrix(run, stage), "alarms": alarms(run, stage)})
    return out


def alarms(run: RunView, stage: str) -> dict | None:
    """What the dedup step's alarm check found (share removed and largest clusters per source, alarm lines)."""
    record = run.dir.find_record(stage, DedupRecord)
    return None if record is None else record.to_json()


def alarms_html(d: dict) -> str:
    """A note per alarm, and one line of the share each source lost with its largest clusters."""
    a = d.get("alarms")
    if not a:
        return ""
    shares = "; ".join(f"{s} {v['share']:.1%}" + (f" (largest clusters {', '.join(map(str, v['largest_clusters']))})"
                                                         if v["largest_clusters"] else "") for s, v in a["sources"].items())
    limits = f"alarms at more than {a['max_removed_share']:.0%} removed or a cluster over {a['max_cluster']:,} documents"
    notes = [page.note(f"ALARM: {line}") for line in a["alarms"]]
    return "".join(notes) + page.note(f"{d['stage']}: share of each source removed: {shares} ({limits}).")


# ---- dedup ----------------------------------------------------------------------------------------

def section(data: list[dict], pending: list[str] = ()) -> str:
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


SECTION = Section("dedup", "Deduplication", dedup, lambda run, data, colors: section(data, pending(run, *DEDUP_KINDS)))
