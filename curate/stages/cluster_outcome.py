"""A docs shard's outcome of a dedup step (dedup, exact_dedup): what the graph decided for its documents, as ledger
removals with their evidence and as `clusters` rows (`RUN/<step>/clusters/<source>/<shard>.parquet`)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from curate.dedup import graph, nodes
from curate.stages.shard import Output, removals

CLUSTERS = pa.schema([("id", pa.string()), ("source", pa.string()), ("cluster", pa.uint64()), ("kept", pa.bool_()),
                      ("rep_id", pa.string()), ("rep_source", pa.string()), ("similarity", pa.float32()), ("method", pa.string()),
                      ("length", pa.int64()), ("represents", pa.int64())])
"""`cluster`: a number of the member's cluster that does not move when an append numbers docs shards anew (a 64-bit
hash of where its first document lives: source, docs shard name, row; `graph.cluster_ids`). `rep_*`: the member's
representative (the kept document a removed one duplicates, or that a kept one was compared with); `similarity` to it
and `method` (null where not measured: unverified mode); `length` in characters (null: unknown); `represents`: 1 + the
documents removed in this one's favour (0 for a removed one), for rehydration."""



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
