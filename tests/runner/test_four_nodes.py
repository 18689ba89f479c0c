"""Four Ray nodes (separate raylets on 127.0.0.1), the run directory on an S3 server, a worker node killed
as dedup starts: the zyda2 job through dedup still finishes, byte for byte what an `--inline` run of the
same corpus writes. The small version of bench/bench_nodes.py (issue 32, which runs the whole job and loses
a node in tokenize too), with its test bed (bench/loopback.py); through dedup only, to keep four raylets on
2 cores within a minute or so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from bench_nodes import download, per_node  # noqa: E402  (bench/bench_nodes.py)
from compare_runs import compare  # noqa: E402
from loopback import LoopbackCluster, S3Server  # noqa: E402

from conftest import ZYDA2  # noqa: E402

BUCKET = "curate-four"
DOCS = 600


def zyda2(output: str, sample: str, *where: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", output, "--until", "dedup", *where],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CURATE_SAMPLE": sample, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow  # four raylets on 2 cores: 45 s on a quiet box
def test_four_nodes_into_s3_lose_one_during_dedup_and_equal_inline(tmp_path):
    from curate.io import fs
    from curate.sample import make_sample

    make_sample(tmp_path / "sample", docs=DOCS, seed=0)
    inline = zyda2(str(tmp_path / "inline"), str(tmp_path / "sample"), "--inline", "-q")  # beside the cluster's start
    s3 = S3Server(BUCKET)
    cluster = None
    try:
        sample = f"s3://{BUCKET}/sample"
        fs.upload_tree(str(tmp_path / "sample"), sample, last="_SUCCESS")
        cluster = LoopbackCluster(4)
        assert len({n.all_processes["raylet"][0].process.pid for n in cluster.nodes()}) == 4
        victim = cluster.workers[0]
        run = zyda2(f"s3://{BUCKET}/run", sample, "--address", cluster.address)
        seen = []
        for line in run.stderr:
            seen.append(line)
            if line.startswith("[dedup") and cluster.workers[0] is victim:
                cluster.kill(victim)
        assert run.wait() == 0, "".join(seen[-20:])
        assert cluster.workers[0] is not victim, "dedup never started"
        assert inline.wait() == 0, inline.stderr.read()[-2000:]
        assert f"node {cluster.node_id(victim)} left the Ray cluster" in "".join(seen)
        download(f"s3://{BUCKET}/run", str(tmp_path / "ray"))
    finally:
        if cluster is not None:
            cluster.stop()
        s3.stop()
    assert compare(str(tmp_path / "inline"), str(tmp_path / "ray")) == []
    nodes = per_node(str(tmp_path / "ray"))
    assert cluster.node_id(victim) in nodes and len(nodes) >= 3, nodes   # the lost node ran tasks before it went
    assert per_node(str(tmp_path / "ray"), "dedup")   # dedup's tasks ran, on the nodes left
