"""The sample corpus, made at any size: in one process up to SCALED_FROM documents (corpus.py), in parts
in parallel above it (scaled.py)."""

from __future__ import annotations

from .corpus import SCALED_FROM, make_corpus
from .scaled import make_scaled


def make_sample(dest, docs: int = 4000, seed: int = 0) -> dict:
    """Write the sample corpus under ``dest`` and return the expected counts.

    Any earlier output (complete or not) is removed first; only the names it writes are touched.
    """
    if docs > SCALED_FROM:
        return make_scaled(dest, docs, seed)
    return make_corpus(dest, docs, seed)
