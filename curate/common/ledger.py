"""The ledger: one row per removed document (id, source, stage, reason, detail), one file per stage and shard."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from curate.io.parquet import write_table

LEDGER_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("source", pa.string()),
    ("stage", pa.string()),
    ("reason", pa.string()),
    ("detail", pa.string()),
])


def ledger_table(source: str, stage: str, ids, reasons, details=None) -> pa.Table:
    """Rows for removed documents; `ids`, `reasons`, `details` are Arrow arrays (or lists) of equal length."""
    ids = pa.array(ids, pa.string()) if not isinstance(ids, pa.Array) else ids.cast(pa.string())
    n = len(ids)
    reasons = pa.array(reasons, pa.string()) if not isinstance(reasons, pa.Array) else reasons.cast(pa.string())
    if details is None:
        details = pa.nulls(n, pa.string())
    elif not isinstance(details, pa.Array):
        details = pa.array(details, pa.string())
    return pa.Table.from_arrays([ids, pa.array([source] * n, pa.string()), pa.array([stage] * n, pa.string()),
                                 reasons, details.cast(pa.string())], schema=LEDGER_SCHEMA)


def write_ledger(path: str, table: pa.Table) -> dict[str, int]:
    """Write one shard's ledger rows (possibly none); returns the count of each reason."""
    write_table(path, table)
    counts = pc.value_counts(table.column("reason").combine_chunks()).to_pylist() if table.num_rows else []
    return {c["values"]: c["counts"] for c in counts}
