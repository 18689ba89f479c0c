"""check_model / load_model errors: one line naming the model, its kind and path, and the cause."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from curate.errors import CurateError
from curate.models import load as load_mod
from curate.models.load import check_model, load_model
from curate.models.spec import ModelLoadError, ModelSpec


def error_of(spec: ModelSpec, fn=check_model) -> str:
    with pytest.raises(ModelLoadError) as info:
        fn(spec)
    message = str(info.value)
    assert isinstance(info.value, CurateError)
    assert "\n" not in message
    assert message.startswith(f"model '{spec.name}' (kind {spec.kind}, path {spec.path}) cannot be loaded: ")
    return message


@pytest.mark.parametrize("kind", ["fasttext", "hf", "nemo_quality"])
def test_missing_path(tmp_path, kind):
    spec = ModelSpec("quality", kind, str(tmp_path / "nowhere" / "model.bin"))
    assert "no such file" in error_of(spec)
    assert "no such file" in error_of(spec, load_model)


def test_unknown_kind_and_bad_options(tmp_path):
    assert "unknown kind 'sklearn'; expected one of fasttext, hf, nemo_quality" in \
        error_of(ModelSpec("q", "sklearn", str(tmp_path)))
    assert "windows" in error_of(ModelSpec("q", "hf", str(tmp_path), windows="mean"))
    assert "max_tokens" in error_of(ModelSpec("q", "hf", str(tmp_path), max_tokens=0))
    assert "dtype" in error_of(ModelSpec("q", "hf", str(tmp_path), dtype="int3"))
    assert "column prefix" in error_of(ModelSpec("bad name", "hf", str(tmp_path)))
    assert "fastText reads the whole text" in error_of(ModelSpec("q", "fasttext", str(tmp_path), windows="max"))


def test_broken_hf_config(tmp_path):
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text("{ not json")
    message = error_of(ModelSpec("edu", "hf", str(tmp_path)))
    assert "config" in message.lower() or "json" in message.lower()


def test_hf_folder_without_weights(tmp_path):
    transformers = pytest.importorskip("transformers")
    transformers.BertConfig(num_labels=1).save_pretrained(tmp_path)
    assert "no weights file" in error_of(ModelSpec("edu", "hf", str(tmp_path)))


def test_hf_label_must_exist(tmp_path):
    transformers = pytest.importorskip("transformers")
    transformers.BertConfig(num_labels=2, id2label={0: "bad", 1: "good"}).save_pretrained(tmp_path)
    message = error_of(ModelSpec("q", "hf", str(tmp_path), label="great"))
    assert "label 'great' is not one of the model's labels: bad, good" in message
    transformers.BertConfig(num_labels=1).save_pretrained(tmp_path)
    assert "regression" in error_of(ModelSpec("q", "hf", str(tmp_path), label="good"))


def test_broken_nemo_config(tmp_path):
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text(json.dumps({"fc_dropout": 0.2, "max_len": 1024}))
    assert "config.json lacks base_model, id2label" in error_of(ModelSpec("zq", "nemo_quality", str(tmp_path)))
    (tmp_path / "config.json").write_text("[1, 2")
    assert "not valid JSON" in error_of(ModelSpec("zq", "nemo_quality", str(tmp_path)))


def test_not_a_fasttext_file(tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"\x00" * 200)
    assert "not a fastText model (bad magic number)" in error_of(ModelSpec("q", "fasttext", str(bad)))
    assert "not a fastText model" in error_of(ModelSpec("q", "fasttext", str(bad)), load_model)
    assert "directory" in error_of(ModelSpec("q", "fasttext", str(tmp_path)))


def test_fasttext_label_must_exist():
    from curate.models import langid

    try:
        path = langid.model_path()
    except CurateError:
        pytest.skip("lid.176.ftz is missing from the package")
    assert "label 'klingon' is not one of the model's labels: en, ru, de" in \
        error_of(ModelSpec("lid", "fasttext", path, label="klingon"))
    check_model(ModelSpec("lid", "fasttext", path, label="__label__de"))


def test_missing_torch_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(load_mod, "_installed", lambda module: module not in ("torch", "transformers"))
    message = error_of(ModelSpec("edu", "hf", str(tmp_path)))
    assert message.endswith("torch and transformers not installed; kind hf needs them: pip install 'curate[models]'")
    assert "pip install 'curate[models]'" in error_of(ModelSpec("zq", "nemo_quality", str(tmp_path)), load_model)


def test_error_crosses_processes_intact():
    err = ModelLoadError("q", "hf", "/m", "first line\nsecond line\n\nthird line")
    assert str(err) == "model 'q' (kind hf, path /m) cannot be loaded: first line; second line"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ModelLoadError and str(again) == str(err)


def test_importing_the_library_does_not_import_torch():
    code = ("import sys, curate.models, curate.models.load, curate.models.spec, curate.models.train, "
            "curate.models.batching, curate.models.output, curate.models.fasttext_model, curate.models.tokens; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
