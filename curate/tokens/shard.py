"""Tokenize, pack and write one output shard: the whole job of one tokenize task.

Text is encoded in batches (bounded Python-side memory); packing needs every length of the
shard, so packed shards hold the shard's ids in memory once, as numpy. `packing="none"` streams
one Megatron sequence per document, as Megatron's preprocess_data does.
"""

from __future__ import annotations

import numpy as np

from .batch import Tokens
from .pack import pack_documents
from .tokenizer import TextTokenizer

FORMATS = ("megatron", "datatrove")
PACKINGS = ("best_fit", "concat", "none")


def _batches(texts, size: int):
    for i in range(0, len(texts), size):
        yield texts[i : i + size]


def write_shard(texts, tokenizer: TextTokenizer, prefix: str, *, fmt: str = "megatron",
                packing: str = "best_fit", seq_len: int = 2049, seed: int | None = 0,
                append_eos: bool = True, add_bos: bool = False, batch_docs: int = 4096,
                layout: str = "chunks") -> dict:
    """Write `texts` (list of str or pyarrow string array) as one shard; returns stats for the ledger.

    Files: megatron -> prefix.bin + prefix.idx; datatrove -> prefix.ds (+ .index, .loss, .metadata).
    seq_len counts every token of a packed sequence (2049 = 2048 inputs + 1 shifted label).
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    if packing not in PACKINGS:
        raise ValueError(f"packing must be one of {PACKINGS}, not {packing!r}")
    eos = tokenizer.eos_id if append_eos else None
    bos = tokenizer.bos_id if add_bos else None
    if append_eos and eos is None:
        raise ValueError(f"tokenizer {tokenizer.name} has no EOS token; pass eos_token= to load_tokenizer")
    if add_bos and bos is None:
        raise ValueError(f"tokenizer {tokenizer.name} has no BOS token")
    writer = _open(fmt, prefix, tokenizer, save_loss=packing != "none")
    stats: dict = {"docs": 0, "tokens": 0}
    with writer:
        if packing == "none":
            for batch in _batches(texts, batch_docs):
                tokens = tokenizer.encode_batch(batch).with_specials(eos_id=eos, bos_id=bos)
                _write_docs(writer, tokens)
                stats["docs"] += len(tokens)
                stats["tokens"] += tokens.num_tokens
            stats["sequences"] = stats["docs"]
        else:
            tokens = Tokens.concat([tokenizer.encode_batch(b) for b in _batches(texts, batch_docs)])
            packed, pack_stats = pack_documents(tokens, seq_len, eos_id=eos, bos_id=bos, method=packing, seed=seed)
            if fmt == "megatron":
                writer.add_packed(packed, layout=layout)
            else:
                writer.add_packed(packed, pad_id=eos if eos is not None else 0)
            stats.update(pack_stats.as_dict())
        stats["tokens_written"] = writer.num_tokens
    stats.update(format=fmt, packing=packing, prefix=prefix, tokenizer=tokenizer.identity(),
                 dtype=str(np.dtype(writer.dtype)))
    return stats


def _open(fmt: str, prefix: str, tokenizer: TextTokenizer, save_loss: bool):
    if fmt == "megatron":
        from .megatron import MegatronWriter

        return MegatronWriter(prefix, vocab_size=tokenizer.vocab_size)
    from .datatrove_ds import DsWriter

    return DsWriter(prefix + ".ds", vocab_size=tokenizer.vocab_size, tokenizer_name=tokenizer.name,
                    save_loss=save_loss)


def _write_docs(writer, tokens: Tokens) -> None:
    if hasattr(writer, "add_documents"):
        writer.add_documents(tokens)
    else:
        writer.write_tokens(tokens)
