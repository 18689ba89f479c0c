"""train_fasttext: a DCLM-style quality classifier on the sample corpus's good and junk pages."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("fasttext")

from curate.models.load import load_model  # noqa: E402
from curate.models.spec import ModelSpec  # noqa: E402
from curate.models.train import evaluate, train_fasttext  # noqa: E402
from curate.sample import text as T  # noqa: E402

SMALL = {"dim": 16, "bucket": 20000, "epoch": 10, "lr": 0.5}


@pytest.fixture(scope="module")
def pages():
    """Good English articles and every kind of junk page the sample corpus plants."""
    rng = random.Random(0)
    good = [T.english_article(rng) for _ in range(200)]
    junk = [T.junk_page(rng, T.JUNK_KINDS[i % len(T.JUNK_KINDS)])[0] for i in range(200)]
    return good, junk


def test_card_metrics_and_determinism(tmp_path, pages):
    good, junk = pages
    inputs = {"positive": "curate.sample english_article, seed 0", "negative": "curate.sample junk pages"}
    card = train_fasttext(good + [None, "  \n "], junk, tmp_path / "a" / "quality.bin", inputs=inputs, **SMALL)
    again = train_fasttext(good, junk, tmp_path / "b" / "quality.bin", inputs=inputs, **SMALL)
    assert card["sha256"] == again["sha256"], "threads=1 and a seed: the same model bytes"
    on_disk = json.loads((tmp_path / "a" / "quality.json").read_text())
    assert on_disk == card and card["inputs"] == inputs and card["model"] == "quality.bin"
    assert card["counts"]["positive"] == {"given": 202, "used": 200, "train": 180, "holdout": 20}
    assert card["counts"]["negative"] == {"given": 200, "used": 200, "train": 180, "holdout": 20}
    assert card["parameters"]["deterministic"] and card["parameters"]["word_ngrams"] == 2
    m = card["metrics"]
    assert m["docs"] == 40 and m["positive"] == 20
    assert m["auc"] >= 0.95 and m["f1"] >= 0.9 and m["precision"] >= 0.9 and m["recall"] >= 0.9
    kept = [row["kept_share"] for row in card["thresholds"]]
    assert [row["threshold"] for row in card["thresholds"]] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert kept == sorted(kept, reverse=True) and kept[4] == pytest.approx(0.5, abs=0.05)
    assert not list((tmp_path / "a").glob(".*")), "no work files left behind"
    # the model serves as a `fasttext` ModelSpec, scoring P(hq)
    scored = load_model(ModelSpec("dclm", "fasttext", str(tmp_path / "a" / "quality.bin"), label="hq"))
    scores = scored.score(__import__("pyarrow").array(good[:20] + junk[:20]))["dclm_score"].to_pylist()
    assert sum(s > 0.5 for s in scores[:20]) >= 18 and sum(s < 0.5 for s in scores[20:]) >= 18


def test_nan_guard_is_reported(tmp_path, pages):
    good, junk = pages
    with pytest.raises(RuntimeError, match="NaN guard in 2 fresh attempts; the learning rate"):
        train_fasttext(good[:50], junk[:50], tmp_path / "q.bin", dim=16, bucket=2000, lr=1e4, nan_retries=1)
    assert not (tmp_path / "q.json").exists()


def test_evaluate_known_values():
    metrics, table = evaluate([0.9, 0.8, 0.4, 0.7, 0.2, 0.1], [1, 1, 1, 0, 0, 0], thresholds=(0.5, 0.85))
    assert metrics["precision"] == pytest.approx(2 / 3) and metrics["recall"] == pytest.approx(2 / 3)
    assert metrics["auc"] == pytest.approx(8 / 9) and metrics["accuracy"] == pytest.approx(4 / 6)
    assert table[1] == {"threshold": 0.85, "precision": 1.0, "recall": pytest.approx(1 / 3),
                        "kept_share": pytest.approx(1 / 6)}
    assert evaluate([0.5, 0.5], [1, 0])[0]["auc"] == 0.5, "ties count half"


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="at least 2 non-empty documents per class"):
        train_fasttext(["good page"], ["junk", "more junk"], tmp_path / "q.bin")
    with pytest.raises(ValueError, match="card is written beside it"):
        train_fasttext(["a b", "c d"], ["e f", "g h"], tmp_path / "q.json")


def test_named_labels(tmp_path, pages):
    good, junk = pages
    card = train_fasttext(good[:60], junk[:60], tmp_path / "standin.bin", labels=("High", "Low"), **SMALL)
    assert card["labels"] == {"positive": "High", "negative": "Low"}
    model = load_model(ModelSpec("q", "fasttext", str(tmp_path / "standin.bin"), label="High"))
    assert model.labels == ["High", "Low"] or model.labels == ["Low", "High"]
    with pytest.raises(ValueError, match="two different words"):
        train_fasttext(good, junk, tmp_path / "x.bin", labels=("high quality", "low"))
