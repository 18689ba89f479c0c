"""The kernels' warm-up: what each warmer compiles is what `cached` looks for in numba's cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from curate.runner.kernels import WARMERS

COMPILED_BY_EACH = """
import gc, json
from numba.core.registry import CPUDispatcher
from curate.runner import kernels
out = {}
for name, (_, warm, _) in kernels.WARMERS.items():
    before = {id(d): len(d.overloads) for d in gc.get_objects() if isinstance(d, CPUDispatcher)}
    warm()
    out[name] = sorted(f"{d.py_func.__module__}:{d.py_func.__qualname__}" for d in gc.get_objects()
                       if isinstance(d, CPUDispatcher) and len(d.overloads) > before.get(id(d), 0))
print(json.dumps(out))
"""


def _python(code: str, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, check=True)
    return done.stdout


def test_each_warmer_lists_the_entry_points_it_compiles():
    # a process that compiles a kernel also gives its callees overloads; one that loads it from numba's cache
    # gives them to the entry points alone: warm the cache first (a no-op where other tests did), then look
    _python("from curate.runner.kernels import WARMERS, warm; warm(WARMERS)")
    compiled = json.loads(_python(COMPILED_BY_EACH))
    assert compiled == {name: sorted(entries) for name, (_, _, entries) in WARMERS.items()}


def test_cached_is_true_only_once_a_process_has_warmed_the_kernel(tmp_path):
    ask = "from curate.runner.kernels import cached, warm; print(cached(['blocklist']))"
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    # `__pycache__` beside the sources may already hold the kernel: an empty NUMBA_CACHE_DIR is a fresh machine
    assert _python(ask, **env).strip() == "False"
    _python("from curate.runner.kernels import warm; warm(['blocklist'])", **env)
    assert _python(ask, **env).strip() == "True"
    assert _python("from curate.runner.kernels import cached; print(cached(['blocklist', 'minhash']))", **env).strip() == "False"
