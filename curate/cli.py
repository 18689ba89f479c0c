"""The `curate` command: run a pipeline, make the sample corpus."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shutil
import sys
import textwrap
import time

from curate import __version__, terminate
from curate.errors import CurateError, UsageError


def _run(args) -> int:
    from curate import load_pipeline
    from curate.runner.runlog import run_log

    if args.quiet:  # only the final line and errors
        logging.getLogger("curate").setLevel(logging.ERROR)
    elif args.verbose:
        logging.getLogger("curate").setLevel(logging.DEBUG)
    pipeline = load_pipeline(resolve_pipeline(args.pipeline), args.set)
    output = args.output or pipeline.output or os.path.join("runs", pipeline.name)
    # the run directory actually written is what the resolved config (RUN/pipeline.yaml, manifest.json) records
    pipeline = dataclasses.replace(pipeline, output=output, resolved={**pipeline.resolved, "output": _absolute(output)})
    with run_log(_absolute(output)) as log_path:
        return _run_logged(args, pipeline, output, log_path)


def _run_logged(args, pipeline, output: str, log_path: str | None) -> int:
    from curate.runner.progress import Progress
    from curate.rundir import PackRecord, RunDir
    from curate.runner.run import render, run_pipeline, storage_errors
    from curate.runner.summary import compile_note, stage_notes
    from curate.stages import STAGES
    from curate.sample.quickstart import ensure_sample

    started = time.monotonic()
    logging.getLogger("curate").info("run %s -> %s%s", args.pipeline, output, f" (log: {log_path})" if log_path else "")
    progress = Progress(quiet=args.quiet, interval=0.0 if args.verbose else 5.0)
    with storage_errors("sample.dir", (pipeline.sample or {}).get("dir", "")):
        ensure_sample(pipeline.sample, pipeline.uses_sample)  # the quickstart corpus, made once where the recipe reads it
    rows = run_pipeline(pipeline, output, until=args.until, inline=args.inline, address=args.address,
                        workers=args.workers, progress=progress)
    run = RunDir(_absolute(output))
    if not args.quiet:
        print(render(rows))
        steps = [(s.name, STAGES[s.kind]) for s in pipeline.stages]
        for line in compile_note(rows) + stage_notes(run, steps, rows, pipeline.priority):
            print(line)
    report = _report(_absolute(output)) if not args.no_report else None
    packs = [(f"{s.name}/", run.path(s.name)) for s in pipeline.stages if run.find_record(s.name, PackRecord) is not None]
    outputs = [name for name, path in (("kept/", run.path("kept")), *packs, ("ledger/", run.path("ledger")),
                                       ("manifest.json", run.manifest_file), ("report.html", report), ("summary.json", run.summary_file),
                                       ("logs/", run.root if log_path else None)) if path and _exists(path)]
    how = f"stopped after {args.until}" if args.until else "done"
    tail = "; run again without --until to continue" if args.until else ""
    print(f"{'' if args.quiet else chr(10)}{how} in {time.monotonic() - started:.1f}s; outputs in {output} ({', '.join(outputs)}){tail}")
    return 0


def _exists(path: str) -> bool:
    from curate.io import fs

    return fs.exists(path)


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
    raise UsageError(f"{name}: no such pipeline file, and no packaged recipe of that name; "
                      f"packaged recipes: {', '.join(packaged) or 'none'} (curate recipes lists them)")


def _recipes(args) -> int:
    from curate.packaged import describe, filters_dir, pipelines

    width = max(shutil.get_terminal_size((100, 24)).columns, 60)

    def entry(name: str, path) -> str:   # the description whole, wrapped under itself
        return textwrap.fill(describe(path), width, initial_indent=f"  {name:20} ", subsequent_indent=" " * 23,
                             break_on_hyphens=False, break_long_words=False)

    lines = ["pipelines (curate run NAME):", *(entry(name, path) for name, path in pipelines().items()),
             "filter recipes (filter stage `recipes:`):", *(entry(p.stem, p) for p in sorted(filters_dir().glob("*.yaml")))]
    _emit("\n".join(lines))
    return 0


def _emit(text: str) -> None:
    """Print a command's whole answer; a reader that stopped early (`curate recipes | head`) is no error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # the exit's flush finds nothing to write
        except (OSError, ValueError, AttributeError):
            pass


def _options(args) -> int:
    from curate.stages.options_doc import markdown, summary, table
    from curate.stages.registry import STAGES

    if args.stage is None:
        if args.markdown:
            print(markdown())
            return 0
        print("stage kinds (curate options KIND lists its options; --markdown: every option, as docs/options.md):")
        for kind in sorted(STAGES):
            print(f"  {kind:14} {summary(STAGES[kind])}")
        return 0
    if args.stage not in STAGES:
        from curate.common.schema import suggest

        raise UsageError(f"no stage kind {args.stage!r}{suggest(args.stage, list(STAGES))}; `curate options` lists them")
    print(table(STAGES[args.stage].OPTIONS) if STAGES[args.stage].OPTIONS else f"{args.stage}: no options")
    return 0


def _absolute(output: str) -> str:
    return output if "://" in output else os.path.abspath(output)


def _query(args) -> int:
    from curate.query import connect, describe, query

    _require_run(args.run)
    if args.describe:
        _emit(describe(connect(args.run)))
        return 0
    if not args.sql:
        raise UsageError("curate query RUN \"SQL\" (or --describe to list the tables)")
    _emit(query(args.run, args.sql, fmt=args.format, out=args.out, limit=args.limit, width=args.width,
                force=args.force))
    return 0


def _answer(args) -> int:
    """A read-only verb over a run (trace, why, diff): check the run directories, print the module's answer."""
    for run in (args.run, *([args.other] if getattr(args, "other", None) else [])):
        _require_run(run)
    _emit(args.answer(args))
    return 0


def _require_run(run: str) -> None:
    """A command that reads a run is given one: a directory (or URI) with pipeline.yaml, else a usage error."""
    from curate.io import fs
    from curate.rundir import RunDir

    try:
        present = fs.exists(RunDir(_absolute(run)).pipeline_file)
    except Exception:  # noqa: BLE001 - an unreachable store is reported by the command itself, with its cause
        return
    if not present:
        raise UsageError(f"{run}: not a run directory (no pipeline.yaml); run `curate run PIPELINE --output {run}` first")


def _manifest(args) -> int:
    _require_run(args.run)
    if args.action == "verify":
        from curate.manifest.verify import verify

        problems = verify(args.run)
        if problems:
            print(f"{args.run}: {len(problems)} problem(s):", file=sys.stderr)
            for line in problems:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"{args.run}: every file in manifest.json is present and unchanged, and no other file is in the folders it covers")
        return 0
    from curate.manifest.publish import publish

    if not args.dest:
        raise UsageError("curate manifest publish RUN DEST: give the destination (a folder, or s3://bucket/prefix, ...)")
    from curate.rundir.enclosing import enclosing_run

    dest = args.dest.rstrip("/")   # DEST may be a published copy of the run (a retry), never inside a run
    if "://" not in dest:
        parent = os.path.dirname(os.path.realpath(dest))
    else:
        parent = dest.rsplit("/", 1)[0] if "/" in dest.split("://", 1)[1] else None
    if parent and (inside := enclosing_run(parent)):
        raise UsageError(f"curate manifest publish: {args.dest} lies inside the run directory {inside}; "
                         "publish to a folder outside every run")
    report = publish(args.run, args.dest, allow_originals=args.allow_originals)
    print(f"published {report['files']} files ({report['bytes']:,} bytes) to {report['dest']} in {report['seconds']:.1f}s; "
          "manifest.json written last")
    return 0


def _sample(args) -> int:
    from curate.sample import make_sample

    if args.docs < 1:
        raise UsageError(f"--docs: expected a number of documents >= 1, got {args.docs}")
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


def _sub(sub, name: str, summary: str, description: str, epilog: str = "") -> argparse.ArgumentParser:
    """A subcommand whose --help says what it does and shows examples (kept as written)."""
    return sub.add_parser(name, help=summary, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate", description="Build pretraining data: ingest, filter, deduplicate, mix, tokenize.",
                                epilog="curate COMMAND --help explains each command. Exit codes: 0 done, 1 the run or "
                                       "command failed, 2 a usage or configuration error.")
    p.add_argument("--version", action="version", version=f"curate {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _sub(sub, "run", "run (or resume) a pipeline",
             "Run a pipeline into a run directory, or resume it: finished tasks are skipped, changed stages recomputed.\n"
             "Everything printed is also kept in RUN/logs/run-<time>.log.",
             "examples:\n  curate run zyda2                                    # the packaged recipe on its sample corpus\n"
             "  curate run pipelines/zyda2.yaml --output runs/z --inline   # small jobs: no Ray start, faster\n"
             "  curate run zyda2 --set sources.dclm.paths='s3://b/dclm/**/*.jsonl.zst' --until dedup")
    r.add_argument("pipeline", help="pipeline YAML (pipelines/zyda2.yaml), or a packaged recipe's name (zyda2)")
    r.add_argument("--output", "-o", help="run directory (local path or fsspec URI); default: the pipeline's output, else runs/<name>")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a config value, e.g. --set sources.dclm.paths='s3://bucket/dclm/**/*.jsonl.zst'")
    r.add_argument("--until", metavar="STAGE", help="stop after this stage; re-running without it continues")
    r.add_argument("--address", help="Ray cluster to join (e.g. auto); default: RAY_ADDRESS, else an embedded local cluster")
    r.add_argument("--inline", action="store_true", help="run every task in this process: no Ray start, best for small jobs "
                                                         "and debugging; same outputs")
    r.add_argument("--workers", type=int, metavar="N", help="tasks in flight at once (default: the cluster's CPUs; with "
                   "--inline, this machine's cores; --inline --workers 1: one task after another, for pdb)")
    r.add_argument("--quiet", "-q", action="store_true", help="print only the final line (and errors)")
    r.add_argument("--verbose", "-v", action="store_true",
                   help="more detail: a progress line and a line with the input and seconds of every finished task")
    r.add_argument("--no-report", action="store_true", help="do not write RUN/report.html at the end (curate report RUN does)")
    r.set_defaults(func=_run)

    from curate.report.cli import add_parser as add_report_parser

    add_report_parser(sub)

    from curate.trace import add_parser as add_trace_parser
    from curate.diff import add_parser as add_diff_parser
    from curate.why import add_parser as add_why_parser

    for add in (add_why_parser, add_trace_parser, add_diff_parser):
        add(sub).set_defaults(func=_answer)   # each verb's module gives its arguments and `answer(args) -> text`

    c = _sub(sub, "recipes", "list the pipelines and filter recipes that ship with curate",
             "List the pipelines (curate run NAME) and the filter recipes (a filter step's `recipes:`) that ship inside curate.")
    c.set_defaults(func=_recipes)

    o = _sub(sub, "options", "list the stage kinds, or every option of one, with types, defaults and bounds",
             "Every option a step of that kind takes, as the pipeline loader checks it (type, default, range, choices).",
             "examples:\n  curate options\n  curate options dedup\n  curate options --markdown > docs/options.md")
    o.add_argument("stage", nargs="?", help="a stage kind (dedup, pii, ...)")
    o.add_argument("--markdown", action="store_true", help="every option of sources, execution and every stage kind")
    o.set_defaults(func=_options)

    q = _sub(sub, "query", "SQL (DuckDB) over a run: docs, kept, ledger, signals, clusters",
             "Run one SQL query (DuckDB) over a run's tables, as views: docs, kept, signals, scores, dual_use, quarantine\n"
             "(each with a `source` column), ledger, clusters, tokens; --describe lists them with their columns.",
             "examples:\n  curate query runs/zyda2 --describe\n"
             "  curate query runs/zyda2 \"SELECT source, reason, count(*) FROM ledger GROUP BY ALL\"\n"
             "  curate query runs/zyda2 \"SELECT id, text FROM kept LIMIT 3\" --width 0\n"
             "  curate query runs/zyda2 \"SELECT * FROM kept WHERE source = 'dclm'\" --format json --out dclm.jsonl")
    q.add_argument("run", help="run directory (local path or fsspec URI)")
    q.add_argument("sql", nargs="?", help='e.g. "SELECT stage, reason, count(*) FROM ledger GROUP BY ALL"')
    q.add_argument("--describe", action="store_true", help="list the tables and their columns")
    q.add_argument("--format", choices=["table", "csv", "json", "parquet"], default="table")
    q.add_argument("--out", help="write the result to this file instead of printing it (never inside a run directory)")
    q.add_argument("--force", action="store_true", help="with --out: replace the file if it exists")
    q.add_argument("--limit", type=int, default=200, help="rows shown in table format (0: all)")
    q.add_argument("--width", type=int, default=100, metavar="CHARS",
                   help="table format: cut cells longer than this with '...' (default 100; 0: never cut)")
    q.set_defaults(func=_query)

    m = _sub(sub, "manifest", "verify a run's manifest, or publish a run to any fsspec destination",
             "verify: re-hash every file manifest.json lists; exit 1 naming each missing or changed file, and each file\n"
             "  in the folders it covers (kept/, ledger/, edits/, tokens/) that it does not list.\n"
             "publish: copy the run's outputs to DEST (local folder or fsspec URI), check them there, write manifest.json last.",
             "examples:\n  curate manifest verify runs/zyda2\n  curate manifest publish runs/zyda2 s3://bucket/mixtures/zyda2")
    m.add_argument("action", choices=["verify", "publish"])
    m.add_argument("run", help="run directory (local path or fsspec URI)")
    m.add_argument("dest", nargs="?", help="publish: destination (local folder, s3://bucket/prefix, ...)")
    m.add_argument("--allow-originals", action="store_true",
                   help="publish: also publish span files that keep the replaced originals (keep_original: true: PII)")
    m.set_defaults(func=_manifest)

    from curate.train_quality import add_parser as add_train_parser

    add_train_parser(sub, _sub)

    s = _sub(sub, "sample", "make the offline sample corpus (all four Zyda-2 sources in native formats)",
             "Make the offline sample corpus the zyda2 recipe runs on: FineWeb-Edu parquet, DCLM jsonl.zst, Zyda parquet and\n"
             "Dolma json.gz, with planted duplicates, junk, non-English pages and bad records. Also writes expected.json\n"
             "(records per source, bad records by kind) and truth.json (the planted duplicate groups, languages, junk).",
             "example:\n  curate sample /tmp/corpus --docs 600 && CURATE_SAMPLE=/tmp/corpus curate run zyda2 --inline")
    s.add_argument("dir", nargs="?", default=".curate-sample", help="the folder to write (default .curate-sample)")
    s.add_argument("--docs", type=int, default=4000, help="documents over all sources (default 4000)")
    s.add_argument("--seed", type=int, default=0, help="random seed: the same seed makes the same corpus")
    s.set_defaults(func=_sample)
    return p


def entry() -> None:
    """The `curate` command (and `python -m curate`): `main`, then an exit that skips the interpreter's teardown
    of every module (numba's compiled code, Arrow, pandas: ~0.25 s after the work is done). What that teardown
    would still do for us is done first: output flushed, log files closed, atexit handlers run."""
    code = main()
    import atexit

    logging.shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`curate ... | head`): nothing left to write to
            pass
    os._exit(code)


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
