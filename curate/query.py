"""`curate query`: SQL over a run directory's views (curate/rundir/views.py), read-only, as a table, CSV, JSON or a file.
"""

from __future__ import annotations

import csv
import io
import json
import os

import duckdb

from curate.errors import CurateError, UsageError
from curate.io import fs
from curate.rundir.enclosing import enclosing_run, resolved
from curate.rundir.views import connect
from curate.sql import MEMORY_ENV, memory_mb, quote
from curate.common.sql_guard import read_only_statement


def describe(con: duckdb.DuckDBPyConnection) -> str:
    lines = []
    for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name").fetchall():
        cols = con.sql(f"DESCRIBE {name}").fetchall()
        lines.append(f"{name}: " + ", ".join(f"{c[0]} {c[1]}" for c in cols))
    return "\n".join(lines) or "(no tables yet)"


def query(run: str, sql: str, fmt: str = "table", out: str | None = None, limit: int = 200, width: int = 100,
          force: bool = False) -> str:
    """Run `sql` over the run's views; returns text to print (or writes `out` for csv/json/parquet).

    Table output shows at most `limit` rows (0: all) and says how many the result has; cells are cut at `width`
    characters (0: never). `out` may not lie inside a run directory, and replaces an existing file only with
    `force`. Every DuckDB error, when the statement binds or while its rows are read, is one line."""
    sql = read_only_statement(sql)
    if out:
        check_out(run, out, force)
    con = connect(run)
    try:
        return _result(con, sql, fmt, out, limit, width)
    except duckdb.PermissionException as exc:
        raise CurateError(f"query failed: {str(exc).splitlines()[0]}: curate query reads the files of the run {run} only") from None
    except duckdb.OutOfMemoryException as exc:
        raise CurateError(f"query failed: {str(exc).splitlines()[0]}: DuckDB may hold {memory_mb()} MB here; "
                          f"set {MEMORY_ENV} to give it more") from None
    except duckdb.Error as exc:
        raise CurateError(f"query failed: {str(exc).splitlines()[0]}\nviews:\n{describe(con)}") from None


def _result(con: duckdb.DuckDBPyConnection, sql: str, fmt: str, out: str | None, limit: int, width: int) -> str:
    rel = con.sql(sql)
    if rel is None:
        return ""
    if out:
        try:
            write_result(rel, fmt, out)
        except duckdb.PermissionException:
            raise
        except duckdb.Error as exc:
            raise CurateError(f"--out {out}: {str(exc).splitlines()[0]}") from None
        return f"wrote {out}"
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
    total = rel.aggregate("count(*)").fetchall()[0][0]  # any statement curate query runs (EXPLAIN, SUMMARIZE too)
    rows = (rel.limit(limit) if limit else rel).fetchall()
    shown = f"{total:,} row{'s' if total != 1 else ''}" + (f" ({len(rows):,} shown; --limit 0 shows all)" if len(rows) < total else "")
    return render_table(rel.columns, rows, width) + "\n" + shown


def check_out(run: str, out: str, force: bool) -> None:
    """`--out` must name a new file (or, with `force`, an existing one) in an existing folder outside every run
    directory: inside one it would replace or join the run's outputs (manifest.json, a kept/ shard). A
    UsageError (exit 2) otherwise."""
    try:
        inside = enclosing_run(out)
        if inside is None and "://" not in out and "://" not in run:   # the run queried, even without its markers
            target, root = resolved(out), resolved(run)
            inside = root if target == root or target.startswith(root.rstrip("/") + "/") else None
        if inside is not None:
            raise UsageError(f"--out {out}: refusing to write inside the run directory {inside}; "
                              "name a file outside every run")
        filesystem, path = fs.filesystem(resolved(out))
        if filesystem.isdir(path):
            raise UsageError(f"--out {out}: is a folder; name a file")
        if fs.is_local(filesystem) and not os.path.isdir(os.path.dirname(path)):
            raise UsageError(f"--out {out}: the folder {os.path.dirname(path)} does not exist")
        if filesystem.exists(path) and not force:
            raise UsageError(f"--out {out}: the file exists; pass --force to replace it")
    except OSError as exc:
        raise UsageError(f"--out {out}: {exc}") from None


def write_result(rel: duckdb.DuckDBPyRelation, fmt: str, out: str) -> None:
    """Write a query's result to `out`, the one file curate query writes: the user's connection may write
    nothing, so a connection of curate's own copies the result's Arrow stream there."""
    writer = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    filesystem, _ = fs.filesystem(out)
    if not fs.is_local(filesystem):
        writer.register_filesystem(filesystem)
    writer.register("result", rel.to_arrow_reader())
    options = {"parquet": "FORMAT parquet", "json": "FORMAT json"}.get(fmt, "FORMAT csv, HEADER")
    writer.execute(f"COPY (SELECT * FROM result) TO {quote(out)} ({options})")
    writer.close()


def render_table(columns: list[str], rows: list[tuple], width: int = 100) -> str:
    """A plain text table; cells longer than `width` characters (0: no limit) are cut with '...'."""
    def cell(value) -> str:
        text = "NULL" if value is None else str(value).replace("\n", "\\n")
        return text if not width or len(text) <= width else text[: max(width - 3, 1)] + "..."

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
    return "\n".join([line(columns), line(["-" * w for w in widths]), *(line(r) for r in cells)])
