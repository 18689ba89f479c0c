"""The inline executor: runs a phase's tasks in this process, for small runs (no Ray start) and for
debugging (`--workers 1`: one task after another, pdb works); the same `call_task` as on Ray, so outputs
are the same."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed

from curate.io.process import usable_cores
from curate.runner.task import Work, call_task
from curate.stages.phase import Task
from curate.stages.resources import Resources, inline_tasks

SWITCH_INTERVAL = 0.0005
"""Seconds a thread holds the GIL before another may take it, while a phase runs on threads (Python's default: 5 ms).
A shard task is Python between short calls that release the GIL (a stat, a link, an Arrow read); back from one, a
thread waited for the other's 5 ms turn. Inline on 2 cores, the 1M append (most of its phases thousands of such
tasks) took 43.8 s through pack at 0.5 ms against 47.6 at 5 ms (dedup's gather 1.9 -> 1.4 s, pack 4.7 -> 3.6)."""


class InlineExecutor:
    """Runs tasks in this process. A phase whose tasks may share a process (`Phase.concurrent`: they read
    files, numpy and Arrow release the GIL) runs `workers` of them at a time on threads, as that many Ray
    workers would; any other phase, and every phase with `workers=1`, runs one task after another, each
    free to spread its own threads over the machine's cores (`task_cores`)."""

    name = "inline"

    def __init__(self, workers: int | None = None):
        self.cores = usable_cores()
        self.parallelism = workers or self.cores

    def map(self, work: Work, tasks: Iterable[Task], resources: Resources) -> Iterator[tuple[Task, dict]]:
        tasks = list(tasks)
        if not tasks:
            return
        threads = min(self.parallelism, len(tasks)) if work.concurrent and not resources.gpus else 1
        with inline_tasks(max(1, self.cores // threads)):
            work.prepare()
            if threads == 1:
                for task in tasks:
                    yield task, call_task(work, task)
                return
            pool = ThreadPoolExecutor(threads, thread_name_prefix="curate-task")
            interval = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, SWITCH_INTERVAL))
            futures = {pool.submit(call_task, work, task): task for task in tasks}
            try:
                for future in as_completed(futures):  # as they finish, as on Ray; the first failure is raised at once
                    yield futures[future], future.result()
            finally:
                # after a failure or Ctrl-C nothing more starts, and the caller does not wait for the tasks already
                # running: they finish on their own (or die with the process), their outputs atomic as after a kill
                pool.shutdown(wait=False, cancel_futures=True)
                sys.setswitchinterval(interval)

    def close(self) -> None:
        pass
