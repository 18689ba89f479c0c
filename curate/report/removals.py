"""Removed documents by stage and reason (the accounting), and examples of the bad records the ingest met."""

from __future__ import annotations

from curate.report.context import RunView, files_sql
from curate.report.sampling import spread

EXAMPLES = 3
MAX_FILES = 500  # ledger files read for examples (spread over the run)


def by_reason(run: RunView) -> dict:
    """Rows (stage, kind, reason) with documents removed per source, in run order."""
    rows = []
    for stage in run.stage_order:
        reasons: dict[str, dict[str, int]] = {}
        for source, row in run.rows(stage).items():
            for reason, n in row["removed"].items():
                reasons.setdefault(reason, {})[source] = n
        for reason in sorted(reasons, key=lambda r: -sum(reasons[r].values())):
            rows.append({"stage": stage, "kind": run.kind(stage), "reason": reason, "by_source": reasons[reason],
                         "total": sum(reasons[reason].values())})
    entered = sum(r["in"] for r in run.summary if r["stage"] == run.stage_order[0]) if run.stage_order else 0
    return {"rows": rows, "entered": entered, "total": sum(r["total"] for r in rows)}


def bad_records(run: RunView) -> dict:
    """Bad records per kind and source, with a few ledger details of each kind (file, line, row, byte)."""
    counts: dict[str, dict[str, int]] = {}
    for row in run.summary:
        for reason, n in row["removed"].items():
            if reason.startswith("bad_record:"):
                counts.setdefault(reason.split(":", 1)[1], {})[row["source"]] = n
    examples: dict[str, list[tuple[str, str]]] = {}
    stages = {r["stage"] for r in run.summary for reason in r["removed"] if reason.startswith("bad_record:")}
    for stage in sorted(stages):
        files = run.glob("ledger", stage, "*", "*.parquet")
        files = [files[i] for i in sorted(spread(len(files))[:MAX_FILES])]
        if not files:
            continue
        for kind, source, detail in run.sql(
                f"SELECT split_part(reason, ':', 2) AS kind, source, detail FROM ("
                f"  SELECT *, row_number() OVER (PARTITION BY reason ORDER BY source, id) AS n "
                f"  FROM read_parquet({files_sql(files)}) WHERE reason LIKE 'bad_record:%') WHERE n <= {EXAMPLES} "
                f"ORDER BY kind, source"):
            examples.setdefault(kind, []).append((source, detail or ""))
    return {"counts": counts, "examples": examples}
