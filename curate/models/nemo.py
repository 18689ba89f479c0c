"""Kind `nemo_quality`: NVIDIA NeMo Curator's classifier layout (nvidia/quality-classifier-deberta).

The checkpoint is not an `AutoModelForSequenceClassification`: `config.json` names a `base_model`
(e.g. microsoft/deberta-v3-base), `fc_dropout`, `max_len` and `id2label`, and the weights hold the
encoder under `model.*` plus one linear layer `fc.*`. The forward pass is encoder last hidden state ->
dropout (identity in eval) -> fc -> softmax, over the first token. The module is rebuilt here from
the base model's *config* (its pretrained weights are never needed: the checkpoint has all of them),
so neither NeMo Curator nor PyTorchModelHubMixin is a dependency.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from curate.models.hf import default_max_tokens, head_of, locate, quiet
from curate.models.spec import ModelSpec

WEIGHTS = ("model.safetensors", "pytorch_model.bin")
IGNORED_KEYS = ("position_ids",)  # buffers some transformers versions save and others do not


class NemoClassifier(nn.Module):
    """Encoder + dropout + linear on the first token, as NeMo Curator's quality classifier."""

    def __init__(self, encoder_config, num_labels: int, dropout: float):
        super().__init__()
        from transformers import AutoModel

        self.model = AutoModel.from_config(encoder_config)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(self.model.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.fc(self.dropout(hidden[:, 0, :]))  # fc then [:, 0] in NeMo: the same numbers


def _file(spec: ModelSpec, name: str) -> Path | None:
    """A file of the checkpoint: from the local folder, or from the Hub cache (or Hub) by name."""
    local = locate(spec.path)
    if local is not None:
        if not local.is_dir():
            raise ValueError("expected a checkpoint folder (config.json and weights)")
        p = local / name
        return p if p.is_file() else None
    from transformers.utils import cached_file

    found = cached_file(spec.path, name, _raise_exceptions_for_missing_entries=False)
    return Path(found) if found else None


def read_config(spec: ModelSpec) -> tuple[dict, object]:
    """(checkpoint config dict, encoder config) with the layout's required keys checked."""
    from transformers import AutoConfig

    path = _file(spec, "config.json")
    if path is None:
        raise FileNotFoundError(f"no config.json in {spec.path}")
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"config.json is not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise ValueError("config.json is not a JSON object")
    missing = [k for k in ("base_model", "id2label") if k not in cfg]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)} (a NeMo classifier config names "
                         f"base_model, fc_dropout, max_len and id2label)")
    base = str(cfg["base_model"])
    beside = path.parent / base  # a base_model folder given relative to the checkpoint
    with quiet():
        encoder_config = AutoConfig.from_pretrained(str(beside) if beside.is_dir() else base)
    return cfg, encoder_config


def _labels_config(cfg: dict):
    """An object with id2label / num_labels, as transformers configs have, for head_of."""
    class Labels:
        id2label = {int(k): str(v) for k, v in cfg["id2label"].items()}
        num_labels = len(id2label)
        problem_type = None
    if sorted(Labels.id2label) != list(range(Labels.num_labels)):
        raise ValueError(f"id2label keys must be 0..{Labels.num_labels - 1}")
    return Labels


def _tokenizer(spec: ModelSpec, cfg: dict, config_dir: Path):
    """The checkpoint's own tokenizer, else the base model's."""
    from transformers import AutoTokenizer

    base = str(cfg["base_model"])
    beside = config_dir / base
    errors = []
    for source in (spec.path, str(beside) if beside.is_dir() else base):
        try:
            with quiet():
                tok = AutoTokenizer.from_pretrained(source)
        except Exception as exc:  # noqa: BLE001 - a missing tokenizer is tried at the next source
            errors.append(f"{source}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        if not getattr(tok, "is_fast", False):
            errors.append(f"{source}: not a fast (Rust) tokenizer")
            continue
        return tok
    raise ValueError("no fast tokenizer in the checkpoint or its base model (" + "; ".join(errors) + ")")


def _weights_file(spec: ModelSpec) -> Path:
    for name in WEIGHTS:
        p = _file(spec, name)
        if p is not None:
            return p
    raise FileNotFoundError(f"no weights file ({', '.join(WEIGHTS)}) in {spec.path}")


def check_nemo(spec: ModelSpec) -> list[str]:
    cfg, _ = read_config(spec)
    labels = _labels_config(cfg)
    head_of(spec, labels)
    _weights_file(spec)
    _tokenizer(spec, cfg, _file(spec, "config.json").parent)
    return [labels.id2label[i] for i in range(labels.num_labels)]


def load_state(path: Path) -> dict:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(str(path), map_location="cpu", weights_only=True)


def load_nemo(spec: ModelSpec, device: str):
    from curate.models.encoder import EncoderModel

    cfg, encoder_config = read_config(spec)
    labels_cfg = _labels_config(cfg)
    outputs = head_of(spec, labels_cfg)
    module = NemoClassifier(encoder_config, labels_cfg.num_labels, float(cfg.get("fc_dropout", 0.0)))
    state = load_state(_weights_file(spec))
    own = module.state_dict()
    missing = [k for k in own if k not in state and not k.endswith(IGNORED_KEYS)]
    unexpected = [k for k in state if k not in own and not k.endswith(IGNORED_KEYS)]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"{len(missing)} weights missing (e.g. {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected (e.g. {unexpected[0]})")
        raise ValueError("weights do not match a NeMo classifier over "
                         f"{cfg['base_model']} (keys model.* and fc.*): " + ", ".join(parts))
    for k, v in state.items():
        if k in own and tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(f"weight {k} has shape {tuple(v.shape)}, the model expects {tuple(own[k].shape)}")
    module.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    module.float().to(device).eval()
    tokenizer = _tokenizer(spec, cfg, _file(spec, "config.json").parent)
    explicit = spec.max_tokens or (int(cfg["max_len"]) if cfg.get("max_len") else None)
    max_tokens = default_max_tokens(encoder_config, tokenizer, explicit)
    pad = encoder_config.pad_token_id
    pad = pad if pad is not None else (tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
    return EncoderModel(spec, module, module.forward, tokenizer, outputs, device, max_tokens, int(pad))
