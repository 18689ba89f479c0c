"""Per stage: wall time, documents per second, tasks and task time per phase, and retries.

Wall time is the summary's (the seconds this invocation spent in the stage: a stage finished by an
earlier invocation of a resumed run shows about 0); the part of it spent compiling the stage's kernels
(once, before its tasks, charged to no source) is shown apart. Tasks and task-seconds come from the task markers
(`RUN/_state/<stage>/<phase>/...`), which every invocation keeps. Retries are not recorded anywhere in a
run (Ray retries a task whose worker died up to `execution.retries` times, and only the attempt that
finished writes a marker), so the report says so rather than showing a number.
"""

from __future__ import annotations

from curate.report.context import RunView
from curate.rundir.layout import ACCOUNTING

MAX_MARKERS = 5_000   # per phase: beyond this, markers are counted but their seconds are not read
RETRIES = "not recorded"


def phases(run: RunView, stage: str) -> list[dict]:
    """Every phase of a stage with its task count and summed task seconds (the accounting phase last)."""
    found: dict[str, list[str]] = {}
    prefix = run.path("_state", stage).rstrip("/") + "/"
    for path in run.glob("_state", stage, "**", "*.json"):
        rel = path[len(prefix):] if path.startswith(prefix) else path.split(f"/_state/{stage}/", 1)[-1]
        if "/" not in rel:
            continue  # stage.json, record.json, <phase>.key.json
        found.setdefault(rel.split("/", 1)[0], []).append(path)
    out = []
    for phase in sorted(found, key=lambda p: (p == ACCOUNTING, p)):
        paths = found[phase]
        seconds = None
        if len(paths) <= MAX_MARKERS:
            seconds = round(sum(float((run.dir.read_json(p) or {}).get("seconds") or 0) for p in paths), 3)
        out.append({"phase": phase, "tasks": len(paths), "task_seconds": seconds})
    return out


def timing(run: RunView) -> dict:
    rows = []
    for stage in run.stage_order:
        mine = list(run.rows(stage).values())
        documents = sum(r["in"] for r in mine)
        wall = max((r.get("wall_seconds") or 0.0) for r in mine) if mine else 0.0
        compute = max((r.get("stage_compute_seconds") or 0.0) for r in mine) if mine else 0.0
        compiled = max((r.get("compile_seconds") or 0.0) for r in mine) if mine else 0.0  # once per stage, in the driver
        rows.append({"stage": stage, "kind": run.kind(stage), "documents": documents, "wall_seconds": wall,
                     "compile_seconds": compiled, "docs_per_second": documents / (wall - compiled) if wall - compiled >= 0.01 else None,
                     "tasks": sum(r.get("tasks", 0) for r in mine),
                     "task_seconds": round(sum(r.get("task_seconds", 0.0) for r in mine), 3),
                     "compute_seconds": compute, "phases": phases(run, stage), "retries": RETRIES})
    return {"rows": rows, "wall_known": run.summary_from == "summary.json",
            "retries_setting": (run.pipeline.get("execution") or {}).get("retries")}
