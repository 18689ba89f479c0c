"""Tokenizing a whole call at once into one flat id array, without padding and without special tokens.

The special tokens a tokenizer puts around a single text (`[CLS] ... [SEP]`, `<s> ... </s>`) are
found once by probing, and added per row when a batch is padded: that is what lets a long document be
cut into windows that each look like a normal input. The Rust tokenizer's batch encoder runs on a
private copy of the Hugging Face fast tokenizer's backend (no padding; truncation to the content
capacity when only the first window is needed). At load, a few probe texts check that this path gives
exactly the ids the Hugging Face tokenizer gives; if not, the Hugging Face call is used instead.
"""

from __future__ import annotations

import itertools

import numpy as np

PROBES = ("Hello, world! The quick brown fox jumps over 13 lazy dogs.",
          "  leading spaces,\ttabs and\nnew lines  ", "Ünïcödé, 漢字 and 😀 too", "a")


class Tokens:
    """Ragged token ids for many texts: `encode(texts) -> (flat, lengths)`; content tokens only."""

    def __init__(self, tokenizer):
        from tokenizers import Tokenizer

        if not getattr(tokenizer, "is_fast", False) or not hasattr(tokenizer, "backend_tokenizer"):
            raise ValueError(f"needs a fast (Rust) tokenizer, got {type(tokenizer).__name__}")
        self.hf = tokenizer
        self.truncate_to, self.side = None, "right"
        self.backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        self.backend.no_padding()
        self.backend.no_truncation()
        self.prefix, self.suffix = self._specials()
        self.fast = all(self._hf_ids(t) == self._fast_ids(t) for t in PROBES)

    def truncate(self, max_length: int, side: str = "right") -> None:
        """Keep only the first (side="right") or last (side="left") max_length content tokens."""
        self.truncate_to, self.side = max_length, side
        self.backend.enable_truncation(max_length=max_length, direction=side)

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def _specials(self) -> tuple[np.ndarray, np.ndarray]:
        plain = self.hf("hello", add_special_tokens=False)["input_ids"]
        full = self.hf("hello", add_special_tokens=True)["input_ids"]
        for i in range(len(full) - len(plain) + 1):
            if full[i:i + len(plain)] == plain:
                return (np.asarray(full[:i], dtype=np.int64),
                        np.asarray(full[i + len(plain):], dtype=np.int64))
        raise ValueError("the tokenizer's special tokens are not a prefix and suffix around the text")

    def _hf_ids(self, text: str) -> list[int]:
        return list(self.hf(text, add_special_tokens=True)["input_ids"])

    def _fast_ids(self, text: str) -> list[int]:
        ids = self.backend.encode(text, add_special_tokens=False).ids
        return [*self.prefix.tolist(), *ids, *self.suffix.tolist()]

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(flat ids int64, content length per text) for a list of str."""
        if self.fast:
            ids = [e.ids for e in self.backend.encode_batch_fast(texts, add_special_tokens=False)]
        else:
            kw = {}
            if self.truncate_to is not None:
                self.hf.truncation_side = self.side
                kw = {"truncation": True, "max_length": self.truncate_to}
            ids = self.hf(texts, add_special_tokens=False, **kw)["input_ids"]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
        return flat, lengths
