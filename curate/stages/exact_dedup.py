"""The exact_dedup stage: identical normalised texts, one kept per group by source priority, then input order.

A cheap pass before MinHash: each document's text is normalised (`lowercase`, whitespace collapsed,
trimmed, as configured) and hashed to 64 bits (xxh3); equal hashes are grouped by hash partition with
the same distributed machinery as the dedup stage (each group is one band bucket). The ledger reason is
`exact_duplicate_of:<source>`. Policy `cross_source` acts only on groups that span sources.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow.compute as pc
import xxhash

from curate.config.schema import Field
from curate.dedup import nodes
from curate.dedup.layout import shard_tag, write_columns
from curate.dedup.policy import POLICIES
from curate.dedup.shuffle import partition_of, split
from curate.runner.tasks import Task
from curate.stages.dedup import DedupStage
from curate.stages.minhash import DOCS_PER_PARTITION, MAX_PARTITIONS

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


class ExactDedupStage(DedupStage):
    REASON = "exact_duplicate_of"
    OPTIONS = {
        "policy": Field((str,), default="all", choices=list(POLICIES)),
        "lowercase": Field((bool,), default=True),
        "whitespace": Field((bool,), default=True, doc="collapse runs of whitespace and trim"),
        "partitions": Field((int,), default=None, nullable=True, min=1, doc="default: one per 250,000 documents"),
        "max_rounds": Field((int,), default=100, min=1),
    }

    def _bands(self, tasks: list[Task], runner) -> tuple[str, int]:
        docs = sum(m["kept"] for m in self.run.markers(self.previous[-1]))
        self.partitions = self.options["partitions"] or min(MAX_PARTITIONS, max(1, -(-docs // DOCS_PER_PARTITION)))
        hashing = [Task(self.name, t.source, t.shard, t.where, payload=("hash", None)) for t in tasks]
        runner.run(self, f"{self.name}: hash", hashing,
                   lambda t: self.run.path("_state", self.name, "_phases", "hash", t.source, f"{t.shard}.json"))
        return self.run.path(self.name, "keys"), self.partitions

    def _live_count(self, task: Task) -> int:
        return self.run.read_json(self.run.path("_state", self.name, "_phases", "hash", task.source, f"{task.shard}.json"))["in"]

    def run_task(self, task: Task) -> dict:
        if task.payload is not None and task.payload[0] == "hash":
            return self._hash(task)
        return super().run_task(task)

    def _hash(self, task: Task) -> dict:
        started = time.monotonic()
        priority, index = self.numbers[(task.source, task.shard)]
        keys, node_parts, n_in = [], [], 0
        for table in self.live_batches(task, columns=["id", "text"], with_rows=True):
            n_in += table.num_rows
            texts = normalise(table.column("text").combine_chunks(), self.options["lowercase"], self.options["whitespace"])
            keys.append(text_hashes(texts))
            node_parts.append(nodes.pack(priority, index, table.column("_row").to_numpy()))
        key = np.concatenate(keys) if keys else np.empty(0, U64)
        node = np.concatenate(node_parts) if node_parts else np.empty(0, U64)
        hi = np.full(len(node), U64(priority) << U64(32), U64)
        band = np.zeros(len(node), np.uint16)
        tag = shard_tag(priority, index)
        parts = self.partitions
        for p, part in split(partition_of(key, parts), parts, band=band, key=key, node=node, hi=hi):
            write_columns(self.run.path(self.name, "keys", f"p={p:05d}", f"{tag}.parquet"), **part)
        result = {"source": task.source, "shard": task.shard, "in": n_in, "seconds": round(time.monotonic() - started, 4)}
        self.run.write_json(self.run.path("_state", self.name, "_phases", "hash", task.source, f"{task.shard}.json"), result)
        return result
