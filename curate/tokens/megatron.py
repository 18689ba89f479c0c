"""Megatron-LM / GPT-NeoX indexed datasets: `prefix.bin` (raw ids) + `prefix.idx` (index).

Streaming: ids go to `.bin` as they arrive; only per-sequence lengths and per-document counts
stay in memory, and `.idx` is written at close (its presence means the pair is complete).
Layout of `.idx` (little-endian): magic b"MMIDIDX\\x00\\x00", u64 version 1, u8 dtype code,
u64 N sequences, u64 D document indices, i32[N] lengths, i64[N] byte pointers, i64[D] document
indices (0, then the running sequence count after each document).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..io.fs import AtomicWriter, copy_stream, filesystem, open_input, write_bytes
from .batch import Tokens
from .docmap import Located
from .formats import TokenFormat, token_format
from .pack import Packed
from .tokenizer import megatron_dtype

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.float64: 6, np.float32: 7,
               np.uint16: 8}
CODE_DTYPES = {code: dtype for dtype, code in DTYPE_CODES.items()}


class MegatronWriter:
    """Append sequences (grouped into documents) to `prefix.bin`/`prefix.idx`.

    dtype: explicit numpy dtype, or derived from vocab_size (uint16 below 65500 ids, else int32).
    """

    def __init__(self, prefix: str, *, vocab_size: int | None = None, dtype=None):
        if dtype is None:
            if vocab_size is None:
                raise ValueError("MegatronWriter needs vocab_size or dtype")
            dtype = megatron_dtype(vocab_size)
        self.dtype = np.dtype(dtype).type
        if self.dtype not in DTYPE_CODES:
            raise ValueError(f"Megatron has no dtype code for {np.dtype(dtype)}")
        self.prefix = prefix
        self._limit = np.iinfo(self.dtype).max if np.issubdtype(self.dtype, np.integer) else None
        self._lengths: list[np.ndarray] = []
        self._doc_sizes: list[np.ndarray] = []
        self._tokens = 0
        self._atomic = AtomicWriter(prefix + ".bin")
        self._bin = self._atomic.__enter__()
        self.closed = False

    def add(self, ids: np.ndarray, lengths, doc_sizes=None) -> None:
        """Append sequences: `ids` flat, `lengths` per sequence, `doc_sizes` = sequences per document
        (default: each sequence is its own document, as Megatron's preprocess_data writes them)."""
        lengths = np.asarray(lengths, np.int64)
        if int(lengths.sum()) != len(ids):
            raise ValueError(f"lengths sum to {int(lengths.sum())} but {len(ids)} ids were given")
        if len(lengths) and lengths.max() > np.iinfo(np.int32).max:
            raise ValueError("a Megatron sequence holds at most 2**31-1 tokens")
        if self._limit is not None and len(ids) and (ids.min() < 0 or ids.max() > self._limit):
            raise ValueError(f"token ids outside the range of {np.dtype(self.dtype)}")
        doc_sizes = np.ones(len(lengths), np.int64) if doc_sizes is None else np.asarray(doc_sizes, np.int64)
        if int(doc_sizes.sum()) != len(lengths):
            raise ValueError("doc_sizes must sum to the number of sequences")
        self._bin.write(memoryview(np.ascontiguousarray(ids, dtype=np.dtype(self.dtype).newbyteorder("<"))).cast("B"))
        self._lengths.append(lengths.astype(np.int32))
        self._doc_sizes.append(doc_sizes)
        self._tokens += len(ids)

    def add_shard(self, prefix: str) -> None:
        """Another `.bin/.idx` pair of this dtype, whole: its ids are copied as bytes (checked when that pair was
        written), its sequences and documents appended to this index. Merging a source's shards reads no ids."""
        index = read_index(prefix)
        if index.dtype is not self.dtype:
            raise ValueError(f"{prefix}.idx holds {np.dtype(index.dtype)}, this file {np.dtype(self.dtype)}")
        with open_input(prefix + ".bin") as src:
            copied = copy_stream(src, self._bin)
        if copied != int(index.lengths.astype(np.int64).sum()) * np.dtype(self.dtype).itemsize:
            raise ValueError(f"{prefix}.bin holds {copied} bytes, not the {int(index.lengths.sum())} ids its index says")
        self._lengths.append(index.lengths.astype(np.int32))
        self._doc_sizes.append(np.diff(index.document_indices))
        self._tokens += copied // np.dtype(self.dtype).itemsize

    def add_documents(self, tokens: Tokens) -> None:
        """Unpacked: one sequence per document (Megatron's GPTDataset concatenates them itself)."""
        self.add(tokens.ids, tokens.lengths)

    def add_packed(self, packed: Packed, layout: str = "chunks") -> None:
        """Packed sequences. layout "chunks": every chunk (a document or a piece of one) is a Megatron
        sequence and every packed sequence a Megatron document, so both the packing and the document
        boundaries survive (`sequence_lengths` = cu_seqlens). layout "sequences": one Megatron
        sequence (and document) per packed sequence."""
        if layout == "chunks":
            self.add(packed.ids, packed.packing.chunk_lengths, np.diff(packed.packing.seq_offsets))
        elif layout == "sequences":
            self.add(packed.ids, np.diff(packed.offsets))
        else:
            raise ValueError(f"layout must be chunks or sequences, not {layout!r}")

    @property
    def num_tokens(self) -> int:
        return self._tokens

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._atomic.__exit__(None, None, None)
        lengths = np.concatenate(self._lengths) if self._lengths else np.empty(0, np.int32)
        doc_sizes = np.concatenate(self._doc_sizes) if self._doc_sizes else np.empty(0, np.int64)
        write_bytes(self.prefix + ".idx", index_bytes(lengths, doc_sizes, self.dtype))

    def abort(self) -> None:
        """Drop the partial `.bin` (no `.idx` is written)."""
        if not self.closed:
            self.closed = True
            self._atomic.__exit__(RuntimeError, RuntimeError("aborted"), None)

    def __enter__(self) -> "MegatronWriter":
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close() if exc_type is None else self.abort()
        return False


def index_bytes(lengths: np.ndarray, doc_sizes: np.ndarray, dtype) -> bytes:
    """The whole `.idx` file for these sequence lengths and documents."""
    n = len(lengths)
    pointers = np.zeros(n, np.int64)
    if n > 1:
        np.cumsum(lengths[:-1].astype(np.int64) * np.dtype(dtype).itemsize, out=pointers[1:])
    doc_index = np.concatenate([[0], np.cumsum(doc_sizes)]).astype("<i8")
    header = MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[np.dtype(dtype).type])
    header += struct.pack("<Q", n) + struct.pack("<Q", len(doc_index))
    return b"".join([header, lengths.astype("<i4").tobytes(), pointers.astype("<i8").tobytes(),
                     doc_index.tobytes()])


@dataclass
class MegatronIndex:
    """A read `.idx`: enough to slice `.bin` (used by tests and by tools that check outputs)."""

    dtype: type
    lengths: np.ndarray
    pointers: np.ndarray
    document_indices: np.ndarray
    tokens: np.ndarray  # the whole `.bin` as an array of `dtype`

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        start = int(self.pointers[i]) // np.dtype(self.dtype).itemsize
        return self.tokens[start : start + int(self.lengths[i])]

    def document(self, d: int) -> list[np.ndarray]:
        return [self[i] for i in range(int(self.document_indices[d]), int(self.document_indices[d + 1]))]


def read_megatron(prefix: str) -> MegatronIndex:
    index = read_index(prefix)
    fs, path = filesystem(prefix + ".bin")
    with fs.open(path, "rb") as f:
        index.tokens = np.frombuffer(f.read(), np.dtype(index.dtype).newbyteorder("<"))
    return index


def read_index(prefix: str) -> MegatronIndex:
    """`prefix.idx` alone (its `tokens` empty)."""
    fs, path = filesystem(prefix + ".idx")
    with fs.open(path, "rb") as f:
        raw = f.read()
    if raw[:9] != MAGIC:
        raise ValueError(f"{prefix}.idx is not a Megatron index (bad magic)")
    (version,) = struct.unpack_from("<Q", raw, 9)
    if version != VERSION:
        raise ValueError(f"{prefix}.idx has version {version}, expected {VERSION}")
    code = raw[17]
    n, d = struct.unpack_from("<QQ", raw, 18)
    lengths = np.frombuffer(raw, "<i4", n, 34)
    pointers = np.frombuffer(raw, "<i8", n, 34 + 4 * n)
    docs = np.frombuffer(raw, "<i8", d, 34 + 12 * n)
    dtype = CODE_DTYPES[code]
    return MegatronIndex(dtype, lengths, pointers, docs, np.empty(0, dtype))


@token_format
class Megatron(TokenFormat):
    """`prefix.bin/.idx`: every chunk a Megatron sequence and every packed sequence a Megatron document (see `add_packed`)."""

    name = "megatron"
    suffixes = (".bin", ".idx")
    map_suffix = ".idx.map.parquet"

    def locate(self, tokens: Tokens, packed: Packed | None, layout: str = "chunks") -> Located:
        """Each chunk is a `.idx` sequence and each packed sequence a `.idx` document (layout "sequences": one
        `.idx` sequence per packed sequence); unpacked, each document is both."""
        if packed is None:
            return Located.whole(np.arange(len(tokens), dtype=np.int64), tokens.lengths)
        p = packed.packing
        per_sequence = np.diff(p.seq_offsets)
        sequence = np.repeat(np.arange(len(p), dtype=np.int64), per_sequence)
        lengths = p.chunk_lengths.astype(np.int64)
        starts = np.cumsum(lengths) - lengths
        offset = starts - np.repeat(starts[p.seq_offsets[:-1]], per_sequence)
        chunk = np.arange(len(lengths), dtype=np.int64) if layout == "chunks" else sequence
        return Located(p.doc.astype(np.int64), p.start.astype(np.int64), lengths, sequence, chunk, offset)

    def write(self, prefix: str, tokens: Tokens, packed: Packed | None, *, vocab_size: int, tokenizer_name: str,
              layout: str = "chunks") -> int:
        with MegatronWriter(prefix, vocab_size=vocab_size) as writer:
            writer.add_documents(tokens) if packed is None else writer.add_packed(packed, layout=layout)
            return writer.num_tokens

    def merge(self, prefix: str, parts: list[str], *, vocab_size: int, tokenizer_name: str) -> None:
        with MegatronWriter(prefix, vocab_size=vocab_size) as writer:
            for part in parts:
                writer.add_shard(part)
