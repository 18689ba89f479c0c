"""The Ray executor: runs a phase's tasks as Ray tasks or on Ray actors, on a local embedded cluster or a
remote one, with at most `workers` in flight.

Ray retries a task whose worker or node died (`max_retries`), on the nodes that remain; an exception
raised by stage code is never retried and stops the run with a `StageError` naming the stage, the input
and the cause. Joining a cluster and what a cluster must offer are in cluster.py; the embedded local
cluster in embedded.py; what runs in the worker in task.py.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from collections.abc import Iterable, Iterator

from curate import terminate
from curate.errors import CurateError, StageError
from curate.io.process import usable_cores
from curate.plugins import by_value
from curate.runner import cluster, embedded
from curate.runner.task import PhaseActor, Work, describe, kept_and_call
from curate.runner.watcher import Watcher
from curate.stages.phase import Task
from curate.stages.resources import Resources

log = logging.getLogger("curate")


@dataclass(frozen=True)
class Placement:
    """What the run asks of a cluster: `local_paths` ((what, path) of the output and inputs on a local disk,
    refused on several nodes unless `shared_fs`), and `env`, variables the driver forwards to the workers."""

    local_paths: tuple = ()
    shared_fs: bool = False
    env: tuple = ()
    run: str = ""  # the run directory, named when a lost head ends the run


class RayExecutor:
    """Runs tasks on Ray with at most `workers` in flight; starts an embedded local cluster by default.

    A task lost with its worker or node is retried by Ray (`retries`) on the nodes that remain; an actor
    lost with its node is replaced where the cluster has room, and its task goes to another actor. Only
    `workers` tasks are in flight at once, whatever the number of tasks: the driver holds their refs and
    small count dicts, never document data."""

    name = "ray"
    WAIT_SECONDS = 2.0
    NODES_SECONDS = 5.0

    def __init__(self, address: str | None = None, workers: int | None = None, retries: int = 3,
                 task_memory_mb: int | None = None, placement: Placement | None = None):
        placement = placement or Placement()
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ.setdefault("RAY_DEDUP_LOGS", "1")
        import ray

        by_value(ray.cloudpickle)  # a pipeline's `plugins:` travel with its tasks: workers need not import them
        self.ray, self.watcher, self.head_lost = ray, None, False
        address = address or os.environ.get("RAY_ADDRESS") or None
        forward = cluster.runtime_env(list(placement.env))
        self.owns, self.session = not ray.is_initialized(), None  # session: the embedded cluster's, when curate started one
        if self.owns:
            kwargs = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": True}
            if address:
                cluster.join(address, forward, **kwargs)
                self.watcher = Watcher(None, _gcs_address(ray), placement.run)
            else:  # "local": our own embedded cluster, even when another one runs on this machine
                self.session = embedded.start(workers or usable_cores(), **kwargs)
                self.watcher = Watcher(self.session, None, placement.run)
            terminate.install()  # ray.init put its own SIGTERM handler in place of curate's
        alive = cluster.alive_nodes()
        self.nodes, self.node_ids, self.nodes_checked = len(alive), {n["NodeID"][:8] for n in alive}, time.monotonic()
        try:
            cluster.check_paths(self.nodes, list(placement.local_paths), placement.shared_fs)
        except CurateError:
            self.close()
            raise
        self.head = cluster.HeadWatch(_gcs_address(ray) if address else None)
        self.retries, self.task_memory_mb = retries, task_memory_mb
        self.parallelism = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        # Tasks submitted at once. On the embedded cluster, whose CPUs are the workers, Ray itself runs at most
        # `parallelism` of them, so each worker gets a second one queued: a task of a few milliseconds (most of
        # dedup's) no longer leaves its worker idle while the driver collects its result and submits the next.
        self.queued = 2 * self.parallelism if self.session else self.parallelism
        if self.nodes > 1:
            log.info("Ray cluster of %d nodes, %d CPUs: at most %d tasks in flight", self.nodes,
                     int(ray.cluster_resources().get("CPU", 0)), self.parallelism)

    def map(self, work: Work, tasks: Iterable[Task], resources: Resources) -> Iterator[tuple[Task, dict]]:
        if self.watcher is not None:
            self.watcher.stage(work.stage)
        self._check_nodes(work.stage)
        options = self._placeable(work, resources.ray_options())
        if options.get("memory") is None and self.task_memory_mb:
            options["memory"] = self.task_memory_mb * 1024 * 1024
        if resources.actor and not (self.session and not resources.gpus):
            return self._on_actors(work, list(tasks), options)
        return self._as_tasks(work, list(tasks), options)

    def _wait(self, refs: list, work: Work, running: list[Task]) -> list:
        """Refs that finished; while none does, check that the cluster's head still answers. Says so when a
        node leaves the cluster (Ray retries its tasks on the nodes left)."""
        while True:
            done, _ = self.ray.wait(refs, num_returns=1, timeout=self.WAIT_SECONDS)
            now = time.monotonic()
            if now - self.nodes_checked > self.NODES_SECONDS:
                self._check_nodes(work.stage)
            if done:
                return done
            if self.head.lost():
                self.head_lost = True
                where = f", {running[0].where} among them" if running else ""
                raise CurateError(f"the Ray cluster's head node ({self.head.address}) stopped answering during stage "
                                  f"'{work.stage}' ({len(running)} task{'s' if len(running) != 1 else ''} in flight{where}); "
                                  f"every task that finished is recorded in {work.rundir.root}: start a new cluster and run "
                                  "the same command against it to resume from there")

    def _check_nodes(self, stage: str | None) -> None:
        """Say so when a node left the cluster: while a stage waits, as each stage starts and once more as the
        run ends (Ray declares a killed node dead some seconds later, possibly after the stage it broke)."""
        if self.nodes > 1 and not self.head_lost:
            self.nodes_checked = time.monotonic()
            self._count_nodes(stage)

    def _count_nodes(self, stage: str | None) -> None:
        try:
            alive = cluster.alive_nodes()
        except Exception:  # noqa: BLE001 - the head is down: HeadWatch reports it
            return
        ids = {n["NodeID"][:8] for n in alive}
        if gone := self.node_ids - ids:
            log.warning("%snode%s %s left the Ray cluster; %d node%s left, the tasks it was running are retried "
                        "there", f"stage '{stage}': " if stage else "", "s" if len(gone) > 1 else "", ", ".join(sorted(gone)), len(ids),
                        "s" if len(ids) != 1 else "")
        self.node_ids = ids

    def _as_tasks(self, work: Work, queue: list[Task], options: dict):
        """Tasks on Ray's pool of workers; each warm worker sets the phase up on its first task of it and keeps it
        for the phase's next tasks (kept_and_call), as an inline run sets a phase up once. A setup reads what the
        phase's tasks share (a model, a tokenizer, every docs shard's number): set up per task, dedup's accounting
        at 5M documents spent half its time reading the ingest record again, 5,500 times. A phase that would run on
        actors runs so too on the embedded cluster without GPUs, where actors would start a new process each (~1 s
        of imports apiece, and Ray ends the idle task workers meanwhile, to start them again for the next phase).
        The Work goes to the object store once and each worker loads it once (`kept_and_call`)."""
        ray = self.ray
        remote = ray.remote(kept_and_call).options(max_retries=self.retries, retry_exceptions=False, **options)
        work_ref = ray.put(work)
        pending: dict = {}
        queue.reverse()
        try:
            while queue or pending:
                while queue and len(pending) < self.queued:
                    task = queue.pop()
                    pending[remote.remote([work_ref], task, work_ref.hex())] = task
                for ref in self._wait(list(pending), work, list(pending.values())):
                    task = pending.pop(ref)
                    yield task, self._get(ref, work, task)
        finally:
            if not self.head_lost:
                for ref in pending:
                    ray.cancel(ref, force=True)

    def _on_actors(self, work: Work, queue: list[Task], options: dict):
        """A pool of actors that each hold the phase's work (and what its setup loaded) across tasks.

        Ray does not restart them (a restarted actor could wait forever for CPUs its surviving siblings
        hold): an actor lost with its node is dropped, its task goes back in the queue for the others, and
        a new actor is started only where the cluster has room for one more. Tasks go to an actor once it
        is placed and set up, so an actor that cannot be placed holds no task."""
        ray = self.ray
        actor_cls = ray.remote(PhaseActor).options(max_restarts=0, max_task_retries=0, **options)
        queue.reverse()
        actors, starting, idle, busy, lost, failed_starts = [], {}, [], {}, {}, 0

        def spawn(n: int) -> None:
            for _ in range(n):
                actor = actor_cls.remote(work)
                actors.append(actor)
                starting[actor.ready.remote()] = actor

        def replace(actor) -> None:
            if actor in actors:
                actors.remove(actor)
                ray.kill(actor, no_restart=True)
            live = len(idle) + len(busy) + len(starting)
            room = min(self.parallelism, self._fits(options), len(queue) + len(busy)) - live
            spawn(max(room, 1 if live == 0 and queue else 0))

        spawn(min(self.parallelism, len(queue), self._fits(options)))
        try:
            while queue or busy:
                while queue and idle:
                    actor, task = idle.pop(), queue.pop()
                    busy[actor.run.remote(task)] = (task, actor)
                if not busy and not starting:
                    replace(None)
                for ref in self._wait(list(busy) + list(starting), work, [t for t, _ in busy.values()]):
                    if ref in starting:
                        actor = starting.pop(ref)
                        try:
                            ray.get(ref)
                            idle.append(actor)
                        except ray.exceptions.RayActorError as exc:  # died before it could take a task
                            failed_starts += 1
                            if failed_starts > self.retries + self.parallelism:
                                raise StageError(work.stage, queue[-1].where if queue else "its actors",
                                                 f"its actors die as they start: {_actor_death(exc)}") from None
                            replace(actor)
                        continue
                    task, actor = busy.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        if isinstance(exc, ray.exceptions.RayTaskError):
                            self._get(ref, work, task)  # raises the stage's own error
                        lost[task.key] = lost.get(task.key, 0) + 1
                        if lost[task.key] > self.retries:
                            raise StageError(work.stage, task.where, f"its actor died {lost[task.key]} times (a node lost, or "
                                             f"the worker killed): {_actor_death(exc)}") from None
                        log.warning("stage '%s': the actor running %s died (%s); its task goes to another actor",
                                    work.stage, task.where, _actor_death(exc))
                        queue.append(task)
                        replace(actor)
                        continue
                    except Exception:
                        self._get(ref, work, task)
                        raise
                    idle.append(actor)
                    yield task, result
        finally:
            if not self.head_lost:
                for actor in actors:
                    ray.kill(actor, no_restart=True)

    def _fits(self, options: dict) -> int:
        """How many actors with these resources the cluster can hold at once: more would wait forever for a
        GPU (or CPUs) that their tasks were already queued on."""
        total = self.ray.cluster_resources()
        fits = [int(total.get(name, 0) // need) for key, name in (("num_cpus", "CPU"), ("num_gpus", "GPU"))
                if (need := options.get(key))]
        return max(1, min(fits)) if fits else self.parallelism

    def _placeable(self, work: Work, options: dict) -> dict:
        """Drop a GPU request the cluster cannot meet, so the stage runs on CPUs instead of waiting forever."""
        if options.get("num_gpus") and not self.ray.cluster_resources().get("GPU"):
            log.warning("stage '%s' asks for GPUs but the cluster has none: running it on CPUs", work.stage)
            options.pop("num_gpus")
        return options

    def _get(self, ref, work: Work, task: Task):
        ray = self.ray
        try:
            return ray.get(ref)
        except (ray.exceptions.RayTaskError, ray.exceptions.RayActorError) as exc:
            if isinstance(exc, ray.exceptions.RayActorError) and not isinstance(exc, ray.exceptions.RayTaskError):
                raise StageError(work.stage, task.where, f"its actor died: {_actor_death(exc)}") from None
            cause = getattr(exc, "cause", None)
            if isinstance(cause, CurateError):
                raise cause from None
            raise StageError(work.stage, task.where, describe(cause) if cause else str(exc).splitlines()[0]) from None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            what = "its node died" if isinstance(exc, ray.exceptions.NodeDiedError) else "its worker died"
            raise StageError(work.stage, task.where, f"{what} and {self.retries} retries on the other nodes did not help "
                             f"({type(exc).__name__}); execution.retries allows more") from None
        except ray.exceptions.OutOfMemoryError:
            raise StageError(work.stage, task.where, "the task ran out of memory; lower execution.batch_rows or task_size_mb, "
                             "or raise execution.task_memory_mb") from None

    def close(self) -> None:
        try:
            if self.ray.is_initialized():
                self._check_nodes(None)
            if self.owns and not self.head_lost and self.ray.is_initialized():  # a lost head: nothing to shut down politely
                embedded.stop(self.session) if self.session else self.ray.shutdown()
        finally:
            if self.watcher is not None:
                self.watcher.close(wait=not self.head_lost)
                self.watcher = None


def _gcs_address(ray) -> str | None:
    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - without it the head is simply not watched
        return None


def _actor_death(exc: BaseException) -> str:
    """Why Ray says an actor died, in one line (its messages run to a paragraph)."""
    text = " ".join(str(exc).split())
    for marker in ("The actor died because ", "The actor is dead because ", "Error message: "):
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    return (text[:200] + "...") if len(text) > 200 else text or type(exc).__name__
