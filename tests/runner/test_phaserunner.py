"""The phase runner: runs the tasks without a marker, writes markers, returns counts in plan order, and
discards a keyed phase's results per source when its key or upstream changes."""

from __future__ import annotations

import pytest

from curate.io import fs
from curate.rundir import RunDir
from curate.runner.phaserunner import PhaseRunner, phase_keys, remove_source
from curate.runner.progress import Progress
from curate.stages.phase import Phase, Task


@pytest.fixture
def runner(tmp_path):
    run = RunDir(str(tmp_path / "run"))
    r = PhaseRunner(run, Progress(quiet=True), True, None, 1, 0, None)
    yield r
    r.close()


def tasks():
    return [Task(f"{s}/{i}", f"{s} {i}", (s, i), s, str(i)) for s in ("web", "books") for i in range(2)]


def counting(calls: list):
    def run(payload):
        calls.append(payload)
        return {"in": payload[1] + 1}
    return run


def test_finished_tasks_are_skipped_and_counts_come_in_plan_order(runner):
    calls = []
    first = runner.run("st", Phase("count", tasks(), counting(calls)))
    assert [r["in"] for r in first] == [1, 2, 1, 2]
    assert calls == [("web", 0), ("web", 1), ("books", 0), ("books", 1)]
    assert runner.rundir.read_json(runner.rundir.marker("st", "count", "web/1"))["in"] == 2
    fs.remove(runner.rundir.marker("st", "count", "books/0"))
    calls.clear()
    again = runner.run("st", Phase("count", tasks(), counting(calls)))
    assert calls == [("books", 0)]  # only the task whose marker is gone
    assert [r["in"] for r in again] == [1, 2, 1, 2]
    assert all(r["source"] == t.source and r["shard"] == t.shard for r, t in zip(again, tasks()))


def test_what_a_phase_reads_is_asked_of_the_disk_before_its_tasks_run(runner, monkeypatch):
    """The markers of finished tasks (read back in turn at the end) and the files the phase says its tasks to run will
    read (`Phase.prefetch`, given those tasks only)."""
    runner.run("st", Phase("count", tasks(), counting([])))
    fs.remove(runner.rundir.marker("st", "count", "books/0"))
    asked, given, calls = [], [], []
    monkeypatch.setattr(fs, "prefetch", lambda paths: asked.append(list(paths)))
    runner.run("st", Phase("count", tasks(), counting(calls), prefetch=lambda todo: given.extend(todo) or [f"in/{t.key}" for t in todo]))
    assert [t.key for t in given] == ["books/0"] and calls == [("books", 0)]
    assert asked == [[runner.rundir.marker("st", "count", k) for k in ("web/0", "web/1", "books/1")], ["in/books/0"]]


def test_a_keyed_phase_recomputes_only_the_source_whose_key_changed(runner):
    calls = []
    runner.run("st", Phase("score", tasks(), counting(calls), key={"web": "m1", "books": "m1"}), {"web": "u", "books": "u"})
    calls.clear()
    runner.run("st", Phase("score", tasks(), counting(calls), key={"web": "m2", "books": "m1"}), {"web": "u", "books": "u"})
    assert calls == [("web", 0), ("web", 1)]
    calls.clear()
    runner.run("st", Phase("score", tasks(), counting(calls), key={"web": "m2", "books": "m1"}), {"web": "u", "books": "v"})
    assert calls == [("books", 0), ("books", 1)]  # its upstream changed


def test_phase_keys_mix_upstream_unless_independent():
    phase = Phase("p", tasks(), lambda p: {}, key={"web": "k", "books": None})
    keys = phase_keys(phase, {"web": "u1", "books": "u1"})
    assert keys["books"] == "independent"
    assert keys["web"] != phase_keys(phase, {"web": "u2"})["web"]
    assert phase_keys(Phase("p", [Task("t", "t", None)], lambda p: {}, key="k"), {}).keys() == {""}


def test_remove_source_takes_the_folder_and_the_json_of_one_source(tmp_path):
    for rel in ("web/a.json", "web.json", "books/b.json"):
        fs.write_bytes(str(tmp_path / "out" / rel), b"{}")
    remove_source(str(tmp_path / "out"), "web")
    assert sorted(p.name for p in (tmp_path / "out").rglob("*.json")) == ["b.json"]
    remove_source(str(tmp_path / "out"), "")
    assert not (tmp_path / "out").exists()


def test_results_the_driver_puts_back_are_not_run_and_get_markers(runner):
    """`Phase.restore`: the driver puts back what it can of the tasks about to run (an append's unchanged shards, at
    once); those are not run, their markers are written as a task's would be, and the counts come in plan order."""
    calls, offered = [], []
    back = {"web/1": {"in": 20}, "books/0": {"in": 10}}
    got = runner.run("st", Phase("count", tasks(), counting(calls),
                                 restore=lambda todo: offered.extend(t.key for t in todo) or back))
    assert offered == ["web/0", "web/1", "books/0", "books/1"]
    assert calls == [("web", 0), ("books", 1)]
    assert [r["in"] for r in got] == [1, 20, 10, 2] and got.ran == 4
    marker = runner.rundir.read_json(runner.rundir.marker("st", "count", "books/0"))
    assert marker == {"in": 10, "seconds": 0.0, "source": "books", "shard": "0"}
    calls.clear()
    offered.clear()
    runner.run("st", Phase("count", tasks(), counting(calls), restore=lambda todo: offered.extend(todo) or {}))
    assert calls == [] and offered == []   # every task has its marker: nothing offered, nothing run
