"""Training examples for `curate train-quality`: texts from SQL over runs, or from jsonl/parquet files.

An example source is either a SQL query over the views of one or more runs (`curate query`'s views:
kept, docs, signals, scores, ...; the first column is the text), or a path/glob of `.jsonl[.gz|.zst]`
or `.parquet` files with a `text` column (or `column`).
"""

from __future__ import annotations

import pyarrow as pa

from curate.errors import CurateError
from curate.io import fs
from curate.io.parquet import read_table

FILE_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".json.gz", ".json", ".jsonl.zstd")


def is_query(spec: str) -> bool:
    return spec.lstrip().split(None, 1)[0].upper() in ("SELECT", "WITH", "FROM") if spec.strip() else False


def texts_from(spec: str, runs: list[str], column: str = "text", limit: int | None = None) -> list[str]:
    """The texts one `--positive`/`--negative` names, in a deterministic order."""
    out = _from_query(spec, runs) if is_query(spec) else _from_files(spec, column)
    return out[:limit] if limit else out


def _from_query(sql: str, runs: list[str]) -> list[str]:
    from curate.rundir.views import connect
    from curate.common.sql_guard import read_only_statement

    if not runs:
        raise CurateError(f"examples given as SQL need --run RUN (the run whose views it reads): {sql!r}")
    sql = read_only_statement(sql)  # one SELECT, like curate query: examples never write
    texts = []
    for run in runs:
        con = connect(run)
        try:
            table = con.sql(sql).to_arrow_table()
        except Exception as exc:  # noqa: BLE001 - DuckDB's errors are one line after the first
            raise CurateError(f"examples query failed on {run}: {str(exc).splitlines()[0]}") from None
        if table.num_columns == 0 or not pa.types.is_string(table.schema.field(0).type) and not pa.types.is_large_string(
                table.schema.field(0).type):
            raise CurateError(f"examples query must select the text first (a string column): {sql!r}")
        texts += table.column(0).to_pylist()
    return [t for t in texts if t]


def _from_files(pattern: str, column: str) -> list[str]:
    files = [f.path for f in fs.expand(pattern)] if pattern else []
    if not files:
        raise CurateError(f"no files match {pattern!r} (give a jsonl/parquet path or glob, or a SELECT over --run)")
    texts = []
    for path in files:
        if path.endswith(".parquet"):
            with fs.open_input(path) as handle:
                table = read_table(handle)
            if column not in table.column_names:
                raise CurateError(f"{path}: no column {column!r} (columns: {', '.join(table.column_names)})")
            texts += table.column(column).to_pylist()
        else:
            texts += _jsonl_texts(path, column)
    return [t for t in texts if t]


def _jsonl_texts(path: str, column: str) -> list[str]:
    import orjson

    from curate.io.lines import iter_lines

    texts, result = [], {}
    with fs.open_input(path) as handle:
        for number, line in iter_lines(handle, result):
            try:
                texts.append(orjson.loads(line).get(column))
            except (orjson.JSONDecodeError, AttributeError):
                raise CurateError(f"{path} line {number}: not a JSON object") from None
    return texts
