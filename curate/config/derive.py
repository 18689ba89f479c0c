"""Derived defaults: options one step takes from others, resolved once when the pipeline loads.

A stage reads only its own options and its upstream records. Where a default depends on the rest of the
pipeline (the tokenizer a mix measures with is the tokenize step's; `dt_words` is added when a filter
rule reads it; a classifier's stand-in model applies only on curate's offline sample), it is resolved
here, beside the chain check, into the step's options: so it shows in `RUN/pipeline.yaml` and changes the
step's resume fingerprint like any option.

Stage classes declare what they contribute through the registry (`predicates`: the SQL texts a step
evaluates), so this module names option keys, never imports a stage.
"""

from __future__ import annotations

from typing import Callable, Mapping

DEFAULT_TOKENIZER = "gpt2"


def derive_defaults(steps: list, registry: Mapping[str, type], file: str, on_sample: bool) -> None:
    """Fill every derived default of the (enabled, ordered) `steps` in place; values given in the file stay."""
    for step in steps:
        for derive in DERIVED.get(step.kind, ()):
            derive(step, steps, registry, file, on_sample)


def mix_tokenizer(step, steps, registry, file, on_sample) -> None:
    """A mix measures tokens with the tokenize step's tokenizer (else gpt2)."""
    if step.options.get("tokenizer") is None:
        tokenize = [s for s in steps if s.kind == "tokenize"]
        step.options["tokenizer"] = tokenize[0].options["tokenizer"] if tokenize else DEFAULT_TOKENIZER


def signals_dt_words(step, steps, registry, file, on_sample) -> None:
    """Signals add `dt_words` (datatrove's word split, a slow kernel) when some step's predicates read it."""
    if step.options.get("datatrove_words") is None:
        step.options["datatrove_words"] = any("dt_words" in p for s in steps
                                              for _, p in registry[s.kind].predicates(s.options, file, f"stages.{s.name}"))


def classify_standins(step, steps, registry, file, on_sample) -> None:
    """A model's `standin` replaces it on curate's offline sample only; elsewhere the real model runs."""
    if not on_sample:
        for model in step.options.get("models", {}).values():
            model["standin"] = None


DERIVED: dict[str, tuple[Callable, ...]] = {
    "mix": (mix_tokenizer,),
    "signals": (signals_dt_words,),
    "classify": (classify_standins,),
}
