"""Language id through `lid_kernel` equals fastText's own `predict` on lid.176, label and probability, text by text."""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.models.ftz import hs_tree, read_model
from curate.models.langid import identify, load_model, model_path
from curate.sample import make_sample

from conftest import SHARED_DATA


def fasttext_identify(texts: list[str | None]) -> tuple[list, np.ndarray]:
    """The definition: fastText's C++ predictor on each text (newlines made spaces) plus the newline that ends a line."""
    predict = load_model().f.predict
    langs, scores = [], []
    for text in texts:
        top = predict((text or "").replace("\n", " ") + "\n", 1, 0.0, "replace")
        langs.append(top[0][1].removeprefix("__label__") if top else None)
        scores.append(top[0][0] if top else np.nan)
    return langs, np.round(np.array(scores, np.float64), 8)


def assert_same_as_fasttext(texts: list[str | None]) -> None:
    langs, scores = identify(pa.array(texts, pa.string()))
    want_langs, want_scores = fasttext_identify(texts)
    got = scores.to_numpy(zero_copy_only=False)
    differ = [i for i, (a, b) in enumerate(zip(langs.to_pylist(), want_langs)) if a != b]
    differ += list(np.flatnonzero(~((got == want_scores) | (np.isnan(got) & np.isnan(want_scores)))))
    assert not differ, [(texts[i][:80] if texts[i] else texts[i], langs[i].as_py(), want_langs[i], got[i], want_scores[i])
                        for i in sorted(set(differ))[:5]]


EDGES = ["", " ", "\n", "\n\n  \t", None, "hello", "Hello world, how are you?", "__label__en", "__label__en hello world",
         "hello __label__fr monde", "a </s> b c d", "</s>", "</s> bonjour", "x" * 5000, "日本語のテキストです。", "Ça va? Très bien!\r\n\tNo.",
         "nul\x00separated\x00words", "\v\f vertical tab and form feed", "emoji 😀😀 text 🎉", "ÄÖÜ äöü ß " * 50,
         "Привет, как дела? Всё хорошо.", "مرحبا بالعالم", "שלום עולם", "こんにちは 世界", "안녕하세요 세계", "12345 67890 !!! ???"]


def test_edge_cases_equal_fasttext():
    assert_same_as_fasttext(EDGES)


def test_random_texts_from_many_scripts_equal_fasttext():
    rng = random.Random(7)
    pool = (list("abcdefghijklmnopqrstuvwxyz ABCDEFG .,;:!?'\"-()") + list("éèêàçñüößøåæœ") + list("абвгдежзийклмнопрст")
            + list("αβγδεζηθ") + list("的一是不了人我在有他这") + list("あいうえおかきくけこ") + list("ابتثجحخدذ") + ["😀", "🎉", "\u200b"]
            + [" ", " ", " ", "\n", "\t", "\r", "\x00", "\x0b", "\x0c"] + ["__label__", "</s>", "<", ">"])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 400))) for _ in range(400)]
    assert_same_as_fasttext(texts)


def test_rows_split_over_threads_give_the_same_results_in_order():
    """A task that may use several cores (inline) splits the rows over threads; each row keeps its own result."""
    rng = random.Random(11)
    texts = EDGES + ["".join(rng.choice("abcdefgh éàü абвг 的一是 ") for _ in range(rng.randint(0, 300))) for _ in range(97)]
    one = identify(pa.array(texts, pa.string()))
    for threads in (2, 3, len(texts) + 5):
        langs, scores = identify(pa.array(texts, pa.string()), threads=threads)
        assert langs.equals(one[0])
        assert np.array_equal(scores.to_numpy(zero_copy_only=False), one[1].to_numpy(zero_copy_only=False), equal_nan=True)


def test_the_sample_corpus_equals_fasttext(tmp_path):
    make_sample(tmp_path, docs=3000, seed=3)  # its pages in many languages, boilerplate, spam, near-duplicates
    texts = [t for p in sorted(tmp_path.glob("*/data/**/*.parquet")) for t in pq.read_table(p, columns=["text"])["text"].to_pylist()]
    assert len(texts) > 1000
    assert_same_as_fasttext(texts)


def test_real_common_crawl_pages_equal_fasttext():
    files = sorted((SHARED_DATA / "dolma" / "formats").glob("*.jsonl.gz"))
    if not files:
        pytest.skip("../shared/data (real web pages) is not on this machine")
    texts = [json.loads(line)["text"] for path in files for line in gzip.open(path, "rt", encoding="utf-8")]
    assert_same_as_fasttext(texts)


def test_the_model_file_is_read_whole_and_its_tree_is_fastTexts():
    m = read_model(model_path())
    ft = load_model()
    assert [w.decode() for w in m.words] == ft.words and m.labels == ft.labels
    assert m.codes.shape == (m.nwords + int((m.prune >= 0).sum()), m.nsubq) and m.output.shape == (len(m.labels), m.dim)
    left, right = hs_tree(m.label_counts)
    osz = len(m.labels)
    assert (left[:osz] == -1).all() and (left[osz:] >= 0).all()
    # every label is a leaf reached from the root exactly once
    seen, stack = [], [2 * osz - 2]
    while stack:
        node = stack.pop()
        if left[node] == -1:
            seen.append(node)
        else:
            stack += [left[node], right[node]]
    assert sorted(seen) == list(range(osz))
