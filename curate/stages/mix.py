"""The mix stage: how many tokens of each source go into the mixture, and which documents carry them.

Token counts are estimated per shard from its characters and a tokenized sample (the plan is printed
before the heavy work). Modes: `weights` (token shares, as Zyda-2 states them: dclm 4.0, fwe 4.0,
zyda 0.16, dolma_cc 0.24), `tokens` (targets), `epochs` (per source). With weights and no
`total_tokens`, the total is the largest mixture that repeats no source. Each document gets
`floor(epochs) + [u < frac(epochs)]` copies with `u` a hash of (seed, source, id): deterministic, whole
documents only. Documents with no copy go to the ledger as `mix:downsampled`.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.config.schema import Field
from curate.errors import ConfigError, CurateError
from curate.runner.tasks import Task
from curate.stages.base import ShardStage

log = logging.getLogger("curate")
SAMPLE_DOCS = 256


def uniform(seed: int, source: str, ids: list[str]) -> np.ndarray:
    """A stable number in [0, 1) per document id."""
    prefix = f"{seed}\x00{source}\x00".encode()
    return np.array([int.from_bytes(hashlib.blake2b(prefix + i.encode(), digest_size=8).digest(), "little") / 2**64
                     for i in ids])


def copies(epochs: float, u: np.ndarray) -> np.ndarray:
    whole = math.floor(epochs)
    return whole + (u < epochs - whole).astype(np.int64)


def plan_mixture(mode: str, values: dict, available: dict, total: float | None) -> dict:
    """Per source: available and chosen tokens, epochs (and weight/share in weights mode)."""
    plan = {}
    if mode == "weights":
        weights = {s: values.get(s, 0.0) for s in available}
        norm = sum(weights.values())
        if norm <= 0:
            raise CurateError("mix: the weights sum to 0")
        shares = {s: w / norm for s, w in weights.items()}
        if total is None:
            total = min(available[s] / shares[s] for s in available if shares[s] > 0 and available[s] > 0)
        for s in available:
            chosen = total * shares[s]
            plan[s] = {"weight": weights[s], "share": shares[s], "available_tokens": available[s], "chosen_tokens": chosen,
                       "epochs": chosen / available[s] if available[s] else 0.0}
    elif mode == "tokens":
        for s in available:
            chosen = float(values.get(s, available[s]))
            plan[s] = {"weight": None, "available_tokens": available[s], "chosen_tokens": chosen,
                       "epochs": chosen / available[s] if available[s] else 0.0}
    else:  # epochs (or none: every source once)
        for s in available:
            e = float(values.get(s, 1.0))
            plan[s] = {"weight": None, "available_tokens": available[s], "chosen_tokens": e * available[s], "epochs": e}
    return {"mode": mode, "total_tokens": total, "sources": plan}


def render_plan(plan: dict) -> str:
    lines = [f"mixture plan ({plan['mode']}):", f"  {'source':10} {'available':>14} {'share':>7} {'chosen':>14} {'epochs':>7}"]
    for s, p in plan["sources"].items():
        share = f"{p['share']:.1%}" if p.get("share") is not None else "-"
        lines.append(f"  {s:10} {p['available_tokens']:14,.0f} {share:>7} {p['chosen_tokens']:14,.0f} {p['epochs']:7.3f}")
    return "\n".join(lines)


class MixStage(ShardStage):
    OPTIONS = {
        "weights": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0), doc="token-wise weights per source"),
        "tokens": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0), doc="target tokens per source"),
        "epochs": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0), doc="epochs per source"),
        "total_tokens": Field((float,), default=None, nullable=True, min=1.0, doc="with weights: the mixture's size"),
        "seed": Field((int,), default=0),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        given = [m for m in ("weights", "tokens", "epochs") if options[m] is not None]
        if len(given) > 1:
            raise ConfigError(file, key, f"give one of weights, tokens, epochs (got {', '.join(given)})")
        for mode in given:
            for s in options[mode]:
                if s not in sources:
                    raise ConfigError(file, f"{key}.{mode}.{s}", f"not a source; sources are {', '.join(sources)}")
        if options["total_tokens"] is not None and given != ["weights"]:
            raise ConfigError(file, f"{key}.total_tokens", "only goes with weights")

    @property
    def mode(self) -> str:
        return next((m for m in ("weights", "tokens", "epochs") if self.options[m] is not None), "epochs")

    def tokenizer_spec(self) -> str:
        later = [s for s in self.pipeline.stages if s.kind == "tokenize"]
        return later[0].options["tokenizer"] if later else "gpt2"

    def plan_path(self) -> str:
        return self.run.path(self.name, "plan.json")

    def owned_paths(self) -> list[str]:
        return [self.run.path(self.name), *super().owned_paths()]

    def execute(self, tasks: list[Task], runner) -> None:
        measure = [Task(self.name, t.source, t.shard, t.where, payload="measure") for t in tasks]
        marker = lambda t: self.run.path("_state", self.name, "_measure", t.source, f"{t.shard}.json")
        runner.run(self, f"{self.name}: measure", measure, marker)
        stats = [self.run.read_json(marker(t)) for t in measure]
        available = {}
        for source in self.pipeline.priority:
            mine = [m for m in stats if m["source"] == source]
            if not mine:
                continue
            chars = sum(m["chars"] for m in mine)
            sample_chars = sum(m["sample_chars"] for m in mine)
            ratio = sum(m["sample_tokens"] for m in mine) / sample_chars if sample_chars else 0.0
            available[source] = chars * ratio
        plan = plan_mixture(self.mode, self.options[self.mode] or {}, available, self.options["total_tokens"])
        plan["seed"] = self.options["seed"]
        plan["tokenizer"] = self.tokenizer_spec()
        log.info("%s", render_plan(plan))
        self.run.write_json(self.plan_path(), plan)
        super().execute(tasks, runner)

    def run_task(self, task: Task) -> dict:
        if task.payload == "measure":
            return self._measure(task)
        started = time.monotonic()
        plan = self.run.read_json(self.plan_path())
        epochs = plan["sources"][task.source]["epochs"]
        n_in, ids, reasons = 0, [], []
        for table in self.live_batches(task, columns=["id"]):
            n_in += table.num_rows
            n = copies(epochs, uniform(plan["seed"], task.source, table.column("id").to_pylist()))
            dropped = table.column("id").filter(pa.array(n == 0))
            ids.extend(dropped.chunks)
            reasons.append(pa.array(["mix:downsampled"] * len(dropped), pa.string()))
        counts = self.write_ledger(task, ids, reasons)
        return self.finish_task(task, started, n_in, counts)

    def _measure(self, task: Task) -> dict:
        from curate.tokens.tokenizer import load_tokenizer

        tokenizer = _cached_tokenizer(self.tokenizer_spec())
        docs = chars = sample_chars = sample_tokens = 0
        for table in self.live_batches(task, columns=["id", "text"]):
            text = table.column("text")
            docs += table.num_rows
            chars += pc.sum(pc.utf8_length(text)).as_py() or 0
            if sample_chars == 0 and table.num_rows:
                sample = text.slice(0, SAMPLE_DOCS).combine_chunks()
                encoded = tokenizer.encode_batch(sample)
                sample_tokens = int(encoded.num_tokens) + len(sample)  # + one EOS per document
                sample_chars = pc.sum(pc.utf8_length(sample)).as_py() or 0
        result = {"source": task.source, "shard": task.shard, "in": docs, "docs": docs, "chars": chars,
                  "sample_chars": sample_chars, "sample_tokens": sample_tokens}
        self.run.write_json(self.run.path("_state", self.name, "_measure", task.source, f"{task.shard}.json"), result)
        return result


_TOKENIZERS: dict = {}


def _cached_tokenizer(spec: str):
    """One tokenizer per worker process and spec."""
    from curate.tokens.tokenizer import load_tokenizer

    if spec not in _TOKENIZERS:
        _TOKENIZERS[spec] = load_tokenizer(spec, num_threads=1)
    return _TOKENIZERS[spec]
