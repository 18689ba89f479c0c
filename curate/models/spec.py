"""What a user names to score documents with a model, and the one error a bad model reports.

A `ModelSpec` is plain data (no torch), so a stage can carry it from the driver to its workers and a
config loader can build it from YAML; `check_model` and `load_model` (curate/models/load.py) read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from curate.errors import CurateError

KINDS = ("fasttext", "hf", "nemo_quality")
BATCH_TOKENS = {"cuda": 65536, "cpu": 2048}  # default token budget per batch, by device type
WINDOWS = ("truncate", "max")
DTYPES = ("auto", "float32", "bfloat16", "float16")
_DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


@dataclass(frozen=True)
class ModelSpec:
    """One model and how to run it; `name` prefixes its output columns (`NAME_score`, ...).

    - kind: "fasttext" (a supervised `.bin`/`.ftz`), "hf" (an `AutoModelForSequenceClassification`
      folder or Hub name), "nemo_quality" (NeMo Curator's encoder + linear head layout).
    - path: a local file/folder or a Hugging Face Hub name (the local HF cache and HF_HUB_OFFLINE=1
      are honoured by transformers itself).
    - label: score = probability of this label instead of the top label (fastText: without
      `__label__`; hf/nemo: an `id2label` name).
    - max_chars: cut each text to this many characters (code points) before tokenizing.
    - max_tokens: tokens per sequence, special tokens included (default: the model's own limit).
    - windows: "truncate" scores the first max_tokens; "max" scores overlapping windows over the whole
      text (stride half a window) and keeps the highest-scoring window.
    - batch_tokens: padded-token budget per inference batch (rows x longest row); default 65,536 on
      CUDA and 2,048 on CPU, where big batches gain nothing at 512 tokens and lose to padding
      (measured with bench/bench_classify.py: 1.3x over one document at a time at 128 tokens).
    - dtype: "auto" = bf16 autocast on CUDA (fp16 where bf16 is unsupported), fp32 on CPU; or force
      "float32", "bfloat16", "float16" (autocast precision, weights stay fp32).
    """

    name: str
    kind: str
    path: str
    label: str | None = None
    max_chars: int | None = None
    max_tokens: int | None = None
    windows: str = "truncate"
    batch_tokens: int | None = None
    dtype: str = "auto"


class ModelLoadError(CurateError):
    """A model cannot be checked or loaded; the message is one line naming the model and its path."""

    exit_code = 2

    def __init__(self, name: str, kind: str, path: str, cause: str):
        self.name, self.kind, self.path = name, kind, path
        self.cause = one_line(cause)
        super().__init__(f"model '{name}' (kind {kind}, path {path}) cannot be loaded: {self.cause}")

    @classmethod
    def of(cls, spec: ModelSpec, cause) -> ModelLoadError:
        return cls(spec.name, spec.kind, spec.path, cause if isinstance(cause, str) else describe(cause))

    def __reduce__(self):  # picklable, so it crosses from a Ray worker to the driver intact
        return (type(self), (self.name, self.kind, self.path, self.cause))


def one_line(text: str, limit: int = 400) -> str:
    """Library errors (transformers, OSError) span many lines; a user reads the first real one."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = "; ".join(lines[:2]) if lines else "unknown error"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def sanitize_label(label) -> str:
    """A label as a column-name part: lowercase, anything outside [a-z0-9_] becomes `_`."""
    return re.sub(r"[^a-z0-9_]", "_", str(label).lower())


def normalize_dtype(dtype: str) -> str:
    d = str(dtype).lower()
    return _DTYPE_ALIASES.get(d, d)


def validate_spec(spec: ModelSpec) -> None:
    """Problems visible without touching the model files; raises ModelLoadError."""
    def bad(cause):
        raise ModelLoadError(str(spec.name), str(spec.kind), str(spec.path), cause)

    if not isinstance(spec.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", spec.name):
        bad(f"name must be a column prefix of letters, digits and '_', got {spec.name!r}")
    if spec.kind not in KINDS:
        bad(f"unknown kind {spec.kind!r}; expected one of {', '.join(KINDS)}")
    if not isinstance(spec.path, str) or not spec.path:
        bad("path is empty")
    if spec.windows not in WINDOWS:
        bad(f"unknown windows {spec.windows!r}; expected one of {', '.join(WINDOWS)}")
    for key in ("max_chars", "max_tokens"):
        value = getattr(spec, key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            bad(f"{key} must be a positive integer, got {value!r}")
    bt = spec.batch_tokens
    if bt is not None and (not isinstance(bt, int) or isinstance(bt, bool) or bt < 1):
        bad(f"batch_tokens must be a positive integer, got {bt!r}")
    if normalize_dtype(spec.dtype) not in DTYPES:
        bad(f"unknown dtype {spec.dtype!r}; expected one of {', '.join(DTYPES)}")
    if spec.kind == "fasttext" and spec.windows != "truncate":
        bad("windows: max needs a tokenizer model (hf or nemo_quality); fastText reads the whole text")
    if spec.label is not None and (not isinstance(spec.label, str) or not spec.label):
        bad(f"label must be a non-empty string, got {spec.label!r}")
