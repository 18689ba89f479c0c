"""What the graph phases of `curate.stages.clustering` and `curate.stages.sound_phases` share: a docs shard's task
payload, its column as the shard-level functions take it, the phase wrapper, and which shards have work queued."""

from __future__ import annotations

from dataclasses import dataclass

from curate.io.parquet import read_file
from curate.dedup import bundles, graph
from curate.dedup.layout import group_of, tag_key
from curate.rundir import RunDir
from curate.rundir.edits import apply_edits, read_spans
from curate.stages.facets import Kernel
from curate.stages.phase import Phase, Task


@dataclass(frozen=True)
class ShardJob:
    """The payload of a per-docs-shard graph phase."""

    source: str
    shard: str
    tag: str
    editors: tuple[str, ...] = ()   # text-editing steps before the stage (pii): its text is theirs, edited


def column(run: RunDir, name: str, fn, job: ShardJob) -> dict:
    """Call `fn(job.tag, <the docs shard's column>)`, the form the shard-level graph functions take."""
    return fn(job.tag, read_column(run, name, job))


def read_column(run: RunDir, name: str, job: ShardJob):
    """A docs shard's column as the step sees it: its text edited by the editing steps before it."""
    edits = [read_spans(run, step, job.source, job.shard) for step in job.editors] if name == "text" else []
    table = read_file(run.docs(job.source, job.shard), columns=[name, "id"] if any(edits) else [name])
    for spans in edits:
        table = apply_edits(table, spans)
    return table.column(name).combine_chunks()


def phase(name: str, tasks: list[Task], fn, kernels: tuple[Kernel, ...] = (), prefetch=None, restore=None) -> Phase:
    """A graph phase: each task reads and writes only its own files, so an inline run may run several at once."""
    return Phase(name, tasks, fn, concurrent=True, kernels=kernels, prefetch=prefetch, restore=restore)


def queued(g: graph.GraphDir, shards: list[Task], *folder: str) -> list[Task]:
    """The shards something was sent to under `folder` (`curate.dedup.bundles`): a per-shard phase plans no task (no
    round trip, no read of the shard's text) for a shard with nothing to do. In the 1M-document scale run,
    of 1,100 shards: gather 1,028, exact a 642, exact b 789, resolve 970."""
    tags = bundles.receivers(g.path(*folder))
    return [t for t in shards if t.payload.tag in tags]


def grouped(shards: list[Task]) -> list[Task]:
    """Per-shard tasks joined into one task per group of `layout.GROUP` consecutive shards of a source
    (`layout.group_of`), its payload their jobs in plan order: a task writes one bundle and one marker, not one of each
    per shard. A new file costs ~0.75 ms on this machine's ext4 (as much as a small shard's work in `gather`); on an
    object store it is a PUT."""
    groups: dict[str, list[ShardJob]] = {}
    for t in shards:
        groups.setdefault(group_name((t.payload,)), []).append(t.payload)
    return [Task(name, f"source '{jobs[0].source}' shards {jobs[0].shard} .. {jobs[-1].shard} ({len(jobs)})" if len(jobs) > 1
                 else f"source '{jobs[0].source}' shard {jobs[0].shard}", tuple(jobs)) for name, jobs in groups.items()]


def group_name(jobs: tuple[ShardJob, ...]) -> str:
    """The name of the group the jobs' shards are in (`layout.group_of`): its task's key, and its bundle's."""
    return group_of(tag_key(jobs[0].tag))
