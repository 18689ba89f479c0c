"""The clustering phases that the dedup and exact_dedup stages share (they differ only in their band keys).

`cluster` runs the graph phases of `curate.dedup.graph` (and `verify`) as phases of the calling stage;
`ClusterStage` is the accounting both share: a docs shard's decisions become ledger removals and
`clusters` rows. Each stage makes its own band keys and composes these; neither builds nor imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.dedup import graph, nodes, verify
from curate.dedup.shingles import Shingling
from curate.errors import CurateError
from curate.io import fs
from curate.io.parquet import ParquetSink
from curate.dedup.layout import shard_numbers, shard_tag
from curate.rundir import IngestRecord, RunDir
from curate.stages.phase import Phase, PhaseRunner, Task
from curate.stages.shard import Output, ShardRef, ShardStage, removals


CLUSTERS = pa.schema([("id", pa.string()), ("source", pa.string()), ("cluster", pa.uint64()), ("kept", pa.bool_())])


@dataclass(frozen=True)
class ShardJob:
    """The payload of a per-docs-shard graph phase."""

    source: str
    shard: str
    tag: str


@dataclass(frozen=True)
class Clustering:
    stage: str
    graph: graph.GraphDir
    bands: str                   # where the band keys are: p=<partition>/*.parquet
    policy: str
    by_id: bool                  # policy `all` with `tie_break: id`
    max_rounds: int
    verify: float | None = None
    shingling: dict | None = None


def _column(run: RunDir, name: str, fn, job: ShardJob) -> dict:
    """Call `fn(job.tag, <the docs shard's column>)`, the form the shard-level graph functions take."""
    with fs.open_input(run.docs(job.source, job.shard)) as handle:
        column = pq.read_table(handle, columns=[name]).column(name).combine_chunks()
    return fn(job.tag, column)


def cluster(c: Clustering, run: RunDir, jobs: list[ShardJob], run_phase: PhaseRunner) -> None:
    g = c.graph
    parts = [Task(f"{p:05d}", f"partition {p}", p) for p in range(g.partitions)]
    shards = [Task(j.tag, f"source '{j.source}' shard {j.shard}", j) for j in jobs]
    run_phase(Phase("buckets", parts, partial(graph.buckets, g, c.bands, c.verify is not None)))
    if c.verify is not None:
        shingling = Shingling(**{**c.shingling, "normalize": tuple(c.shingling["normalize"])})
        run_phase(Phase("verify-a", shards, partial(_column, run, "text", partial(verify.verify_a, g, shingling))))
        run_phase(Phase("verify-b", shards, partial(_column, run, "text", partial(verify.verify_b, g, shingling, c.verify))))
    run_phase(Phase("init", parts, partial(graph.init, g)))
    for rnd in range(c.max_rounds):
        run_phase(Phase(f"send-{rnd}", parts, partial(graph.send, g, rnd)))
        if sum(r["changed"] for r in run_phase(Phase(f"receive-{rnd}", parts, partial(graph.receive, g, rnd)))) == 0:
            final = rnd + 1
            break
    else:
        raise CurateError(f"stage '{c.stage}': components did not converge in {c.max_rounds} rounds")
    run_phase(Phase("decide", parts, partial(graph.decide, g, c.policy, c.by_id, final)))
    if c.by_id:
        run_phase(Phase("idrank", shards, partial(_column, run, "id", partial(graph.idrank, g))))
        run_phase(Phase("choose", parts, partial(graph.choose, g)))
    resolve = [Task(j.tag, f"source '{j.source}' shard {j.shard}", j) for j in jobs]
    run_phase(Phase("resolve", resolve, partial(_resolve, run, g)))


def _resolve(run: RunDir, g: graph.GraphDir, job: ShardJob) -> dict:
    return _column(run, "id", lambda tag, ids: graph.resolve(g, tag, job.source, ids), job)


def shard_outcome(graph_root: str, tag: str, source: str, reason: str,
                  batches: Iterator[pa.Table]) -> Iterator[Output]:
    """Per batch of live documents (with `_row`): removals (`<reason>:<kept source>`, detail naming the kept
    document and the cluster) and `clusters` rows (id, source, cluster, kept) for the batch's members."""
    d = graph.shard_decisions(graph_root, tag)
    rows = nodes.row_of(d.node)
    for batch in batches:
        at = np.isin(rows, batch.column("_row").to_numpy())
        if not at.any():
            yield None
            continue
        ids = batch.column("id").combine_chunks().take(pa.array(np.searchsorted(batch.column("_row").to_numpy(), rows[at])))
        members = pa.table({"id": ids, "source": pa.array([source] * len(ids), pa.string()),
                            "cluster": pa.array(d.label[at]), "kept": pa.array(~d.removed[at])})
        gone = [int(n) for n in d.node[at] if int(n) in d.kept_by]
        gone_ids = ids.filter(pa.array(np.isin(d.node[at], np.array(gone, dtype=np.uint64))))
        by = [d.kept_by[n] for n in gone]
        labels = dict(zip(d.node[at].tolist(), d.label[at].tolist()))
        yield Output(rows=members, removed=removals(
            gone_ids, pa.array([f"{reason}:{s}" for _, s in by], pa.string()),
            pa.array([f"kept {i} ({s}); cluster {labels[n]}" for n, (i, s) in zip(gone, by)], pa.string())))


class ClusterStage(ShardStage):
    """What dedup and exact_dedup share after their band keys: the graph's work directory, the shard tags,
    and the accounting phase that ledgers `<REASON>:<kept source>` and writes `RUN/<stage>/clusters/`."""

    REMOVES = True
    COLUMNS = ["id"]
    ROW_NUMBERS = True
    REASON = ""
    GLOBAL = True                   # a cluster spans sources; who is kept follows the priority
    PIPELINE_READS = ("priority",)

    def owned_paths(self) -> list[str]:
        return [self.run.path(self.name, "clusters"), *super().owned_paths()]

    def graph_root(self) -> str:
        return self.run.work(self.name, "graph")

    def shard_numbers(self) -> dict:
        return shard_numbers(self.run.record(self.upstream["docs"], IngestRecord).pairs(), self.pipeline.priority)

    def jobs(self, tasks: list[Task]) -> list[ShardJob]:
        numbers = self.shard_numbers()
        return [ShardJob(t.source, t.shard, shard_tag(*numbers[(t.source, t.shard)])) for t in tasks]

    def setup(self) -> None:
        self.numbers = self.shard_numbers()

    def sink(self, shard: ShardRef) -> ParquetSink:
        return ParquetSink(self.run.clusters(self.name, shard.source, shard.shard), CLUSTERS)

    def process_shard(self, batches, shard: ShardRef):
        tag = shard_tag(*self.numbers[(shard.source, shard.shard)])
        return shard_outcome(self.graph_root(), tag, shard.source, self.REASON, batches)
