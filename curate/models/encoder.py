"""Running a transformer classifier over an Arrow array of texts, built for throughput.

One `score` call: cut texts to max_chars (Arrow kernel), tokenize the whole call without padding,
turn documents into rows (first window, or all windows for `windows: max`), sort rows by length over
the whole call, fill batches up to the token budget, pad each batch to its own longest row, run the
batches under `torch.inference_mode` (and autocast on CUDA) leaving the logits on the device so the
host prepares batch k+1 while the device runs batch k, copy the logits back once, and scatter the
results to input order. Null texts are not run; they get null outputs.

`score` is `run(prepare(texts))`: `prepare` is the CPU half (cut, tokenize, rows), `run` the model
half, so a stage on a GPU can tokenize its next Arrow batch in a thread while this one runs.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.models.batching import pad_rows, plan_batches, rows_for
from curate.models.output import Outputs
from curate.models.spec import BATCH_TOKENS, ModelSpec, normalize_dtype
from curate.models.tokens import Tokens


@dataclass
class Prepared:
    """A tokenized call: `n` input texts, `valid` the non-null ones; one row per window to score
    (`starts`/`lengths` into `flat`, `doc` the row's index among the valid texts)."""

    n: int
    valid: np.ndarray
    flat: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    doc: np.ndarray


def resolve_device(device: str = "auto") -> str:
    import torch

    if device in (None, "auto"):
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        return "cuda:0"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA device")
    return device


def autocast_dtype(dtype: str, device: str):
    """The autocast precision, or None for plain fp32."""
    import torch

    dtype = normalize_dtype(dtype)
    if dtype == "auto":
        if not device.startswith("cuda"):
            return None
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def as_text_array(texts) -> pa.Array:
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    elif not isinstance(texts, pa.Array):
        texts = pa.array(texts, pa.string())
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    if not pa.types.is_string(texts.type):
        raise TypeError(f"texts must be a string array, got {texts.type}")
    return texts


def non_null_texts(texts) -> tuple[pa.Array, np.ndarray, int]:
    """(the non-null texts, their row numbers, the number of rows): models score only real texts, and
    their outputs are scattered back to every row, nulls staying null."""
    texts = as_text_array(texts)
    n = len(texts)
    valid = np.arange(n, dtype=np.int64)
    if texts.null_count:
        valid = np.flatnonzero(pc.is_valid(texts).to_numpy(zero_copy_only=False))
        texts = texts.take(pa.array(valid))
    return texts, valid, n


class EncoderModel:
    """A loaded transformer classifier: `forward(input_ids, attention_mask) -> logits [rows, k]`."""

    def __init__(self, spec: ModelSpec, module, forward, tokenizer, outputs: Outputs, device: str,
                 max_tokens: int, pad_id: int):
        import torch

        self.spec, self.device, self.outputs = spec, device, outputs
        self.module, self._forward = module, forward
        self.max_tokens = max_tokens
        self.autocast = autocast_dtype(spec.dtype, device)
        self.side = getattr(tokenizer, "truncation_side", "right") or "right"
        self.tokens = Tokens(tokenizer)
        self.capacity = max_tokens - self.tokens.n_special
        if self.capacity < 1:
            raise ValueError(f"max_tokens {max_tokens} leaves no room beside "
                             f"{self.tokens.n_special} special tokens")
        if spec.windows == "truncate":
            self.tokens.truncate(self.capacity, self.side)
        self.pad_id = pad_id
        self.batch_tokens = spec.batch_tokens or BATCH_TOKENS["cuda" if device.startswith("cuda") else "cpu"]
        self._pin = device.startswith("cuda")
        self.timings = {"tokenize": 0.0, "infer": 0.0}
        self._torch = torch

    def output_schema(self) -> pa.Schema:
        return self.outputs.schema

    def score(self, texts) -> pa.Table:
        """One row per text, in input order; null texts get null outputs."""
        return self.run(self.prepare(texts))

    def prepare(self, texts) -> Prepared:
        """The CPU half of `score` (cut, tokenize, rows). Rust tokenizing releases the GIL, so a stage
        can prepare its next batch in a thread while `run` works on this one."""
        t0 = time.perf_counter()
        texts, valid, n = non_null_texts(texts)
        if self.spec.max_chars is not None:
            texts = pc.utf8_slice_codeunits(texts, 0, self.spec.max_chars)
        flat, lengths = self.tokens.encode(texts.to_pylist())
        starts = np.cumsum(lengths) - lengths
        doc, begin, length = rows_for(lengths, self.capacity, self.spec.windows, self.side)
        self.timings["tokenize"] += time.perf_counter() - t0
        return Prepared(n, valid, flat, starts[doc] + begin, length, doc)

    def run(self, prepared: Prepared) -> pa.Table:
        """The model half of `score`: batches through the model, results in input order."""
        p = prepared
        if len(p.valid) == 0:
            return self.outputs.empty(p.n)
        t0 = time.perf_counter()
        logits = self._run(p.flat, p.starts, p.lengths)
        self.timings["infer"] += time.perf_counter() - t0
        if len(p.doc) != len(p.valid):  # windows: keep each document's highest-scoring row
            score = self.outputs.row_scores(logits)
            order = np.lexsort((-score, p.doc))
            first = np.ones(len(order), dtype=bool)
            first[1:] = p.doc[order][1:] != p.doc[order][:-1]
            logits = logits[order[first]]
        return self.outputs.from_logits(p.n, p.valid, logits)

    def _run(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        torch = self._torch
        batches = plan_batches(lengths + self.tokens.n_special, self.batch_tokens)
        outs = []
        amp = (torch.autocast(device_type=self.device.split(":")[0], dtype=self.autocast)
               if self.autocast is not None else contextlib.nullcontext())
        with torch.inference_mode(), amp:
            for rows in batches:
                ids, mask = pad_rows(flat, starts[rows], lengths[rows], self.tokens.prefix,
                                     self.tokens.suffix, self.pad_id)
                ids, mask = torch.from_numpy(ids), torch.from_numpy(mask)
                if self._pin:
                    ids, mask = ids.pin_memory(), mask.pin_memory()
                ids = ids.to(self.device, non_blocking=True)
                mask = mask.to(self.device, non_blocking=True)
                outs.append(self._forward(ids, mask).float())
            result = torch.cat(outs).cpu().numpy() if outs else np.empty((0, 1), np.float32)
        logits = np.empty_like(result)
        logits[np.concatenate(batches)] = result
        return logits
