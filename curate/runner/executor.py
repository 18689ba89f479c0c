"""Run a stage's tasks: as Ray tasks (local embedded cluster or a remote one), or inline for debugging.

Both executors call the same `call_task`, so a stage behaves the same way in both. Ray retries a task
whose worker died (`max_retries`); an exception raised by stage code is never retried and stops the run
with a `StageError` naming the stage, the input and the cause.
"""

from __future__ import annotations

import logging
import os
import traceback
from typing import Iterable, Iterator

import pyarrow as pa

from curate.errors import CurateError, StageError
from curate.runner.tasks import Task

log = logging.getLogger("curate")


def describe(exc: BaseException) -> str:
    """The cause in one line: exception type and message, plus the innermost frame of our code or the user's."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        f = frames[-1]
        where = f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}{where}"


def call_task(stage, task: Task):
    try:
        return stage.run_task(task)
    except CurateError:
        raise
    except Exception as exc:  # stage code failed: say where and why, in one line
        raise StageError(stage.name, task.where, describe(exc)) from exc
    finally:
        # Arrow's allocator keeps freed memory for reuse; a long-lived worker would otherwise hold the
        # peak of every task it ever ran. Hand it back between tasks.
        pa.default_memory_pool().release_unused()


class _StageActor:
    """Holds one stage object for its lifetime, so a model it loads is loaded once per actor."""

    def __init__(self, stage):
        self.stage = stage

    def run(self, task: Task):
        return call_task(self.stage, task)


class InlineExecutor:
    """Runs tasks one after another in this process: same code path, easy to debug with pdb."""

    name = "inline"
    parallelism = 1

    def map(self, stage, tasks: Iterable[Task], resources: dict | None = None) -> Iterator[tuple[Task, object]]:
        for task in tasks:
            yield task, call_task(stage, task)

    map_actors = map

    def close(self) -> None:
        pass


class RayExecutor:
    """Runs tasks on Ray with at most `workers` in flight; starts an embedded local cluster by default."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, retries: int = 3,
                 task_memory_mb: int | None = None):
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        import ray

        self.ray = ray
        address = address or os.environ.get("RAY_ADDRESS") or None
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, logging_level=logging.WARNING, log_to_driver=True)
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), **kwargs)
        self.retries = retries
        self.parallelism = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        options = {"max_retries": retries, "retry_exceptions": False, "num_cpus": 1}
        if task_memory_mb:
            options["memory"] = task_memory_mb * 1024 * 1024
        self.remote = ray.remote(call_task).options(**options)

    def map(self, stage, tasks: Iterable[Task], resources: dict | None = None) -> Iterator[tuple[Task, object]]:
        ray = self.ray
        remote = self.remote.options(**resources) if resources else self.remote
        stage_ref = ray.put(stage)
        pending: dict = {}
        queue = list(tasks)
        queue.reverse()
        try:
            while queue or pending:
                while queue and len(pending) < self.parallelism:
                    task = queue.pop()
                    pending[remote.remote(stage_ref, task)] = task
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    task = pending.pop(ref)
                    yield task, self._get(ref, stage, task)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def map_actors(self, stage, tasks: Iterable[Task], resources: dict | None = None) -> Iterator[tuple[Task, object]]:
        """Like `map`, on a pool of actors that each hold one copy of the stage (and its loaded model)."""
        ray = self.ray
        resources = self._placeable(stage, dict(resources or {}))
        actor_cls = ray.remote(_StageActor).options(max_restarts=self.retries, max_task_retries=self.retries,
                                                     **({"num_cpus": 1} | resources))
        queue = list(tasks)
        queue.reverse()
        actors = [actor_cls.remote(stage) for _ in range(min(self.parallelism, len(queue)))]
        idle, pending = list(actors), {}
        try:
            while queue or pending:
                while queue and idle:
                    actor, task = idle.pop(), queue.pop()
                    pending[actor.run.remote(task)] = (task, actor)
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    task, actor = pending.pop(ref)
                    idle.append(actor)
                    yield task, self._get(ref, stage, task)
        finally:
            for actor in actors:
                ray.kill(actor)

    def _placeable(self, stage, resources: dict) -> dict:
        """Drop a GPU request the cluster cannot meet, so the stage runs on CPUs instead of waiting forever."""
        if resources.get("num_gpus") and not self.ray.cluster_resources().get("GPU"):
            log.warning("stage '%s' asks for GPUs but the cluster has none: running it on CPUs", stage.name)
            resources.pop("num_gpus")
        return resources

    def _get(self, ref, stage, task: Task):
        ray = self.ray
        try:
            return ray.get(ref)
        except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError) as exc:
            if isinstance(exc, ray.exceptions.RayActorError) and not isinstance(exc, ray.exceptions.RayTaskError):
                raise StageError(stage.name, task.where, f"the actor died and {self.retries} restarts did not help") from None
            cause = getattr(exc, "cause", None)
            if isinstance(cause, CurateError):
                raise cause from None
            raise StageError(stage.name, task.where, describe(cause) if cause else str(exc).splitlines()[0]) from None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            raise StageError(stage.name, task.where, f"the worker died and {self.retries} retries did not help ({type(exc).__name__})") from None
        except ray.exceptions.OutOfMemoryError:
            raise StageError(stage.name, task.where, "the task ran out of memory; lower execution.batch_rows or task_size_mb, or raise execution.task_memory_mb") from None

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()


def make_executor(inline: bool, address: str | None, workers: int | None, retries: int, task_memory_mb: int | None):
    if inline:
        return InlineExecutor()
    return RayExecutor(address=address, workers=workers, retries=retries, task_memory_mb=task_memory_mb)
