"""Runs the phases of stages: skips finished tasks, starts the executor lazily (and says so), compiles the
phase's kernels before its tasks (timed apart), reports progress and wall time."""

from __future__ import annotations

import hashlib
import logging
import time

from curate.io import fs
from curate.rundir import RunDir
from curate.runner.executor import make_executor
from curate.runner.ray_executor import Placement
from curate.runner.task import Work
from curate.runner.kernels import cached, warm
from curate.runner.progress import Progress, duration, unit_of
from curate.stages.phase import Phase, PhaseResults

log = logging.getLogger("curate")


class PhaseRunner:
    """One per run. `for_stage(name)` gives a stage the `run_phase(phase)` it executes its phases with."""

    def __init__(self, run: RunDir, progress: Progress, inline: bool, address: str | None, workers: int | None,
                 retries: int, task_memory_mb: int | None, placement: Placement | None = None):
        self.rundir, self.progress = run, progress
        self._executor_args = (inline, address, workers, retries, task_memory_mb, placement)
        self.executor = None  # started on the first task to run: a finished run resumes in no time
        self.wall: dict[str, float] = {}     # seconds this run spent in each stage
        self.compute: dict[str, float] = {}  # task seconds of each stage, every phase, resumed tasks included
        self.compile: dict[str, float] = {}  # seconds this run spent compiling (or loading) each stage's kernels

    def for_stage(self, stage: str, upstream: dict[str, str], inputs: dict[tuple[str, str], str] | None = None):
        """The `run_phase` a stage executes with; `upstream` is, per source, the fingerprint of its results
        before this stage; `inputs`, per (source, shard) of the sources that changed, the digest of what the stage
        reads of that shard (a PER_SHARD stage), so a keyed phase keeps the results of the shards that did not change."""
        return lambda phase: self.run(stage, phase, upstream, inputs)

    def run(self, stage: str, phase: Phase, upstream: dict[str, str] | None = None,
            inputs: dict[tuple[str, str], str] | None = None) -> PhaseResults:
        """Run the phase's tasks that have no marker; return every task's counts in plan order (and how many ran now)."""
        if phase.key is not None:
            self._check_keys(stage, phase, upstream or {}, inputs or {})
        markers = [self.rundir.marker(stage, phase.name, t.key) for t in phase.tasks]
        present = fs.files_under(self.rundir.state(stage, phase.name))  # one listing, not a request per task
        done = {i for i, m in enumerate(markers) if m in present}
        todo = [t for i, t in enumerate(phase.tasks) if i not in done]
        fs.prefetch([markers[i] for i in sorted(done)])   # read at the end, in turn: asked of the disk together now
        if todo and phase.prefetch is not None:
            fs.prefetch(phase.prefetch(todo))
        if todo and self.executor is None:
            self.executor = self._start_executor()
        started = time.monotonic()
        results: dict[str, dict] = {}
        ran = len(todo)
        if todo and phase.restore is not None:   # put back by the driver at once, markers written as a task's would be
            restored = phase.restore(todo)
            marker_of = dict(zip((t.key for t in phase.tasks), markers))
            for task in (t for t in todo if t.key in restored):
                results[task.key] = {**restored[task.key], "seconds": 0.0,
                                     **({"source": task.source, "shard": task.shard} if task.source is not None else {})}
                self.rundir.write_json(marker_of[task.key], results[task.key])
            todo = [t for t in todo if t.key not in restored]
        if todo and phase.kernels:
            self._compile(stage, phase.kernels)
        label = stage if phase.accounts else f"{stage}: {phase.label}"
        self.progress.start(label, len(phase.tasks), len(done) + len(results), unit_of(phase.name, phase.accounts))
        if todo:
            work = Work(stage, phase.name, phase.run, phase.setup, self.rundir, tuple(phase.kernels), phase.concurrent)
            for task, result in self.executor.map(work, todo, phase.resources):
                self.progress.update(result.get("in", 0))
                log.debug("[%s] done: %s in %.2fs%s", label, task.where, result.get("seconds", 0.0),
                          f" on {result['node']}" if result.get("node") else "")
                results[task.key] = result
        self.progress.finish()
        if done and todo and phase.accounts:
            log.info("[%s] %d of %d shards reused, %d new", stage, len(done), len(phase.tasks), len(todo))
        self.wall[stage] = self.wall.get(stage, 0.0) + time.monotonic() - started
        out = PhaseResults(results[t.key] if t.key in results else self.rundir.read_json(markers[i]) for i, t in enumerate(phase.tasks))
        out.ran = ran
        self.compute[stage] = self.compute.get(stage, 0.0) + sum(r.get("seconds", 0.0) for r in out)
        return out

    def _start_executor(self):
        inline, address = self._executor_args[:2]
        if inline:
            return make_executor(*self._executor_args)
        log.info("starting Ray (%s) ...", f"joining {address}" if address else "an embedded local cluster")
        started = time.monotonic()
        executor = make_executor(*self._executor_args)
        log.info("Ray ready in %s: at most %d tasks in flight", duration(time.monotonic() - started), executor.parallelism)
        return executor

    def _compile(self, stage: str, kernels) -> None:
        """Compile the phase's numba kernels here, in the driver, before any task: the time is said and kept
        apart from the tasks', and the workers of this machine then load them from numba's on-disk cache."""
        def say(what: str) -> None:
            log.info("[%s] compiling %s (the first run on a machine takes a while; cached afterwards) ...", stage, what)

        if not self._executor_args[0] and cached(kernels):
            return  # the tasks run on Ray workers, which load the cached kernels themselves
        took = warm(kernels, say)
        if took:
            seconds = sum(took.values())
            self.compile[stage] = self.compile.get(stage, 0.0) + seconds
            log.info("[%s] kernels ready in %.1fs", stage, seconds)

    def _check_keys(self, stage: str, phase: Phase, upstream: dict[str, str], inputs: dict[tuple[str, str], str]) -> None:
        """Per source, discard a keyed phase's markers and outputs when what they depend on changed; where the
        stage keys its shards (`inputs`), only those of the shards whose key changed."""
        path = self.rundir.phase_key(stage, phase.name)
        keys = phase_keys(phase, upstream)
        stored = self.rundir.read_json(path) or {}
        recorded, recorded_shards = stored.get("keys") or {}, stored.get("shards") or {}
        shards = shard_keys(phase, inputs)
        shards = {**{s: k for s, k in recorded_shards.items() if keys.get(s) == recorded.get(s)}, **shards}
        stale = sorted(s for s in set(keys) | set(recorded) if keys.get(s) != recorded.get(s))
        if not stale:
            return
        if again := [s for s in stale if s in recorded]:
            log.info("stage '%s': phase '%s' changed since the last run: recomputing it for %s", stage, phase.label,
                     ", ".join(again))
        for source in stale:
            before, now = recorded_shards.get(source), shards.get(source)
            if before is None or now is None:
                remove_source(self.rundir.state(stage, phase.name), source)
                for output in phase.outputs:
                    remove_source(output, source)
                continue
            on_disk = {p.rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
                       for p in fs.glob(fs.join(self.rundir.state(stage, phase.name), source, "*.json"))}
            for shard in sorted(sh for sh in set(before) | on_disk if sh not in now or before.get(sh) != now[sh]):
                for folder in (self.rundir.state(stage, phase.name), *phase.outputs):
                    remove_shard(folder, source, shard)
            fs.remove(fs.join(self.rundir.state(stage, phase.name), f"{source}.json"))
        self.rundir.write_json(path, {"keys": keys, "shards": {s: v for s, v in shards.items() if s in keys}})

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()


def phase_keys(phase: Phase, upstream: dict[str, str]) -> dict[str, str]:
    """Per source of the phase's tasks ("" for tasks of no source), what its results depend on: the
    phase's key and the source's upstream fingerprint (a per-source key of None depends on neither)."""
    out = {}
    for source in sorted({t.source or "" for t in phase.tasks}):
        key = phase.key.get(source) if isinstance(phase.key, dict) else phase.key
        out[source] = "independent" if key is None else \
            hashlib.sha256(f"{upstream.get(source, '')}\x00{key}".encode()).hexdigest()
    return out


def shard_keys(phase: Phase, inputs: dict[tuple[str, str], str]) -> dict[str, dict[str, str]]:
    """Per source whose every task is a shard with a known input digest: shard -> the phase's key for that shard (its
    own key and what the stage reads of the shard, in place of the whole source's upstream)."""
    by_source: dict[str, dict[str, str]] = {}
    for task in phase.tasks:
        by_source.setdefault(task.source or "", {})[task.shard or ""] = inputs.get((task.source, task.shard)) if task.shard else None
    out = {}
    for source, digests in by_source.items():
        key = phase.key.get(source) if isinstance(phase.key, dict) else phase.key
        if source and key is not None and all(d is not None for d in digests.values()):
            out[source] = {shard: hashlib.sha256(f"{d}\x00{key}".encode()).hexdigest() for shard, d in digests.items()}
    return out


def remove_shard(folder: str, source: str, shard: str) -> None:
    """One shard's part of a folder laid out by source: `<folder>/<source>/<shard>.parquet`, `.json`, or a folder."""
    for name in (f"{shard}.parquet", f"{shard}.json", shard):
        fs.remove(fs.join(folder, source, name))


def remove_source(folder: str, source: str) -> None:
    """A source's part of a folder laid out by source: `<folder>/<source>/` and its whole-source markers
    (`source_markers`; the whole folder for tasks of no source)."""
    if not source:
        fs.remove(folder)
        return
    fs.remove(fs.join(folder, source))
    for path in source_markers(folder, source):
        fs.remove(path)


def source_markers(folder: str, source: str) -> list[str]:
    """The markers of a phase's tasks of a whole source: `<source>.json`, or `<source>.<part>.json` where a source's
    work is in parts (pack's merge: a task per format). Source names have no dots."""
    return [fs.join(folder, f"{source}.json"), *fs.glob(fs.join(folder, f"{source}.*.json"))]
