"""Execution on Ray: same bytes whatever the parallelism, resume after kill -9, retries on worker loss, clear failures."""

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray.cloudpickle

from curate import load_pipeline
from curate.common.schema import Field
from curate.errors import StageError
from curate.runner.progress import Progress
from curate.runner.run import run_pipeline
from curate.stages import STAGES
from curate.stages.kept import KeptStage

from conftest import ZYDA2, env_with, kill_9_when, run_cli, tree_digest

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers get the test stage by value


@pytest.mark.slow   # a Ray cluster of its own (20-30 s): the fast half leaves it to CI
def test_workers_1_2_and_inline_threaded_or_serial_give_byte_identical_outputs(sample_env, tmp_path):
    assert run_cli(ZYDA2, "--output", tmp_path / "inline", "--inline", "-q") == 0   # tasks of concurrent phases on threads
    assert run_cli(ZYDA2, "--output", tmp_path / "serial", "--inline", "--workers", "1", "-q") == 0   # one after another
    assert run_cli(ZYDA2, "--output", tmp_path / "w1", "--workers", "1", "-q") == 0
    assert run_cli(ZYDA2, "--output", tmp_path / "w2", "--workers", "2", "-q") == 0
    reference = tree_digest(tmp_path / "inline")
    assert len(reference) > 30
    assert tree_digest(tmp_path / "serial") == reference
    assert tree_digest(tmp_path / "w1") == reference
    assert tree_digest(tmp_path / "w2") == reference


@pytest.mark.slow  # kill -9
def test_driver_killed_with_sigkill_resumes_to_identical_outputs(sample_env, tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", str(run), "--workers", "1", "-q",
           "--set", "execution.batch_rows=16"]
    kill_9_when(cmd, lambda: list((run / "_state" / "ingest").rglob("0*.json")), 120, env=env_with(CURATE_SAMPLE=sample_env))
    assert not (run / "summary.json").exists(), "the run finished before the kill: nothing was interrupted"
    assert not (run / "kept").exists() or len(list((run / "kept").rglob("*.parquet"))) < 11
    assert subprocess.run(cmd, env=env_with(CURATE_SAMPLE=sample_env)).returncode == 0
    assert run_cli(ZYDA2, "--output", tmp_path / "clean", "--inline", "-q", "--set", "execution.batch_rows=16") == 0
    assert tree_digest(run) == tree_digest(tmp_path / "clean")
    assert not list(run.rglob("*.tmp-*")), "temporary files must not survive"


class FlakyStage(KeptStage):
    """A test stage whose worker dies (os._exit) or raises the first time it sees each shard."""

    OPTIONS = {"flags": Field((str,)), "mode": Field((str,), choices=["die", "raise"])}

    def owned_paths(self):
        return [self.run.state(self.name)]

    def sink(self, shard):
        return None

    def process(self, batch, shard):
        flag = os.path.join(self.options["flags"], f"{shard.source}-{shard.shard}")
        if not os.path.exists(flag):
            open(flag, "w").close()
            if self.options["mode"] == "die":
                os._exit(1)
            raise ValueError("this shard is cursed")
        return None


@pytest.fixture
def flaky(monkeypatch, tmp_path, sample_env):
    monkeypatch.setitem(STAGES, "flaky", FlakyStage)
    flags = tmp_path / "flags"
    flags.mkdir()
    # the sample's sources, read by ingest alone: the retry is the flaky step's, the rest of zyda2 adds only minutes
    return lambda mode: load_pipeline(ZYDA2, [f"stages={{ingest: {{}}, flaky: {{use: flaky, flags: '{flags}', mode: {mode}}}}}"])


@pytest.mark.slow  # a Ray worker killed mid-task
def test_a_dead_worker_is_retried(flaky, tmp_path):
    rows = run_pipeline(flaky("die"), str(tmp_path / "run"), workers=2, progress=Progress(quiet=True))
    flaky_rows = [r for r in rows if r["stage"] == "flaky"]
    assert flaky_rows and all(r["in"] == r["kept"] for r in flaky_rows)
    assert len(list((tmp_path / "flags").iterdir())) == sum(r["tasks"] for r in flaky_rows)


@pytest.mark.parametrize("inline", [True, False])
def test_an_exception_in_stage_code_stops_the_run_naming_stage_input_and_cause(flaky, tmp_path, inline):
    with pytest.raises(StageError) as info:
        run_pipeline(flaky("raise"), str(tmp_path / "run"), inline=inline, workers=2, progress=Progress(quiet=True))
    message = str(info.value)
    assert message.startswith("stage 'flaky' failed on source '")
    assert "ValueError: this shard is cursed" in message
    assert not (tmp_path / "run" / "summary.json").exists()


def test_a_reader_failure_exits_non_zero_with_one_paragraph(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(pa.table({"text": [1, 2, 3]}), tmp_path / "d" / "ints.parquet")
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  s: {{format: parquet, paths: '{tmp_path}/d/*.parquet'}}\nstages: {{ingest: {{}}}}\n")
    result = subprocess.run([sys.executable, "-m", "curate", "run", str(f), "--output", str(tmp_path / "run"), "--workers", "1", "-q"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("curate: error: stage 'ingest' failed on ") and "ints.parquet" in last
    assert "column 'text' is int64, expected a string column" in last
