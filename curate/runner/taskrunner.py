"""Runs batches of tasks for stages: skips the finished ones, starts the executor lazily, reports progress."""

from __future__ import annotations

import time
from typing import Callable

from curate.io import fs
from curate.runner.executor import make_executor
from curate.runner.progress import Progress
from curate.runner.tasks import Task


class TaskRunner:
    """One per run. A stage calls `run(stage, label, tasks, marker_of)` once per phase of its work."""

    def __init__(self, progress: Progress, inline: bool, address: str | None, workers: int | None, retries: int,
                 task_memory_mb: int | None):
        self.progress = progress
        self._executor_args = (inline, address, workers, retries, task_memory_mb)
        self.executor = None  # started on the first task to run: a finished run resumes in no time
        self.wall: dict[str, float] = {}

    def run(self, stage, label: str, tasks: list[Task], marker_of: Callable[[Task], str]) -> list[dict]:
        """Run the tasks without a marker; return the results of those that ran (in completion order)."""
        todo = [t for t in tasks if not fs.exists(marker_of(t))]
        if todo and self.executor is None:
            self.executor = make_executor(*self._executor_args)
        started = time.monotonic()
        self.progress.start(label, len(tasks), len(tasks) - len(todo))
        results = []
        results_iter = ()
        if todo:
            run = self.executor.map_actors if getattr(stage, "ACTORS", False) else self.executor.map
            results_iter = run(stage, todo, stage.resources())
        for _task, result in results_iter:
            self.progress.update(result.get("in", 0) if isinstance(result, dict) else 0)
            results.append(result)
        self.progress.finish()
        self.wall[stage.name] = self.wall.get(stage.name, 0.0) + time.monotonic() - started
        return results

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()
