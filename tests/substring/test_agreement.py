"""Substring dedup agrees with an exact suffix array: on random corpora with planted repeats (across sources, within a
document, overlapping, at the edges, multi-byte words), the words cut are exactly those the keep-the-first policy
cuts from the suffix array's repeated windows."""

import random

import numpy as np
import pytest

from curate.rundir.edits import apply_spans
from curate.substring import gram_and_window, kernels
from curate.io.strings import string_spans
import pyarrow as pa

from substring.reference import cut_words, expected_cuts, lcp_array, repeated_windows, split_words, suffix_array

VOCAB = ["the", "a", "of", "and", "cookie", "policy", "é", "naïve", "日本語", "x🙂y", "Ωmega", "to", "in", "it", "was",
         "data", "ß", "über", "z", "q"]
SPACES = [" ", " ", " ", "\n", "  ", "\t", "\u3000", "\u00a0", " \n "]


def make_corpus(seed: int, n: int = 30) -> list[str]:
    rng = random.Random(seed)
    docs = [[rng.choice(VOCAB) for _ in range(rng.randint(0, 40))] for _ in range(n)]
    for _ in range(n):   # plant copies of spans: across documents, within one, at either edge
        src = rng.choice(docs)
        if len(src) < 4:
            continue
        a = rng.randrange(len(src) - 3)
        span = src[a:a + rng.randint(3, 25)]
        dst = rng.choice(docs)
        at = rng.choice([0, len(dst), rng.randint(0, len(dst))])
        dst[at:at] = span
    period = [rng.choice(VOCAB) for _ in range(3)]
    docs.append(period * 12)   # overlapping copies of itself
    return [(rng.choice(["", " "]) + "".join(w + rng.choice(SPACES) for w in d)).rstrip(rng.choice(["", " "])) if d else ""
            for d in docs]


def test_the_suffix_array_is_exact():
    seq = np.array([3, 1, 3, 1, 3, 2, 0, 3, 1, 3], np.int64)
    sa = suffix_array(seq)
    assert [tuple(seq[i:]) for i in sa] == sorted(tuple(seq[i:]) for i in range(len(seq)))
    lcp = lcp_array(seq, sa)
    for r in range(1, len(seq)):
        a, b = seq[sa[r - 1]:], seq[sa[r]:]
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        assert lcp[r] == n


def test_words_match_python():
    texts = ["  naïve\u3000日本語 x🙂y\n\n", "", "a\x1cb\u2028c", "one"]
    data, starts, ends, _ = string_spans(pa.array(texts), "test")
    offsets, cstart, cend, _, _, chars = kernels.words(data, starts, ends)
    for d, t in enumerate(texts):
        got = list(zip(cstart[offsets[d]:offsets[d + 1]], cend[offsets[d]:offsets[d + 1]]))
        assert got == [(s, e) for s, e, _ in split_words(t)]
        assert chars[d] == len(t)


@pytest.mark.parametrize("length", [5, 8])
def test_fingerprints_keep_one_of_every_repeated_window(length):
    """Winnowing's guarantee, checked against the suffix array: every repeated window holds a fingerprint that
    occurs in every copy."""
    docs = make_corpus(3)
    k, w = gram_and_window(length)
    data, starts, ends, _ = string_spans(pa.array(docs), "test")
    offsets, _, _, ha, _, _ = kernels.words(data, starts, ends)
    doc, pos, h = kernels.fingerprints(offsets, ha, k, w)
    at = {}
    for d, p, x in zip(doc, pos, h):
        at.setdefault((int(d), int(p)), int(x))
    for copies in repeated_windows(docs, length).values():
        shared = None
        for d, i in copies:
            found = {x for (dd, p), x in at.items() if dd == d and i <= p <= i + w - 1}
            shared = found if shared is None else shared & found
        assert shared, copies


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cuts_match_the_suffix_array(run_stage, seed):
    docs = make_corpus(seed)
    web, books = docs[: len(docs) // 2], docs[len(docs) // 2:]
    length = 6
    done = run_stage("substring_dedup", {"min_words": length, "min_words_left": 0, "partitions": 3},
                     docs={"web": web, "books": books}, shard_rows=7)
    ids = [f"web-{i}" for i in range(len(web))] + [f"books-{i}" for i in range(len(books))]
    expect = expected_cuts(docs, list(range(len(docs))), length)   # web first (priority), then shard and row
    edits = done.table("edits", "substring_dedup").to_pylist()
    spans = {}
    for e in edits:
        spans.setdefault(e["id"], []).append((e["start"], e["end"]))
    got = {d: cut_words(docs[d], spans[i]) for d, i in enumerate(ids) if i in spans}
    assert got == expect
    assert sum(len(v) for v in expect.values()) > 50, "the corpus must hold repeats to cut"
    for d, i in enumerate(ids):   # the edited text is the text without the cut words, whitespace aside
        text = apply_spans(docs[d], [(s, e, "") for s, e in spans.get(i, [])])
        assert text.split() == [w for j, (_, _, w) in enumerate(split_words(docs[d])) if j not in expect.get(d, set())]


def _dolma_pages() -> list[str]:
    import gzip
    import json
    import os
    from pathlib import Path

    from conftest import SHARED_DATA

    root = Path(os.environ.get("CURATE_SHARED_DATA") or SHARED_DATA) / "dolma" / "formats"
    texts = []
    for path in sorted(root.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    return [t for t in texts if t.strip()]


def test_real_pages_agree_with_the_suffix_array(run_stage):
    pages = _dolma_pages()[:300]
    if not pages:
        pytest.skip("../shared/data/dolma is absent")
    done = run_stage("substring_dedup", {"min_words": 50, "min_words_left": 0}, docs={"cc": pages}, shard_rows=100)
    spans = {}
    for e in done.table("edits", "substring_dedup").to_pylist():
        spans.setdefault(e["id"], []).append((e["start"], e["end"]))
    expect = expected_cuts(pages, list(range(len(pages))), 50)
    assert expect, "the pages hold repeated boilerplate"
    assert {d: cut_words(pages[d], spans[f"cc-{d}"]) for d in range(len(pages)) if f"cc-{d}" in spans} == expect


def thue_morse(n: int) -> list[int]:
    return [bin(i).count("1") % 2 for i in range(n)]


def test_thue_morse_windows_that_differ_get_different_keys():
    """A polynomial hash modulo 2^64 gives a Thue-Morse sequence of two words and its complement the same value for
    every odd base once they are 1024 words long; the second half of the key is modulo a prime, so they differ."""
    length = 1024
    docs = [" ".join(("red", "blue")[t] for t in thue_morse(length)), " ".join(("blue", "red")[t] for t in thue_morse(length))]
    data, starts, ends, _ = string_spans(pa.array(docs), "test")
    offsets, _, _, ha, hb, _ = kernels.words(data, starts, ends)
    _, _, a, b = kernels.windows(offsets, ha, hb, np.array([0, 1]), np.array([length - 1, length - 1]), length, length)
    assert len(a) == 2 and (a[0], b[0]) != (a[1], b[1])
    docs[1] = docs[0]
    data, starts, ends, _ = string_spans(pa.array(docs), "test")
    offsets, _, _, ha, hb, _ = kernels.words(data, starts, ends)
    _, _, a, b = kernels.windows(offsets, ha, hb, np.array([0, 1]), np.array([length - 1, length - 1]), length, length)
    assert (a[0], b[0]) == (a[1], b[1])

