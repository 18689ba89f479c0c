"""Dedup alarms: a source that loses most of its documents to dedup, or one giant cluster, is usually a
method failure rather than real duplication (marin's fuzzy dedup once cut a source from 859,092 documents to
2, and put 51,160 unrelated books in one cluster). Per source: the share removed and the largest clusters
holding its documents; lines for what crosses `max_removed_share` or `max_cluster`."""

from __future__ import annotations

from curate import sql
from curate.io import fs

LARGEST = 3  # cluster sizes kept per source


def cluster_sizes(clusters_root: str, memory_mb: int | None = None) -> dict[str, list[int]]:
    """Per source, the sizes of the largest clusters holding its documents (from RUN/<stage>/clusters/). A cluster
    spans shards and sources, so its size is a count over every clusters file: a DuckDB aggregate in the driver's
    memory bound (`curate.sql.memory_mb`, or `memory_mb`), which spills to disk rather than hold a row per member in
    the driver (at 1B documents, ~50M members)."""
    pattern = fs.join(clusters_root, "*", "*.parquet")
    if not fs.glob(pattern):
        return {}
    con = sql.connect(threads=2, readable=(clusters_root,), memory=memory_mb or sql.memory_mb())
    try:
        rows = con.execute(f"""
            WITH members AS (SELECT source, cluster FROM {sql.read_parquet(con, pattern)}),
                 sizes AS (SELECT cluster, count(*) AS size FROM members GROUP BY cluster),
                 held AS (SELECT DISTINCT source, cluster FROM members),
                 ranked AS (SELECT source, size, row_number() OVER (PARTITION BY source ORDER BY size DESC) AS k
                            FROM held JOIN sizes USING (cluster))
            SELECT source, size FROM ranked WHERE k <= {LARGEST} ORDER BY source, size DESC""").fetchall()
    finally:
        con.close()
    out: dict[str, list[int]] = {}
    for source, size in rows:
        out.setdefault(source, []).append(int(size))
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
