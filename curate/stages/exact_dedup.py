"""The exact_dedup stage: identical normalised texts, one kept per group by source priority, then input order.

A cheap pass before MinHash: phase `hash` normalises each live document's text (`lowercase`, whitespace
collapsed, trimmed, as configured) and hashes it to 64 bits (xxh3); equal hashes are grouped with the
same graph phases as the dedup stage (`curate.stages.clustering`; each group is one band bucket). The
ledger reason is `exact_duplicate_of:<source>`. Policy `cross_source` acts only on groups that span sources.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.common.schema import Field
from curate.dedup import nodes
from curate.dedup.graph import GraphDir
from curate.dedup.layout import PartitionedSink, partitions_for, shard_tag
from curate.dedup.policy import POLICIES
from curate.io import fs
from curate.stages.clustering import Clustering, ClusterStage, cluster
from curate.stages.phase import Phase
from curate.stages.registry import stage
from curate.stages.shard import ShardRef

U64 = np.uint64


def normalise(texts, lowercase: bool, whitespace: bool):
    if lowercase:
        texts = pc.utf8_lower(texts)
    if whitespace:
        texts = pc.utf8_trim_whitespace(pc.replace_substring_regex(texts, r"\s+", " "))
    return texts


def text_hashes(texts) -> np.ndarray:
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(t.encode("utf-8")) for t in texts.to_pylist()), dtype=U64, count=len(texts))


@stage("exact_dedup")
class ExactDedupStage(ClusterStage):
    REASON = "exact_duplicate_of"
    OPTIONS = {
        "policy": Field((str,), default="all", choices=list(POLICIES)),
        "lowercase": Field((bool,), default=True),
        "whitespace": Field((bool,), default=True, doc="collapse runs of whitespace and trim"),
        "partitions": Field((int,), default=None, nullable=True, min=1, max=100_000, doc="default: one per 250,000 documents"),
        "max_rounds": Field((int,), default=100, min=1, max=100_000,
                            doc="label propagation rounds before giving up (graphs of over 8M nodes and edges: one task labels a smaller one)"),
    }

    def execute(self, tasks, run_phase) -> None:
        docs_step = self.previous[-1] if self.previous else self.upstream["docs"]
        partitions = self.options["partitions"] or partitions_for(sum(m["kept"] for m in self.run.markers(docs_step)))
        keys = self.run.work(self.name, "keys")
        run_phase(Phase("hash", tasks, partial(self.hash_shard, keys, partitions, self.shard_numbers())))
        cluster(Clustering(self.name, GraphDir(self.graph_root(), partitions), keys, self.options["policy"], False,
                           self.options["max_rounds"]), self.run, self.jobs(tasks), run_phase)
        super().execute(tasks, run_phase)

    def hash_shard(self, keys: str, partitions: int, numbers: dict, shard: ShardRef) -> dict:
        """Normalised-text hashes of the shard's live documents, by hash partition, as band rows of one band."""
        priority, index = numbers[(shard.source, shard.shard)]
        tag, n_in = shard_tag(priority, index), 0
        with PartitionedSink(lambda p: fs.join(keys, f"p={p:05d}", f"{tag}.parquet"), partitions, "key") as sink:
            for table in self.live_batches(shard, ["id", "text"]):
                n_in += table.num_rows
                texts = normalise(table.column("text").combine_chunks(), self.options["lowercase"], self.options["whitespace"])
                node = nodes.pack(priority, index, table.column("_row").to_numpy())
                sink.write(pa.table({"band": np.zeros(len(node), np.uint16), "key": text_hashes(texts), "node": node,
                                     "hi": np.full(len(node), U64(priority) << U64(32), U64)}))
        return {"in": n_in}
