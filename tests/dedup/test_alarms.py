"""Dedup's largest clusters (`alarms.cluster_sizes`): a cluster's size counts its members in every source and shard,
and the count runs in DuckDB under the driver's memory bound, not as a table of every member in the driver."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.dedup import alarms


def write_clusters(root, rng, shards=6, rows=50_000, clusters=20_000):
    """Clusters files of three sources, their members' clusters drawn at random (a few large ones spanning sources)."""
    members = []
    for source in ("a", "b", "c"):
        for shard in range(shards):
            cluster = rng.integers(0, clusters, rows).astype(np.uint64)
            cluster[: 50 + shard] = np.uint64(7)   # one cluster in every shard of every source
            (root / source).mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"id": [f"{source}{shard}-{i}" for i in range(rows)], "source": [source] * rows,
                                     "cluster": cluster}), root / source / f"{shard:04d}.parquet")
            members += [(source, int(c)) for c in cluster]
    return members


def test_cluster_sizes_count_every_member_under_a_small_memory_bound(tmp_path):
    members = write_clusters(tmp_path, np.random.default_rng(0))
    size = Counter(c for _, c in members)
    want = {}
    for source in ("a", "b", "c"):
        held = {c for s, c in members if s == source}
        want[source] = sorted((size[c] for c in held), reverse=True)[:alarms.LARGEST]
    assert want["a"][0] == size[7] >= 3 * 6 * 50   # the cluster spanning every shard counts all of its members
    assert alarms.cluster_sizes(str(tmp_path), memory_mb=32) == want   # 900,000 members, a 32 MB bound


def test_no_clusters_no_sizes(tmp_path):
    assert alarms.cluster_sizes(str(tmp_path / "none")) == {}
