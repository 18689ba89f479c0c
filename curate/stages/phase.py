"""A phase: named tasks of one kind, each a payload for the same function. Stages are made of phases.

The runner owns everything around a task: it skips tasks whose marker exists, times them, writes the
marker (with the counts the function returns) after the function succeeded, and reports progress.
A stage's accounting phase (`accounts=True`, one task per docs shard) returns `in`, `kept` and
`removed` per shard; the run's accounting and the ledger identity are checked on those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

from curate.stages.resources import Resources

P = TypeVar("P")


@dataclass(frozen=True)
class Task(Generic[P]):
    """One unit of work. `key` is unique within its phase and names its marker; `where` names the input
    in error messages. Shard tasks also say which source and docs shard they account for."""

    key: str
    where: str
    payload: P = field(compare=False)
    source: str | None = None
    shard: str | None = None


@dataclass(frozen=True)
class Phase(Generic[P]):
    """`run(payload) -> counts` for every task; `setup()` once per worker before its first task.

    `key`: what the phase's results depend on beyond the stage's upstream, one for all sources (a string)
    or one per source (a mapping; None: the source's tasks depend on nothing, not even upstream). A phase
    with a key keeps each source's markers and `outputs/<source>` when other options of its stage change
    (a model's scores survive a new keep threshold), and discards them when that source's key or upstream
    changes. Without a key, the phase's results go with the stage's per-source fingerprint.
    `kernels` are compiled before the first task, timed apart. `concurrent`: its tasks may run at once in one
    process (an inline run's threads): they share nothing mutable, and `setup()` prepares only what they read.
    `prefetch(tasks)`: the files the tasks about to run will read, asked of the disk together first (`fs.prefetch`).
    `restore(tasks)`: the counts of those of the tasks about to run whose results the driver put back from an earlier
    run at once (`curate.rundir.outcomes`, by task key): an append's thousand unchanged shards, without a task each.
    """

    name: str
    tasks: Sequence[Task[P]]
    run: Callable[[P], dict]
    setup: Callable[[], None] | None = None
    resources: Resources = Resources()
    accounts: bool = False
    key: str | dict[str, str | None] | None = None
    outputs: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()   # numba kernels its tasks call, compiled before them (runner/kernels.py)
    concurrent: bool = False
    prefetch: Callable[[list[Task[P]]], list[str]] | None = None
    restore: Callable[[list[Task[P]]], dict[str, dict]] | None = None

    @property
    def label(self) -> str:
        return self.name.replace("-", " ")


class PhaseResults(list):
    """Every task's counts, in plan order, resumed tasks included; `ran`: how many of the tasks ran now (the others'
    counts are those their markers kept from an earlier run), so a stage says "scored N" only of what it scored."""

    ran: int = 0


PhaseRunner = Callable[[Phase], PhaseResults]
"""What a stage is handed to execute its phases: `run_phase(phase)` returns its `PhaseResults`."""
