"""One docs shard's tokens, made exactly as the tokenize and pack stages make them.

`encode_documents` is the tokenize stage's work per Arrow batch (ids with EOS/BOS, as an Arrow list
column); `pack_shard` is the pack stage's work per docs shard (mixture copies, packing, shuffle,
each format's files, see formats.py). `write_shard` chains the two for one list of texts, so
`bench/bench_tokenize.py` times the very calls the pipeline makes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .batch import Tokens
from .docmap import SHARD_MAPS, DocKeys, map_table, write_shard_maps
from .pack import pack_documents
from .tokenizer import TextTokenizer

METHODS = ("best_fit", "concat", "none")


def encode_documents(tokenizer: TextTokenizer, texts, eos_id: int | None, bos_id: int | None) -> Tokens:
    """Token ids of each document, wrapped as [bos] ids [eos]."""
    return tokenizer.encode_batch(texts).with_specials(eos_id=eos_id, bos_id=bos_id)


def to_arrow(tokens: Tokens) -> pa.LargeListArray:
    values = pa.array(tokens.ids.astype(np.int32, copy=False))
    return pa.LargeListArray.from_arrays(pa.array(tokens.offsets.astype(np.int64)), values)


def from_arrow(lists: pa.LargeListArray) -> Tokens:
    """The token lists as (ids, offsets) over the Arrow buffers: a single chunk is not copied (a pack task reads one
    per shard), and the ids are viewed as unsigned (token ids are never negative), not converted."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.chunk(0) if lists.num_chunks == 1 else lists.combine_chunks()
    values = lists.values.to_numpy()
    ids = values.view(np.uint32) if values.dtype == np.int32 else values.astype(np.uint32, copy=False)
    offsets = lists.offsets.to_numpy().astype(np.int64, copy=False)
    return Tokens(ids[offsets[0]:offsets[-1]], offsets - offsets[0] if offsets[0] else offsets)   # a slice: from 0


def expand_copies(tokens: Tokens, copies: np.ndarray) -> Tokens:
    """Repeat whole documents: document i appears copies[i] times (0 drops it). One copy of each (a source taken at
    most once: the tokenize step wrote only documents with a copy) is the documents as they are."""
    if len(copies) == len(tokens) and bool((copies == 1).all()):
        return tokens
    order = np.repeat(np.arange(len(copies)), copies)
    lengths = tokens.lengths[order]
    offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    gather = np.repeat(tokens.offsets[:-1][order] - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
    return Tokens(tokens.ids[gather], offsets)


def pack_shard(tokens: Tokens, prefix: str, *, vocab_size: int, seq_len: int, method: str = "best_fit",
               seed: int | None = 0, formats=("megatron",), tokenizer_name: str = "",
               layout: str = "chunks", keys: DocKeys | None = None) -> dict:
    """Pack documents (specials already added) into sequences of at most `seq_len` and write them.

    `method`: best_fit (split documents longer than seq_len, then best-fit-decreasing), concat (cut
    windows), or none (one sequence per document, as Megatron's preprocess_data writes).
    Files: each of `formats` (names of `curate.tokens.formats`) writes its own beside `prefix`, e.g. megatron
    prefix.bin + prefix.idx; datatrove prefix.ds (+ .index, .metadata): whole documents in packing order, no padding.
    `keys` (who the documents are): the document map of each format that has one, all in `prefix` + `SHARD_MAPS`
    (docmap.py; `merge_maps` makes each format's map of a source from them).
    """
    from .formats import get

    if method not in METHODS:
        raise ValueError(f"packing method must be one of {METHODS}, not {method!r}")
    if method == "none":
        stats = {"docs": len(tokens), "sequences": len(tokens), "tokens": tokens.num_tokens, "docs_split": 0, "chunks": len(tokens)}
        packed = None
    else:
        packed, pack_stats = pack_documents(tokens, seq_len, eos_id=None, method=method, seed=seed)
        stats = pack_stats.as_dict()
    maps = {}
    for name in formats:
        fmt = get(name)
        stats["tokens_written"] = fmt.write(prefix, tokens, packed, vocab_size=vocab_size, tokenizer_name=tokenizer_name,
                                            layout=layout)
        if keys is not None and fmt.map_suffix:
            maps[name] = map_table(fmt.locate(tokens, packed, layout), keys)
    if maps:
        write_shard_maps(prefix + SHARD_MAPS, maps)
    return stats


def write_shard(texts, tokenizer: TextTokenizer, prefix: str, *, fmt: str = "megatron", packing: str = "best_fit",
                seq_len: int = 2049, seed: int | None = 0, append_eos: bool = True, add_bos: bool = False,
                batch_docs: int = 4096, layout: str = "chunks") -> dict:
    """Tokenize `texts` (a list of str or an Arrow string array) in batches and pack them as one shard."""
    from .formats import names

    if fmt not in names():
        raise ValueError(f"fmt must be one of {tuple(names())}, not {fmt!r}")
    eos = tokenizer.eos_id if append_eos else None
    bos = tokenizer.bos_id if add_bos else None
    if append_eos and eos is None:
        raise ValueError(f"tokenizer {tokenizer.name} has no EOS token; pass eos_token= to load_tokenizer")
    if add_bos and bos is None:
        raise ValueError(f"tokenizer {tokenizer.name} has no BOS token")
    tokens = Tokens.concat([encode_documents(tokenizer, texts[i:i + batch_docs], eos, bos)
                            for i in range(0, len(texts), batch_docs)])
    stats = pack_shard(tokens, prefix, vocab_size=tokenizer.vocab_size, seq_len=seq_len, method=packing, seed=seed,
                       formats=(fmt,), tokenizer_name=tokenizer.name, layout=layout)
    return {**stats, "format": fmt, "packing": packing, "prefix": prefix, "tokenizer": tokenizer.identity()}
