"""What a stage kind shows and needs beyond the files it writes: its facets, declared with the stage.

A stage names a `Facets` subclass as `Stage.FACETS`. The code that shows a facet asks every step's class for it
and names no stage kind: the run's closing lines (`runner/summary.py`), the flags in `summary.json`, the report's
sections (`report/build.py`), what the manifest adds (`stages/manifest.py`) and the numba kernels compiled before
the tasks (`runner/kernels.py`). So a new stage is its own files, plus one line where it is registered.

Each method gets the run directory and the step's name (a step that has not run yet has no record: return
nothing); none of them runs in a worker, except the kernels' warm-up.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


WARM_TEXT = "Warm-up text: the kernels compile once.\nA second line, with punctuation; numbers 12 and 3.4!"


@dataclass(frozen=True)
class Kernel:
    """A numba kernel a stage's tasks call, compiled (or loaded from numba's cache) before them, timed apart.

    `warm` ("module:function") calls it once on a tiny input; `entries` ("module:function") are the compiled entry
    points it leaves in numba's cache (how a driver knows its workers can load them). Named by strings so that a
    phase's kernels pickle to a worker without importing anything."""

    description: str
    warm: str
    entries: tuple[str, ...] = ()

    def __call__(self) -> None:
        module, function = self.warm.split(":")
        getattr(importlib.import_module(module), function)()


class Facets:
    """The facets of a stage kind; every one is optional (the defaults show nothing)."""

    REPORT: tuple[str, ...] = ()
    """Report sections, each `"module:NAME"` of a `curate.report.section.Section` (the report is above the stages,
    so it is named, not imported); shown where the first step naming it stands in the pipeline."""

    KERNELS: tuple[Kernel, ...] = ()
    """The kernels the step's accounting tasks call (`kernels(options)` when they depend on its options)."""

    @classmethod
    def kernels(cls, options: dict) -> tuple[Kernel, ...]:
        return cls.KERNELS

    @classmethod
    def lines(cls, run, step: str, rows: list[dict], order: list[str]) -> list[str]:
        """Lines printed after the summary table (`rows`: the run's summary rows; `order`: the source priority)."""
        return []

    @classmethod
    def flags(cls, run, step: str, sources: list[str]) -> dict[str, dict]:
        """Per source, what the step adds to its row in `summary.json` (`sources`: those the step has rows for)."""
        return {}

    @classmethod
    def manifest(cls, run, step: str) -> dict:
        """What the step adds to the manifest: `{"models": {name: {...}}}` for the models it ran."""
        return {}
