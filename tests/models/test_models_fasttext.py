"""Kind `fasttext`: curate's batch scoring equals fastText's own per-line predict, exactly."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

fasttext = pytest.importorskip("fasttext")

from curate.models.fasttext_model import read_header  # noqa: E402
from curate.models.load import Model, check_model, load_model  # noqa: E402
from curate.models.spec import ModelSpec  # noqa: E402
from curate.models.train import train_fasttext  # noqa: E402
from curate.sample import text as T  # noqa: E402


@pytest.fixture(scope="module")
def quality_model(tmp_path_factory):
    rng = random.Random(0)
    good = [T.english_article(rng) for _ in range(150)]
    junk = [T.junk_page(rng)[0] for _ in range(150)]
    path = tmp_path_factory.mktemp("ft") / "quality.bin"
    train_fasttext(good, junk, path, dim=16, bucket=20000, epoch=10, lr=0.5)
    return path


@pytest.fixture(scope="module")
def texts():
    rng = random.Random(9)
    out = [T.english_article(rng, 40, 200) if i % 3 else T.junk_page(rng)[0] for i in range(60)]
    out += ["", None, "Ünïcödé café 漢字 😀\nsecond line", "one\n\ntwo\nthree"]
    return out


def per_line(model, text, k=1):
    """fastText's own single-line predict (the C++ call under `predict`, which numpy 2 breaks)."""
    return model.f.predict(text.replace("\n", " ") + "\n", k, 0.0, "replace")


def test_top_label_and_probability_equal_fasttext_predict(quality_model, texts):
    spec = ModelSpec("dclm", "fasttext", str(quality_model))
    check_model(spec)
    model = load_model(spec, threads=4)
    assert isinstance(model, Model) and model.device == "cpu"
    table = model.score(pa.array(texts))
    assert table.schema == model.output_schema()
    assert table.column_names == ["dclm_score", "dclm_label"]
    ft = fasttext.load_model(str(quality_model))
    for text, row in zip(texts, table.to_pylist()):
        if text is None:
            assert row == {"dclm_score": None, "dclm_label": None}
            continue
        prob, label = per_line(ft, text)[0]
        assert row["dclm_score"] == prob, "exactly fastText's probability"
        assert row["dclm_label"] == label.removeprefix("__label__")
    labels = table["dclm_label"].to_pylist()
    assert labels[:30].count("hq") > 10 and labels[:30].count("cc") > 5, "a trained model tells them apart"


def test_named_label_probability(quality_model, texts):
    ft = fasttext.load_model(str(quality_model))
    hq = load_model(ModelSpec("q", "fasttext", str(quality_model), label="hq")).score(pa.array(texts))
    same = load_model(ModelSpec("q", "fasttext", str(quality_model), label="__label__hq")).score(pa.array(texts))
    cc = load_model(ModelSpec("q", "fasttext", str(quality_model), label="cc")).score(pa.array(texts))
    assert hq.equals(same)
    for text, p_hq, p_cc in zip(texts, hq["q_score"].to_pylist(), cc["q_score"].to_pylist()):
        if text is None:
            assert p_hq is None and p_cc is None
            continue
        want = {lb: p for p, lb in per_line(ft, text, 2)}
        assert p_hq == want["__label__hq"] and p_cc == want["__label__cc"]
        assert p_hq + p_cc == pytest.approx(1.0, abs=1e-4)  # fastText adds 1e-5 inside its log
    assert hq["q_label"].equals(cc["q_label"]), "the label column stays the top label"


def test_max_chars_and_chunked_input(quality_model, texts):
    ft = fasttext.load_model(str(quality_model))
    chunked = pa.chunked_array([pa.array(texts[:20], pa.large_string()), pa.array(texts[20:], pa.large_string())])
    table = load_model(ModelSpec("q", "fasttext", str(quality_model), max_chars=40)).score(chunked)
    for text, score in zip(texts, table["q_score"].to_pylist()):
        if text is not None:
            assert score == per_line(ft, text[:40])[0][0]
    full = load_model(ModelSpec("q", "fasttext", str(quality_model))).score(pa.array(texts))
    assert sum(a != b for a, b in zip(table["q_score"].to_pylist(), full["q_score"].to_pylist())) > 20


def test_header_reader_matches_the_model(quality_model):
    header = read_header(quality_model)
    ft = fasttext.load_model(str(quality_model))
    assert header["labels"] == list(ft.get_labels())
    assert header["model"] == 3 and header["dim"] == 16 and header["word_ngrams"] == 2
    assert header["nwords"] == len(ft.get_words())


def test_language_id_model_from_the_wheel():
    """A real fastText model (lid.176.ftz, quantized): same answers as the signals stage's langid."""
    from curate.errors import CurateError
    from curate.models import langid

    try:
        path = langid.model_path()
    except CurateError:
        pytest.skip("lid.176.ftz is missing from the package")
    rng = random.Random(2)
    texts = [T.english_article(rng, 30, 60), T.foreign_page(rng, "de"), T.foreign_page(rng, "zh"),
             T.foreign_page(rng, "ru"), "", None]
    spec = ModelSpec("lid", "fasttext", path)
    check_model(spec)
    table = load_model(spec).score(pa.array(texts))
    lang, score = langid.identify(pa.array(texts))
    valid = [t is not None for t in texts]
    assert [x for x, v in zip(table["lid_label"].to_pylist(), valid) if v] == \
        [x for x, v in zip(lang.to_pylist(), valid) if v]
    assert table["lid_label"].to_pylist()[:4] == ["en", "de", "zh", "ru"]
    np.testing.assert_allclose([x for x, v in zip(table["lid_score"].to_pylist(), valid) if v],
                               [x for x, v in zip(score.to_pylist(), valid) if v], atol=1e-8)
    assert len(read_header(path)["labels"]) == 176
