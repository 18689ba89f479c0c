"""Compiling the numba kernels once per process, on a tiny input, before the tasks that use them.

Why: a kernel compiles on its first call (tens of seconds the very first time on a machine, then loaded
from numba's on-disk cache in about a second). Compiled inside a task, that time is charged to whichever
source's shard ran first (`minhash fwe 46.7s` against `dclm 0.6s`) and the run is silent while it happens.
Warmed here instead, the driver says what it is compiling and how long it took, the summary keeps the
seconds apart (`compile_seconds`), and every worker warms the same kernels before its first task, outside
the task's timer.

A kernel is named by the stage kind that uses it; `warm(names)` is idempotent within a process.
"""

from __future__ import annotations

import time
from typing import Callable

_SAMPLE = "Warm-up text: the kernels compile once.\nA second line, with punctuation; numbers 12 and 3.4!"


def _minhash() -> None:
    import pyarrow as pa

    from curate.dedup.signatures import compute_signatures

    compute_signatures(pa.array([_SAMPLE, "x"]), "zyda2")  # one compiled function serves every preset


def _signals() -> None:
    import pyarrow as pa

    from curate.signals import compute_signals

    compute_signals(pa.array([_SAMPLE, "x"]), pa.array(["https://example.com/a", None]))


def _datatrove_words() -> None:
    import pyarrow as pa

    from curate.signals import datatrove_word_stats

    datatrove_word_stats(pa.array([_SAMPLE, "x"]))


def _langid() -> None:
    import pyarrow as pa

    from curate.models.langid import identify

    identify(pa.array([_SAMPLE, None]))


def _blocklist() -> None:
    import pyarrow as pa

    from curate.dualuse import Blocklist

    Blocklist(["warm-up term", "numbers"]).scan(pa.array([_SAMPLE, "x"]))


def _decontaminate() -> None:
    import pyarrow as pa

    from curate.decontam.evalsets import EvalItem
    from curate.decontam.index import EvalIndex

    EvalIndex([EvalItem("warm", "0", ("second line with punctuation numbers",))], ["warm"], 3, 2).scan(pa.array(["a", "b"]),
                                                                                                     pa.array([_SAMPLE, "x"]))


WARMERS: dict[str, tuple[str, Callable[[], None], tuple[str, ...]]] = {
    # name: (what it is, how to warm it, the compiled entry points it leaves in numba's cache)
    "minhash": ("the MinHash signature kernel", _minhash, ("curate.dedup.kernel:signatures_range",)),
    "signals": ("the RedPajama-V2 signal kernels", _signals,
                ("curate.signals.raw_kernel:build_word_set", "curate.signals.raw_kernel:raw_pass", "curate.signals.raw_kernel:scan_docs",
                 "curate.signals.words_kernel:build_phrase_set", "curate.signals.words_kernel:words_pass")),
    "datatrove_words": ("the datatrove word-split kernel", _datatrove_words,
                        ("curate.signals.dtwords_kernel:hash_cps", "curate.signals.dtwords_kernel:stats_pass")),
    "langid": ("the language-id kernel", _langid, ("curate.models.lid_kernel:predict_top", "curate.models.lid_kernel:vocabulary_rows")),
    "blocklist": ("the blocklist scan kernel", _blocklist, ("curate.dualuse.kernel:scan_kernel",)),
    "decontaminate": ("the decontamination word-hash and lookup kernels", _decontaminate,
                      ("curate.decontam.lookup:find_grams", "curate.decontam.ngrams:prefix_sums", "curate.decontam.normalize:_scan")),
}

_done: dict[str, float] = {}


def warm(names, on_start: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from the cache) each named kernel not yet warm in this process; returns the seconds
    each one took now. `on_start(description)` is called before a kernel is compiled (to say so)."""
    took = {}
    for name in names:
        if name in _done:
            continue
        description, fn, _ = WARMERS[name]
        if on_start is not None:
            on_start(description)
        started = time.monotonic()
        fn()
        _done[name] = took[name] = round(time.monotonic() - started, 3)
    return took


def cached(names) -> bool:
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
        for name in names:
            for entry in WARMERS[name][2]:
                module, function = entry.split(":")
                index = getattr(importlib.import_module(module), function)._cache._cache_file._load_index()
                if not any(key[1] == magic for key in index):
                    return False
        return True
    except Exception:
        return False
