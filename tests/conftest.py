"""Shared fixtures: a small sample corpus made once per session, and helpers to run pipelines."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from curate.cli import main
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


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def env_with(**extra) -> dict:
    env = dict(os.environ)
    env.update({k: str(v) for k, v in extra.items()})
    return env
