"""The dedup stage: MinHash band buckets -> candidate edges -> connected components -> keep policy.

It reads the band keys a minhash step published (`MinhashRecord`) and runs the graph phases of
`curate.stages.clustering` over hash partitions of nodes; no task holds more than one partition's edges
or labels, nothing ever holds every signature. Its accounting phase writes the ledger (reason
`minhash_duplicate_of:<source>`, detail `kept <id> (<source>); cluster N`) and
`RUN/<stage>/clusters/<source>/<shard>.parquet` (id, source, cluster, kept).
"""

from __future__ import annotations

from curate.config.schema import Field
from curate.dedup.graph import GraphDir
from curate.dedup.policy import POLICIES
from curate.rundir import MinhashRecord
from curate.stages.clustering import Clustering, ClusterStage, cluster
from curate.stages.registry import stage


@stage("dedup")
class DedupStage(ClusterStage):
    NEEDS = ("docs", "minhash")
    REASON = "minhash_duplicate_of"
    OPTIONS = {
        "minhash": Field((str,), default=None, nullable=True, doc="the minhash step to read (default: the last one before this)"),
        "policy": Field((str,), default="cross_source", choices=list(POLICIES)),
        "max_rounds": Field((int,), default=100, min=1, doc="label propagation rounds before giving up"),
        "verify": Field((float,), default=None, nullable=True, min=0.0, max=1.0,
                        doc="keep a candidate pair only if the exact Jaccard of its shingle sets reaches this"),
    }

    def execute(self, tasks, run_phase) -> None:
        mh = self.run.record(self.upstream["minhash"], MinhashRecord)
        by_id = self.options["policy"] == "all" and mh.tie_break == "id"
        cluster(Clustering(self.name, GraphDir(self.graph_root(), mh.partitions), mh.bands, self.options["policy"], by_id,
                           self.options["max_rounds"], self.options["verify"], mh.shingling),
                self.run, self.jobs(tasks), run_phase)
        super().execute(tasks, run_phase)
