"""DuckDB views over a run directory: what `curate query` (and the examples a model trains on) read.

Views: the run's tables (`docs`, `kept`, `quarantine`: one row per document, with `source`; `quarantine` also
with the `step` that set the document aside), every id-keyed
table a step listed in its record (`RUN/_state/<step>/record.json`), under the step's name and in a view per
kind of table over all steps of that kind (`signals`, `scores`, `dual_use`, `contamination`, `edits` of the editing
steps), where each row also names its `step` (two pii steps' spans of one document are into different texts), then
`ledger`, `clusters` and `tokens`, as they appear. No table name is written here: a new stage that lists its table is seen as it is.
A source's own `source` column, if it has one (Zyda does), is shown as `source_column`. In `clusters`,
`kept_by_dedup` says whether the dedup step kept the document (a later step may still remove it) and `in_kept`
whether it is in kept/ at the end (NULL before the run wrote kept/). `tokens` has one row per tokenized
document and tokenize step: `source`, `id`, `tokens` (its token count, with the EOS the tokenize step adds),
`copies` (how many times the pack step that packed that tokenize step's documents wrote it: the mix plan's copies,
read from its document map; NULL before a pack step ran) and `step` (the tokenize step, whose files are RUN/<step>/;
found by the tokenizer record it published). Remote runs (s3://, gs://, ...) are read through fsspec.
"""

from __future__ import annotations

import os

import duckdb

from curate.errors import CurateError
from curate.io import fs
from curate.rundir.layout import RunDir
from curate.rundir.records import PackRecord, TokenizerRecord
from curate.run_folders import BY_STEP, SOURCED, TABLES
from curate.sql import connect as sql_connect
from curate.sql import memory_mb
from curate.sql import quote, read_parquet
from curate.tokens.formats import get as token_format


def keyed_tables(run: RunDir) -> list[dict]:
    """Every id-keyed table the run's steps listed in their records ({name, view, kind, path, key, columns}), by step name."""
    return [table for step in _published(run) for table in run.tables_of(step)]


def connect(root: str) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per table the run has produced so far."""
    run = RunDir(root.rstrip("/") if "://" in root else os.path.abspath(root))
    if not fs.exists(run.pipeline_file):
        raise CurateError(f"{root}: not a run directory (no pipeline.yaml); run `curate run PIPELINE --output {root}` first")
    con = sql_connect(threads=None, readable=(run.root,), memory=memory_mb())  # the run's files only; bounded memory
    for view in TABLES:
        parts = _by_step(con, run, view) if view in BY_STEP else _scans(con, run, view, view in SOURCED)
        if parts:
            con.execute(f"CREATE VIEW {view} AS " + " UNION ALL BY NAME ".join(parts))
    kinds: dict[str, list[str]] = {}
    steps: dict[str, list[str]] = {}
    for table in keyed_tables(run):
        if parts := _scans(con, run, table["path"], True):
            steps.setdefault(table["name"], []).extend(parts)
            kinds.setdefault(table["view"], []).extend(f"SELECT *, {quote(table['name'])} AS step FROM ({scan})" for scan in parts)
    for view, parts in [*kinds.items(), *steps.items()]:   # each row of a kind's view names its step; a step named
        if view not in _views(con):                          # after its kind's view is that view
            con.execute(f"CREATE VIEW {_ident(view)} AS " + " UNION ALL BY NAME ".join(parts))
    if fs.glob(run.ledger_glob()):
        con.execute(f"CREATE VIEW ledger AS SELECT * FROM {read_parquet(con, run.ledger_glob())}")
    if fs.glob(run.clusters_glob()):
        scan = f"SELECT * RENAME (kept AS kept_by_dedup) FROM {read_parquet(con, run.clusters_glob())}"
        kept = "(SELECT DISTINCT source, id, true AS in_kept FROM kept)" if "kept" in _views(con) else None
        con.execute(f"CREATE VIEW clusters AS SELECT c.*, coalesce(k.in_kept, false) AS in_kept FROM ({scan}) c "
                    f"LEFT JOIN {kept} k USING (source, id)" if kept else f"CREATE VIEW clusters AS SELECT *, NULL::BOOLEAN AS in_kept FROM ({scan})")
    if parts := _tokens(con, run):
        con.execute("CREATE VIEW tokens AS " + " UNION ALL ".join(parts))
    return con


def _tokens(con: duckdb.DuckDBPyConnection, run: RunDir) -> list[str]:
    """The `tokens` view's parts, one per tokenize step and source. The tokenize step writes each document once; its
    copies are the pack step's (the mix plan's), counted in the Megatron document map (`curate.tokens.docmap`) of the
    first pack step that packed it."""
    packs: dict[str, str] = {}
    for step in _published(run):
        record = run.read_json(run.path("_state", step, "record.json")) or {}
        if record.get("kind") == PackRecord.__name__ and (read := record.get("tokens")):
            packs.setdefault(read, step)
    parts = []
    for step in tokenize_steps(run):
        for source in run.table_sources(step):
            scan = read_parquet(con, run.table_glob(step, source))
            docmap = run.token_prefix(packs[step], source) + token_format("megatron").map_suffix if step in packs else None
            copies = (f"LEFT JOIN (SELECT id, (max(copy) + 1)::INTEGER AS copies FROM {read_parquet(con, docmap)} GROUP BY id) "
                      "USING (id)" if docmap and fs.exists(docmap) else "")
            parts.append(f"SELECT {quote(source)} AS source, id, len(tokens) AS tokens, "
                         f"{'copies' if copies else 'NULL::INTEGER AS copies'}, {quote(step)} AS step FROM {scan} {copies}")
    return parts


def tokenize_steps(run: RunDir) -> list[str]:
    """The steps that published a tokenizer: each wrote its token documents to RUN/<step>/<source>/."""
    return [step for step in _published(run) if (run.read_json(run.path("_state", step, "record.json")) or {}).get("kind")
            == TokenizerRecord.__name__]


def _published(run: RunDir) -> list[str]:
    return [path.rstrip("/").rsplit("/", 2)[-2] for path in sorted(fs.glob(run.path("_state", "*", "record.json")))]


def _by_step(con: duckdb.DuckDBPyConnection, run: RunDir, table: str) -> list[str]:
    """A table with a part per step (RUN/<table>/<step>/<source>/): every part, with the `step` that wrote it."""
    steps = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.glob(run.path(table, "*")))
    return [f"SELECT *, {quote(step)} AS step FROM ({scan})" for step in steps for scan in _scans(con, run, f"{table}/{step}", True)]


def _scans(con: duckdb.DuckDBPyConnection, run: RunDir, folder: str, sourced: bool) -> list[str]:
    """One SELECT per source of the table in `folder`, each with `source` first."""
    parts = []
    for source in run.table_sources(folder):
        scan = read_parquet(con, run.table_glob(folder, source), "union_by_name=true")
        columns = [r[0] for r in con.sql(f"DESCRIBE SELECT * FROM {scan}").fetchall()]
        if sourced and "source" in columns:  # its files carry `source` (rundir/tables.py)
            parts.append(f"SELECT * FROM {scan}")
            continue
        rename = " RENAME (source AS source_column)" if "source" in columns else ""
        parts.append(f"SELECT {quote(source)} AS source, *{rename} FROM {scan}")
    return parts


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {name for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
