"""The end-of-run summary: per stage and source, documents in, kept, removed by reason, and time; then the
lines and flags each step's facets add (what a model cost, the dual-use funnel, documents edited: see
`curate/stages/facets.py`), naming no stage kind."""

from __future__ import annotations

from curate.rundir import RunDir


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


def stage_notes(run: RunDir, steps: list[tuple[str, type]], rows: list[dict], order: list[str]) -> list[str]:
    """The lines each step adds after the table (`steps`: name and stage class, in order), from its facets."""
    return [line for name, cls in steps for line in cls.FACETS.lines(run, name, rows, order)]


def stage_flags(run: RunDir, steps: list[tuple[str, type]], rows: list[dict]) -> list[dict]:
    """Add to each step's summary rows what its facets flag per source (summary.json)."""
    for name, cls in steps:
        mine = [r for r in rows if r["stage"] == name]
        if not mine:
            continue
        flags = cls.FACETS.flags(run, name, [r["source"] for r in mine])
        for row in mine:
            row.update(flags.get(row["source"], {}))
    return rows
