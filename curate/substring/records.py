"""What substring dedup writes per docs shard: its edit spans (with where each cut's kept copy is) and the most copied
repeated spans (`RUN/<step>/repeats/`), built from the arrays of the accounting phase."""

from __future__ import annotations

import heapq

import numpy as np
import pyarrow as pa

from curate.dedup import nodes
from curate.io import fs
from curate.io.parquet import read_table

KIND = "repeat"
SNIPPET = 300   # characters of a repeated span kept in RUN/<step>/repeats/
SPANS = pa.schema([("row", pa.int64()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                   ("placeholder", pa.string()), ("words", pa.int64()), ("copies", pa.int64()),
                   ("kept_source", pa.string()), ("kept_id", pa.string()), ("kept_start", pa.int64())])
REPEATS = pa.schema([("id", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("words", pa.int64()),
                     ("copies", pa.int64()), ("text", pa.string())])


def spans(cols: list) -> pa.Table:
    """The cuts of one batch as edit spans: [row, start, end, words, copies, kept source, kept id, kept start]."""
    if not cols:
        return SPANS.empty_table()
    n = len(cols[0])
    return pa.table({"row": pa.array(cols[0], pa.int64()), "kind": pa.array([KIND] * n, pa.string()),
                     "start": pa.array(cols[1], pa.int64()), "end": pa.array(cols[2], pa.int64()),
                     "placeholder": pa.array([""] * n, pa.string()), "words": pa.array(cols[3], pa.int64()),
                     "copies": pa.array(cols[4], pa.int64()), "kept_source": cols[5], "kept_id": cols[6],
                     "kept_start": pa.array(cols[7], pa.int64())}, schema=SPANS)


class KeptCopies:
    """The source and id of each kept copy's document, from its node; a docs shard's ids are read once per task."""

    def __init__(self, numbers: dict, docs_path):
        self.names = {v: k for k, v in numbers.items()}
        self.docs_path = docs_path
        self.ids: dict[tuple[int, int], pa.Array] = {}

    def __call__(self, kept_node: np.ndarray) -> tuple[pa.Array, pa.Array]:
        keys = nodes.shard_key(kept_node)
        sources = np.empty(len(kept_node), object)
        ids = np.empty(len(kept_node), object)
        for key in np.unique(keys):
            at = keys == key
            priority, index = int(key) >> int(nodes.SHARD_BITS), int(key) & int(nodes.SHARD_MASK)
            source, shard = self.names[(priority, index)]
            if (priority, index) not in self.ids:
                with fs.open_input(self.docs_path(source, shard)) as handle:
                    self.ids[(priority, index)] = read_table(handle, columns=["id"]).column("id").combine_chunks()
            sources[at] = source
            ids[at] = np.asarray(self.ids[(priority, index)].take(pa.array(nodes.row_of(kept_node[at]))).to_pylist(), object)
        return pa.array(sources.tolist(), pa.string()), pa.array(ids.tolist(), pa.string())


def top_runs(top: int, length: int, ids: pa.Array, sub: pa.Array, docs, d, pos, copies, offsets, cstart, nchars) -> list[dict]:
    """The kept copies in a batch, as runs of overlapping first windows (`d`, `pos`, `copies`: the first windows, by
    text then word), the `top` most copied ones with a snippet of each (rows of REPEATS)."""
    if not top or not len(d):
        return []
    brk = np.ones(len(d), bool)
    brk[1:] = (d[1:] != d[:-1]) | (pos[1:] >= pos[:-1] + length)
    heads = np.flatnonzero(brk)
    ends = np.r_[heads[1:], len(d)] - 1
    most = np.maximum.reduceat(copies, heads)
    best = heapq.nlargest(top, range(len(heads)), key=lambda i: (most[i], pos[ends[i]] - pos[heads[i]]))
    out = []
    for i in best:
        doc, w0, w1 = d[heads[i]], pos[heads[i]], pos[ends[i]] + length
        c0 = cstart[offsets[doc] + w0]
        c1 = cstart[offsets[doc] + w1] if w1 < offsets[doc + 1] - offsets[doc] else nchars[doc]
        text = sub[int(doc)].as_py()
        out.append({"id": ids[int(docs[doc])].as_py(), "start": int(c0), "end": int(c1), "words": int(w1 - w0),
                    "copies": int(most[i]), "text": text[c0:min(c1, c0 + SNIPPET)]})
    return out
