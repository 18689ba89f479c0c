"""Arrow memory is handed back once a worker's tasks have allocated RELEASE_AFTER bytes since the last time, not
after each task (each release made the next task's reads fault their pages in again)."""

from __future__ import annotations

from curate.rundir import RunDir
from curate.runner import task as task_module
from curate.runner.task import RELEASE_AFTER, Work, call_task
from curate.stages.phase import Task


class Pool:
    def __init__(self):
        self.total, self.releases = 0, 0

    def total_bytes_allocated(self) -> int:
        return self.total

    def release_unused(self) -> None:
        self.releases += 1


def test_memory_goes_back_after_a_large_task_or_many_small_ones(tmp_path, monkeypatch):
    pool = Pool()
    monkeypatch.setattr(task_module.pa, "default_memory_pool", lambda: pool)
    monkeypatch.setattr(task_module, "_released_at", 0)
    allocates = {"small": RELEASE_AFTER // 4, "large": 2 * RELEASE_AFTER}

    def run(kind):
        pool.total += allocates[kind]
        return {"in": 1}

    work = Work("stage", "phase", run, None, RunDir(str(tmp_path)))
    seen = []
    for i, kind in enumerate(["small", "small", "small", "large", "small", "small", "small", "small"]):
        call_task(work, Task(str(i), kind, kind))
        seen.append(pool.releases)
    assert seen == [0, 0, 0, 1, 1, 1, 1, 2]   # the large task; then the fourth small one since it


def test_a_failed_task_also_counts_toward_the_release(tmp_path, monkeypatch):
    import pytest

    from curate.errors import StageError

    pool = Pool()
    monkeypatch.setattr(task_module.pa, "default_memory_pool", lambda: pool)
    monkeypatch.setattr(task_module, "_released_at", 0)

    def run(payload):
        pool.total += RELEASE_AFTER
        raise ValueError("bad shard")

    with pytest.raises(StageError, match="bad shard"):
        call_task(Work("stage", "phase", run, None, RunDir(str(tmp_path))), Task("0", "shard 0", 0))
    assert pool.releases == 1
