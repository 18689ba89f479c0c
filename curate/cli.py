"""The `curate` command: run a pipeline, make the sample corpus."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from curate import terminate
from curate.errors import CurateError


def _run(args) -> int:
    from curate import load_pipeline
    from curate.runner.progress import Progress
    from curate.rundir import RunDir
    from curate.runner.run import render, run_pipeline
    from curate.runner.summary import model_notes

    if args.quiet:  # only the final line and errors
        logging.getLogger("curate").setLevel(logging.ERROR)
    pipeline = load_pipeline(resolve_pipeline(args.pipeline), args.set)
    output = args.output or pipeline.output or os.path.join("runs", pipeline.name)
    started = time.monotonic()
    logging.getLogger("curate").info("run %s -> %s", args.pipeline, output)
    rows = run_pipeline(pipeline, output, until=args.until, inline=args.inline, address=args.address,
                        workers=args.workers, progress=Progress(quiet=args.quiet))
    if not args.quiet:
        print(render(rows))
        for line in model_notes(RunDir(_absolute(output)), [s.name for s in pipeline.stages], rows, pipeline.priority):
            print(line)
    report = _report(_absolute(output)) if not args.no_report else None
    print(f"{'' if args.quiet else chr(10)}{'stopped after ' + args.until if args.until else 'done'} in {time.monotonic() - started:.1f}s; "
          f"outputs in {output} (kept/, ledger/, {'report.html, ' if report else ''}summary.json)")
    return 0


def _report(run: str) -> str | None:
    """RUN/report.html after every run; a report that cannot be written never fails the run."""
    from curate.report import write_report

    try:
        return write_report(run)
    except Exception as exc:  # noqa: BLE001 - the run's outputs are complete; say why the page is missing
        logging.getLogger("curate").warning("report.html not written: %s", exc)
        return None


def resolve_pipeline(name: str) -> str:
    """A pipeline file, or the name of a recipe that ships with curate (`curate run zyda2`)."""
    from curate.packaged import pipelines

    if os.path.exists(name) or os.sep in name or name.endswith((".yaml", ".yml")):
        return name
    packaged = pipelines()
    if name in packaged:
        return str(packaged[name])
    raise CurateError(f"{name}: no such pipeline file, and no packaged recipe of that name; "
                      f"packaged recipes: {', '.join(packaged) or 'none'} (curate recipes lists them)")


def _recipes(args) -> int:
    from curate.packaged import describe, filters_dir, pipelines

    print("pipelines (curate run NAME):")
    for name, path in pipelines().items():
        print(f"  {name:20} {describe(path)}")
    print("filter recipes (filter stage `recipes:`):")
    for path in sorted(filters_dir().glob("*.yaml")):
        print(f"  {path.stem:20} {describe(path)}")
    return 0


def _absolute(output: str) -> str:
    return output if "://" in output else os.path.abspath(output)


def _query(args) -> int:
    from curate.query import connect, describe, query

    if args.describe:
        print(describe(connect(args.run)))
        return 0
    if not args.sql:
        raise CurateError("curate query RUN \"SQL\" (or --describe to list the tables)")
    print(query(args.run, args.sql, fmt=args.format, out=args.out, limit=args.limit))
    return 0


def _manifest(args) -> int:
    if args.action == "verify":
        from curate.manifest.verify import verify

        problems = verify(args.run)
        if problems:
            print(f"{args.run}: {len(problems)} problem(s):", file=sys.stderr)
            for line in problems:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"{args.run}: every file in manifest.json is present and unchanged")
        return 0
    from curate.manifest.publish import publish

    if not args.dest:
        raise CurateError("curate manifest publish RUN DEST")
    report = publish(args.run, args.dest)
    print(f"published {report['files']} files ({report['bytes']:,} bytes) to {report['dest']} in {report['seconds']:.1f}s; "
          "manifest.json written last")
    return 0


def _train_quality(args) -> int:
    from curate.models.examples import texts_from
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


def _sample(args) -> int:
    from curate.sample import make_sample

    expected = make_sample(args.dir, docs=args.docs, seed=args.seed)
    for source, counts in expected.items():
        print(f"{source}: {counts}")
    return 0


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (so redirections and test captures see it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def _configure_logging() -> None:
    log = logging.getLogger("curate")
    log.setLevel(logging.INFO)
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
    log.propagate = False


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description="Build pretraining data: ingest, filter, deduplicate, mix, tokenize.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run (or resume) a pipeline")
    r.add_argument("pipeline", help="pipeline YAML (pipelines/zyda2.yaml), or a packaged recipe's name (zyda2)")
    r.add_argument("--output", "-o", help="run directory (local path or fsspec URI); default: the pipeline's output, else runs/<name>")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a config value, e.g. --set sources.dclm.paths='s3://bucket/dclm/**/*.jsonl.zst'")
    r.add_argument("--until", metavar="STAGE", help="stop after this stage; re-running without it continues")
    r.add_argument("--address", help="Ray cluster to join (e.g. auto); default: RAY_ADDRESS, else an embedded local cluster")
    r.add_argument("--inline", action="store_true", help="run every task in this process (debugging); same outputs")
    r.add_argument("--workers", type=int, metavar="N", help="tasks in flight at once (default: the cluster's CPUs)")
    r.add_argument("--quiet", "-q", action="store_true", help="print only the final line (and errors)")
    r.add_argument("--no-report", action="store_true", help="do not write RUN/report.html at the end (curate report RUN does)")
    r.set_defaults(func=_run)

    from curate.report.cli import add_parser as add_report_parser

    add_report_parser(sub)

    c = sub.add_parser("recipes", help="list the pipelines and filter recipes that ship with curate")
    c.set_defaults(func=_recipes)

    q = sub.add_parser("query", help="SQL (DuckDB) over a run: docs, kept, ledger, signals, clusters")
    q.add_argument("run", help="run directory (local path or fsspec URI)")
    q.add_argument("sql", nargs="?", help='e.g. "SELECT stage, reason, count(*) FROM ledger GROUP BY ALL"')
    q.add_argument("--describe", action="store_true", help="list the tables and their columns")
    q.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    q.add_argument("--out", help="write the result to this file instead of printing it")
    q.add_argument("--limit", type=int, default=200, help="rows shown in table format (0: all)")
    q.set_defaults(func=_query)

    m = sub.add_parser("manifest", help="verify a run's manifest, or publish a run to any fsspec destination")
    m.add_argument("action", choices=["verify", "publish"])
    m.add_argument("run", help="run directory (local path or fsspec URI)")
    m.add_argument("dest", nargs="?", help="publish: destination (local folder, s3://bucket/prefix, ...)")
    m.set_defaults(func=_manifest)

    t = sub.add_parser("train-quality", help="train a fastText quality classifier (DCLM-style) from examples")
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
    t.set_defaults(func=_train_quality)

    s = sub.add_parser("sample", help="make the offline sample corpus (all four Zyda-2 sources in native formats)")
    s.add_argument("dir", nargs="?", default=".curate-sample")
    s.add_argument("--docs", type=int, default=4000)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_sample)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "workers", None) is not None and args.workers < 1:
        print("curate: error: --workers: expected an integer >= 1", file=sys.stderr)
        return 2
    _configure_logging()
    terminate.install()
    try:
        return args.func(args)
    except CurateError as exc:
        print(f"curate: error: {exc}", file=sys.stderr)
        if os.environ.get("CURATE_DEBUG") and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(exc.__cause__)
        return exc.exit_code
    except terminate.Terminated:
        print("curate: terminated (SIGTERM); every finished task is kept: re-run the same command to resume", file=sys.stderr)
        return terminate.EXIT_CODE
    except KeyboardInterrupt:
        print("curate: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
