"""The end-of-run accounting: per stage and source, documents in, kept, removed by reason, and time.

It is computed from the task markers, so a resumed run reports the whole run. It also checks the
ledger identity (in = kept + removed for every task, and each stage sees what the previous one kept);
a violation is a bug and fails the run rather than being reported as success.
"""

from __future__ import annotations

from collections import defaultdict

from curate.errors import CurateError


def aggregate(stage_markers: list[tuple[str, list[dict]]], order: list[str], wall: dict[str, float]) -> list[dict]:
    """Sum task markers per stage and source (sources in `order`), checking in = kept + removed."""
    rows = []
    for stage, markers in stage_markers:
        by_source: dict = defaultdict(lambda: {"in": 0, "kept": 0, "removed": defaultdict(int), "tasks": 0, "task_seconds": 0.0})
        for m in markers:
            if m["source"].startswith("_"):
                continue  # whole-run tasks (the manifest) hold no documents
            if m["in"] != m["kept"] + sum(m["removed"].values()):
                raise CurateError(f"accounting error in stage '{stage}' shard {m['source']}/{m['shard']}: "
                                  f"in {m['in']} != kept {m['kept']} + removed {sum(m['removed'].values())}")
            row = by_source[m["source"]]
            row["in"] += m["in"]
            row["kept"] += m["kept"]
            row["tasks"] += 1
            row["task_seconds"] += m["seconds"]
            for reason, n in m["removed"].items():
                row["removed"][reason] += n
        for source in sorted(by_source, key=lambda s: (order.index(s) if s in order else len(order), s)):
            row = by_source[source]
            rows.append({"stage": stage, "source": source, "in": row["in"], "kept": row["kept"],
                         "removed": dict(sorted(row["removed"].items())), "tasks": row["tasks"],
                         "task_seconds": round(row["task_seconds"], 3), "wall_seconds": round(wall.get(stage, 0.0), 3)})
    _check_chain(rows)
    return rows


def _check_chain(rows: list[dict]) -> None:
    last_kept: dict = {}
    for row in rows:
        before = last_kept.get(row["source"])
        if before is not None and before != row["in"]:
            raise CurateError(f"accounting error: stage '{row['stage']}' saw {row['in']} documents of '{row['source']}' "
                              f"but the previous stage kept {before}")
        last_kept[row["source"]] = row["kept"]


def render(rows: list[dict]) -> str:
    """A plain-text table, one row per stage and source, reasons spelled out."""
    header = ["stage", "source", "in", "kept", "removed", "reasons", "tasks", "time"]
    table = [header]
    for r in rows:
        removed = sum(r["removed"].values())
        ranked = sorted(r["removed"].items(), key=lambda kv: (-kv[1], kv[0]))
        reasons = ", ".join(f"{k} {v:,}" for k, v in ranked[:3]) + (f", +{len(ranked) - 3} more" if len(ranked) > 3 else "")
        reasons = reasons or "-"
        table.append([r["stage"], r["source"], f"{r['in']:,}", f"{r['kept']:,}", f"{removed:,}", reasons,
                      str(r["tasks"]), f"{r['task_seconds']:.1f}s"])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    numeric = {2, 3, 4, 6, 7}
    lines = []
    for k, row in enumerate(table):
        cells = [c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
