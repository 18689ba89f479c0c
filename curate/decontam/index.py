"""The n-gram index of the eval sets, and the lookup of a batch of training texts in it.

Every text segment of an item (see evalsets.py) gives its word n-grams (`n`, 13 by default). A segment shorter
than n words gives one gram, itself whole (k words, k < n), when it has at least `min_short_words` words, so it
matches only as that exact contiguous normalised sequence; a shorter one (an answer like "yes" or "Paris") gives
nothing and never matches. An item without any gram is counted as skipped. `postings` maps each gram to the
items that hold it; `item_grams` is each item's number of distinct grams (the denominator of the overlap).

`scan` hashes a batch of texts' k-grams for each length k the index holds and keeps those in the index: a
bitmap on the hash's top bits rejects almost every gram, a binary search confirms the rest (lookup.py, compiled).
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pyarrow as pa

from curate.decontam.evalsets import EvalItem
from curate.decontam.lookup import find_grams
from curate.decontam.ngrams import P, gram_hashes, prefix_sums
from curate.decontam.normalize import NORMALIZATION, word_hashes

MATCHES = pa.schema([("id", pa.string()), ("gram", pa.uint64()), ("k", pa.int16()), ("pos", pa.int32()),
                     ("start", pa.int32()), ("end", pa.int32())])


class EvalIndex:
    def __init__(self, items: list[EvalItem], sets: list[str], n: int, min_short_words: int):
        self.items, self.sets, self.n = items, sets, n
        segments = [(i, s) for i, item in enumerate(items) for s in item.segments]
        words = word_hashes(pa.array([s for _, s in segments], pa.string()))
        seg_item = np.array([i for i, _ in segments], dtype=np.int64)
        seg_len = np.diff(words.bounds)
        grams, owners, lengths = [], [], {n}
        found, first = gram_hashes(words, n)
        grams.append(found)
        owners.append(seg_item[words.doc[first]] if len(first) else np.zeros(0, np.int64))
        for k in sorted({int(x) for x in seg_len if min_short_words <= x < n}):
            found, first = gram_hashes(words, k)
            seg = words.doc[first] if len(first) else np.zeros(0, np.int64)
            whole = (seg_len[seg] == k) & (first == words.bounds[seg])
            grams.append(found[whole])
            owners.append(seg_item[seg[whole]])
            lengths.add(k)
        pairs = np.unique(np.rec.fromarrays([np.concatenate(grams), np.concatenate(owners)], names="gram,item"))
        self.post_gram = np.ascontiguousarray(pairs["gram"], dtype=np.uint64)
        self.post_item = np.ascontiguousarray(pairs["item"], dtype=np.int64)
        self.item_grams = np.bincount(self.post_item, minlength=len(items)).astype(np.int64)
        self.keys = np.unique(self.post_gram)
        self.lengths = tuple(sorted(lengths, reverse=True))
        self.item_set = np.array([sets.index(item.set) for item in items], dtype=np.int32)
        self.fingerprint = hashlib.sha256(self.keys.tobytes() + repr((self.lengths, NORMALIZATION)).encode()).hexdigest()
        self._bitmap = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_bitmap"} | {"_bitmap": None}

    def summary(self) -> dict:
        """Per set: items, items with grams, items skipped (too short), distinct grams."""
        total, used = Counter(i.set for i in self.items), Counter(self.items[i].set for i in np.flatnonzero(self.item_grams))
        grams = {s: int(len(np.unique(self.post_gram[self.item_set[self.post_item] == k]))) for k, s in enumerate(self.sets)}
        return {s: {"items": total[s], "indexed": used[s], "skipped": total[s] - used[s], "grams": grams[s]} for s in self.sets}

    @property
    def bitmap(self) -> np.ndarray:
        """A bitset over the top `bits` bits of a hash, about 32 bits per gram (2^16 to 2^30 bits), so ~3% of misses
        pass; packed into uint64 words (2 MB for 500,000 grams)."""
        if self._bitmap is None:
            bits = int(np.clip(np.ceil(np.log2(max(len(self.keys), 1) * 32)), 16, 30))
            top = self.keys >> np.uint64(64 - bits)
            words = np.zeros(1 << (bits - 6), dtype=np.uint64)
            np.bitwise_or.at(words, top >> np.uint64(6), np.uint64(1) << (top & np.uint64(63)))
            self._bitmap = words
        return self._bitmap

    def scan(self, ids: pa.Array, texts: pa.Array) -> pa.Table:
        """One row per position of a text where a gram of the index starts: its id, the gram, its length in
        words, the word position, and the byte span of the gram in the text."""
        words = word_hashes(texts)
        lengths = np.array(self.lengths, dtype=np.int64)
        with np.errstate(over="ignore"):
            powers = np.array([P ** np.uint64(k) for k in self.lengths], dtype=np.uint64)
        shift = np.uint64(64 - 6 - int(np.log2(len(self.bitmap))))
        first, k, gram = find_grams(prefix_sums(words.hash), words.doc, lengths, powers, self.bitmap, shift, self.keys)
        if not len(first):
            return MATCHES.empty_table()
        doc = words.doc[first]
        pos = (first - words.bounds[doc]).astype(np.int32)
        start, end = words.start[first], words.end[first + k.astype(np.int64) - 1]
        order = np.lexsort((pos, -k.astype(np.int64), doc))
        ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        return pa.Table.from_arrays([ids.take(pa.array(doc[order])), *(pa.array(c[order]) for c in (gram, k, pos, start, end))],
                                    schema=MATCHES)


def doc_counts(matches: pa.Table) -> pa.Table:
    """Per gram, the number of distinct documents of `matches` holding it."""
    if not matches.num_rows:
        return pa.table({"gram": pa.array([], pa.uint64()), "docs": pa.array([], pa.int64())})
    doc = matches.column("id").combine_chunks().dictionary_encode().indices.to_numpy(zero_copy_only=False).astype(np.uint64)
    gram = matches.column("gram").to_numpy()
    pairs = np.unique(np.rec.fromarrays([gram, doc], names="gram,doc"))
    grams, counts = np.unique(pairs["gram"], return_counts=True)
    return pa.table({"gram": pa.array(grams, pa.uint64()), "docs": pa.array(counts.astype(np.int64))})
