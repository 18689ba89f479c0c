"""How many cores a task may spread its own threads over: all of them inline, one per Ray task."""

from __future__ import annotations

import os

from curate.runner.inline import InlineExecutor
from curate.runner.task import Work
from curate.stages.phase import Task
from curate.stages.resources import Resources, inline_tasks, task_cores


def test_a_task_has_one_core_unless_the_inline_executor_runs_it():
    assert task_cores() == 1
    with inline_tasks(6):
        assert task_cores() == 6
        with inline_tasks(2):
            assert task_cores() == 2
        assert task_cores() == 6
    assert task_cores() == 1


def test_the_inline_executor_gives_its_tasks_every_core_and_takes_them_back(tmp_path):
    from curate.rundir import RunDir

    seen = []
    work = Work("stage", "phase", lambda payload: {"in": seen.append((payload, task_cores())) or 1},
                lambda: seen.append(("setup", task_cores())), RunDir(str(tmp_path)))
    done = list(InlineExecutor().map(work, [Task("a", "a", "a"), Task("b", "b", "b")], Resources()))
    cores = len(os.sched_getaffinity(0))
    assert seen == [("setup", cores), ("a", cores), ("b", cores)]
    assert [t.key for t, _ in done] == ["a", "b"]
    assert task_cores() == 1
