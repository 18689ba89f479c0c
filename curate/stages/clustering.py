"""The clustering phases that the dedup and exact_dedup stages share (they differ only in their band keys).

`cluster` runs the graph phases of `curate.dedup.graph` (and `verify`) as phases of the calling stage;
`ClusterStage` is the accounting both share: a docs shard's decisions become ledger removals and
`clusters` rows. Each stage makes its own band keys and composes these; neither builds nor imports the other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Iterator

import numpy as np
import pyarrow as pa

from curate.dedup import graph, nodes, sound, verify
from curate.rundir import outcomes
from curate.dedup.shingles import Shingling
from curate.errors import CurateError
from curate.io.parquet import ParquetSink
from curate.dedup.layout import WORK, shard_numbers, shard_tag
from curate.io import fs
from curate.rundir.digests import file_digest, removed_digest
from curate.rundir import DedupRecord, IngestRecord, RunDir
from curate.stages import sound_phases
from curate.stages.facets import Facets
from curate.stages.graph_jobs import ShardJob, column, phase, queued
from curate.stages.phase import PhaseRunner, Task
from curate.stages.shard import Output, ShardRef, ShardStage, removals

log = logging.getLogger("curate")

CLUSTERS = pa.schema([("id", pa.string()), ("source", pa.string()), ("cluster", pa.uint64()), ("kept", pa.bool_()),
                      ("rep_id", pa.string()), ("rep_source", pa.string()), ("similarity", pa.float32()), ("method", pa.string()),
                      ("length", pa.int64()), ("represents", pa.int64())])
"""`cluster`: a number of the member's cluster that does not move when an append numbers docs shards anew (a 64-bit
hash of where its first document lives: source, docs shard name, row; `graph.cluster_ids`). `rep_*`: the member's
representative (the kept document a removed one duplicates, or that a kept one was compared with); `similarity` to it
and `method` (null where not measured: unverified mode); `length` in characters (null: unknown); `represents`: 1 + the
documents removed in this one's favour (0 for a removed one), for rehydration."""


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
    sound: sound.Sound | None = None   # every removal checked against its cluster's representative (None: unverified)
    numbers: dict | None = None  # (source, shard) -> (priority, index): the band files are a minhash step's, per shard
    outcomes: str | None = None  # where per-shard results are kept across runs (`curate.rundir.outcomes`; None: not kept)
    kept_bands: str | None = None  # where a partition's band rows are kept across runs (`curate.dedup.band_cache`)


def cluster(c: Clustering, run: RunDir, jobs: list[ShardJob], run_phase: PhaseRunner) -> None:
    g = c.graph
    parts = [Task(f"{p:05d}", f"partition {p}", p) for p in range(g.partitions)]
    shards = [Task(j.tag, f"source '{j.source}' shard {j.shard}", j) for j in jobs]
    ran = run_phase(phase("buckets", parts, partial(graph.buckets, g, c.bands, c.verify is not None, c.numbers, c.kept_bands))).ran
    if c.verify is not None:
        shingling = Shingling(**{**c.shingling, "normalize": tuple(c.shingling["normalize"])})
        run_phase(phase("verify-a", shards, partial(column, run, "text", partial(verify.verify_a, g, shingling))))
        run_phase(phase("verify-b", shards, partial(column, run, "text", partial(verify.verify_b, g, shingling, c.verify))))
    started = run_phase(phase("init", parts, partial(graph.init, g)))
    if sum(r["in"] + r.get("edges", graph.IN_MEMORY) for r in started) <= graph.IN_MEMORY:
        run_phase(phase("label", [Task("all", "the whole graph", "all")], partial(graph.label, g)))
        final = 1
    else:
        final = _rounds(c, run_phase, parts)
    if c.sound is not None:
        sound_phases.settle(c, run, shards, parts, final, run_phase)
    else:
        run_phase(phase("decide", parts, partial(graph.decide, g, c.policy, c.by_id, final)))
        if c.by_id:
            run_phase(phase("idrank", shards, partial(column, run, "id", partial(graph.idrank, g))))
            run_phase(phase("choose", parts, partial(graph.choose, g)))
    kept = (lambda todo: outcomes.records(fs.join(c.outcomes, "resolve"), [f"{t.payload.source}/{t.payload.shard}" for t in todo])) \
        if c.outcomes is not None else None
    run_phase(phase("resolve", queued(g, shards, "reps"), partial(_resolve, run, g, c.outcomes), prefetch=kept))
    if ran:   # the reuse line of the other steps: the graph is settled whole, every partition (a resumed run: the rest)
        log.info("[%s] %d of %d partitions reused, %d recomputed (the whole graph is labelled again)",
                 c.stage, len(parts) - ran, len(parts), ran)


def _rounds(c: Clustering, run_phase: PhaseRunner, parts: list[Task]) -> int:
    """Label propagation, a partition a task, until no label changes; the last round's number. In a sparse round each
    receiving task is told which partitions sent it messages (`graph.senders`)."""
    for rnd in range(c.max_rounds):
        by = graph.senders(list(run_phase(phase(f"send-{rnd}", parts, partial(graph.send, c.graph, rnd)))), c.graph.partitions)
        jobs = [Task(t.key, t.where, (t.payload, by[t.payload] if by else None)) for t in parts]
        changed = sum(r["changed"] for r in run_phase(phase(f"receive-{rnd}", jobs, partial(graph.receive, c.graph, rnd))))
        fs.remove(c.graph.path("messages", f"r={rnd:03d}"))   # no later task reads a round's messages (~2 GB at 100M)
        if changed == 0:
            return rnd + 1
    raise CurateError(f"stage '{c.stage}': components did not converge in {c.max_rounds} rounds")


def _resolve(run: RunDir, g: graph.GraphDir, kept_in: str | None, job: ShardJob) -> dict:
    """A docs shard's `resolve`; with `kept_in`, put back from an earlier run where the rows the graph sent the shard
    and its documents are the same (`curate.rundir.outcomes`)."""
    if kept_in is None:
        return column(run, "id", lambda tag, ids: graph.resolve(g, tag, ids), job)
    sent = graph.reps(g.root, job.tag)
    key = outcomes.digest({"version": ClusterStage.VERSION, "source": job.source, "tag": job.tag,
                           "docs": file_digest(run.docs(job.source, job.shard))}, sent)
    folder, name, target = fs.join(kept_in, "resolve"), f"{job.source}/{job.shard}", {"bundle": g.path("resolved", f"from-{job.tag}{WORK}")}
    return outcomes.reuse(folder, name, key, target,
                          lambda: column(run, "id", lambda tag, ids: graph.resolve(g, tag, ids, sent), job))


def shard_outcome(d: graph.ShardDecisions, source: str, reason: str, batches: Iterator[pa.Table]) -> Iterator[Output]:
    """Per batch of live documents (with `_row`): removals (`<reason>:<kept source>`, detail naming the kept
    document, the cluster and, where measured, the similarity and how) and `clusters` rows for the batch's members."""
    rows = nodes.row_of(d.node)
    for batch in batches:
        at = np.isin(rows, batch.column("_row").to_numpy())
        if not at.any():
            yield None
            continue
        ids = batch.column("id").combine_chunks().take(pa.array(np.searchsorted(batch.column("_row").to_numpy(), rows[at])))
        sim, method, length, rep_id = d.sim[at], d.method[at], d.length[at], d.rep_id.filter(pa.array(at))
        measured = ~np.isnan(sim)
        members = pa.table({"id": ids, "source": pa.array([source] * len(ids), pa.string()), "cluster": pa.array(d.label[at]),
                            "kept": pa.array(~d.removed[at]), "rep_id": rep_id,
                            "rep_source": pa.array(d.rep_source[at], pa.string()),
                            "similarity": pa.array(sim, pa.float32(), mask=~measured),
                            "method": pa.array(np.array(graph.METHODS, object)[method], pa.string(), mask=method == 0),
                            "length": pa.array(length, pa.int64(), mask=length < 0), "represents": pa.array(d.represents[at])},
                           schema=CLUSTERS)
        gone = np.flatnonzero(d.removed[at])
        for_frozen, kept_id = d.frozen_rep[at], rep_id.take(pa.array(gone, pa.int64())).to_pylist()
        details = [f"kept {kept_id[k]} ({d.rep_source[at][i]}{', frozen' if for_frozen[i] else ''}); cluster {d.label[at][i]}"
                   + (f"; similarity {sim[i]:.3f} ({graph.METHODS[method[i]]})" if measured[i] else "") for k, i in enumerate(gone)]
        yield Output(rows=members, removed=removals(
            ids.take(pa.array(gone, pa.int64())), pa.array([f"{reason}:{d.rep_source[at][i]}" for i in gone], pa.string()),
            pa.array(details, pa.string())), counts={"removed_for_frozen": int(for_frozen.sum())} if for_frozen.any() else {})


class ClusterFacets(Facets):
    """Dedup's sections (clusters, who gave way to whom), and a dedup step's share removed and alarms (its record)."""

    REPORT = ("curate.report.dedup:SECTION", "curate.report.examples:CLUSTERS_SECTION")

    @classmethod
    def lines(cls, run, step, rows, order):
        """Per source: the share removed and the largest clusters; then each alarm."""
        record = run.find_record(step, DedupRecord)
        if record is None:
            return []
        shares = ", ".join(f"{s} {v['share']:.1%}" + (f" (largest clusters {', '.join(map(str, v['largest_clusters']))})"
                                                      if v["largest_clusters"] else "") for s, v in record.sources.items())
        frozen = [] if not record.frozen else [
            f"{step}: frozen {record.frozen['from']}: {record.frozen['found']:,} of its {record.frozen['documents']:,} kept documents "
            f"found; {record.frozen['removed_for_frozen']:,} new documents removed as duplicates of frozen ones"]
        return [f"{step}: removed {shares}"] + frozen + [f"WARNING: {line}" for line in record.alarms]

    @classmethod
    def flags(cls, run, step, sources):
        """`dedup` in summary.json: each source's share removed, largest clusters and alarm."""
        record = run.find_record(step, DedupRecord)
        return {s: {"dedup": {"removed_share": v["share"], "largest_clusters": v["largest_clusters"], "alarm": v["alarm"]}}
                for s, v in (record.sources if record is not None else {}).items()}


class ClusterStage(ShardStage):
    """What dedup and exact_dedup share after their band keys: the graph's work directory, the shard tags,
    and the accounting phase that ledgers `<REASON>:<kept source>` and writes `RUN/<stage>/clusters/`."""

    REMOVES = True
    CONCURRENT = True
    COLUMNS = ["id"]
    ROW_NUMBERS = True
    FACETS = ClusterFacets
    REASON = ""
    GLOBAL = True                   # a cluster spans sources; who is kept follows the priority
    VERSION = 7                     # 2: the graph's work files are Arrow IPC (`layout.WORK`); 3: what a partition sends
                                    # to docs shards is one bundle per task (`curate.dedup.bundles`): a run killed before
                                    # labels its graph again rather than resume over files it cannot see; 4: `resolve`
                                    # sends one bundle per docs shard, and members name their representative; edges,
                                    # nodes and label messages are bundles too (one file per sending task, not P^2);
                                    # cluster numbers hash where the first document lives (`graph.cluster_ids`), not its node
                                    # 5: `init` gathers a partition's edges into one file that every round reads
                                    # 6: a source's docs shards numbered in input order (`layout.shard_numbers`)
                                    # 7: `resolve` sends ids only (a representative's source is its node's priority)
    PIPELINE_READS = ("priority",)

    def owned_paths(self) -> list[str]:
        return [self.run.path(self.name, "clusters"), *super().owned_paths()]

    def shard_outputs(self, source: str, shard: str) -> list[str]:
        """Its ledger and its clusters (rehydration reads their sizes)."""
        return [*super().shard_outputs(source, shard), self.run.clusters(self.name, source, shard)]

    def graph_root(self) -> str:
        return self.run.work(self.name, "graph")

    def shard_numbers(self) -> dict:
        return shard_numbers(self.run.record(self.upstream["docs"], IngestRecord).shards, self.pipeline.priority)

    def jobs(self, tasks: list[Task]) -> list[ShardJob]:
        numbers = self.shard_numbers()
        return [ShardJob(t.source, t.shard, shard_tag(*numbers[(t.source, t.shard)]), tuple(self.editors)) for t in tasks]

    def setup(self) -> None:
        self.numbers = self.shard_numbers()
        self.names = {(p << int(nodes.SHARD_BITS)) | i: f"{source}/{shard}" for (source, shard), (p, i) in self.numbers.items()}

    def sink(self, shard: ShardRef) -> ParquetSink:
        return ParquetSink(self.run.clusters(self.name, shard.source, shard.shard), CLUSTERS)

    def outcomes_root(self) -> str | None:
        """Where its per-shard results are kept across runs (`curate.rundir.outcomes`): None, not kept (a step that keeps
        them names a folder that its `owned_paths` leaves, and prunes it)."""
        return None

    def kept_outcomes(self) -> str | None:
        return fs.join(root, "accounting") if (root := self.outcomes_root()) is not None else None

    def run_shard(self, shard: ShardRef) -> dict:
        """The accounting phase's task; put back from an earlier run where the shard's decisions and live documents are
        the same (`kept_outcomes`): in an append, most shards'."""
        decided = graph.shard_decisions(self.graph_root(), shard_tag(*self.numbers[(shard.source, shard.shard)]), self.pipeline.priority)
        decided.label = graph.cluster_ids(decided.label, self.names)   # what the outputs name: stable cluster numbers, rows
        account = partial(self.map_shard, shard, lambda batches, shard: self.outcome(batches, shard, decided), self.sink(shard),
                          ledger=True)
        if (folder := self.kept_outcomes()) is None:
            return account()
        targets = {"ledger": self.run.ledger(self.name, shard.source, shard.shard),
                   "clusters": self.run.clusters(self.name, shard.source, shard.shard)}
        basis = {"step": self.name, "version": self.VERSION, "reason": self.REASON, "rows": self.pipeline.execution["batch_rows"],
                 "docs": file_digest(self.run.docs(shard.source, shard.shard)),
                 "removed": {step: removed_digest(self.run.ledger(step, shard.source, shard.shard)) for step in self.previous}}
        arrays = {**vars(decided), "node": nodes.row_of(decided.node)}
        return outcomes.reuse(folder, f"{shard.source}/{shard.shard}", outcomes.digest(basis, arrays), targets, account)

    def outcome(self, batches, shard: ShardRef, decided: graph.ShardDecisions):
        """The shard's removals and clusters rows, from what the graph decided for it."""
        return shard_outcome(decided, shard.source, self.REASON, batches)
