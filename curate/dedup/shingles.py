"""What a document's shingles are: the unit (code points or words), n, normalisation, short documents.

Why this module has both a batch path and a per-document Python path: ``prepare`` turns an Arrow string
array into the exact text the compiled kernel shingles (zero-copy when there is nothing to normalise),
and ``shingle_strings`` lists the same shingles as Python strings. The latter is the definition the
kernel is tested against, and what a datasketch ``MinHash`` is fed to check signatures bit for bit.

- ``char``: ``text[i:i+n]`` over Unicode code points (Python slicing), of the normalised text.
- ``word``: ``" ".join(words[i:i+n])`` where ``words = normalised.split()`` (Unicode whitespace).
  Zyda-1 used NLTK's ``word_tokenize`` after removing punctuation and datatrove uses spaCy; on
  punctuation-free text both are close to a whitespace split (NLTK also splits a few contractions like
  "cannot"), and a whitespace split needs no models or downloads.

Short documents: fewer than ``n`` units (but at least one).
- ``short_docs="whole"`` (default): the whole (normalised) document is the one shingle. Two short
  documents then match only if they are identical after normalisation; they do not all collapse into one
  signature, which is what happened to Zyda-1 (NLTK ``ngrams`` yields nothing for them, so every short
  document got the same empty MinHash and they all fell in one cluster).
- ``short_docs="skip"``: no shingles (RedPajama-V2: fewer than 13 words, no signature).
In both cases, and for documents with no units at all (empty, whitespace only, or punctuation only after
normalisation), ``n_shingles`` is what flags them: 0 means "no signature", and the signature is all
2^32-1 (datasketch's empty MinHash). Such documents must be left out of LSH bucketing by the caller,
since all of their band keys are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from .normalize import check_steps, normalizer

UNITS = ("char", "word")
SHORT_DOCS = ("whole", "skip")


@dataclass(frozen=True)
class Shingling:
    """How documents become shingles. ``normalize`` is a tuple of step names (see ``normalize.py``)."""

    unit: str = "char"
    n: int = 25
    normalize: tuple[str, ...] = ()
    short_docs: str = "whole"

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"shingle unit must be one of {UNITS}, got {self.unit!r}")
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise ValueError(f"shingle size n must be a positive integer, got {self.n!r}")
        if self.short_docs not in SHORT_DOCS:
            raise ValueError(f"short_docs must be one of {SHORT_DOCS}, got {self.short_docs!r}")
        object.__setattr__(self, "normalize", check_steps(self.normalize))

    @property
    def _norm(self) -> Callable[[str], str]:
        return normalizer(self.normalize)

    # -- one document ----------------------------------------------------------------------------

    def text_for_kernel(self, text: str) -> str:
        """The text the kernel shingles: normalised; for words, the tokens joined by single spaces."""
        text = self._norm(text)
        return " ".join(text.split()) if self.unit == "word" else text

    def shingle_strings(self, text: str) -> list[str]:
        """The document's shingles, in order, repeats kept (a MinHash ignores repeats)."""
        text = self._norm(text)
        units = text.split() if self.unit == "word" else text
        sep = " " if self.unit == "word" else ""
        n = self.n
        if len(units) >= n:
            return [sep.join(units[i:i + n]) for i in range(len(units) - n + 1)]
        if len(units) and self.short_docs == "whole":
            return [sep.join(units)]
        return []

    # -- a batch ---------------------------------------------------------------------------------

    def prepare(self, texts: pa.Array) -> pa.Array:
        """The batch as the kernel reads it: the input itself when nothing changes (char n-grams of the
        raw text), else a new large_string array; nulls stay null."""
        if self.unit == "char" and not self.normalize:
            return texts
        out = [None if t is None else self.text_for_kernel(t) for t in texts.to_pylist()]
        return pa.array(out, type=pa.large_string())
