"""Kind `hf`: any Hugging Face `AutoModelForSequenceClassification` checkpoint.

One logit is a regression head (score = the logit, plus FineWeb-Edu's int_score); several logits are
softmax classes named by the config's `id2label`. Multi-label (sigmoid) heads and multi-output
regression are refused rather than scored with the wrong function. The weights are loaded in fp32
(transformers 5 would otherwise keep the checkpoint's dtype); CUDA runs use autocast instead.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from curate.models.output import Outputs
from curate.models.spec import ModelSpec

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
ROBERTA_LIKE = {"roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart", "ibert",
                "data2vec-text", "luke", "mpnet", "xlm-roberta-xl", "roberta-prelayernorm"}


def locate(path: str) -> Path | None:
    """The local folder or file, or None for a Hub name; a local-looking path that is absent raises."""
    p = Path(path).expanduser()
    if p.exists():
        return p
    if path.startswith(("/", ".", "~")) or "\\" in path or not _HUB_NAME.fullmatch(path):
        raise FileNotFoundError(f"no such file or directory: {path}")
    return None


@contextlib.contextmanager
def quiet():
    """No progress bars or load-time warnings from transformers in workers' logs."""
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def position_limit(config) -> int | None:
    """The longest input an absolute-position model takes (RoBERTa-like models spend two of their
    positions on the padding offset); None for relative positions (DeBERTa-v2/v3)."""
    mpe = getattr(config, "max_position_embeddings", None)
    if not isinstance(mpe, int) or mpe <= 0 or getattr(config, "position_biased_input", True) is False:
        return None
    return mpe - 2 if getattr(config, "model_type", "") in ROBERTA_LIKE else mpe


def default_max_tokens(config, tokenizer, explicit: int | None = None) -> int:
    """spec.max_tokens (refused past the model's positions), else the smaller of the tokenizer's
    model_max_length (when set) and the model's positions, else 512."""
    limit = position_limit(config)
    if explicit:
        if limit is not None and explicit > limit:
            raise ValueError(f"max_tokens {explicit} is more than the model's {limit} positions; "
                             f"use windows: max to score longer texts")
        return explicit
    limits = [limit] if limit is not None else []
    tml = getattr(tokenizer, "model_max_length", None)
    if isinstance(tml, int) and 0 < tml < 1_000_000:
        limits.append(tml)
    return min(limits) if limits else 512


def labels_of(config) -> list[str]:
    id2label = {int(k): str(v) for k, v in (getattr(config, "id2label", None) or {}).items()}
    n = int(getattr(config, "num_labels", len(id2label)) or len(id2label))
    return [id2label.get(i, f"LABEL_{i}") for i in range(n)]


def head_of(spec: ModelSpec, config) -> Outputs:
    labels = labels_of(config)
    problem = getattr(config, "problem_type", None)
    if problem == "multi_label_classification":
        raise ValueError("multi-label (sigmoid) heads are not supported; softmax classes or one "
                         "regression logit are")
    regression = len(labels) == 1
    if problem == "regression" and not regression:
        raise ValueError(f"multi-output regression ({len(labels)} outputs) is not supported")
    label = spec.label
    if label is not None:
        if regression:
            raise ValueError(f"label {label!r} given, but the model is a one-logit regression")
        if label not in labels:
            folded = [lb for lb in labels if lb.lower() == label.lower()]
            if len(folded) != 1:
                raise ValueError(f"label {label!r} is not one of the model's labels: {', '.join(labels)}")
            label = folded[0]
    return Outputs(spec.name, labels=None if regression else labels, regression=regression,
                   probs=not regression, label=label)


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    with quiet():
        return AutoTokenizer.from_pretrained(path)


def check_hf(spec: ModelSpec) -> list[str]:
    """Config, labels, tokenizer and (for local folders) a weights file, without loading weights."""
    from transformers import AutoConfig

    local = locate(spec.path)
    if local is not None and not local.is_dir():
        raise ValueError("expected a checkpoint folder (config.json, weights, tokenizer files)")
    with quiet():
        config = AutoConfig.from_pretrained(spec.path)
    head_of(spec, config)
    if local is not None and not any((local / f).is_file() for f in WEIGHT_FILES):
        raise FileNotFoundError(f"no weights file ({', '.join(WEIGHT_FILES)}) in {local}")
    tokenizer = load_tokenizer(spec.path)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"needs a fast (Rust) tokenizer, got {type(tokenizer).__name__}")
    return labels_of(config)


def load_hf(spec: ModelSpec, device: str):
    import torch
    from transformers import AutoModelForSequenceClassification

    from curate.models.encoder import EncoderModel

    locate(spec.path)
    with quiet():
        model, info = AutoModelForSequenceClassification.from_pretrained(
            spec.path, dtype=torch.float32, output_loading_info=True)
    missing = [k for k in info.get("missing_keys", []) if not k.endswith("position_ids")]
    if missing:
        raise ValueError(f"the checkpoint lacks {len(missing)} weights of the classifier "
                         f"(e.g. {missing[0]}): is it a base model without a classification head?")
    model.to(device).eval()
    tokenizer = load_tokenizer(spec.path)
    outputs = head_of(spec, model.config)
    pad = model.config.pad_token_id
    pad = pad if pad is not None else (tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)

    def forward(input_ids, attention_mask):
        return model(input_ids=input_ids, attention_mask=attention_mask).logits

    max_tokens = default_max_tokens(model.config, tokenizer, spec.max_tokens)
    return EncoderModel(spec, model, forward, tokenizer, outputs, device, max_tokens, int(pad))
