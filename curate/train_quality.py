"""The `curate train-quality` command: training examples from SQL over runs or from jsonl/parquet files, then a
DCLM-style fastText classifier with its card (`curate.models.train`).

An example source is either a SQL query over the views of one or more runs (`curate query`'s views:
kept, docs, signals, scores, ...; the first column is the text), or a path/glob of `.jsonl[.gz|.zst]`
or `.parquet` files with a `text` column (or `column`).
"""

from __future__ import annotations

import os
import sys

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


def add_parser(sub, make):
    """Register the command on `curate`'s subparsers (`make`: cli's `_sub`)."""
    t = make(sub, "train-quality", "train a fastText quality classifier (DCLM-style) from examples",
             "Train a fastText classifier from positive and negative examples (SQL over runs, or jsonl/parquet files), report\n"
             "held-out precision/recall per threshold, and write the model with a card (.json) for a classify step.",
             "example:\n  curate train-quality models/q.bin --run runs/z --positive \"SELECT text FROM kept WHERE source='fwe'\" "
             "\\\n      --negative \"SELECT d.text FROM docs d JOIN ledger l USING (source, id) WHERE l.stage='quality_filter'\"")
    t.add_argument("out", help="the model file to write (e.g. models/quality.bin); its card is written beside it (.json)")
    t.add_argument("--positive", action="append", required=True, metavar="SQL|FILES",
                   help="good examples: SQL over --run (first column: text), or jsonl/parquet files (repeatable)")
    t.add_argument("--negative", action="append", required=True, metavar="SQL|FILES", help="bad examples, as --positive")
    t.add_argument("--run", action="append", default=[], help="run directory whose views the SQL reads (repeatable)")
    t.add_argument("--column", default="text", help="the text column of example files")
    t.add_argument("--max-docs", type=int, default=None, help="at most this many documents per --positive/--negative")
    t.add_argument("--dim", type=int, default=100)
    t.add_argument("--epoch", type=int, default=5)
    t.add_argument("--lr", type=float, default=0.1)
    t.add_argument("--word-ngrams", type=int, default=2, help="2: DCLM's word bigrams")
    t.add_argument("--min-count", type=int, default=1)
    t.add_argument("--bucket", type=int, default=None,
                   help="hash buckets for n-grams (smaller: a smaller model); default: one per distinct n-gram, at most 2,000,000")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--holdout", type=float, default=0.1, help="share of each class held out to measure the model")
    t.add_argument("--threads", type=int, default=1, help="1: deterministic; more: faster but not reproducible")
    t.set_defaults(func=train_quality)
    return t


def train_quality(args) -> int:
    from curate.models.train import threshold_lines, train_fasttext

    positive = [t for spec in args.positive for t in texts_from(spec, args.run, args.column, args.max_docs)]
    negative = [t for spec in args.negative for t in texts_from(spec, args.run, args.column, args.max_docs)]
    print(f"training on {len(positive):,} positive and {len(negative):,} negative documents "
          f"(holding out {args.holdout:.0%}) ...", file=sys.stderr)
    try:
        card = train_fasttext(positive, negative, args.out, inputs={"positive": args.positive, "negative": args.negative,
                                                                     "runs": args.run}, dim=args.dim, epoch=args.epoch,
                              lr=args.lr, word_ngrams=args.word_ngrams, min_count=args.min_count, bucket=args.bucket,
                              seed=args.seed, holdout=args.holdout, threads=args.threads)
    except (ValueError, RuntimeError) as exc:
        raise CurateError(f"train-quality: {exc}") from None
    print("\n".join(threshold_lines(card)))
    print(f"wrote {args.out} (sha256 {card['sha256'][:16]}...) and its card {os.path.splitext(args.out)[0]}.json; use it as "
          f"`{{kind: fasttext, path: {args.out}, label: {card['labels']['positive']}}}` in a classify step")
    return 0
