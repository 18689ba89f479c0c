"""Dedup alarms: a source that loses most of its documents to dedup, or one giant cluster, is usually a
method failure rather than real duplication (marin's fuzzy dedup once cut a source from 859,092 documents to
2, and put 51,160 unrelated books in one cluster). Per source: the share removed and the largest clusters
holding its documents; lines for what crosses `max_removed_share` or `max_cluster`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.io import fs
from curate.io.parquet import read_table

LARGEST = 3  # cluster sizes kept per source


def cluster_sizes(clusters_root: str) -> dict[str, list[int]]:
    """Per source, the sizes of the largest clusters holding its documents (from RUN/<stage>/clusters/)."""
    parts = []
    for path in fs.glob(fs.join(clusters_root, "*", "*.parquet")):
        with fs.open_input(path) as handle:
            parts.append(read_table(handle, columns=["cluster", "source"]))
    if not parts:
        return {}
    t = pa.concat_tables(parts)
    cluster = t.column("cluster").to_numpy()
    ids, inverse, counts = np.unique(cluster, return_inverse=True, return_counts=True)
    t = pa.table({"source": t.column("source"), "cluster": cluster, "size": counts[inverse]})
    distinct = t.group_by(["source", "cluster"]).aggregate([("size", "max")])
    out = {}
    for source in pc.unique(distinct.column("source")).to_pylist():
        sizes = distinct.filter(pc.equal(distinct.column("source"), source)).column("size_max").to_numpy()
        out[source] = sorted(sizes.tolist(), reverse=True)[:LARGEST]
    return out


def check(stage: str, markers: list[dict], largest: dict[str, list[int]], max_share: float, max_cluster: int,
          order: list[str] = (), run: str = "RUN") -> dict:
    """Per source (in `order`): in, removed, share, largest clusters, alarm; and the alarm lines."""
    sources: dict = {}
    rank = {s: i for i, s in enumerate(order)}
    for m in sorted(markers, key=lambda m: (rank.get(m["source"], len(rank)), m["source"])):
        s = sources.setdefault(m["source"], {"in": 0, "removed": 0})
        s["in"] += m["in"]
        s["removed"] += sum(m["removed"].values())
    lines = []
    for source, s in sources.items():
        s["share"] = round(s["removed"] / s["in"], 6) if s["in"] else 0.0
        s["largest_clusters"] = largest.get(source, [])
        s["alarm"] = []
        if s["share"] > max_share:
            s["alarm"].append("removed_share")
            lines.append(f"{stage}: {source} lost {s['share']:.1%} of its documents ({s['removed']:,} of {s['in']:,}) to dedup, "
                         f"more than max_removed_share {max_share:g}; check its largest clusters (curate query {run} \"SELECT * FROM "
                         f"clusters WHERE source = '{source}' ORDER BY cluster\")")
        if s["largest_clusters"] and s["largest_clusters"][0] > max_cluster:
            s["alarm"].append("cluster_size")
            lines.append(f"{stage}: {source} has documents in a cluster of {s['largest_clusters'][0]:,}, more than max_cluster "
                         f"{max_cluster:,}")
    return {"sources": sources, "alarms": lines, "max_removed_share": max_share, "max_cluster": max_cluster}
