"""The dedup stage: MinHash band buckets -> candidate edges -> connected components -> keep policy.

`mode: sound` (the default) removes a document only when its similarity to a kept document (its cluster's
representative) reaches `threshold` (`curate.dedup.sound`); `mode: unverified` is Zyda-2 as published
(every member of a component that the policy does not keep is removed).

It reads the band keys a minhash step published (`MinhashRecord`) and runs the graph phases of
`curate.stages.clustering` over hash partitions of nodes; no task holds more than one partition's edges
or labels, nothing ever holds every signature. Its accounting phase writes the ledger (reason
`minhash_duplicate_of:<source>`, detail `kept <id> (<source>); cluster N; similarity 0.912 (exact jaccard)`)
and `RUN/<stage>/clusters/<source>/<shard>.parquet` (`cluster_outcome.CLUSTERS`).
"""

from __future__ import annotations

import logging
import os

from curate.common.schema import COUNT_MAX, Field
from curate.dedup import alarms, band_cache, frozen, settled
from curate.rundir import outcomes
from curate.dedup.graph import GraphDir
from curate.dedup.policy import POLICIES
from curate.dedup.sound import Sound
from curate.errors import ConfigError, CurateError
from curate.io import fs
from curate.rundir import DedupRecord, MinhashRecord
from curate.stages.clustering import Clustering, ClusterStage, cluster
from curate.stages.reads import file_identity
from curate.stages.registry import stage
from curate.stages.shard import Output

log = logging.getLogger("curate")


@stage("dedup")
class DedupStage(ClusterStage):
    NEEDS = ("docs", "minhash")
    PRODUCES = ("clusters",)   # RUN/<step>/clusters: the size of every kept document's cluster (mix's rehydrate)
    REASON = "minhash_duplicate_of"
    OPTIONS = {
        "minhash": Field((str,), default=None, nullable=True, doc="the minhash step to read (default: the last one before this)"),
        "policy": Field((str,), default="cross_source", choices=list(POLICIES)),
        "max_rounds": Field((int,), default=100, min=1, max=100_000,
                            doc="label propagation rounds before giving up (graphs of over 8M nodes and edges: one task labels a smaller one)"),
        "verify": Field((float,), default=None, nullable=True, min=0.0, max=1.0,
                        doc="keep a candidate pair only if the exact Jaccard of its shingle sets reaches this"),
        "mode": Field((str,), default="sound", choices=["sound", "unverified"],
                      doc="sound: remove a document only if it is a near-duplicate of a kept one; unverified: Zyda-2 as published"),
        "threshold": Field((float,), default=0.8, min=0.0, max=1.0,
                           doc="sound mode: the least Jaccard with the cluster's representative that allows a removal"),
        "margin": Field((float,), default=0.1, min=0.0, max=1.0,
                        doc="sound mode: MinHash estimates within this of the threshold are decided by the exact Jaccard"),
        "rounds": Field((int,), default=8, min=1, max=10_000, doc="sound mode: sub-cluster rounds per cluster before the rest is kept"),
        "frozen": Field((str,), default=None, nullable=True,
                        doc="an earlier run's folder or its manifest.json: every document of its kept/ stays kept; new documents "
                            "that duplicate one are removed (sound mode)"),
        "max_removed_share": Field((float,), default=0.5, min=0.0, max=1.0,
                                   doc="alarm when a source loses more than this share of its documents to this step"),
        "max_cluster": Field((int,), default=10_000, min=1, max=COUNT_MAX, doc="alarm when a duplicate cluster holds more documents than this"),
        "on_alarm": Field((str,), default="warn", choices=["warn", "error"], doc="warn: a warning line and a flag in summary.json; "
                                                                                  "error: the run stops after this step"),
    }

    def execute(self, tasks, run_phase) -> None:
        mh = self.run.record(self.upstream["minhash"], MinhashRecord)
        by_id = self.options["policy"] == "all" and mh.tie_break == "id"
        o = self.options
        if o["mode"] == "sound" and not mh.signatures:
            raise CurateError(f"stage '{self.name}': the minhash step kept no signatures (an older run); run it again "
                              f"(delete {self.run.work(self.upstream['minhash'])}) or --set stages.{self.name}.mode=unverified")
        sound = (Sound(o["threshold"], o["margin"], o["rounds"], mh.signatures, mh.shingling, o["frozen"], self.exact_cache(),
                       *self.settled_cache(mh, by_id)) if o["mode"] == "sound" else None)
        cluster(Clustering(self.name, GraphDir(self.graph_root(), mh.partitions), mh.bands, o["policy"], by_id,
                           o["max_rounds"], o["verify"], mh.shingling, sound, self.shard_numbers(), self.outcomes_root(),
                           self.band_cache()),
                self.run, self.jobs(tasks), run_phase)
        band_cache.prune(self.band_cache(), mh.partitions)
        super().execute(tasks, run_phase)
        if self.outcomes_root() is not None:
            for kind in ("resolve", "accounting"):
                outcomes.prune(fs.join(self.outcomes_root(), kind), {t.key for t in tasks})
        self.alarm()

    def outcomes_root(self) -> str | None:
        """Its per-shard results kept across runs (`curate.rundir.outcomes`, `RUN/_work/<step>/outcomes/`); not in frozen
        mode, where a shard's counts also read the frozen mixture."""
        return self.run.work(self.name, "outcomes") if self.options["frozen"] is None else None

    def band_cache(self) -> str:
        """Each partition's band rows, kept across runs (`curate.dedup.band_cache`): `RUN/_work/<step>/buckets/`."""
        return self.run.work(self.name, "buckets")

    def exact_cache(self) -> str:
        """The exact checks' results, kept across runs (`curate.dedup.exact_cache`): `RUN/_work/<step>/exact/`."""
        return self.run.work(self.name, "exact")

    def settled_cache(self, mh: MinhashRecord, by_id: bool) -> tuple[str | None, int]:
        """Settled components kept across runs (`curate.dedup.settled`, `RUN/_work/<step>/settled/`) and the options they
        depend on; none with frozen documents or ids ranking members (what decides those is not in a component's key)."""
        if self.options["frozen"] is not None or by_id:
            return None, 0
        o = self.options
        return self.run.work(self.name, "settled"), settled.context(
            {"threshold": o["threshold"], "margin": o["margin"], "rounds": o["rounds"], "policy": o["policy"],
             "shingling": mh.shingling, "minhash": self.pipeline.stage(self.upstream["minhash"]).options})

    def owned_paths(self) -> list[str]:
        """All but the kept exact checks: keyed by the texts they read, an append reuses them (the graph goes)."""
        return [p for p in super().owned_paths() if p != self.run.work(self.name)] + [self.graph_root()]

    @classmethod
    def validate_options(cls, options, sources, file, key):
        super().validate_options(options, sources, file, key)
        if options.get("frozen") is not None and options.get("mode", "sound") != "sound":
            raise ConfigError(file, f"{key}.frozen", "frozen documents need mode: sound (every removal is checked against a kept one)")

    def preflight(self) -> None:
        why = None if self.options["frozen"] is None else frozen.check(self.options["frozen"])
        if why is None and self.options["frozen"] is not None and \
                os.path.realpath(frozen.frozen_root(self.options["frozen"])) == os.path.realpath(self.run.root):
            why = "names this run's own output, which the run rewrites; freeze a published copy (curate manifest publish)"
        if why is not None:
            raise ConfigError(self.pipeline.file, f"stages.{self.name}.frozen", why)

    def reads(self, tasks, source):
        """The frozen mixture (another earlier mixture decides again): its manifest by content (it lists every kept
        file's sha256), else each kept file by size and modification time (never re-hashing a whole corpus)."""
        base = super().reads(tasks, source) or {}
        if self.options["frozen"] is None:
            return base or None
        return {**base, "frozen": frozen.identity(self.options["frozen"], file_identity)}

    def outcome(self, batches, shard, decided):
        """In frozen mode, also counts the shard's live frozen documents (`frozen` in its marker)."""
        if self.options["frozen"] is None:
            yield from super().outcome(batches, shard, decided)
            return
        kept = frozen.frozen_ids(fs.join(frozen.frozen_root(self.options["frozen"]), "kept", shard.source, f"{shard.shard}.parquet"))
        found = 0

        def counted():
            nonlocal found
            for batch in batches:
                found += int(frozen.mask_in(batch.column("id").combine_chunks(), kept).sum())
                yield batch

        yield from super().outcome(counted(), shard, decided)
        yield Output(counts={"frozen": found})

    def frozen_summary(self) -> dict | None:
        """How many documents the frozen mixture has, how many of them reached this step, how many new ones went for
        them (from the accounting markers)."""
        if self.options["frozen"] is None:
            return None
        documents = sum(frozen.count(path) for path in frozen.kept_files(self.options["frozen"]).values())
        markers = self.run.markers(self.name)
        return {"from": self.options["frozen"], "documents": documents, "found": sum(m.get("frozen", 0) for m in markers),
                "removed_for_frozen": sum(m.get("removed_for_frozen", 0) for m in markers)}

    def alarm(self) -> None:
        """Per source: the share removed and the largest clusters (published for summary.json and the report);
        a warning line for each alarm, or an error with `on_alarm: error`."""
        o = self.options
        record = self.run.find_record(self.name, DedupRecord) if self.holds else None
        if record is None:   # (a no-op re-run reads the record it published, not every cluster file again)
            found = alarms.check(self.name, self.run.markers(self.name), alarms.cluster_sizes(self.run.path(self.name, "clusters")),
                                 o["max_removed_share"], o["max_cluster"], self.pipeline.priority, self.run.root)
            self.run.publish(self.name, DedupRecord(**found, frozen=self.frozen_summary()))
        else:
            found = {"alarms": record.alarms}
        for line in found["alarms"]:
            log.warning("curate: warning: %s", line)
        if found["alarms"] and o["on_alarm"] == "error":
            raise CurateError(f"{found['alarms'][0]} (stages.{self.name}.on_alarm is error; "
                              f"--set stages.{self.name}.on_alarm=warn lets the run go on)")
