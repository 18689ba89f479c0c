"""Exact Jaccard verification of candidate pairs, in two phases over docs shards (no shard sees another's text).

  verify_a  per docs shard of u: attach u's shingle hashes to each candidate, send it to the shard of v
  verify_b  per docs shard of v: exact Jaccard of the two shingle sets; pairs at or above `threshold`
            become graph edges (`graph.write_edges`)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

from curate.dedup import bundles, nodes
from curate.dedup.graph import GraphDir, by_shard, write_edges
from curate.dedup.layout import WORK, read_tables, tag_of, write_frame
from curate.dedup.shingles import Shingling

U64 = np.uint64


def shingle_sets(shingling: Shingling, texts: pa.Array, rows: np.ndarray) -> dict:
    """Stable 64-bit hashes of each requested row's shingles; `texts` is the docs shard's text column."""
    wanted = np.unique(rows)
    h = xxhash.xxh3_64_intdigest
    return {int(r): np.unique(np.fromiter((h(x.encode()) for x in shingling.shingle_strings(t)), U64))
            for r, t in zip(wanted, texts.take(pa.array(wanted)).to_pylist())}


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a & b| / |a | b| of two sorted unique hash arrays."""
    if not len(a) and not len(b):
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def verify_a(g: GraphDir, shingling: Shingling, tag: str, texts: pa.Array) -> dict:
    c = bundles.receive(g.path("candidates"), tag, ["u", "v", "hi_u", "hi_v"],
                     {"u": U64, "v": U64, "hi_u": U64, "hi_v": U64})
    sets = shingle_sets(shingling, texts, nodes.row_of(c["u"]))
    for key, part in by_shard(c["v"], **c):
        shingles = [sets[int(r)] for r in nodes.row_of(part["u"])]
        table = pa.table({**{k: pa.array(v) for k, v in part.items()},
                          "shingles_u": pa.array(shingles, pa.list_(pa.uint64()))})
        write_frame(g.path("verify", f"s={tag_of(key)}", f"from-{tag}{WORK}"), table)
    return {"in": len(c["u"])}


def verify_b(g: GraphDir, shingling: Shingling, threshold: float, tag: str, texts: pa.Array) -> dict:
    table = read_tables(g.path("verify", f"s={tag}", f"*{WORK}"))
    if table is None:
        return {"in": 0, "kept_pairs": 0}
    v = table.column("v").to_numpy()
    sets = shingle_sets(shingling, texts, nodes.row_of(v))
    keep = np.array([jaccard(np.asarray(a, U64), sets[int(r)]) >= threshold
                     for a, r in zip(table.column("shingles_u").to_pylist(), nodes.row_of(v))], dtype=bool)
    cols = {k: table.column(k).to_numpy()[keep] for k in ("u", "v", "hi_u", "hi_v")}
    write_edges(g, f"v{tag}", cols["u"], cols["v"], cols["hi_u"], cols["hi_v"])
    return {"in": len(v), "kept_pairs": int(keep.sum())}
