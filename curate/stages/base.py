"""What a stage is: its options, what it needs and produces, a plan of tasks, and the phases that do them."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod

from curate.config.pipeline import Pipeline, canonical_json
from curate.config.schema import Field
from curate.rundir import RunDir
from curate.stages.phase import PhaseRunner, Task


class Stage(ABC):
    """A pipeline step. Subclasses set OPTIONS and the chain declarations, and implement `plan` and `execute`.

    - NEEDS: what earlier steps must provide (checked when the pipeline loads), e.g. ("minhash",).
    - USES: what it reads when an earlier step provides it (a filter joins signals and scores if present).
    - PRODUCES: what it provides to later steps (files in the run directory and a record, see rundir).
    - REMOVES: it writes ledger rows for documents; later steps no longer see them.
    - FINAL: it describes the finished run (after the kept documents are written), so it comes last.

    `previous` names the earlier steps that remove documents; `upstream` maps each need (and each use
    that is present) to the step providing it.
    """

    KIND = ""
    OPTIONS: dict[str, Field] = {}
    NEEDS: tuple[str, ...] = ()
    USES: tuple[str, ...] = ()
    PRODUCES: tuple[str, ...] = ()
    REMOVES = False
    FINAL = False
    KERNELS: tuple[str, ...] = ()   # numba kernels its accounting tasks call (runner/kernels.py)

    def __init__(self, name: str, options: dict, pipeline: Pipeline, run: RunDir, previous: list[str],
                 upstream: dict[str, str]):
        self.name, self.options, self.pipeline, self.run = name, options, pipeline, run
        self.previous, self.upstream = previous, upstream

    @classmethod
    def validate_options(cls, options: dict, sources: dict, file: str, key: str) -> None:
        """Checks across options (beyond types and bounds); raise ConfigError."""

    def preflight(self) -> None:
        """Checks that need more than the options (a model file loads, a tokenizer exists), run before any
        task of the run starts; raise CurateError."""

    def kernels(self) -> tuple[str, ...]:
        """The numba kernels this stage's accounting tasks call, compiled before them (and timed apart)."""
        return self.KERNELS

    def fingerprint(self, upstream: str, tasks: list[Task]) -> str:
        """Changes whenever this stage's results could change: options, upstream results, planned inputs."""
        body = canonical_json({"kind": self.KIND, "options": self.options, "upstream": upstream,
                               "extra": self.fingerprint_extra(tasks)})
        return hashlib.sha256(body.encode()).hexdigest()

    def fingerprint_extra(self, tasks: list[Task]):
        return None

    def owned_paths(self) -> list[str]:
        """Everything this stage writes, removed when its fingerprint changes."""
        return [self.run.path("ledger", self.name), self.run.state(self.name)]

    @abstractmethod
    def plan(self) -> list[Task]:
        """The tasks of the stage's accounting phase, in a deterministic order."""

    @abstractmethod
    def execute(self, tasks: list[Task], run_phase: PhaseRunner) -> None:
        """Run the stage's phases through `run_phase`; the last one is usually the accounting phase."""
