"""The clustering phases that the dedup and exact_dedup stages share (they differ only in their band keys).

`cluster` runs the graph phases of `curate.dedup.graph` (and `verify`) as phases of the calling stage;
`ClusterStage` is the accounting both share: a docs shard's decisions become ledger removals and
`clusters` rows. Each stage makes its own band keys and composes these; neither builds nor imports the other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

from curate.dedup import bundles, graph, nodes, sound, verify
from curate.rundir import outcomes
from curate.dedup.shingles import Shingling
from curate.errors import CurateError
from curate.io.parquet import ParquetSink
from curate.dedup.layout import WORK, shard_numbers, shard_tag
from curate.io import fs
from curate.rundir.digests import file_digest, removed_digest
from curate.rundir import IngestRecord, RunDir
from curate.stages import quick_keys, sound_phases
from curate.stages.cluster_facets import ClusterFacets
from curate.stages.graph_jobs import ShardJob, column, phase, queued
from curate.stages.phase import PhaseRunner, Task
from curate.stages.cluster_outcome import CLUSTERS, shard_outcome
from curate.stages.shard import ShardRef, ShardStage

log = logging.getLogger("curate")


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
    resolving = queued(g, shards, "reps")
    resolved = run_phase(phase("resolve", resolving, partial(_resolve, run, g, c.outcomes), prefetch=kept,
                               restore=partial(_restore_resolves, run, g, c.outcomes) if c.outcomes is not None else None))
    if c.outcomes is not None:   # the accounting's quick keys (`curate.stages.quick_keys`)
        quick_keys.keep_sent(run, g.root, c.outcomes, {t.payload.tag: f"{t.payload.source}/{t.payload.shard}" for t in shards},
                             list(resolved))
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
    and its documents are the same (`curate.rundir.outcomes`; by their digests alone: `_restore_resolves`)."""
    if kept_in is None:
        return column(run, "id", lambda tag, ids: graph.resolve(g, tag, ids), job)
    quick, name, target, basis = _resolve_where(run, g, job)
    sent = graph.reps(g.root, job.tag)
    return outcomes.reuse(fs.join(kept_in, "resolve"), name, outcomes.digest(basis, sent), target,
                          lambda: column(run, "id", lambda tag, ids: graph.resolve(g, tag, ids, sent), job), quick)


def _resolve_where(run: RunDir, g: graph.GraphDir, job: ShardJob, reps: dict[str, str] | None = None) -> tuple:
    """(quick key, kept name, targets, basis) of a `resolve` task (`reps`: every tag's digest, read at once by the
    driver; None: this tag's, read here)."""
    basis = {"version": ClusterStage.VERSION, "source": job.source, "tag": job.tag, "docs": file_digest(run.docs(job.source, job.shard))}
    sent = bundles.digest(g.path("reps"), job.tag) if reps is None else reps.get(job.tag, bundles.NOTHING)
    return (quick_keys.resolve_key(basis, sent), f"{job.source}/{job.shard}",
            {"bundle": g.path("resolved", f"from-{job.tag}{WORK}")}, basis)


def _restore_resolves(run: RunDir, g: graph.GraphDir, kept_in: str, todo: list[Task]) -> dict[str, dict]:
    """The `resolve` tasks put back by their quick keys at once, in the driver (`Phase.restore`)."""
    if (reps := bundles.digests(g.path("reps"))) is None:
        return {}
    return outcomes.restore_all(fs.join(kept_in, "resolve"), ((t.key, *_resolve_where(run, g, t.payload, reps)[:3]) for t in todo), "quick")


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
    VERSION = 9                     # 2: the graph's work files are Arrow IPC (`layout.WORK`); 3: what a partition sends
                                    # to docs shards is one bundle per task (`curate.dedup.bundles`): a run killed before
                                    # labels its graph again rather than resume over files it cannot see; 4: `resolve`
                                    # sends one bundle per docs shard, and members name their representative; edges,
                                    # nodes and label messages are bundles too (one file per sending task, not P^2);
                                    # cluster numbers hash where the first document lives (`graph.cluster_ids`), not its node
                                    # 5: `init` gathers a partition's edges into one file that every round reads
                                    # 6: a source's docs shards numbered in input order (`layout.shard_numbers`)
                                    # 7: `resolve` sends ids only (a representative's source is its node's priority)
                                    # 8: decisions and `resolve`'s ids keep digests of what each shard is sent (quick keys)
                                    # 9: sound mode's gather and exact-a send one bundle per group of docs shards (`layout.group_of`)
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
        self.sent = self.run.read_json(fs.join(self.graph_root(), quick_keys.SENT))   # (`cluster`; None: not kept)

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
        the same (`kept_outcomes`): in an append, most shards' (by what the graph sent them, at once: `restore`)."""
        tag, folder = shard_tag(*self.numbers[(shard.source, shard.shard)]), self.kept_outcomes()
        decided = graph.shard_decisions(self.graph_root(), tag, self.pipeline.priority)
        decided.label = graph.cluster_ids(decided.label, self.names)   # what the outputs name: stable cluster numbers, rows
        account = partial(self.map_shard, shard, lambda batches, shard: self.outcome(batches, shard, decided), self.sink(shard),
                          ledger=True)
        if folder is None:
            return account()
        quick, name, targets, basis = self.kept_where(shard, tag, self.sent)
        arrays = {**vars(decided), "node": nodes.row_of(decided.node)}
        return outcomes.reuse(folder, name, outcomes.digest(basis, arrays), targets, account, quick)

    def kept_where(self, shard: ShardRef, tag: str, sent: dict | None, digests: tuple[dict, dict] | None = None) -> tuple:
        """(quick key, kept name, targets, basis) of a shard's accounting (`digests`: every tag's members and reps,
        read at once by the driver; None: this tag's, read here)."""
        basis = {"step": self.name, "version": self.VERSION, "reason": self.REASON, "rows": self.pipeline.execution["batch_rows"],
                 "docs": file_digest(self.run.docs(shard.source, shard.shard)),
                 "removed": {step: removed_digest(self.run.ledger(step, shard.source, shard.shard)) for step in self.previous}}
        members, reps = ((bundles.digest(self.graph_root() + f"/{f}", tag) for f in ("members", "reps")) if digests is None
                         else (d.get(tag, bundles.NOTHING) for d in digests))
        quick = quick_keys.accounting_key(basis, tag, members, reps, sent, self.pipeline.priority)
        return quick, f"{shard.source}/{shard.shard}", {"ledger": self.run.ledger(self.name, shard.source, shard.shard),
                                                        "clusters": self.run.clusters(self.name, shard.source, shard.shard)}, basis

    def restore(self, tasks: list[Task]) -> dict[str, dict]:
        """The shards whose quick key was kept, put back by the driver at once (`Phase.restore`)."""
        sent, folder = self.run.read_json(fs.join(self.graph_root(), quick_keys.SENT)), self.kept_outcomes()
        digests = tuple(bundles.digests(fs.join(self.graph_root(), f)) for f in ("members", "reps"))
        if folder is None or sent is None or None in digests:
            return {}
        numbers = self.shard_numbers()
        return outcomes.restore_all(folder, ((t.key, *self.kept_where(t.payload, shard_tag(*numbers[(t.source, t.shard)]), sent,
                                                                       digests)[:3]) for t in tasks), "quick")

    def outcome(self, batches, shard: ShardRef, decided: graph.ShardDecisions):
        """The shard's removals and clusters rows, from what the graph decided for it."""
        return shard_outcome(decided, shard.source, self.REASON, batches)
