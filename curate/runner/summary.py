"""The end-of-run summary: per stage and source, documents in, kept, removed by reason, and time; then what
the model steps cost (and whether a stand-in model ran) and the dual-use funnel."""

from __future__ import annotations

from collections import defaultdict

from curate.decontam.record import DecontaminateRecord
from curate.pii.summary import edit_flags, edit_lines
from curate.rundir import ClassifyRecord, DedupRecord, DualUseRecord, EditsRecord, RunDir


def render(rows: list[dict], width: int = 100) -> str:
    """A plain-text table, one row per stage and source, within `width` columns: the reasons column gets what
    the others leave, most frequent reason first, cut with '+N more'."""
    header = ["stage", "source", "in", "kept", "removed", "reasons", "tasks", "time"]
    reasons_at = header.index("reasons")
    table = [header]
    ranked_of = []
    for r in rows:
        removed = sum(r["removed"].values())
        ranked_of.append(sorted(r["removed"].items(), key=lambda kv: (-kv[1], kv[0])))
        table.append([r["stage"], r["source"], f"{r['in']:,}", f"{r['kept']:,}", f"{removed:,}", "", str(r["tasks"]),
                      f"{r['task_seconds']:.1f}s"])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    room = max(20, width - sum(w for i, w in enumerate(widths) if i != reasons_at) - 2 * (len(header) - 1))
    for row, ranked in zip(table[1:], ranked_of):
        row[reasons_at] = _reasons(ranked, room)
    widths[reasons_at] = max(len(row[reasons_at]) for row in table)
    numeric = {2, 3, 4, 6, 7}
    lines = []
    for k, row in enumerate(table):
        cells = [c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _reasons(ranked: list[tuple[str, int]], room: int) -> str:
    """`reason count, reason count, +N more` in at most `room` characters."""
    if not ranked:
        return "-"
    shown = []
    for i, (reason, n) in enumerate(ranked):
        more = len(ranked) - i - 1
        piece = f"{reason} {n:,}"
        tail = f", +{more} more" if more else ""
        candidate = ", ".join(shown + [piece])
        if len(candidate + tail) <= room:
            shown.append(piece)
            continue
        if not shown:  # even the first reason is too long: cut it
            cut = room - len(f" {n:,}") - len(tail) - 3
            shown.append(f"{reason[:max(cut, 4)]}... {n:,}")
            i += 1
        left = len(ranked) - len(shown)
        return ", ".join(shown) + (f", +{left} more" if left else "")
    return ", ".join(shown)


def compile_note(rows: list[dict]) -> list[str]:
    """One line on the kernels compiled before the stages' tasks: their time is in no source's task seconds."""
    seconds = {}
    for r in rows:
        if r.get("compile_seconds"):
            seconds[r["stage"]] = r["compile_seconds"]
    if not seconds:
        return []
    return ["kernels compiled (or loaded from the cache) before the tasks, not in any source's time: "
            + ", ".join(f"{stage} {s:.1f}s" for stage, s in seconds.items())]


def model_notes(run: RunDir, steps: list[str], rows: list[dict], order: list[str]) -> list[str]:
    """Lines on the model steps of a run: each model's cost, stand-ins said plainly, the dual-use funnel."""
    lines = []
    for step in steps:
        if (record := run.find_record(step, ClassifyRecord)) is not None:
            for name, m in record.models.items():
                unit = m["device"].upper()
                lines.append(f"{step}/{name} ({m['kind']}): {m['documents']:,} docs, {m['seconds_per_1000']:.3f}s/1,000 "
                             f"on {unit}, ~{m['hours_per_billion']:,.0f} {unit}-h per billion docs")
                if m["standin"]:
                    lines.append(f"NOTE: model {name} is the sample's stand-in, not {m['replaces']}")
        if (record := run.find_record(step, DualUseRecord)) is not None:
            lines += dual_use_funnel(step, run.markers(step), record.costs, rows, order)
        if (record := run.find_record(step, DedupRecord)) is not None:
            lines += dedup_lines(step, record)
        if (record := run.find_record(step, DecontaminateRecord)) is not None:
            lines += record.lines(step, run.markers(step))
        if run.find_record(step, EditsRecord) is not None:
            lines += edit_lines(step, run.markers(step), order)
    return lines


def dedup_lines(step: str, record: DedupRecord) -> list[str]:
    """Per source: the share removed by the dedup step and its largest clusters; then each alarm."""
    shares = ", ".join(f"{s} {v['share']:.1%}" + (f" (largest clusters {', '.join(map(str, v['largest_clusters']))})"
                                                  if v["largest_clusters"] else "") for s, v in record.sources.items())
    return [f"{step}: removed {shares}"] + [f"WARNING: {line}" for line in record.alarms]


def dedup_flags(run: RunDir, rows: list[dict]) -> list[dict]:
    """Add to each dedup step's summary rows its share removed, largest clusters and alarms (flags in summary.json)."""
    for row in rows:
        record = run.find_record(row["stage"], DedupRecord)
        if record is not None and row["source"] in record.sources:
            v = record.sources[row["source"]]
            row["dedup"] = {"removed_share": v["share"], "largest_clusters": v["largest_clusters"], "alarm": v["alarm"]}
    editors = [s for s in dict.fromkeys(r["stage"] for r in rows) if run.find_record(s, EditsRecord) is not None]
    edit_flags(rows, {s: run.markers(s) for s in editors})   # a pii step's rows get `edits`: documents edited, spans by kind
    return rows


def dual_use_funnel(step: str, markers: list[dict], costs: dict, rows: list[dict], order: list[str]) -> list[str]:
    """Per source: scanned, escalated, flagged, errors, backfilled; and the step's share of the run's compute."""
    funnel: dict = defaultdict(lambda: defaultdict(int))
    for m in sorted(markers, key=lambda m: order.index(m["source"]) if m["source"] in order else len(order)):
        for k in ("scanned", "escalated", "flagged", "errors", "backfilled"):
            funnel[m["source"]][k] += m.get(k, 0)
    compute = {r["stage"]: r.get("stage_compute_seconds", 0.0) for r in rows}
    share = compute.get(step, 0.0) / (sum(compute.values()) or 1.0)
    lines = [f"{step}: funnel, {share:.1%} of the run's task time (blocklist {costs['scan_seconds']:.1f}s, "
             f"classifier {costs['classifier_seconds']:.1f}s on {costs['classifier_documents']:,} new docs)"]
    for source, f in funnel.items():
        lines.append(f"  {source:10} scanned {f['scanned']:,}  escalated {f['escalated']:,}  flagged {f['flagged']:,}  "
                     f"errors {f['errors']:,}  backfilled {f['backfilled']:,}")
    if costs.get("model") and costs["model"].get("standin"):
        lines.append(f"NOTE: {step}'s classifier is the sample's stand-in ({costs['model']['path']})")
    return lines
