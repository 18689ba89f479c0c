"""The built wheel is the whole install: installed alone into a fresh venv, outside the repository, it runs the
packaged recipe (its data files: lid.176, the recipes, the word lists, the demo terms, the manifest schema).

The fresh venv sees the test environment's third-party packages through a `.pth` file (so no download is
needed), but curate itself, and every file it reads, comes from the wheel.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # packaging

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    # built from a copy without build/: setuptools reuses a checkout's build/lib, which can hold files that
    # the package data no longer names (or that a developer made), and the wheel would carry them unseen
    source = shutil.copytree(ROOT, work / "source", ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", ".git", "runs", ".curate-sample", "__pycache__", ".*_cache", ".venv*", "venv"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source),
                            "-w", str(work / "dist")], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    wheel = next((work / "dist").glob("curate-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
    python = work / "venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    return work


def _env(work):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURATE_")}
    env["CURATE_SAMPLE"] = str(work / "sample")
    env["PATH"] = f"{work / 'venv' / 'bin'}:{env['PATH']}"
    return env


def test_curate_comes_from_the_wheel_with_its_data(fresh):
    out = subprocess.run([fresh / "venv" / "bin" / "python", "-c",
                          "import curate, curate.models.langid as l; print(curate.__file__); print(l.model_path())"],
                         capture_output=True, text=True, cwd=fresh, env=_env(fresh), check=True).stdout.split()
    assert all(str(fresh / "venv") in line for line in out), out


def test_the_dt_words_tables_ship_as_package_data(fresh):
    """data/dtwords_tables.json is in the wheel: the installed tokenizer splits with spaCy's exceptions."""
    code = ("from curate.signals import dtwords_data as d; from curate.signals.dtwords import datatrove_words as w; "
            "print(d.PATH); print(w(\"Mr. Smith don't.\"))")
    out = subprocess.run([fresh / "venv" / "bin" / "python", "-c", code], capture_output=True, text=True, cwd=fresh,
                         env=_env(fresh), check=True).stdout.splitlines()
    assert str(fresh / "venv") in out[0] and out[0].endswith("dtwords_tables.json"), out
    assert out[1] == "['Mr.', 'Smith', 'do', \"n't\", '.']", out


def test_the_packaged_recipe_runs_outside_the_repository(fresh):
    env = _env(fresh)
    listing = subprocess.run(["curate", "recipes"], capture_output=True, text=True, cwd=fresh, env=env, timeout=120)
    assert listing.returncode == 0 and "zyda2" in listing.stdout and "gopher_quality" in listing.stdout
    run = subprocess.run(["curate", "run", "zyda2", "--output", "run", "--inline", "-q",
                          "--set", "stages.quality_filter.recipes={dclm: [c4]}"],
                         capture_output=True, text=True, cwd=fresh, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().startswith("done in ") and len(run.stdout.strip().splitlines()) == 1, "-q: the last line only"
    manifest = json.loads((fresh / "run" / "manifest.json").read_text())
    assert manifest["outputs"] and manifest["pipeline"]["name"] == "zyda2"
    assert subprocess.run(["curate", "manifest", "verify", "run"], cwd=fresh, env=env, timeout=300).returncode == 0
