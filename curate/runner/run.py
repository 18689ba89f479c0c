"""Run a pipeline: plan each stage, skip finished tasks, run the rest, check the accounting, report.

Each stage's results are fingerprinted per source (`resume.py`): its options, what it reads (file
contents included) and the results before it; what changed is recomputed, for the sources it changed
for, and the stages after it follow. Outputs of steps the pipeline no longer has are removed
(`stale.py`). Nothing in the run directory changes before the pipeline, its files and its inputs
have been checked: a refused run leaves the directory as it was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextlib import contextmanager

import yaml

from curate.config.chain import check_removals_before_tokens
from curate.config.pipeline import Pipeline
from curate.errors import ConfigError, CurateError
from curate.io import fs
from curate.rundir import RunDir, aggregate, digests
from curate.rundir.lock import RunLock
from curate.rundir.layout import PIPELINE_HEADER
from curate.io.auth import bucket_of, is_auth_failure
from curate.runner.ray_executor import Placement
from curate.runner.task import describe
from curate.runner.phaserunner import PhaseRunner
from curate.runner.progress import Progress
from curate.runner.runlog import mark_started
from curate.runner.resume import compare, settle, upstream_of
from curate.runner.migrate import migrate
from curate.runner.shardkeys import ShardInputs
from curate.runner.stale import remove_stale
from curate.runner.summary import render, stage_flags
from curate.stages import STAGES
from curate.stages.kept import KeptStage
from curate.stages.reads import clear_cache

log = logging.getLogger("curate")


def build_stages(pipeline: Pipeline, run: RunDir, until: str | None, registry: Mapping[str, type] = STAGES):
    """The pipeline's steps as stage objects, then `kept` (before a final step such as the manifest); with
    `until`, the steps up to that one. `registry`: the stage classes by kind (tests add classes of their own)."""
    names = [s.name for s in pipeline.stages]
    if until is not None and until not in names + ["kept"]:
        raise ConfigError("--until", until, f"no such stage; stages are {', '.join(names)}")
    check_removals_before_tokens(pipeline.stages, registry, pipeline.file, until)
    stages, removing = [], []
    for cfg in pipeline.stages:
        cls = registry[cfg.kind]
        stages.append(cls(cfg.name, cfg.options, pipeline, run, list(removing), dict(cfg.upstream)))
        if cls.REMOVES or cls.EDITS:   # later steps read what it left: fewer documents, or edited text
            removing.append(cfg.name)
        if cfg.name == until:
            return stages
    final = stages.pop() if stages and stages[-1].FINAL else None
    stages.append(KeptStage("kept", {}, pipeline, run, removing, {"docs": pipeline.stages[0].name}))
    if final is not None:  # the manifest describes the kept documents too, so it comes after them
        stages.append(final)
    return stages


def placement(pipeline: Pipeline, run: RunDir) -> Placement:
    """What the run asks of a Ray cluster: its local paths (output, inputs, model and term files), which a
    cluster of several nodes refuses unless `execution.shared_fs`, and the variables to forward."""
    local = [("--output", run.root)] if fs.is_local(fs.filesystem(run.root)[0]) else []
    for source in pipeline.sources.values():
        local += [(f"sources.{source.name}.paths", p) for p in source.paths if "://" not in p]
    for step in pipeline.stages:
        local += [(f"stages.{step.name}.{key}", value) for key, value in _option_paths(step.options, "")
                  if "://" not in value and os.path.exists(value)]
    ex = pipeline.execution
    return Placement(tuple(local), ex["shared_fs"], tuple(ex["env"]), run.root)


def _option_paths(options, prefix: str):
    """(key path, value) of every `path`, `tokenizer` or `terms` string in a step's options (models, ...)."""
    if isinstance(options, dict):
        for key, value in options.items():
            name = f"{prefix}{key}"
            if isinstance(value, str) and key in ("path", "tokenizer", "terms"):
                yield name, value
            else:
                yield from _option_paths(value, name + ".")


def run_pipeline(pipeline: Pipeline, output: str, until: str | None = None, inline: bool = False,
                 address: str | None = None, workers: int | None = None, progress: Progress | None = None) -> list[dict]:
    """Run (or resume) `pipeline` into `output`; returns the summary rows."""
    run = RunDir(output if "://" in output else os.path.abspath(output))
    if os.path.isfile(run.root):
        raise CurateError(f"--output {output}: is a file; give a directory (it is made if missing) or an fsspec URI")
    progress = progress or Progress()
    clear_cache()
    digests.clear_cache()
    digests.load(run.digests_file)
    stages = build_stages(pipeline, run, until)
    for stage in stages:
        stage.preflight()
    first = stages[0].plan()  # expands every source's globs: a glob that matches nothing stops here, before any write
    lock = RunLock(run)
    with storage_errors("--output", run.root):  # the first write: an unreachable store or bucket says so here
        lock.acquire()
    try:
        return _run_locked(pipeline, run, stages, first, until, inline, address, workers, progress)
    finally:
        lock.release()


@contextmanager
def storage_errors(what: str, path: str):
    """A store that cannot be reached (no bucket, no endpoint, no credentials) as one line naming the path."""
    try:
        yield
    except CurateError:
        raise
    except Exception as exc:  # noqa: BLE001 - botocore, gcsfs and OSError alike become the one line a user reads
        if is_auth_failure(exc):
            bucket = bucket_of(exc)
            raise CurateError(f"{what} {path}: this machine cannot authenticate to "
                              f"{'bucket ' + repr(bucket) if bucket else 'the object store'} ({describe(exc)})") from None
        raise CurateError(f"{what} {path}: cannot be read or written: {describe(exc)}") from None


def _run_locked(pipeline, run, stages, first, until, inline, address, workers, progress) -> list[dict]:
    if removed := fs.remove_temporaries(run.root):
        log.info("removed %d temporary files that an interrupted run left behind", removed)
    migrate(run, pipeline, STAGES)   # a run of an earlier version: its token files move under their steps, once
    ex = pipeline.execution
    runner = PhaseRunner(run, progress, inline, address, workers or ex["workers"], ex["retries"], ex["task_memory_mb"],
                         placement(pipeline, run))
    try:
        done: dict[str, dict[str, str]] = {}
        inputs = ShardInputs(run, {s.name: s for s in stages})
        described = False  # the run directory is changed only once a result no longer holds
        for i, stage in enumerate(stages):
            tasks = first if i == 0 else stage.plan()
            stage.check(tasks)  # a refusal here (a predicate naming an unknown column) has changed nothing yet
            upstream = upstream_of(stage, done, pipeline.sources)
            settlement = compare(run, stage, upstream, tasks, inputs)
            if not described and (settlement.any or stage.FINAL):
                described = record_pipeline(run, pipeline)
            settle(run, settlement)
            done[stage.name] = settlement.fingerprints
            stage.holds = not settlement.any and bool((run.read_json(run.stage_file(stage.name)) or {}).get("complete"))
            stage.execute(tasks, runner.for_stage(stage.name, upstream, settlement.inputs))
            if stage.keyed_tables():
                run.publish_tables(stage.name, stage.keyed_tables())
            state = run.read_json(run.stage_file(stage.name))
            if not state.get("complete"):
                run.write_json(run.stage_file(stage.name), {**state, "complete": True})
        if not described:
            record_pipeline(run, pipeline)
        if until is not None:
            settle_later(pipeline, run, done, until)
    finally:
        runner.close()
    digests.save(run.digests_file)   # (not in `finally`: a refused or failed run writes nothing of it)
    rows = stage_flags(run, [(s.name, type(s)) for s in stages],
                       aggregate([(s.name, run.markers(s.name)) for s in stages], pipeline.priority, runner.wall, runner.compute,
                                 runner.compile))
    run.write_json(run.summary_file, rows)
    if until is None and not rows:
        raise CurateError("the run produced no accounting rows")
    return rows


def record_pipeline(run: RunDir, pipeline: Pipeline) -> bool:
    """Before the first result changes: remove what the pipeline no longer has, and write pipeline.yaml. From
    here on the run's log is kept in RUN/logs/ (a run refused before changing anything leaves no trace)."""
    mark_started(run.root)
    remove_stale(run, pipeline, STAGES)
    fs.write_bytes(run.pipeline_file, (f"{PIPELINE_HEADER}{pipeline.file}; pipeline hash {pipeline.hash()}\n"
                                       + yaml.safe_dump(pipeline.resolved, sort_keys=False)).encode())
    return True


def settle_later(pipeline: Pipeline, run: RunDir, done: dict[str, dict[str, str]], until: str) -> None:
    """With --until, the steps after it keep only the results that still hold for what ran now: a source
    whose results upstream changed loses its results there (the next run without --until makes them)."""
    try:
        later = build_stages(pipeline, run, None)
    except ConfigError:  # the whole pipeline cannot run as it is: the next run says so, before any work
        return
    for stage in later[[s.name for s in later].index(until) + 1:]:
        try:
            tasks = stage.plan()
        except (OSError, CurateError):  # what it plans from is not there: nothing of it can hold
            for path in stage.owned_paths():
                fs.remove(path)
            done[stage.name] = dict.fromkeys(pipeline.sources, "not planned")
            continue
        settlement = compare(run, stage, upstream_of(stage, done, pipeline.sources), tasks)
        settle(run, settlement, running=False)
        done[stage.name] = settlement.fingerprints


__all__ = ["run_pipeline", "render"]
