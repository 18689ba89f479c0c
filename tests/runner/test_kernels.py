"""The kernels' warm-up: what each warmer compiles is what `cached` looks for in numba's cache."""

from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys

import importlib

from curate.stages.facets import Kernel
from curate.stages.registry import BUILT_IN

DECLARED = """
import importlib
from curate.stages.facets import Kernel
from curate.stages.registry import BUILT_IN
KERNELS = {k.warm: k for name in BUILT_IN for k in vars(importlib.import_module(f"curate.stages.{name}")).values()
           if isinstance(k, Kernel)}
"""
COMPILED_BY_EACH = DECLARED + """
import gc, json
from numba.core.registry import CPUDispatcher
out = {}
for name, kernel in KERNELS.items():
    before = {id(d): len(d.overloads) for d in gc.get_objects() if isinstance(d, CPUDispatcher)}
    kernel()
    out[name] = sorted(f"{d.py_func.__module__}:{d.py_func.__qualname__}" for d in gc.get_objects()
                       if isinstance(d, CPUDispatcher) and len(d.overloads) > before.get(id(d), 0))
print(json.dumps(out))
"""


def declared() -> dict[str, Kernel]:
    """Every kernel a built-in stage module declares (in its facets or for one of its phases), by its warm-up."""
    return {k.warm: k for name in BUILT_IN for k in vars(importlib.import_module(f"curate.stages.{name}")).values()
            if isinstance(k, Kernel)}


def _python(code: str, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, check=True)
    return done.stdout


@pytest.mark.slow   # a Ray cluster of its own (20-30 s): the fast half leaves it to CI
def test_each_warmer_lists_the_entry_points_it_compiles():
    # a process that compiles a kernel also gives its callees overloads; one that loads it from numba's cache
    # gives them to the entry points alone: warm the cache first (a no-op where other tests did), then look
    _python(DECLARED + "from curate.runner.kernels import warm; warm(tuple(KERNELS.values()))")
    compiled = json.loads(_python(COMPILED_BY_EACH))
    kernels = declared()
    assert len(kernels) >= 6 and compiled == {name: sorted(k.entries) for name, k in kernels.items()}


def test_cached_is_true_only_once_a_process_has_warmed_the_kernel(tmp_path):
    blocklist = "from curate.stages.dual_use_facets import BLOCKLIST; from curate.stages.minhash import MinhashFacets; "
    ask = blocklist + "from curate.runner.kernels import cached; print(cached([BLOCKLIST]))"
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    # `__pycache__` beside the sources may already hold the kernel: an empty NUMBA_CACHE_DIR is a fresh machine
    assert _python(ask, **env).strip() == "False"
    _python(blocklist + "from curate.runner.kernels import warm; warm([BLOCKLIST])", **env)
    assert _python(ask, **env).strip() == "True"
    both = "print(cached([BLOCKLIST, *MinhashFacets.KERNELS]))"
    assert _python(blocklist + "from curate.runner.kernels import cached; " + both, **env).strip() == "False"
