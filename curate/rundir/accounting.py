"""The run's accounting: per stage and source, documents in, kept, removed by reason, and time.

It is computed from the task markers, so a resumed run reports the whole run. It also checks the
ledger identity (in = kept + removed for every task, and each stage sees what the previous one kept);
a violation is a bug and fails the run rather than being reported as success.
"""

from __future__ import annotations

from collections import defaultdict

from curate.errors import CurateError


def aggregate(stage_markers: list[tuple[str, list[dict]]], order: list[str], wall: dict[str, float],
              compute: dict[str, float] | None = None, compile: dict[str, float] | None = None,
              chain: bool = True) -> list[dict]:
    """Sum task markers per stage and source (sources in `order`), checking in = kept + removed.

    `wall`: seconds this run spent in each stage; `compute`: task seconds of each stage over all its phases;
    `compile`: seconds of the stage's wall time spent compiling its kernels (once, in the driver: no source's);
    `chain`: also check that each stage saw what the previous one kept (not for a run still in progress,
    whose current stage has done only some of its tasks)."""
    rows = []
    for stage, markers in stage_markers:
        by_source: dict = defaultdict(lambda: {"in": 0, "kept": 0, "removed": defaultdict(int), "tasks": 0, "task_seconds": 0.0})
        for m in markers:
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
                         "task_seconds": round(row["task_seconds"], 3), "wall_seconds": round(wall.get(stage, 0.0), 3),
                         "stage_compute_seconds": round((compute or {}).get(stage, 0.0), 3),
                         "compile_seconds": round((compile or {}).get(stage, 0.0), 3)})
    if chain:
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
