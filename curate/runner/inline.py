"""The inline executor: runs a phase's tasks one after another in this process, for debugging (pdb works)
and for small runs; the same `call_task` as on Ray, so outputs are the same."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from curate.runner.task import Work, call_task
from curate.stages.phase import Task
from curate.stages.resources import Resources, inline_tasks


class InlineExecutor:
    """Runs tasks one after another in this process: same code path, easy to debug with pdb."""

    name = "inline"
    parallelism = 1

    def map(self, work: Work, tasks: Iterable[Task], resources: Resources) -> Iterator[tuple[Task, dict]]:
        tasks = list(tasks)
        with inline_tasks(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1):
            if tasks:
                work.prepare()
            for task in tasks:
                yield task, call_task(work, task)

    def close(self) -> None:
        pass
