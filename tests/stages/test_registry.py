"""Stages are looked up by name and their modules imported on first use: a Ray worker that runs one stage's
tasks (it unpickles `curate.stages.<name>`) imports neither the others nor their heavy dependencies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import curate.stages
from curate.stages import STAGES, stage
from curate.stages.registry import BUILT_IN


def test_importing_one_stage_imports_no_other_stage_nor_duckdb_numba_or_torch():
    code = ("import sys, curate.stages.ingest; "
            "print(sorted(m for m in sys.modules if m.startswith('curate.stages.') or m in ('duckdb', 'numba', 'torch')))")
    loaded = eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    others = [m for m in loaded if m.split(".")[-1] in BUILT_IN and m != "curate.stages.ingest"]
    assert others == [] and not {"duckdb", "numba", "torch"} & set(loaded), loaded


def test_the_registry_is_a_mapping_of_every_built_in_stage_and_registered_ones(monkeypatch):
    assert set(BUILT_IN) <= set(STAGES) and "minhash" in STAGES and "nope" not in STAGES
    assert STAGES["minhash"].KIND == "minhash" and STAGES.get("nope") is None
    with pytest.raises(KeyError):
        STAGES["nope"]
    before = len(STAGES)   # the built-in ones, and any that other tests registered

    @stage("extra_test_stage")
    class Extra:
        pass

    try:
        assert STAGES["extra_test_stage"] is Extra and "extra_test_stage" in list(STAGES)
        assert len(STAGES) == before + 1
        with pytest.raises(ValueError, match="two stages are called 'minhash'"):
            stage("minhash")(Extra)
    finally:
        del STAGES["extra_test_stage"]
    assert all(STAGES[name].KIND == name for name in BUILT_IN)   # every module registers the name it is listed under


def test_built_in_lists_exactly_the_stages_of_the_folder_each_in_the_module_of_its_name():
    folder = Path(curate.stages.__file__).parent
    found = {}
    for module in sorted(folder.glob("*.py")):
        for name in re.findall(r'^@stage\("([^"]+)"\)', module.read_text(), re.M):
            found[name] = module.stem
    assert sorted(found) == sorted(BUILT_IN), "add a new stage module's name to BUILT_IN in curate/stages/registry.py"
    assert all(module == name for name, module in found.items()), found
