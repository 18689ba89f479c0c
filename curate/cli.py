"""The `curate` command: run a pipeline, make the sample corpus."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from curate.errors import CurateError


def _run(args) -> int:
    from curate.config import load_pipeline
    from curate.runner.progress import Progress
    from curate.runner.run import render, run_pipeline

    pipeline = load_pipeline(args.pipeline, args.set)
    output = args.output or pipeline.output or os.path.join("runs", pipeline.name)
    started = time.monotonic()
    logging.getLogger("curate").info("run %s -> %s", args.pipeline, output)
    rows = run_pipeline(pipeline, output, until=args.until, inline=args.inline, address=args.address,
                        workers=args.workers, progress=Progress(quiet=args.quiet))
    print(render(rows))
    print(f"\n{'stopped after ' + args.until if args.until else 'done'} in {time.monotonic() - started:.1f}s; "
          f"outputs in {output} (kept/, ledger/, pipeline.yaml, summary.json)")
    return 0


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
    r.add_argument("pipeline", help="pipeline YAML, e.g. pipelines/zyda2.yaml")
    r.add_argument("--output", "-o", help="run directory (local path or fsspec URI); default: the pipeline's output, else runs/<name>")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a config value, e.g. --set sources.dclm.paths='s3://bucket/dclm/**/*.jsonl.zst'")
    r.add_argument("--until", metavar="STAGE", help="stop after this stage; re-running without it continues")
    r.add_argument("--address", help="Ray cluster to join (e.g. auto); default: RAY_ADDRESS, else an embedded local cluster")
    r.add_argument("--inline", action="store_true", help="run every task in this process (debugging); same outputs")
    r.add_argument("--workers", type=int, metavar="N", help="tasks in flight at once (default: the cluster's CPUs)")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    r.set_defaults(func=_run)

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
    try:
        return args.func(args)
    except CurateError as exc:
        print(f"curate: error: {exc}", file=sys.stderr)
        if os.environ.get("CURATE_DEBUG") and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(exc.__cause__)
        return exc.exit_code
    except KeyboardInterrupt:
        print("curate: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
