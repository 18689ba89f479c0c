"""How many cores a task may spread its own threads over: all of them inline, one per Ray task."""

from __future__ import annotations

import os
import sys

from curate.runner.inline import SWITCH_INTERVAL, InlineExecutor
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


def test_a_concurrent_phase_runs_its_tasks_on_threads_that_share_the_cores(tmp_path):
    """`Phase.concurrent` inline: `workers` tasks at a time (here 2, whatever the machine), each with its share
    of the cores; results come back in plan order, and a failure is raised as the serial run would raise it."""
    import threading
    import time

    import pytest

    from curate.errors import StageError
    from curate.rundir import RunDir

    both = threading.Barrier(2, timeout=10)   # passes only when two tasks run at the same moment
    threads, cores = set(), len(os.sched_getaffinity(0))

    def run(payload):
        threads.add(threading.get_ident())
        if payload in ("a", "b"):
            both.wait()
        time.sleep(0.01 if payload == "c" else 0)
        if payload == "boom":
            raise ValueError("bad input")
        return {"in": 1, "cores": task_cores(), "switch": sys.getswitchinterval()}

    before = sys.getswitchinterval()
    work = Work("stage", "phase", run, None, RunDir(str(tmp_path)), concurrent=True)
    done = list(InlineExecutor(workers=2).map(work, [Task(k, k, k) for k in "abcd"], Resources()))
    assert sorted(t.key for t, _ in done) == list("abcd")   # as they finish, as on Ray; the runner puts them in plan order
    assert {r["cores"] for _, r in done} == {max(1, cores // 2)}
    assert {r["switch"] for _, r in done} == {min(before, SWITCH_INTERVAL)}   # short GIL turns while tasks share it ...
    assert sys.getswitchinterval() == before                                 # ... and Python's own after the phase
    assert len(threads) == 2 and threading.get_ident() not in threads
    assert task_cores() == 1

    serial = Work("stage", "phase", run, None, RunDir(str(tmp_path / "serial")), concurrent=True)
    threads.clear()
    list(InlineExecutor(workers=1).map(serial, [Task(k, k, k) for k in "cd"], Resources()))
    assert threads == {threading.get_ident()}   # --workers 1: every task in the calling thread, pdb works

    with pytest.raises(StageError, match="bad input"):
        list(InlineExecutor(workers=2).map(work, [Task(k, k, k) for k in ["c", "boom", "d"]], Resources()))


def test_a_failure_is_raised_while_a_longer_task_still_runs(tmp_path):
    """The caller hears of a failed task at once (as it would on Ray), not after the other tasks in flight."""
    import threading

    import pytest

    from curate.errors import StageError
    from curate.rundir import RunDir

    released, seen = threading.Event(), []

    def run(payload):
        if payload == "long":
            seen.append(released.wait(10))   # True: the failure reached the caller while this task still ran
            return {"in": 1}
        raise ValueError("bad input")

    work = Work("stage", "phase", run, None, RunDir(str(tmp_path)), concurrent=True)
    with pytest.raises(StageError, match="bad input"):
        list(InlineExecutor(workers=2).map(work, [Task("long", "long", "long"), Task("boom", "boom", "boom")], Resources()))
    released.set()
    for thread in [t for t in threading.enumerate() if t.name.startswith("curate-task")]:
        thread.join(10)
    assert seen == [True]
