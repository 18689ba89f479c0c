"""The compiled word split and hashes against the plain-Python reference, on awkward Unicode."""

import random

import numpy as np
import pyarrow as pa

from curate.decontam.ngrams import gram_hashes
from curate.decontam.normalize import normalize, word_hashes
from decontam.planted import ref_words

PIECES = ["Café", "naïve", "don’t", "don't", "U.S.A.", "well-known", "ÉTÉ", "ß", "İstanbul", "東京", "🙂", "x\u0301", "12.5%",
          "—", "«quoted»", "tab\there", "nbsp\u00a0space", "em\u2003space", "line\nbreak", "ǅemal", "", "A", "a"]


def test_words_and_spans_agree_with_the_reference():
    rng = random.Random(3)
    texts = [" ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12))) for _ in range(300)] + [None, ""]
    words = word_hashes(pa.array(texts, pa.string()))
    seen: dict[str, int] = {}
    for d, text in enumerate(texts):
        ref = ref_words(text or "")
        lo, hi = words.bounds[d], words.bounds[d + 1]
        assert normalize(text or "") == ref
        assert hi - lo == len(ref)
        raw = (text or "").encode()
        for w, h, a, b in zip(ref, words.hash[lo:hi], words.start[lo:hi], words.end[lo:hi]):
            assert seen.setdefault(w, int(h)) == int(h), "one word, one hash"
            assert ref_words(raw[a:b].decode()) == [w], "the span is the word as written"
    assert len(set(seen.values())) == len(seen), "different words, different hashes"


def test_grams_never_cross_texts_and_equal_sequences_hash_equal():
    words = word_hashes(pa.array(["a b c", "d e f g", "A, B. c!", "x"]))
    hashes, first = gram_hashes(words, 3)
    assert first.tolist() == [0, 3, 4, 7]
    assert hashes[0] == hashes[3] and len(np.unique(hashes)) == 3


def test_the_compiled_lookup_finds_exactly_the_numpy_grams_in_the_index():
    from curate.decontam.evalsets import EvalItem
    from curate.decontam.index import EvalIndex

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(30)]   # a small vocabulary: many grams repeat across texts
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 40))) for _ in range(200)]
    items = [EvalItem("s", str(i), (t,)) for i, t in enumerate(texts[:60]) if t]
    index = EvalIndex(items, ["s"], 5, 3)
    matches = index.scan(pa.array([str(i) for i in range(len(texts))]), pa.array(texts))
    words = word_hashes(pa.array(texts))
    want = set()
    for k in index.lengths:
        hashes, first = gram_hashes(words, k)
        hit = np.isin(hashes, index.keys)
        doc = words.doc[first[hit]]
        want |= set(zip(doc.tolist(), (first[hit] - words.bounds[doc]).tolist(), [k] * int(hit.sum()), hashes[hit].tolist()))
    got = set(zip(map(int, matches.column("id").to_pylist()), matches.column("pos").to_pylist(), matches.column("k").to_pylist(),
                  matches.column("gram").to_pylist()))
    assert got == want and len(want) > 100 and len(index.lengths) > 1
