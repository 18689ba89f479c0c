"""What runs one task in a worker, the same inline, in a Ray task or on a Ray actor.

Kept apart from the executors so that every executor calls the same `call_task`: it runs the task's
function, then writes the task's marker with the counts it returned (so a task is done exactly when its
marker exists), and hands Arrow's freed memory back between tasks. An exception raised by stage code
becomes a one-line `StageError` naming the stage, the input and the cause.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from collections.abc import Callable

import pyarrow as pa

from curate.errors import CurateError, StageError
from curate.io.auth import bucket_of, is_auth_failure
from curate.rundir import RunDir, digests
from curate.stages.phase import Task


def describe(exc: BaseException) -> str:
    """The cause in one line: exception type and message, plus the innermost frame of our code or the user's."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        f = frames[-1]
        where = f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}{where}"


@dataclass(frozen=True)
class Work:
    """What a worker needs for one phase: the stage and phase names (for markers and errors), the function
    and its setup, and the run directory the markers go to; `concurrent`: see `Phase`."""

    stage: str
    phase: str
    run: Callable
    setup: Callable | None
    rundir: RunDir
    kernels: tuple = ()
    concurrent: bool = False

    def prepare(self) -> None:
        """Take in the digests the last run kept (a worker then hashes only files it wrote), compile the phase's
        kernels (outside any task's timer), then its setup."""
        digests.load(self.rundir.digests_file)
        if self.kernels:
            from curate.runner.kernels import warm

            _guarded(self, "compiling its kernels", warm, self.kernels)
        if self.setup is not None:
            _guarded(self, "its worker setup", self.setup)


def _guarded(work: Work, where: str, fn, *args):
    try:
        return fn(*args)
    except CurateError:
        raise
    except Exception as exc:  # stage code failed: say where and why, in one line
        if is_auth_failure(exc):
            bucket = bucket_of(exc)
            raise StageError(work.stage, where, f"the worker on {node_name() or 'this machine'} cannot authenticate to "
                             f"{'bucket ' + repr(bucket) if bucket else 'object storage'} ({describe(exc)}); give every node "
                             "credentials (its environment or instance role), or name the variables in execution.env "
                             "for the driver to forward") from exc
        raise StageError(work.stage, where, describe(exc)) from exc


def node_name() -> str | None:
    """`IP (node abcd1234)` of the Ray node this worker runs on; None in the driver and inline."""
    if "ray" not in sys.modules:
        return None
    import ray

    try:
        if not ray.is_initialized():  # checked first: get_runtime_context() would start (or join) a cluster
            return None
        context = ray.get_runtime_context()
        if context.worker.mode != ray.WORKER_MODE:
            return None
        return f"{ray.util.get_node_ip_address()} (node {context.get_node_id()[:8]})"
    except Exception:  # noqa: BLE001 - only a label for messages and markers
        return None


def call_task(work: Work, task: Task) -> dict:
    """Run one task and write its marker; the marker is the last thing written. On Ray the marker also
    names the node the task ran on."""
    try:
        started = time.monotonic()
        result = dict(_guarded(work, task.where, work.run, task.payload))
        result["seconds"] = round(time.monotonic() - started, 4)
        if task.source is not None:
            result.setdefault("source", task.source)
            result.setdefault("shard", task.shard)
        if node := node_name():
            result["node"] = node
            from curate.stages.resources import assigned_gpus

            if gpus := assigned_gpus():   # where `resources` placed a GPU-asking task or actor
                result["gpus"] = gpus
        _guarded(work, task.where, work.rundir.write_json, work.rundir.marker(work.stage, work.phase, task.key), result)
        return result
    finally:
        _release_memory()


RELEASE_AFTER = 256 << 20
_released_at = 0   # the Arrow pool's total allocations when this process last handed memory back


def _release_memory() -> None:
    """Arrow's allocator keeps freed memory for reuse; a long-lived worker would otherwise hold the peak of every
    task it ever ran. Handed back once RELEASE_AFTER bytes went through the pool since the last time (any task
    that peaked that high), not after every task: the next task's first reads then faulted every page in again,
    which made dedup's small tasks up to twice as slow."""
    global _released_at
    pool = pa.default_memory_pool()
    total = pool.total_bytes_allocated()
    if total - _released_at >= RELEASE_AFTER:
        _released_at = total
        pool.release_unused()


_kept: dict[str, Work] = {}  # this worker's prepared phase, at most one: its key -> its Work, set up


def kept_and_call(boxed: list, task: Task, key: str) -> dict:
    """A Ray task: the worker sets its phase up on its first task of it (setup loads what the tasks share: a model,
    a tokenizer, every docs shard's number) and keeps it for the phase's next tasks that land on it, as an actor
    would, but in the worker that is already warm (imports done, kernels loaded) instead of a new process
    per actor. `boxed` holds the phase's Work as an object reference in a list, which Ray passes as it is: the worker
    loads the Work on its first task of the phase only. Passed plainly, Ray loaded it for every task: ingest's last
    phase's Work is 1.9 MB at 5M documents (the stage holds every shard's counts), 17.5 ms to load, 96 s of CPU
    over its 5,500 tasks. `key` names this phase of this run (the driver makes one per phase); a worker keeps one
    phase only, and drops it (and what its setup loaded) at its next task of another phase."""
    held = _kept.get(key)
    if held is None:
        import ray

        _kept.clear()
        work = ray.get(boxed[0])
        work.prepare()
        held = _kept[key] = work
    return call_task(held, task)


class PhaseActor:
    """Holds one phase's work for its lifetime, so what `setup()` loads is loaded once per actor."""

    def __init__(self, work: Work):
        self.work, self.failed = work, None
        try:
            work.prepare()
        except CurateError as exc:  # reported with the first task, as a clear error rather than a dead actor
            self.failed = exc

    def ready(self) -> bool:
        """Resolves once the actor is placed and its setup ran: only then is it handed tasks."""
        return True

    def run(self, task: Task) -> dict:
        if self.failed is not None:
            raise self.failed
        return call_task(self.work, task)
