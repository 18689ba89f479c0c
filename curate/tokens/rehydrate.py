"""Rehydration (FineWeb-2): weight each kept document by the size of the duplicate cluster it stands for.

Dedup keeps one document of a cluster; how many copies the web had says something about the document
(a few copies: worth more; thousands: boilerplate or spam). `rehydrate: {1: 1, 2: 2, 5: 3, 100: 1}` maps a
cluster size threshold to a weight: a document standing for `size` documents (`represents` in the dedup
step's clusters table; 1 when it has no duplicates) gets the weight of the largest threshold <= size. Each
source keeps its planned tokens: a document's epochs are the source's times weight / the source's mean
weight per character (`factor`), so rehydration moves copies within a source, not between sources.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.io import fs
from curate.io.parquet import read_table


def table_of(rehydrate: dict) -> tuple[np.ndarray, np.ndarray]:
    """(thresholds ascending, weights); JSON records give the keys as strings."""
    items = sorted((int(k), float(v)) for k, v in rehydrate.items())
    return np.array([k for k, _ in items], np.int64), np.array([v for _, v in items], np.float64)


def weights(rehydrate: dict, sizes: np.ndarray) -> np.ndarray:
    """The weight of each document: that of the largest threshold <= its cluster size (below the first: 1)."""
    thresholds, values = table_of(rehydrate)
    at = np.searchsorted(thresholds, sizes, side="right") - 1
    return np.where(at >= 0, values[np.maximum(at, 0)], 1.0)


def sizes(clusters_file: str, ids: pa.Array) -> np.ndarray:
    """How many documents each of `ids` stands for (a docs shard's rows of the dedup clusters table; 1 when absent)."""
    out = np.ones(len(ids), np.int64)
    if not fs.exists(clusters_file):
        return out
    with fs.open_input(clusters_file) as handle:
        t = read_table(handle, columns=["id", "represents"])
    at = pc.index_in(ids, value_set=t.column("id").combine_chunks())
    hit = at.is_valid().to_numpy(zero_copy_only=False)
    out[hit] = np.maximum(t.column("represents").to_numpy()[pc.drop_null(at).to_numpy()], 1)
    return out


def epochs_of(plan: dict, source: str, doc_sizes: np.ndarray | None) -> np.ndarray | float:
    """Each document's epochs under the plan: the source's, times its weight / the source's factor."""
    epochs = plan["sources"][source]["epochs"]
    r = plan.get("rehydrate")
    if r is None or doc_sizes is None:
        return epochs
    return epochs * weights(r["weights"], doc_sizes) / (r["factor"].get(source) or 1.0)


def render(r: dict) -> str:
    """The plan's rehydration lines: the table, and per source the factor and documents by weight."""
    lines = [f"rehydration by dedup cluster size ({r['dedup']}): " + ", ".join(f"size >= {k}: x{v:g}" for k, v in
                                                                              zip(*table_of(r["weights"]))) +
             "; each source keeps its tokens (epochs x weight / factor)"]
    for source, factor in r["factor"].items():
        docs = ", ".join(f"x{float(w):g}: {n:,}" for w, n in sorted(r["docs"].get(source, {}).items(), key=lambda kv: float(kv[0])))
        lines.append(f"  {source:10} factor {factor:.4f}  documents by weight {docs or '-'}")
    return "\n".join(lines)


def plan_part(table: dict, dedup: str, stats: list[dict], order: list[str]) -> dict:
    """The mix plan's rehydration part: the weights, and per source the factor (mean weight per character, from the
    shards' measurements `stats`) and documents by weight."""
    factor, docs = {}, {}
    for source in order:
        mine = [m for m in stats if m["source"] == source]
        chars = sum(m["chars"] for m in mine)
        factor[source] = sum(m.get("weighted_chars", 0.0) for m in mine) / chars if chars else 1.0
        for m in mine:
            for w, n in m.get("by_weight", {}).items():
                docs.setdefault(source, {})[w] = docs.get(source, {}).get(w, 0) + n
    return {"weights": {str(k): float(v) for k, v in table.items()}, "dedup": dedup, "factor": factor, "docs": docs}
