"""Pack documents into training sequences of at most `seq_len` tokens.

- `pack_concat`: documents joined with EOS and cut into fixed windows (what GPT-style trainers do
  implicitly; documents are cut at window edges).
- `pack_best_fit`: documents longer than seq_len split into chunks <= seq_len, then
  best-fit-decreasing bin packing (arXiv 2404.10830): about the density of concatenation with
  almost no document cut.

Both produce a `Packing`: for each sequence its chunks `(doc, start, end)` in order, so document
boundaries survive (position resets / cu_seqlens) and any token store can be gathered into it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .batch import Tokens
from .binpack import best_fit_decreasing


@dataclass(frozen=True)
class PackStats:
    """Why we keep these: density is the compute wasted on padding, split share the truncation cost."""

    seq_len: int
    sequences: int
    tokens: int
    docs: int
    docs_split: int
    chunks: int
    tokens_dropped: int = 0

    @property
    def density(self) -> float:
        return self.tokens / (self.sequences * self.seq_len) if self.sequences else 0.0

    @property
    def split_share(self) -> float:
        return self.docs_split / self.docs if self.docs else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "density": self.density, "split_share": self.split_share}


@dataclass(frozen=True)
class Packing:
    """Chunk table of packed sequences: chunks seq_offsets[i]:seq_offsets[i+1] form sequence i."""

    seq_len: int
    num_docs: int
    seq_offsets: np.ndarray  # int64, sequences + 1
    doc: np.ndarray  # int64 per chunk: source document
    start: np.ndarray  # int64 per chunk: first token inside that document
    end: np.ndarray  # int64 per chunk: end (exclusive) inside that document

    def __len__(self) -> int:
        return len(self.seq_offsets) - 1

    def sequence(self, i: int) -> list[tuple[int, int, int]]:
        sl = slice(self.seq_offsets[i], self.seq_offsets[i + 1])
        return list(zip(self.doc[sl].tolist(), self.start[sl].tolist(), self.end[sl].tolist()))

    @property
    def chunk_lengths(self) -> np.ndarray:
        return self.end - self.start

    def token_offsets(self) -> np.ndarray:
        """Where each sequence starts in the packed token stream (sequences + 1 entries)."""
        ends = np.concatenate([[0], np.cumsum(self.chunk_lengths)]).astype(np.int64)
        return ends[self.seq_offsets]

    @property
    def sequence_lengths(self) -> np.ndarray:
        return np.diff(self.token_offsets())

    def stats(self, tokens_dropped: int = 0) -> PackStats:
        pieces = np.bincount(self.doc, minlength=self.num_docs) if len(self.doc) else np.zeros(self.num_docs)
        return PackStats(self.seq_len, len(self), int(self.chunk_lengths.sum()), self.num_docs,
                         int((pieces > 1).sum()), len(self.doc), tokens_dropped)

    def shuffled(self, seed: int) -> "Packing":
        """Same sequences in a seeded random order (numpy PCG64): reproducible across machines."""
        perm = np.random.default_rng(seed).permutation(len(self))
        counts = np.diff(self.seq_offsets)
        new_counts = counts[perm]
        offsets = np.zeros(len(self) + 1, np.int64)
        np.cumsum(new_counts, out=offsets[1:])
        idx = _ranges(self.seq_offsets[:-1][perm], new_counts)
        return Packing(self.seq_len, self.num_docs, offsets, self.doc[idx], self.start[idx], self.end[idx])

    def gather(self, tokens: Tokens) -> "Packed":
        """Materialise the sequences from the documents' ids (one fancy-index pass over all tokens)."""
        ids = tokens.ids[_ranges(tokens.offsets[self.doc] + self.start, self.chunk_lengths)]
        return Packed(ids, self.token_offsets(), self)


@dataclass(frozen=True)
class Packed:
    """Packed token ids: `ids[offsets[i]:offsets[i+1]]` is sequence i (<= seq_len tokens)."""

    ids: np.ndarray
    offsets: np.ndarray
    packing: Packing

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def positions(self) -> np.ndarray:
        """Position ids that restart at every chunk (document) boundary, aligned with `ids`."""
        lengths = self.packing.chunk_lengths
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lengths) else lengths
        return np.arange(len(self.ids), dtype=np.int64) - np.repeat(starts, lengths)

    def cu_seqlens(self, i: int) -> np.ndarray:
        """Chunk boundaries inside sequence i, as flash-attention's varlen kernels want them."""
        lengths = self.packing.chunk_lengths[self.packing.seq_offsets[i] : self.packing.seq_offsets[i + 1]]
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)

    def padded(self, pad_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(n, seq_len) ids padded with pad_id and the loss mask (1 real token, 0 padding)."""
        n, width = len(self), self.packing.seq_len
        lengths = np.diff(self.offsets)
        out = np.full((n, width), pad_id, dtype=self.ids.dtype)
        mask = np.arange(width)[None, :] < lengths[:, None]
        out[mask] = self.ids
        return out, mask


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for each (s, n), without a Python loop."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    out_starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(np.asarray(starts, np.int64) - out_starts, lengths)


def _check(seq_len: int) -> None:
    if int(seq_len) < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")


def pack_best_fit(doc_lengths, seq_len: int) -> Packing:
    """Split documents longer than seq_len into chunks <= seq_len, then best-fit-decreasing.

    Chunks of one document are consecutive pieces of seq_len tokens plus a remainder; empty
    documents produce no chunk. Inside a sequence, chunks are in placement order (largest first).
    """
    _check(seq_len)
    lengths = np.asarray(doc_lengths, np.int64)
    pieces = -(-lengths // seq_len)  # 0 for empty documents
    doc = np.repeat(np.arange(len(lengths), dtype=np.int64), pieces)
    first = np.cumsum(pieces) - pieces
    start = (np.arange(len(doc), dtype=np.int64) - np.repeat(first, pieces)) * seq_len
    end = np.minimum(start + seq_len, lengths[doc])
    order, bin_of, n_bins = best_fit_decreasing(end - start, seq_len)
    placed = order[np.argsort(bin_of, kind="stable")]  # by bin, then placement order
    seq_offsets = np.zeros(n_bins + 1, np.int64)
    np.cumsum(np.bincount(bin_of, minlength=n_bins), out=seq_offsets[1:])
    return Packing(int(seq_len), len(lengths), seq_offsets, doc[placed], start[placed], end[placed])


def plan_concat(doc_lengths, seq_len: int, drop_remainder: bool = False) -> tuple[Packing, int]:
    """Chunk table of fixed windows over the concatenated documents; returns (packing, tokens dropped)."""
    _check(seq_len)
    lengths = np.asarray(doc_lengths, np.int64)
    doc_offsets = np.concatenate([[0], np.cumsum(lengths)])
    total = int(doc_offsets[-1])
    kept = total - total % seq_len if drop_remainder else total
    windows = -(-kept // seq_len)
    cuts = np.union1d(doc_offsets[doc_offsets <= kept], np.arange(windows + 1, dtype=np.int64) * seq_len)
    cuts = cuts[cuts <= kept]
    lo, hi = cuts[:-1], cuts[1:]
    doc = np.searchsorted(doc_offsets, lo, side="right") - 1
    seq = lo // seq_len
    seq_offsets = np.searchsorted(seq, np.arange(windows + 1), side="left").astype(np.int64)
    start = lo - doc_offsets[doc]
    return Packing(int(seq_len), len(lengths), seq_offsets, doc, start, start + (hi - lo)), total - kept


def pack_concat(doc_tokens, seq_len: int, eos_id: int | None, drop_remainder: bool = False) -> Packed:
    """Join documents with EOS after each and cut windows of seq_len (pass seq_len + 1 for
    trainers that shift inputs/labels inside a window). The last window is shorter unless dropped.
    """
    tokens = doc_tokens if isinstance(doc_tokens, Tokens) else Tokens.from_arrays(doc_tokens)
    tokens = tokens.with_specials(eos_id=eos_id)
    packing, dropped = plan_concat(tokens.lengths, seq_len, drop_remainder)
    kept = tokens.num_tokens - dropped
    return Packed(tokens.ids[:kept], np.minimum(np.arange(len(packing) + 1, dtype=np.int64) * seq_len, kept), packing)


def pack_documents(tokens: Tokens, seq_len: int, *, eos_id: int | None, bos_id: int | None = None,
                   method: str = "best_fit", seed: int | None = None) -> tuple[Packed, PackStats]:
    """One call for writers: add specials, pack with `method` ("best_fit" or "concat"), optionally shuffle."""
    tokens = tokens.with_specials(eos_id=eos_id, bos_id=bos_id)
    if method == "best_fit":
        packing, dropped = pack_best_fit(tokens.lengths, seq_len), 0
    elif method == "concat":
        packing, dropped = plan_concat(tokens.lengths, seq_len)
    else:
        raise ValueError(f"packing method must be best_fit or concat, not {method!r}")
    stats = packing.stats(dropped)
    if seed is not None:
        packing = packing.shuffled(seed)
    return packing.gather(tokens), stats
