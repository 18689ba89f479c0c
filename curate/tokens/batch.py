"""Token ids of many documents as one flat array plus offsets.

One allocation per batch instead of one Python list per document: packing, writers and
stats then run as numpy over the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

ID_DTYPE = np.int32  # every tokenizer we load has < 2**31 ids; writers cast to their on-disk dtype


def clean_text(text: str) -> str:
    """Lone UTF-16 surrogates (from bad JSON escapes) cannot be encoded: pair them up or use U+FFFD,
    as tiktoken does, so every backend sees the same string."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True)
class Tokens:
    """`ids[offsets[i]:offsets[i + 1]]` are the ids of document i."""

    ids: np.ndarray
    offsets: np.ndarray  # int64, len(docs) + 1, offsets[0] == 0

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1])

    @classmethod
    def from_arrays(cls, arrays) -> "Tokens":
        arrays = list(arrays)
        offsets = np.zeros(len(arrays) + 1, np.int64)
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        ids = np.concatenate(arrays, dtype=ID_DTYPE, casting="unsafe") if arrays else np.empty(0, ID_DTYPE)
        return cls(ids, offsets)

    @classmethod
    def from_lists(cls, lists: list[list[int]]) -> "Tokens":
        offsets = np.zeros(len(lists) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, lists), np.int64, count=len(lists)), out=offsets[1:])
        ids = np.fromiter(chain.from_iterable(lists), ID_DTYPE, count=int(offsets[-1]))
        return cls(ids, offsets)

    @classmethod
    def concat(cls, parts: list["Tokens"]) -> "Tokens":
        if not parts:
            return cls(np.empty(0, ID_DTYPE), np.zeros(1, np.int64))
        ids = np.concatenate([p.ids for p in parts])
        lengths = np.concatenate([p.lengths for p in parts])
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(ids, offsets)

    def with_specials(self, eos_id: int | None = None, bos_id: int | None = None) -> "Tokens":
        """Wrap every document as [bos] ids [eos]: the trainer sees where documents end even after packing."""
        pre, post = int(bos_id is not None), int(eos_id is not None)
        if pre + post == 0:
            return self
        docs = len(self)
        offsets = self.offsets + (pre + post) * np.arange(docs + 1, dtype=np.int64)
        out = np.empty(int(offsets[-1]), self.ids.dtype)
        shift = np.repeat(np.arange(docs, dtype=np.int64) * (pre + post) + pre, self.lengths)
        out[np.arange(len(self.ids), dtype=np.int64) + shift] = self.ids
        if pre:
            out[offsets[:-1]] = bos_id
        if post:
            out[offsets[1:] - 1] = eos_id
        return Tokens(out, offsets)
