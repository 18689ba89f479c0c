"""Beyond one machine: the zyda2 recipe on a Ray cluster of three nodes with its run directory in S3.

Everything stays on loopback: the nodes (`ray.cluster_utils.Cluster`, 1 CPU each, small object stores)
and an S3 server (moto) listen on 127.0.0.1; credentials reach curate through the usual AWS variables.
The driver is `curate run --address` in a subprocess, as a user runs it. Checked: the multi-node run
ends byte-identical to an `--inline` run (kept, ledger, tokens, manifest checksums) with tasks on every
node; a local path is refused on several nodes; a node without credentials ends the run naming the
bucket and the node, and `execution.env` forwards them; a worker node lost mid-stage costs only its
tasks; a lost head ends the run with one paragraph and a later run resumes from the markers in S3;
an address nobody answers at fails in seconds.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

from curate.io import fs  # noqa: E402
from curate.sample import make_sample  # noqa: E402

from conftest import ZYDA2  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from loopback import LoopbackCluster, S3Server, free_port, ray_temp_dir  # noqa: E402  (bench/loopback.py: the test bed)

BUCKET = "curate-mn"
SAMPLE = f"s3://{BUCKET}/sample"
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 (its own process), reached through the standard AWS variables, with the
    600-document sample corpus in s3://curate-mn/sample."""
    server = S3Server(BUCKET)
    try:
        with tempfile.TemporaryDirectory() as local:
            make_sample(local, docs=600, seed=0)
            fs.upload_tree(local, SAMPLE, last="_SUCCESS")
        yield server.env
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(s3):
    c = LoopbackCluster(3)
    try:
        yield c
    finally:
        c.stop()


def curate(*args: str, env: dict | None = None, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curate", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "CURATE_SAMPLE": SAMPLE, **(env or {})})


def run_zyda2(output: str, *extra: str, address: str | None = None) -> subprocess.CompletedProcess:
    where = ("--address", address) if address else ("--inline",)
    return curate("run", str(ZYDA2), "--output", output, *where, "-q", *extra)


def outputs(root: str) -> dict[str, str]:
    """sha256 of every file under kept/, ledger/, tokenize/ and pack/, and of the manifest's file list (sizes, sha256)."""
    out = {}
    for part in ("kept", "ledger", "tokenize", "pack"):
        for path in sorted(fs.files_under(fs.join(root, part))):
            out[path[len(root) + 1:]] = hashlib.sha256(fs.read_bytes(path)).hexdigest()
    # pipeline.yaml records where the run was written (its own output): a fact about the run, not a result
    files = [f for f in json.loads(fs.read_bytes(fs.join(root, "manifest.json")))["files"] if f["path"] != "pipeline.yaml"]
    out["manifest.json files"] = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return out


def markers(root: str, stage: str = "*") -> list[dict]:
    """Every task marker of a stage (all phases), with the node it names."""
    found = [p for p in fs.files_under(fs.join(root, "_state")) if p.endswith(".json")]
    return [{"stage": p.split("/_state/")[1].split("/")[0], "path": p, **json.loads(fs.read_bytes(p))}
            for p in found if p.rsplit("/", 1)[1] not in ("stage.json", "record.json") and not p.endswith(".key.json")
            and (stage == "*" or f"/_state/{stage}/" in p)]


@pytest.fixture(scope="module")
def inline(s3):
    out = f"s3://{BUCKET}/runs/inline"
    result = run_zyda2(out)
    assert result.returncode == 0, result.stderr
    reference = outputs(out)
    assert len(reference) > 60 and any(k.startswith("pack/") and k.endswith(".bin") for k in reference)
    return reference


def accounting_holds(root: str) -> None:
    """kept + ledger = input, per source, through `curate query` over the S3 run (DuckDB reads it via fsspec)."""
    from curate.query import connect

    rows = connect(root).sql("""
        SELECT d.source, count(*) AS docs, count(k.id) AS kept, count(l.id) AS removed
        FROM docs d LEFT JOIN kept k USING (source, id) LEFT JOIN ledger l USING (source, id) GROUP BY 1""").fetchall()
    assert len(rows) == 4
    for source, docs, kept, removed in rows:
        assert docs == kept + removed, source


@pytest.mark.slow  # a cluster of several nodes
def test_a_local_output_is_refused_on_several_nodes_unless_shared(cluster, tmp_path):
    run = tmp_path / "run"
    result = run_zyda2(str(run), address=cluster.address)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"curate: error: --output {run} is a local path, but the Ray cluster has 3 nodes")
    assert "execution.shared_fs: true" in last and "object storage" in last
    assert not glob.glob(str(run / "_state" / "*" / "*" / "**" / "*.json"), recursive=True), "no task may run"
    shared = run_zyda2(str(run), "--until", "ingest", "--set", "execution.shared_fs=true", address=cluster.address)
    assert shared.returncode == 0, shared.stderr  # the nodes of this cluster do share this disk


@pytest.mark.slow  # a cluster of several nodes
def test_a_node_without_credentials_names_bucket_and_node_and_execution_env_forwards_them(cluster):
    bare = cluster.add(**dict.fromkeys(CREDENTIALS, ""))
    try:
        failed = run_zyda2(f"s3://{BUCKET}/runs/bare", "--until", "ingest", address=cluster.address)
        assert failed.returncode == 1
        last = failed.stderr.strip().splitlines()[-1]
        assert last.startswith("curate: error: stage 'ingest' failed on "), failed.stderr[-2000:]
        assert f"node {cluster.node_id(bare)}" in last and f"bucket '{BUCKET}'" in last and "execution.env" in last
        assert "Traceback" not in failed.stderr
        forwarded = run_zyda2(f"s3://{BUCKET}/runs/forwarded", "--until", "ingest",
                              "--set", f"execution.env=[{','.join(CREDENTIALS)}]", address=cluster.address)
        assert forwarded.returncode == 0, forwarded.stderr
        assert cluster.node_id(bare) in {m["node"].split("node ")[1][:8] for m in markers(f"s3://{BUCKET}/runs/forwarded")}
    finally:
        cluster.kill(bare)


def wait_for(predicate, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow  # a cluster of several nodes
def test_a_three_node_run_into_s3_equals_inline_and_a_worker_node_lost_mid_stage_costs_only_its_tasks(cluster, inline):
    """One run checks both (each is a whole zyda2 job on three raylets): tasks on every node, the filter reading its
    signals from S3 with DuckDB, a node lost while the model's actors score, and still the inline run's bytes."""
    out = f"s3://{BUCKET}/runs/loss"
    victim = cluster.workers[0]
    cmd = [sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", out, "--address", cluster.address]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CURATE_SAMPLE": SAMPLE})
    model_phase = f"s3://{BUCKET}/runs/loss/_state/quality_model/model-zyda2_quality"
    wait_for(lambda: fs.files_under(model_phase), proc)  # the actor pool is scoring: every node holds an actor
    cluster.kill(victim)
    _, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err[-3000:]
    assert f"node {cluster.node_id(victim)} left the Ray cluster" in err
    assert outputs(out) == inline
    accounting_holds(out)
    assert len({m["node"] for m in markers(out)}) == 3   # tasks ran on every node (the lost one before it went)
    assert {m["node"] for m in markers(out, "quality_filter")}
    assert "Token authentication" not in err and "Traceback" not in err
    later = {m["node"] for stage in ("tokenize", "pack", "kept") for m in markers(out, stage)}
    assert later and not any(cluster.node_id(victim) in n for n in later)


@pytest.mark.slow  # a cluster of several nodes
def test_a_lost_head_ends_the_run_in_one_paragraph_and_the_run_resumes_from_its_markers(cluster, inline):
    out = f"s3://{BUCKET}/runs/head"
    cmd = [sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", out, "--address", cluster.address, "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CURATE_SAMPLE": SAMPLE})
    wait_for(lambda: fs.files_under(f"{out}/_state/signals/shards"), proc)
    cluster.cluster.head_node.kill_all_processes(check_alive=False, allow_graceful=False)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode != 0
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"curate: error: the Ray cluster's head node ({cluster.address}) is gone"), err[-3000:]
    # signals was running when the head died; on a fast box the driver may already be in the next stage
    stage = re.search(r"during stage '(\w+)'", last)
    assert stage and stage[1] in ("signals", "quality_filter", "quality_model"), last
    assert f"recorded in {out}" in last and "resume" in last
    cluster.stop()
    # a run of the same pipeline into the same output resumes from the markers in S3: here inline, which reads the
    # markers a new cluster would (a whole zyda2 job on another loopback cluster would add minutes to CI)
    resumed = curate("run", str(ZYDA2), "--output", out, "--inline")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "[ingest: read] 11 tasks (11 already done)" in resumed.stderr, resumed.stderr[-3000:]
    assert outputs(out) == inline
    accounting_holds(out)


@pytest.mark.slow   # a Ray cluster of its own (20-30 s): the fast half leaves it to CI
def test_an_address_nobody_answers_at_fails_within_seconds_in_one_line(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "one"}\n')
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"name: t\nsources:\n  s: {{format: jsonl, paths: '{tmp_path}/in.jsonl'}}\nstages: {{ingest: {{}}}}\n")
    port = free_port()
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "curate", "run", str(pipeline), "--output", str(tmp_path / "run"),
                             "--address", f"127.0.0.1:{port}", "-q"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    assert time.monotonic() - started < 40
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"curate: error: --address 127.0.0.1:{port}: no Ray cluster answers there (nothing accepted a "
                     f"connection to 127.0.0.1:{port} for 20s); start its head with `ray start --head`, check the host "
                     "and port, or leave out --address for an embedded local cluster"], result.stderr


@pytest.mark.slow  # kill -9
def test_a_killed_driver_leaves_no_embedded_cluster_behind(tmp_path, sample_dir):
    """kill -9 of the driver: the watcher ends what Ray leaves of the embedded cluster (its agents)."""
    from curate.runner.watcher import holders

    before = set(glob.glob(os.path.join(ray_temp_dir(), "session_*")))  # an earlier process may have had this pid
    proc = subprocess.Popen([sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", str(tmp_path / "run"),
                             "--workers", "1", "-q"], env={**os.environ, "CURATE_SAMPLE": str(sample_dir)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: list((tmp_path / "run" / "_state").rglob("0*.json")), proc, 120)
    session = [s for s in glob.glob(os.path.join(ray_temp_dir(), f"session_*_{proc.pid}")) if s not in before]
    assert len(session) == 1 and len(holders(session[0])) >= 4  # gcs, raylet, agents, workers
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while holders(session[0]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert holders(session[0]) == []


def test_a_bucket_that_does_not_exist_is_one_line(s3):
    result = run_zyda2("s3://no-such-bucket/run")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("curate: error: --output s3://no-such-bucket/run: cannot be read or "
                                                   "written: FileNotFoundError: The specified bucket does not exist"), lines
