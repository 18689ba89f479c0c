"""Picks the executor for a run: inline (one process: small runs, debugging) or Ray (inline.py, ray_executor.py).

Both map a phase's tasks through the same `call_task` (task.py), so a stage behaves the same way in each.
"""

from __future__ import annotations

from curate.runner.inline import InlineExecutor
from curate.runner.ray_executor import Placement, RayExecutor


def make_executor(inline: bool, address: str | None, workers: int | None, retries: int, task_memory_mb: int | None,
                  placement: Placement | None = None):
    if inline:
        return InlineExecutor(workers)
    return RayExecutor(address=address, workers=workers, retries=retries, task_memory_mb=task_memory_mb,
                       placement=placement)
