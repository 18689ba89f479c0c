"""The token-id cache's text hashes: read in place from the Arrow buffers, the values of xxh3 over each text's UTF-8
bytes (what the kept caches of earlier runs hold), for every layout of a text column."""

from __future__ import annotations

import pyarrow as pa
import pytest
import xxhash

from curate.tokens.cache import text_hashes

TEXTS = ["plain words", "", None, "naïve café – 日本語 🙂", "x" * 5000, None, "last"]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_text_hashes_are_xxh3_of_each_utf8_text_in_any_layout(kind):
    texts = pa.array(TEXTS, kind)
    expect = [xxhash.xxh3_64_intdigest((t or "").encode("utf-8")) for t in TEXTS]
    assert text_hashes(texts).tolist() == expect
    assert text_hashes(texts.slice(2, 3)).tolist() == expect[2:5]   # an offset into the buffers
    assert text_hashes(pa.array([], kind)).tolist() == []
    assert text_hashes(pa.array([None, None], kind)).tolist() == [xxhash.xxh3_64_intdigest(b"")] * 2
