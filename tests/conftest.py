"""Shared fixtures: a small sample corpus made once per session, helpers to run pipelines, and `run_stage`,
which runs one stage inline on a tiny run directory."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from collections import ChainMap
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main
from curate.io import fs
from curate.rundir import RunDir
from curate.sample import make_sample

ROOT = Path(__file__).resolve().parents[1]
ZYDA2 = ROOT / "pipelines" / "zyda2.yaml"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "corpus"
    make_sample(path, docs=600, seed=0)
    return path


@pytest.fixture
def sample_env(sample_dir, monkeypatch):
    """Point pipelines/zyda2.yaml at the session's sample corpus."""
    monkeypatch.setenv("CURATE_SAMPLE", str(sample_dir))
    return sample_dir


def run_cli(*args: str) -> int:
    return main(["run", *map(str, args)])


def tree_digest(run: Path, parts=("kept", "ledger", "docs")) -> dict[str, str]:
    """sha256 of every Parquet output, keyed by its path inside the run."""
    out = {}
    for part in parts:
        for f in sorted((run / part).rglob("*.parquet")):
            out[str(f.relative_to(run))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def token_documents(run: Path, step: str, source: str) -> list[tuple]:
    """Token ids of every document a tokenize step wrote for `source`, sorted, each as many times as the mix plan
    copies it (the pack step's copies: `doc_copies` of the run's mix record; once each without a mix step)."""
    import numpy as np

    from curate.rundir import MixRecord
    from curate.tokens.mixture import doc_copies

    rundir = RunDir(str(run))
    plans = [r.plan for p in sorted((run / "_state").glob("*/record.json")) if (r := rundir.find_record(p.parent.name, MixRecord))]
    assert len(plans) <= 1, "more than one mix step: say which"
    out = []
    for f in sorted((run / step / source).glob("*.parquet")):
        docs = pq.read_table(f, columns=["id", "tokens"])
        ids = docs.column("id").combine_chunks()
        n = doc_copies(rundir, plans[0], source, f.stem, ids) if plans else np.ones(len(ids), np.int64)
        out += [tuple(t) for t, k in zip(docs.column("tokens").to_pylist(), n.tolist()) for _ in range(k)]
    return sorted(out)


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def env_with(**extra) -> dict:
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def kill_9_when(cmd: list[str], ready, seconds: float = 180, cwd=None, env: dict | None = None) -> None:
    """Start `cmd` (a `curate run`) and SIGKILL it the moment `ready()` holds (e.g. a task marker of the phase
    under test appeared); fails if the run ends first or nothing happens in `seconds`."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env or env_with(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds
    while not ready() and time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


# ---- one stage, inline, on a tiny run directory ---------------------------------------------------

@dataclass
class StageRun:
    """What `run_stage` left: the run directory, the stage object, and readers of what it wrote."""

    run: RunDir
    stage: object
    counts: list  # the accounting phase's per-shard counts, in plan order

    def ledger(self) -> pa.Table:
        """Every ledger row the stage wrote (id, source, stage, reason, detail), sorted by source and id."""
        files = sorted(Path(self.run.path("ledger", self.stage.name)).rglob("*.parquet"))
        if not files:
            return pa.table({"id": pa.array([], pa.string()), "reason": pa.array([], pa.string())})
        return pa.concat_tables(pq.read_table(f) for f in files).sort_by([("source", "ascending"), ("id", "ascending")])

    def table(self, *parts: str) -> pa.Table:
        """Every Parquet file under RUN/<parts...> (a side table such as `signals`), concatenated."""
        files = sorted(Path(self.run.path(*parts)).rglob("*.parquet"))
        return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")


def write_docs(run: RunDir, docs: dict, shard_rows: int) -> list[dict]:
    """RUN/docs/<source>/<shard>.parquet from {source: [text or {id, text, ...}]} (ids default to <source>-<i>),
    `shard_rows` documents per shard; returns the shards as an ingest record lists them."""
    shards = []
    for source, rows in docs.items():
        rows = [{"text": r} if isinstance(r, str) else dict(r) for r in rows]
        for i, r in enumerate(rows):
            r.setdefault("id", f"{source}-{i}")
        for n, start in enumerate(range(0, max(len(rows), 1), shard_rows)):
            part = rows[start:start + shard_rows]
            table = pa.Table.from_pylist(part) if part else pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
            table = table.select(["id", "text", *[c for c in table.column_names if c not in ("id", "text")]])
            os.makedirs(run.path("docs", source), exist_ok=True)
            pq.write_table(table, run.docs(source, f"{n:05d}"))
            shards.append({"source": source, "shard": f"{n:05d}", "input": f"{source}.parquet"})
    return shards


def assert_accounting(run: RunDir, stage: str, counts: list) -> None:
    """The accounting identity of one stage: per shard, in == kept + removed, and the ledger holds every removed id."""
    for c in counts:
        removed = sum(c["removed"].values())
        assert c["in"] == c["kept"] + removed, c
        path = run.ledger(stage, c["source"], c["shard"])
        assert (pq.read_metadata(path).num_rows if fs.exists(path) else 0) == removed, c


@pytest.fixture
def run_stage(tmp_path):
    """run_stage(kind_or_class, options, docs={source: [...]}, before=[(kind_or_class, options), ...]) -> StageRun.

    Writes the docs as an ingest step would (no reader runs), loads a pipeline of `ingest`, the `before`
    steps and the stage (so the options are validated, the chain checked and derived defaults resolved), runs
    each step after ingest inline (built by the runner's `build_stages`), asserts the accounting identity of
    each, and returns the last. A class (a stage written in a test) is registered for this run only, under its KIND."""
    from curate.config.pipeline import validate
    from curate.rundir import IngestRecord
    from curate.runner.phaserunner import PhaseRunner
    from curate.runner.progress import Progress
    from curate.runner.run import build_stages
    from curate.stages import STAGES

    def run_stage(stage, options: dict | None = None, docs: dict | None = None, before=(), shard_rows: int = 1000,
                  batch_rows: int = 8192, sample: bool = False) -> StageRun:
        run = RunDir(str(tmp_path / "run"))
        steps = [*before, (stage, options or {})]
        registry = ChainMap({}, STAGES)  # the test's own classes over the registry (built-in modules load on use)
        stages_cfg, names = {"ingest": {}}, []
        for i, (kind, opts) in enumerate(steps):
            if isinstance(kind, type):
                registry[kind.KIND] = kind
                kind = kind.KIND
            name = kind if kind not in names and kind != "ingest" else f"{kind}_{i}"
            names.append(name)
            stages_cfg[name] = {"use": kind, **opts}
        docs = docs or {"web": ["a first document", "a second document"]}
        sample_dir = tmp_path / "sample"
        sources = {s: {"format": "parquet", "paths": str((sample_dir if sample else tmp_path / "in") / s / "*.parquet")} for s in docs}
        pipeline = validate({"name": "unit", "sample": {"dir": str(sample_dir)}, "sources": sources,
                             "execution": {"batch_rows": batch_rows}, "stages": stages_cfg}, str(tmp_path / "unit.yaml"), registry)
        run.publish("ingest", IngestRecord(write_docs(run, docs, shard_rows)))
        runner = PhaseRunner(run, Progress(quiet=True), True, None, 1, 0, None)
        last = None
        for obj in build_stages(pipeline, run, pipeline.stages[-1].name, registry)[1:]:  # as a run builds them
            tasks = obj.plan()
            obj.execute(tasks, runner.for_stage(obj.name, {}))
            counts = run.markers(obj.name)
            assert_accounting(run, obj.name, counts)
            last = StageRun(run, obj, counts)
        runner.close()
        return last

    return run_stage
