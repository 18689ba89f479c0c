"""Compiling the numba kernels once per process, on a tiny input, before the tasks that use them.

Why: a kernel compiles on its first call (tens of seconds the very first time on a machine, then loaded
from numba's on-disk cache in about a second). Compiled inside a task, that time is charged to whichever
source's shard ran first (`minhash fwe 46.7s` against `dclm 0.6s`) and the run is silent while it happens.
Warmed here instead, the driver says what it is compiling and how long it took, the summary keeps the
seconds apart (`compile_seconds`), and every worker warms the same kernels before its first task, outside
the task's timer.

A kernel is a `curate.stages.facets.Kernel` a stage declares (its facets, or a phase's `kernels`): what it
is, how to warm it and the entry points it leaves in numba's cache; none is named here. `warm(kernels)` is
idempotent within a process.
"""

from __future__ import annotations

import time
from typing import Callable

from curate.stages.facets import Kernel

_done: dict[str, float] = {}


def warm(kernels: tuple[Kernel, ...], on_start: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from the cache) each kernel not yet warm in this process; returns the seconds each one
    took now, by description. `on_start(description)` is called before a kernel is compiled (to say so)."""
    took = {}
    for kernel in kernels:
        if kernel.warm in _done:
            continue
        if on_start is not None:
            on_start(kernel.description)
        started = time.monotonic()
        kernel()
        _done[kernel.warm] = took[kernel.description] = round(time.monotonic() - started, 3)
    return took


def cached(kernels: tuple[Kernel, ...]) -> bool:
    """Whether numba's on-disk cache already holds every entry point of the named kernels, fresh and for this CPU.

    Read from the cache's index files (nothing is loaded or compiled): a driver whose tasks all run on Ray
    workers then skips loading the kernels itself (~0.5 s of numba's start, while the workers wait); each
    worker loads them before its first task anyway. On any doubt (an unreadable index, numba's internals
    changed) the answer is no, and the driver warms as before.
    """
    import importlib

    try:
        from numba.core.registry import cpu_target

        magic = cpu_target.target_context.codegen().magic_tuple()
        for kernel in kernels:
            for entry in kernel.entries:
                module, function = entry.split(":")
                index = getattr(importlib.import_module(module), function)._cache._cache_file._load_index()
                if not any(key[1] == magic for key in index):
                    return False
        return True
    except Exception:
        return False
