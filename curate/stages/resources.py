"""What one worker of a phase needs from the cluster, and whether it is a long-lived actor."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from curate.common.schema import Field

RESOURCE_OPTIONS = {
    "num_cpus": Field((float,), default=1.0, min=0.0, max=4096.0),
    "num_gpus": Field((float,), default=0.0, min=0.0, max=1024.0),
    "memory_mb": Field((int,), default=None, nullable=True, min=1, max=1 << 24),
}


@dataclass(frozen=True)
class Resources:
    """CPUs, GPUs and memory per worker. `actor`: workers live across tasks, so `setup()` (loading a
    model or a tokenizer) runs once per worker instead of once per task."""

    cpus: float = 1.0
    gpus: float = 0.0
    memory_mb: int | None = None
    actor: bool = False

    @classmethod
    def from_options(cls, options: dict, actor: bool = True) -> "Resources":
        """From a stage's `resources:` option ({num_cpus, num_gpus, memory_mb}, see RESOURCE_OPTIONS)."""
        return cls(options["num_cpus"], options["num_gpus"], options["memory_mb"], actor)

    def ray_options(self) -> dict:
        out = {"num_cpus": self.cpus}
        if self.gpus:
            out["num_gpus"] = self.gpus
        if self.memory_mb:
            out["memory"] = self.memory_mb * 1024 * 1024
        return out


def assigned_gpus() -> list:
    """The GPUs Ray gave this worker (empty inline, or on a cluster without GPUs): a Ray task's marker names them (`gpus`)."""
    try:
        import ray

        return [str(g) for g in ray.get_gpu_ids()] if ray.is_initialized() else []
    except Exception:  # noqa: BLE001 - outside a Ray worker there is nothing to report
        return []


_inline_cores = 0  # while the inline executor runs a phase: the cores each of its tasks may use


@contextlib.contextmanager
def inline_tasks(cores: int):
    """While the inline executor runs a phase's tasks, each may use `cores` (`task_cores`)."""
    global _inline_cores
    saved, _inline_cores = _inline_cores, cores
    try:
        yield
    finally:
        _inline_cores = saved


def task_cores() -> int:
    """The cores a task may spread its own threads over: inline, the machine's cores shared among the tasks that
    run at once (all of them for a task that runs alone: a kernel with a `threads` option then uses them all,
    as the workers of a Ray run would); one on a Ray worker, which holds one CPU per task."""
    return _inline_cores or 1
