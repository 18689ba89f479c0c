"""DuckDB views over a run directory, so a run can be inspected (and re-thresholded) with SQL.

Views: `docs`, `kept` (one row per document, with `source`), `ledger`, `signals` and any later
stage's tables (`clusters`) as they appear. A source's own `source` column, if it has one (Zyda
does), is shown as `source_column`. Remote runs (s3://, gs://, ...) are read through fsspec.
"""

from __future__ import annotations

import csv
import io
import json

import duckdb

from curate.errors import CurateError
from curate.io import fs

_PER_SOURCE = {"docs": "docs", "kept": "kept", "signals": "signals"}


def _url(run: str, *parts: str) -> str:
    return fs.join(run, *parts)


def _sources(run: str, folder: str) -> list[str]:
    return sorted({p.rstrip("/").rsplit("/", 2)[-2] for p in fs.glob(_url(run, folder, "*", "*.parquet"))})


def connect(run: str) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per table the run has produced so far."""
    filesystem, _ = fs.filesystem(run)
    if not fs.exists(_url(run, "pipeline.yaml")):
        raise CurateError(f"{run}: not a run directory (no pipeline.yaml); run `curate run PIPELINE --output {run}` first")
    con = duckdb.connect()
    if not fs.is_local(filesystem):
        con.register_filesystem(filesystem)
    for view, folder in _PER_SOURCE.items():
        parts = []
        for source in _sources(run, folder):
            pattern = _url(run, folder, source, "*.parquet")
            columns = [r[0] for r in con.sql(f"DESCRIBE SELECT * FROM read_parquet('{pattern}', union_by_name=true)").fetchall()]
            rename = " RENAME (source AS source_column)" if "source" in columns else ""
            parts.append(f"SELECT '{source}' AS source, *{rename} FROM read_parquet('{pattern}', union_by_name=true)")
        if parts:
            con.execute(f"CREATE VIEW {view} AS " + " UNION ALL BY NAME ".join(parts))
    if fs.glob(_url(run, "ledger", "*", "*", "*.parquet")):
        con.execute(f"CREATE VIEW ledger AS SELECT * FROM read_parquet('{_url(run, 'ledger', '*', '*', '*.parquet')}')")
    clusters = fs.glob(_url(run, "*", "clusters", "*", "*.parquet"))
    if clusters:
        con.execute(f"CREATE VIEW clusters AS SELECT * FROM read_parquet('{_url(run, '*', 'clusters', '*', '*.parquet')}')")
    return con


def describe(con: duckdb.DuckDBPyConnection) -> str:
    lines = []
    for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name").fetchall():
        cols = con.sql(f"DESCRIBE {name}").fetchall()
        lines.append(f"{name}: " + ", ".join(f"{c[0]} {c[1]}" for c in cols))
    return "\n".join(lines) or "(no tables yet)"


def query(run: str, sql: str, fmt: str = "table", out: str | None = None, limit: int = 200) -> str:
    """Run `sql` over the run's views; returns text to print (or writes `out` for csv/json/parquet)."""
    con = connect(run)
    try:
        rel = con.sql(sql)
    except duckdb.Error as exc:
        raise CurateError(f"query failed: {str(exc).splitlines()[0]}\nviews:\n{describe(con)}") from None
    if rel is None:
        return ""
    if out:
        target = out
        if fmt == "parquet":
            rel.write_parquet(target)
        elif fmt == "json":
            con.sql(f"COPY ({sql}) TO '{target}' (FORMAT json)")
        else:
            rel.write_csv(target)
        return f"wrote {target}"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(rel.columns)
        writer.writerows(rel.fetchall())
        return buffer.getvalue().rstrip("\n")
    if fmt == "json":
        return "\n".join(json.dumps(dict(zip(rel.columns, row)), default=str) for row in rel.fetchall())
    if fmt == "parquet":
        raise CurateError("--format parquet needs --out FILE")
    return str(rel.limit(limit)) if limit else str(rel)

