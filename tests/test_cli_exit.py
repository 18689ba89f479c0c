"""The `curate` command ends without the interpreter's teardown (`cli.entry`): what the teardown would have done
for us must still happen, output flushed into a pipe, the run log complete, the exit code kept."""

from __future__ import annotations

import subprocess
import sys

from conftest import ZYDA2, env_with


def buffered(**extra) -> dict:
    """The environment with Python's output buffered, as it is for a user (a pipe is block-buffered)."""
    env = env_with(**extra)
    env.pop("PYTHONUNBUFFERED", None)
    return env


def test_a_run_through_a_pipe_prints_its_last_line_and_completes_its_log(sample_env, tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", str(out), "--inline", "--until", "ingest"],
                          capture_output=True, text=True, env=buffered(CURATE_SAMPLE=sample_env))
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("stopped after ingest in ") and str(out) in last
    [log] = (out / "logs").glob("run-*.log")
    assert log.read_text().rstrip().endswith(last)


def test_a_failed_run_keeps_its_exit_code_and_message(tmp_path):
    done = subprocess.run([sys.executable, "-m", "curate", "run", str(tmp_path / "missing.yaml")], capture_output=True, text=True,
                          env=buffered())
    assert done.returncode == 2 and "no such pipeline file" in done.stderr and done.stdout == ""
