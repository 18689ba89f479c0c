"""Following a run: the heartbeat (rate, ETA) while tasks run, the Ray and compile lines, RUN/logs/, --version,
-v, exit codes, every subcommand's help, the final line, and manifest.json recording the actual --output."""

import io
import json
import time

import pytest

from curate import __version__
from curate.cli import main, parser
from curate.runner.kernels import warm
from curate.stages.dual_use_facets import BLOCKLIST
from curate.runner.progress import Progress, duration, unit_of

from conftest import ZYDA2


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_heartbeat_prints_rate_and_eta_while_a_task_runs():
    out, clock = io.StringIO(), Clock()
    progress = Progress(stream=out, interval=5.0, heartbeat=0.05, clock=clock)
    progress.start("minhash", 4, 0)
    clock.now += 1.0
    time.sleep(0.3)  # no task has finished: the heartbeat still says where the phase is
    assert "[minhash] 0/4 tasks  0 docs  0 docs/s  first task running  1.0s" in out.getvalue()
    progress.update(1000)  # finished at 1 s: printed (the first line after start is due only after `interval`)
    clock.now += 9.0
    time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert "[minhash] 1/4 tasks  1,000 docs  100 docs/s  ETA 30s  10.0s" in lines, lines
    progress.finish()
    count = len(out.getvalue().splitlines())
    clock.now += 60
    time.sleep(0.2)
    assert len(out.getvalue().splitlines()) == count, "no heartbeat after the phase finished"


def test_eta_counts_only_the_tasks_this_invocation_ran():
    out, clock = io.StringIO(), Clock()
    progress = Progress(stream=out, interval=0.0, heartbeat=None, clock=clock)
    progress.start("signals", 10, 6)  # 6 done by an earlier invocation
    clock.now += 20
    progress.update(50)
    assert out.getvalue().splitlines()[-1] == "[signals] 7/10 tasks  50 docs  2 docs/s  ETA 1m00s  20.0s"
    assert duration(3725) == "1h02m" and duration(59.6) == "1m00s"


def test_progress_names_the_unit_each_phase_counts():
    assert unit_of("accounting", True) == "docs" and unit_of("read", False) == "records"
    assert unit_of("buckets", False) == "band keys" and unit_of("send-3", False) == "nodes"
    assert unit_of("verify-a", False) == "pairs" and unit_of("merge", False) is None
    out = io.StringIO()
    progress = Progress(stream=out, interval=0.0, heartbeat=None)
    progress.start("pack: merge", 1, 0, unit=None)
    progress.update(0)
    assert "docs" not in out.getvalue()


def test_kernels_compile_once_per_process():
    said = []
    first = warm([BLOCKLIST], said.append)
    again = warm([BLOCKLIST], said.append)
    assert again == {} and len(said) <= 1 and set(first) <= {BLOCKLIST.description}


def test_version_and_help_of_every_subcommand(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"curate {__version__}"
    sub = next(a for a in parser()._actions if a.dest == "command")
    assert set(sub.choices) >= {"run", "report", "recipes", "query", "manifest", "train-quality", "sample"}
    for name, command in sub.choices.items():
        assert command.description and len(command.description) > 60, f"curate {name} --help explains nothing"
        text = command.format_help()
        assert text.count("\n") > 5
    assert "--inline" in sub.choices["run"].format_help() and "examples:" in sub.choices["query"].format_help()
    assert "expected.json" in sub.choices["sample"].format_help() and "publish" in sub.choices["manifest"].format_help()


def test_usage_errors_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["run"])
    assert done.value.code == 2
    assert main(["run", "no-such-recipe"]) == 2
    assert main(["query", str(tmp_path)]) == 2 and "not a run directory" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert main(["manifest", "verify", str(tmp_path)]) == 2
    assert main(["run", "zyda2", "--workers", "0"]) == 2


@pytest.fixture(scope="module")
def until_run(sample_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("follow") / "partial"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CURATE_SAMPLE", str(sample_dir))
        capture = io.StringIO()
        mp.setattr("sys.stdout", capture)
        assert main(["run", str(ZYDA2), "--output", str(out), "--inline", "--until", "signals", "--no-report"]) == 0
    return out, capture.getvalue()


def test_until_names_only_what_exists_and_the_log_keeps_everything(until_run, capsys):
    out, printed = until_run
    last = printed.strip().splitlines()[-1]
    assert last.startswith("stopped after signals in ") and "kept/" not in last and not (out / "kept").exists()
    assert "ledger/" in last and "logs/" in last and "run again without --until" in last
    [log] = (out / "logs").glob("run-*.log")
    text = log.read_text()
    assert text.startswith("# curate ") and last in text, "the final line is in the log"
    assert "[signals] " in text and "docs/s" in text, "progress (stderr) is in the log"
    summary = {r["stage"]: r for r in json.loads((out / "summary.json").read_text())}
    assert set(summary["signals"]) >= {"compile_seconds", "task_seconds", "wall_seconds"}


def test_manifest_records_the_actual_output_and_the_final_line_names_tokens(sample_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CURATE_SAMPLE", str(sample_dir))
    out = tmp_path / "elsewhere"
    assert main(["run", str(ZYDA2), "--output", str(out), "--inline", "-q", "--no-report"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "pack/" in last and "manifest.json" in last and "kept/" in last
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["pipeline"]["resolved"]["output"] == str(out), "not the recipe's default runs/zyda2"
    assert f"output: {out}" in (out / "pipeline.yaml").read_text()


def test_verbose_prints_a_line_per_task(sample_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CURATE_SAMPLE", str(sample_dir))
    assert main(["run", str(ZYDA2), "--output", str(tmp_path / "v"), "--inline", "-v", "--until", "ingest", "--no-report"]) == 0
    err = capsys.readouterr().err
    tasks = int(err.split("[ingest: read] ", 1)[1].split(" tasks", 1)[0])
    assert all(f"[ingest: read] {k}/{tasks} tasks" in err for k in range(1, tasks + 1)), err
    assert err.count("[ingest: read] done: ") == tasks, "each task's input and seconds"


def test_an_error_after_the_run_started_is_in_the_log(tmp_path, sample_dir, monkeypatch, capsys):
    """A fresh run writes ingest and signals, then its filter fails on a value (a cast no row survives): the log keeps
    the error (a run refused before it changes anything, a rule naming a column nothing has included, leaves no log:
    tests/runner/test_resume_matrix.py)."""
    out = tmp_path / "run"
    monkeypatch.setenv("CURATE_SAMPLE", str(sample_dir))
    assert main(["run", str(ZYDA2), "--output", str(out), "--inline", "-q", "--until", "quality_filter", "--no-report",
                 "--set", "stages.quality_filter.where={fwe: 'CAST(url AS INTEGER) > 1'}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    [log] = set((out / "logs").glob("run-*.log"))
    assert err.startswith("curate: error: ") and "Conversion Error" in err and log.read_text().strip().splitlines()[-1] == err
