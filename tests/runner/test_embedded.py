"""The embedded Ray cluster is lean: no dashboard API server nor autoscaler monitor, local sockets retried every
50 ms, workers that stay warm from one phase to the next (every phase, the ones that would run on actors too, loads
its work and sets up once per warm worker, not once per task) with a second task queued each, and nothing of the
cluster left once the executor is closed."""

from __future__ import annotations

import os
import sys
import time
from functools import partial

import ray.cloudpickle

from curate.rundir import RunDir
from curate.runner.embedded import QUICK_CONNECT
from curate.runner.ray_executor import RayExecutor
from curate.runner.task import Work
from curate.runner.watcher import holders
from curate.stages.phase import Task
from curate.stages.resources import Resources

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers get these functions by value

def setup(folder: str) -> None:
    """One file per setup, named by the worker that ran it."""
    with open(os.path.join(folder, f"{os.getpid()}-{time.monotonic_ns()}"), "w"):
        pass


def pid(payload) -> dict:
    return {"in": 1, "pid": os.getpid()}


class LoadNoted:
    """A task function that leaves a file each time a process loads it (unpickles it), named by that process."""

    def __init__(self, folder: str):
        self.folder = folder

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        setup(self.folder)

    def __call__(self, payload) -> dict:
        return pid(payload)


def span(payload) -> dict:
    started = time.time()
    time.sleep(0.05)
    return {"in": 1, "start": started, "end": time.time()}


def most_at_once(spans: list[dict]) -> int:
    edges = sorted([(r["start"], 1) for r in spans] + [(r["end"], -1) for r in spans], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def test_the_embedded_cluster_is_lean_and_its_workers_stay_warm_across_phases(tmp_path):
    run, setups, plain_setups = RunDir(str(tmp_path / "run")), tmp_path / "setups", tmp_path / "plain-setups"
    loads = tmp_path / "loads"
    for folder in (setups, plain_setups, loads):
        folder.mkdir()
    tasks = [Task(f"s/{i}", f"shard {i}", i, "s", str(i)) for i in range(6)]
    executor = RayExecutor(workers=2)
    try:
        session = executor.session
        commands = [open(f"/proc/{p}/cmdline", "rb").read() for p in holders(session)]
        assert any(b"raylet" in c for c in commands), commands
        assert not any(b"dashboard/dashboard.py" in c or b"autoscaler/_private/monitor.py" in c for c in commands), commands
        config = ray._private.worker._global_node._config   # what the head's processes were started with
        assert {k: config.get(k) for k in QUICK_CONNECT} == QUICK_CONNECT
        plain = [r for _, r in executor.map(Work("st", "plain", LoadNoted(str(loads)), partial(setup, str(plain_setups)), run), tasks, Resources())]
        kept = [r for _, r in executor.map(Work("st", "model", pid, partial(setup, str(setups)), run), tasks, Resources(actor=True))]
        spans = [r for _, r in executor.map(Work("st", "timed", span, None, run), [Task(f"t/{i}", f"t {i}", i) for i in range(12)], Resources())]
    finally:
        executor.close()
    assert {r["pid"] for r in kept} <= {r["pid"] for r in plain}, "the model phase ran in the warm workers, not new processes"
    by = [f.name.split("-")[0] for f in setups.iterdir()]
    assert sorted(by) == sorted({str(r["pid"]) for r in kept}), "each worker set the phase up once, for all its tasks"
    assert len(kept) == len(tasks) and all(r["in"] == 1 for r in kept)
    by = [f.name.split("-")[0] for f in plain_setups.iterdir()]
    assert sorted(by) == sorted({str(r["pid"]) for r in plain}), "a task phase's setup ran once a worker too, not per task"
    by = [f.name.split("-")[0] for f in loads.iterdir()]
    assert sorted(by) == sorted({str(r["pid"]) for r in plain}), "each worker loaded the phase's work once, not per task"
    assert holders(session) == [], "nothing of the cluster is left once the executor is closed"
    # each worker has a task queued behind the one it runs, and still no more than 2 run at once
    assert executor.queued == 4 and len(spans) == 12 and most_at_once(spans) == 2
