"""datatrove's tokenized format, byte-compatible with datatrove 0.10.1's `TokenizedFile`.

- `NAME.ds`: raw ids, little-endian `<H` (token_size 2) or `<I` (token_size 4; vocab > 65536)
- `NAME.ds.index`: uint64 cumulative document end positions (in tokens)
- `NAME.ds.loss` (optional): one byte per token, 1 = train on it, 0 = mask
- `NAME.ds.metadata`: "{tokenizer}|{token_size}\\n{token count}\\n{humanized count}"

datatrove's readers (`DatatroveFolderDataset`, `DatatroveFileDataset`) cut fixed windows of seq_len + 1
tokens from the stream themselves, reset positions at index entries and never read `.ds.loss`; its
`check_dataset` wants EOS at every index entry and `DocumentTokenizerMerger` shuffles index entries as
documents. So the stream holds only real tokens: whole documents (each ending with EOS), one index
entry each. Padding would be served to the trainer as tokens; a chunk boundary would be a "document"
without EOS. Packing cannot reach datatrove's windows, so `add_packed` keeps only its order: documents
appear in the order the (shuffled) packing first places them, documents packed together stay together.
"""

from __future__ import annotations

import math

import numpy as np

from ..io.fs import AtomicWriter, copy_stream, open_input, read_bytes, write_bytes
from .batch import Tokens
from .docmap import Located
from .formats import TokenFormat, token_format
from .pack import Packed


def token_size_for(vocab_size: int) -> int:
    """datatrove's rule: 4 bytes when ids exceed uint16, else 2."""
    return 4 if vocab_size > np.iinfo(np.uint16).max + 1 else 2


def _humanize(count: int) -> str:
    """`humanize.metric(count, unit="T")`, the third line datatrove writes, without needing humanize installed
    (so the bytes do not depend on it): 3 significant digits and an SI prefix (humanize, MIT licence)."""
    if count == 0:
        return "0.00 T"
    exponent = math.floor(math.log10(abs(count)))
    value = count / 10 ** (exponent // 3 * 3)
    digits = max(0, 2 - exponent % 3)
    if round(abs(value), digits) >= 10 ** (exponent % 3 + 1):   # a rounding carry: 999.6 -> 1.00 k
        exponent += 1
        value = count / 10 ** (exponent // 3 * 3)
        digits = max(0, 2 - exponent % 3)
    prefix = "kMGTPEZYRQ"[exponent // 3 - 1] if exponent >= 3 else ""
    return f"{value:.{digits}f} {prefix}T"


def packing_order(packed: Packed) -> np.ndarray:
    """The documents of `packed` in the order the packing first places them."""
    docs, first = np.unique(packed.packing.doc, return_index=True)
    return docs[np.argsort(first, kind="stable")]


class DsWriter:
    """Stream documents into `path` (a `.ds` file) with its index, optional loss mask and metadata."""

    def __init__(self, path: str, *, vocab_size: int | None = None, token_size: int | None = None,
                 tokenizer_name: str | None = None, save_loss: bool = False, save_metadata: bool = True):
        if token_size is None:
            if vocab_size is None:
                raise ValueError("DsWriter needs vocab_size or token_size")
            token_size = token_size_for(vocab_size)
        if token_size not in (2, 4):
            raise ValueError("token_size must be 2 or 4")
        self.path, self.token_size = path, token_size
        self.dtype = np.dtype("<u2" if token_size == 2 else "<u4")
        self.tokenizer_name, self.save_loss, self.save_metadata = tokenizer_name, save_loss, save_metadata
        self._ends: list[np.ndarray] = []
        self._written = 0
        self._files = [AtomicWriter(path)] + ([AtomicWriter(path + ".loss")] if save_loss else [])
        self._handles = [w.__enter__() for w in self._files]
        self.closed = False

    def write(self, ids: np.ndarray, doc_lengths, loss: np.ndarray | None = None) -> None:
        """Append documents: `ids` flat, `doc_lengths` per document, `loss` (bool/uint8 per token) if kept."""
        doc_lengths = np.asarray(doc_lengths, np.int64)
        if int(doc_lengths.sum()) != len(ids):
            raise ValueError("doc_lengths must sum to the number of ids")
        if len(ids) and (ids.min() < 0 or ids.max() > np.iinfo(self.dtype).max):
            raise ValueError(f"token ids do not fit token_size {self.token_size}")
        self._handles[0].write(memoryview(np.ascontiguousarray(ids, dtype=self.dtype)).cast("B"))
        if self.save_loss:
            mask = np.ones(len(ids), np.uint8) if loss is None else np.asarray(loss).astype(np.uint8)
            if len(mask) != len(ids):
                raise ValueError("loss must have one value per token")
            self._handles[1].write(memoryview(mask))
        self._ends.append(self._written + np.cumsum(doc_lengths, dtype=np.int64))
        self._written += len(ids)

    def add_shard(self, path: str) -> None:
        """Another `.ds` file of this token size (no loss mask), whole: its ids copied as bytes (checked when that file
        was written), its document ends appended past this file's. Merging a source's shards reads no ids."""
        if self.save_loss:
            raise ValueError("a shard is added whole only to a file without a loss mask")
        ends = np.frombuffer(read_bytes(path + ".index"), "<u8").astype(np.int64)
        with open_input(path) as src:
            copied = copy_stream(src, self._handles[0])
        if copied != (int(ends[-1]) if len(ends) else 0) * self.token_size:
            raise ValueError(f"{path} holds {copied} bytes, not the {int(ends[-1]) if len(ends) else 0} ids its index says")
        self._ends.append(self._written + ends)
        self._written += copied // self.token_size

    def write_tokens(self, tokens: Tokens) -> None:
        self.write(tokens.ids, tokens.lengths)

    def add_packed(self, packed: Packed, tokens: Tokens) -> None:
        """The documents of `packed` whole, from `tokens`, in the order the packing first places them."""
        self.add_documents(tokens, packing_order(packed))

    def add_documents(self, tokens: Tokens, order: np.ndarray) -> None:
        """Documents `order` of `tokens`, whole, in that order."""
        lengths = tokens.lengths[order]
        starts = tokens.offsets[:-1][order]
        total = int(lengths.sum())
        out_starts = np.cumsum(lengths) - lengths
        gather = np.arange(total, dtype=np.int64) + np.repeat(starts - out_starts, lengths)
        self.write(tokens.ids[gather], lengths)

    @property
    def num_tokens(self) -> int:
        return self._written

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for w in self._files:
            w.__exit__(None, None, None)
        ends = np.concatenate(self._ends) if self._ends else np.empty(0, np.int64)
        write_bytes(self.path + ".index", ends.astype("<u8").tobytes())
        if self.save_metadata:
            name = self.tokenizer_name or "Unknown Tokenizer|" + str(self.token_size)
            text = "\n".join([f"{name}|{self.token_size}", str(self._written), _humanize(self._written)])
            write_bytes(self.path + ".metadata", text.encode())

    def abort(self) -> None:
        if not self.closed:
            self.closed = True
            for w in self._files:
                w.__exit__(RuntimeError, RuntimeError("aborted"), None)

    def __enter__(self) -> "DsWriter":
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close() if exc_type is None else self.abort()
        return False


@token_format
class Datatrove(TokenFormat):
    """`prefix.ds` (+ `.index`, `.metadata`): whole documents in packing order, no padding (see the module's notes)."""

    name = "datatrove"
    suffixes = (".ds", ".ds.index", ".ds.metadata")
    map_suffix = ".ds.map.parquet"

    def locate(self, tokens: Tokens, packed: Packed | None, layout: str = "chunks") -> Located:
        """Whole documents, each its own index entry, in the order `write` puts them."""
        order = np.arange(len(tokens), dtype=np.int64) if packed is None else packing_order(packed)
        return Located.whole(order, tokens.lengths[order])

    def write(self, prefix: str, tokens: Tokens, packed: Packed | None, *, vocab_size: int, tokenizer_name: str,
              layout: str = "chunks") -> int:
        with DsWriter(prefix + ".ds", vocab_size=vocab_size, tokenizer_name=tokenizer_name) as ds:
            ds.write_tokens(tokens) if packed is None else ds.add_packed(packed, tokens)
            return ds.num_tokens

    def merge(self, prefix: str, parts: list[str], *, vocab_size: int, tokenizer_name: str) -> None:
        with DsWriter(prefix + ".ds", vocab_size=vocab_size, tokenizer_name=tokenizer_name) as ds:
            for part in parts:
                ds.add_shard(part + ".ds")
