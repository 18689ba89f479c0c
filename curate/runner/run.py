"""Run a pipeline: plan each stage, skip finished tasks, run the rest, check the accounting, report.

Each stage's fingerprint covers its options, its planned inputs and everything upstream; when it
changes (a threshold edited, inputs added), that stage's outputs are discarded and recomputed, and the
stages after it follow. A stage the pipeline no longer has is removed from the run directory.
"""

from __future__ import annotations

import logging
import os
import time

import yaml

from curate.config.pipeline import Pipeline
from curate.errors import ConfigError, CurateError
from curate.io import fs
from curate.runner.progress import Progress
from curate.runner.rundir import RunDir
from curate.runner.summary import aggregate, render
from curate.runner.taskrunner import TaskRunner
from curate.stages import STAGES
from curate.stages.kept import KeptStage

log = logging.getLogger("curate")


def build_stages(pipeline: Pipeline, run: RunDir, until: str | None):
    names = [s.name for s in pipeline.stages]
    if until is not None and until not in names + ["kept"]:
        raise ConfigError("--until", until, f"no such stage; stages are {', '.join(names)}")
    stages, previous = [], []
    for cfg in pipeline.stages:
        stages.append(STAGES[cfg.kind](cfg.name, cfg.options, pipeline, run, list(previous)))
        previous.append(cfg.name)
        if cfg.name == until:
            return stages
    final = stages.pop() if stages and pipeline.stages[-1].kind == "manifest" else None
    stages.append(KeptStage("kept", {}, pipeline, run, [n for n in previous if final is None or n != final.name]))
    if final is not None:  # the manifest describes the kept documents too, so it comes after them
        stages.append(final)
    return stages


def ensure_sample(pipeline: Pipeline) -> None:
    """Make the quickstart corpus when the pipeline still points into `sample.dir` and it is not there yet."""
    sample = pipeline.sample
    if not sample:
        return
    root = os.path.normpath(sample["dir"])
    uses = any(os.path.normpath(p).startswith(root + os.sep) for s in pipeline.sources.values() for p in s.paths)
    if not uses or os.path.exists(os.path.join(root, "_SUCCESS")):
        return
    from curate.sample import make_sample

    log.info("making the sample corpus in %s (%d documents, seed %d) ...", root, sample["docs"], sample["seed"])
    started = time.monotonic()
    make_sample(root, docs=sample["docs"], seed=sample["seed"])
    log.info("sample corpus ready in %.1fs", time.monotonic() - started)


def _remove_stale(run: RunDir, keep: set[str]) -> None:
    for kind in ("_state", "ledger"):
        for path in fs.glob(run.path(kind, "*")):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name not in keep:
                log.info("removing outputs of stage '%s', which the pipeline no longer has", name)
                fs.remove(path)


def run_pipeline(pipeline: Pipeline, output: str, until: str | None = None, inline: bool = False,
                 address: str | None = None, workers: int | None = None, progress: Progress | None = None) -> list[dict]:
    """Run (or resume) `pipeline` into `output`; returns the summary rows."""
    run = RunDir(output if "://" in output else os.path.abspath(output))
    progress = progress or Progress()
    ensure_sample(pipeline)
    stages = build_stages(pipeline, run, until)
    _remove_stale(run, {s.name for s in pipeline.stages} | {"kept"})
    fs.write_bytes(run.path("pipeline.yaml"), (f"# resolved from {pipeline.file}; pipeline hash {pipeline.hash()}\n"
                                               + yaml.safe_dump(pipeline.resolved, sort_keys=False)).encode())
    ex = pipeline.execution
    runner = TaskRunner(progress, inline, address, workers or ex["workers"], ex["retries"], ex["task_memory_mb"])
    try:
        upstream = ""
        for stage in stages:
            tasks = stage.plan()
            fingerprint = stage.fingerprint(upstream, tasks)
            recorded = run.read_json(run.stage_file(stage.name)) or {}
            if recorded.get("fingerprint") not in (None, fingerprint):
                log.info("stage '%s' changed since the last run: recomputing it", stage.name)
                for path in stage.owned_paths():
                    fs.remove(path)
            run.write_json(run.stage_file(stage.name), {"fingerprint": fingerprint, "complete": False})
            stage.execute(tasks, runner)
            run.write_json(run.stage_file(stage.name), {"fingerprint": fingerprint, "complete": True})
            upstream = fingerprint
    finally:
        runner.close()
    rows = aggregate([(s.name, run.markers(s.name)) for s in stages], pipeline.priority, runner.wall)
    run.write_json(run.path("summary.json"), rows)
    if until is None and not rows:
        raise CurateError("the run produced no accounting rows")
    return rows


__all__ = ["run_pipeline", "render"]
