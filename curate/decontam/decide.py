"""From a shard's stored matches to per (document, item) evidence and flags; no text is scanned here.

Matches of one item in one document that sit at consecutive word positions form a run (a contiguous match of
`(last - first) + n` words; a whole short segment is a run of its own). Precision rules:
- a gram found in more than `frequent_docs` training documents (counted over the whole corpus, for the grams
  that hit eval items only) does not count alone: a run made only of such grams is dropped, a run that also
  holds a rarer gram counts whole (a verbatim copy of an item keeps its boilerplate sentence);
- the document is flagged for the item when the share of the item's distinct grams it holds reaches
  `min_overlap`, or its longest run reaches `min_match_words` words.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.decontam.index import EvalIndex

PAIRS = pa.schema([("id", pa.string()), ("item", pa.int64()), ("grams", pa.int32()), ("item_grams", pa.int32()),
                   ("overlap", pa.float64()), ("longest_words", pa.int32()), ("flagged", pa.bool_()),
                   ("hashes", pa.list_(pa.uint64())), ("span_start", pa.int32()), ("span_end", pa.int32())])


def is_in(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    where = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[where] == values


def _starts(*keys: np.ndarray) -> np.ndarray:
    """True where any of the (sorted) keys changes from the row before."""
    new = np.zeros(len(keys[0]), dtype=bool)
    if len(new):
        new[0] = True
        for k in keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def decide(matches: pa.Table, index: EvalIndex, frequent: np.ndarray, min_overlap: float, min_match_words: int) -> pa.Table:
    """One row per (document, item) with at least one counting match: its evidence and whether it is flagged."""
    if not matches.num_rows:
        return PAIRS.empty_table()
    encoded = matches.column("id").combine_chunks().dictionary_encode()
    names, doc = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    gram, k, pos, start, end = (matches.column(c).to_numpy() for c in ("gram", "k", "pos", "start", "end"))
    # every match once per item holding its gram
    lo, hi = np.searchsorted(index.post_gram, gram, "left"), np.searchsorted(index.post_gram, gram, "right")
    count = hi - lo
    row = np.repeat(np.arange(len(gram)), count)
    item = index.post_item[lo[row] + np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count)]
    doc, gram, k, pos, start, end = doc[row], gram[row], k[row].astype(np.int64), pos[row].astype(np.int64), start[row], end[row]
    order = np.lexsort((-k, pos, item, doc))
    doc, item, gram, k, pos, start, end = (a[order] for a in (doc, item, gram, k, pos, start, end))
    # runs of consecutive n-gram positions of one item in one document
    n = index.n
    new = _starts(doc, item)
    new[1:] |= (k[1:] != n) | (k[:-1] != n) | (pos[1:] != pos[:-1] + 1)
    run = np.cumsum(new) - 1
    firsts = np.flatnonzero(new)
    lasts = np.append(firsts[1:], len(new)) - 1
    rare = np.add.reduceat((~is_in(gram, frequent)).astype(np.int64), firsts) > 0
    keep = rare[run]
    run_words = pos[lasts] - pos[firsts] + k[firsts]
    # per (document, item): distinct grams of the counting runs, the longest counting run
    doc, item, gram, run = doc[keep], item[keep], gram[keep], run[keep]
    if not len(doc):
        return PAIRS.empty_table()
    pair_new = _starts(doc, item)
    pair = np.cumsum(pair_new) - 1
    heads = np.flatnonzero(pair_new)
    by_gram = np.lexsort((gram, pair))
    distinct = _starts(pair[by_gram], gram[by_gram])
    g_pair, g_gram = pair[by_gram][distinct], gram[by_gram][distinct]
    grams = np.bincount(g_pair, minlength=len(heads))
    runs = np.unique(run)
    r_pair = pair[np.searchsorted(run, runs)]
    best = np.lexsort((firsts[runs], -run_words[runs], r_pair))   # per pair: the longest run, the first of equals
    best = best[_starts(r_pair[best])]
    longest_run = runs[best]
    p_doc, p_item = doc[heads], item[heads]
    total = index.item_grams[p_item]
    overlap = grams / total
    longest = run_words[longest_run]
    flagged = (overlap >= min_overlap) | (longest >= min_match_words)
    offsets = np.concatenate([[0], np.cumsum(grams)]).astype(np.int32)
    return pa.Table.from_arrays([
        names.take(pa.array(p_doc)), pa.array(p_item), pa.array(grams.astype(np.int32)), pa.array(total.astype(np.int32)),
        pa.array(np.round(overlap, 6)), pa.array(longest.astype(np.int32)), pa.array(flagged),
        pa.ListArray.from_arrays(pa.array(offsets), pa.array(g_gram, pa.uint64())),
        pa.array(start[firsts[longest_run]].astype(np.int32)), pa.array(end[lasts[longest_run]].astype(np.int32))], schema=PAIRS)
