"""Loading a model named by a `ModelSpec`, and checking one cheaply before any task starts.

Importing this module imports neither torch nor transformers: they are imported by the loaders of
the transformer kinds only, so fastText-only pipelines and the driver stay light.

A stage uses it as: the driver calls `check_model(spec)` once (fails fast, one-line error); each actor
calls `load_model(spec, device, threads)` once and then `model.score(batch.column("text"))` per Arrow
batch, joining the returned columns (one row per input row, in input order) onto the batch.
"""

from __future__ import annotations

import importlib.util
from typing import Protocol, runtime_checkable

import pyarrow as pa

from curate.models.spec import ModelLoadError, ModelSpec, validate_spec

TORCH_KINDS = ("hf", "nemo_quality")


@runtime_checkable
class Model(Protocol):
    """A loaded model: `score` returns one row per input text, in input order (nulls for null text)."""

    spec: ModelSpec
    device: str

    def output_schema(self) -> pa.Schema: ...

    def score(self, texts: pa.Array) -> pa.Table: ...


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _needs_torch(spec: ModelSpec) -> None:
    missing = [m for m in ("torch", "transformers") if not _installed(m)]
    if missing:
        raise ModelLoadError.of(spec, f"{' and '.join(missing)} not installed; kind {spec.kind} needs "
                                      f"them: pip install 'curate[models]'")


def check_model(spec: ModelSpec) -> list[str]:
    """Cheap checks (path, config, labels, tokenizer; fastText: the file header); no weights loaded.
    Returns the model's labels (one for a regression head); raises ModelLoadError with a one-line message."""
    validate_spec(spec)
    if spec.kind in TORCH_KINDS:
        _needs_torch(spec)
    try:
        if spec.kind == "fasttext":
            from curate.models.fasttext_model import check_fasttext

            return check_fasttext(spec)
        if spec.kind == "hf":
            from curate.models.hf import check_hf

            return check_hf(spec)
        from curate.models.nemo import check_nemo

        return check_nemo(spec)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - every cause becomes the one-line error a user reads
        raise ModelLoadError.of(spec, exc) from exc


def load_model(spec: ModelSpec, device: str = "auto", threads: int | None = None) -> Model:
    """Load once per worker. device: "auto" (CUDA when torch sees one), "cpu", "cuda", "cuda:N";
    threads: torch's intra-op threads on CPU (fastText always predicts on one thread)."""
    validate_spec(spec)
    try:
        if spec.kind == "fasttext":
            from curate.models.classifiers import load_fasttext
            from curate.models.fasttext_model import FastTextModel, check_fasttext

            check_fasttext(spec)
            return FastTextModel(spec, load_fasttext(str(spec.path)))
        _needs_torch(spec)
        import torch

        from curate.models.encoder import resolve_device

        device = resolve_device(device)
        if threads and device == "cpu":
            torch.set_num_threads(int(threads))
        if spec.kind == "hf":
            from curate.models.hf import load_hf

            return load_hf(spec, device)
        from curate.models.nemo import load_nemo

        return load_nemo(spec, device)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - every cause becomes the one-line error a user reads
        raise ModelLoadError.of(spec, exc) from exc
