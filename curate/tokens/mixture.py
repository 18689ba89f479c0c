"""Mixture arithmetic: a plan of tokens per source, and each document's whole number of copies.

Modes: `weights` (token shares, as Zyda-2 states them), `tokens` (targets), `epochs` (per source), and
`maximize` (the tokens per source that give the most effective tokens for a total, under epoch caps; see
`curate.tokens.repetition`). With weights and no total, the total is the largest mixture that repeats no
source. Every plan carries each source's epochs and effective tokens; a source repeated more than
`WARN_EPOCHS` times is a warning, more than `allow_epochs` an error, and so is a plan that asks for tokens
of a source that has none. Each document gets `floor(epochs) + [u < frac(epochs)]` copies with `u` a hash
of (seed, source, id): deterministic, whole documents only, the same wherever it is computed (the mix and
pack stages both do, and `curate why`).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pyarrow as pa

from curate.errors import CurateError
from curate.tokens.rehydrate import epochs_of, render, sizes
from curate.tokens.repetition import effective_tokens, marginal_value, maximize_effective

WARN_EPOCHS = 4.0    # up to here repeated tokens are worth almost as much as fresh ones (Muennighoff et al. 2023)
ALLOW_EPOCHS = 16.0  # past here more repetition adds almost nothing: an error unless `allow_epochs` is raised


def uniform(seed: int, source: str, ids: list[str]) -> np.ndarray:
    """A stable number in [0, 1) per document id."""
    prefix, b2 = f"{seed}\x00{source}\x00".encode(), hashlib.blake2b
    digests = b"".join([b2(prefix + i.encode(), digest_size=8).digest() for i in ids])   # one bytes object, read by numpy
    return np.frombuffer(digests, "<u8").astype(np.float64) / 2.0**64


def copies(epochs, u: np.ndarray) -> np.ndarray:
    """floor(epochs) + [u < frac(epochs)] per document; `epochs` is one number or one per document (rehydration)."""
    whole = np.floor(epochs)
    return (whole + (u < epochs - whole)).astype(np.int64)


def plan_mixture(mode: str, values: dict, available: dict, total: float | None, *, allow_epochs: float = ALLOW_EPOCHS,
                 max_epochs: float | dict | None = None, step: str = "mix", check: bool = True) -> dict:
    """Per source: available and chosen tokens, epochs, effective tokens (and weight/share where shares exist).

    `values` are the weights, token targets or epochs of the mode; in `maximize` mode the quality prior
    (what a fresh token of each source is worth, 1 where not given). A plan that cannot be met (tokens
    asked of a source that has none; sources past `allow_epochs`) has a line for each in `errors`, the
    first raised as a CurateError unless `check` is false (the mix stage prints the plan first); the
    warnings of a plan are in its `warnings`.
    """
    plan, errors, warnings, level = {}, [], [], None
    if mode in ("weights", "tokens") and (missing := [s for s in available if s not in values]):
        what = "weight" if mode == "weights" else "token target"
        raise CurateError(f"{step}: no {what} for {', '.join(missing)}; give every source one (0 leaves a source out)")
    if mode == "weights":
        weights = {s: values[s] for s in available}
        norm = sum(weights.values())
        if norm <= 0:
            raise CurateError(f"{step}: the weights sum to 0")
        shares = {s: w / norm for s, w in weights.items()}
        if total is None:
            total = min((available[s] / shares[s] for s in available if shares[s] > 0 and available[s] > 0), default=0.0)
        for s in available:
            chosen = total * shares[s]
            plan[s] = {"weight": weights[s], "share": shares[s], "available_tokens": available[s], "chosen_tokens": chosen,
                       "epochs": chosen / available[s] if available[s] else 0.0}
    elif mode == "tokens":
        for s in available:
            chosen = float(values[s])
            plan[s] = {"weight": None, "available_tokens": available[s], "chosen_tokens": chosen,
                       "epochs": chosen / available[s] if available[s] else 0.0}
    elif mode == "maximize":
        if total is None:
            raise CurateError(f"{step}: maximize needs total_tokens")
        caps = {s: float(allow_epochs if max_epochs is None else
                         max_epochs.get(s, allow_epochs) if isinstance(max_epochs, dict) else max_epochs) for s in available}
        quality = {s: float(values.get(s, 1.0)) for s in available}
        try:
            chosen, level = maximize_effective(available, total, caps, quality)
        except CurateError as exc:
            raise CurateError(f"{step}: {exc}") from None
        for s in available:
            plan[s] = {"weight": chosen[s] / total, "share": chosen[s] / total, "quality": quality[s], "max_epochs": caps[s],
                       "available_tokens": available[s], "chosen_tokens": chosen[s],
                       "epochs": chosen[s] / available[s] if available[s] else 0.0,
                       "marginal_value": quality[s] * marginal_value(chosen[s], available[s])}
    else:  # epochs (or none: every source once)
        for s in available:
            e = float(values.get(s, 1.0))
            plan[s] = {"weight": None, "available_tokens": available[s], "chosen_tokens": e * available[s], "epochs": e}
    for p in plan.values():
        p["effective_tokens"] = effective_tokens(p["chosen_tokens"], p["available_tokens"])
    asked = {s: values.get(s, 1.0) if mode != "maximize" else 0.0 for s, p in plan.items() if p["available_tokens"] <= 0}
    if mode in ("weights", "tokens") and (empty := [s for s, v in asked.items() if v > 0]):  # shares nothing can fill
        them = "it" if len(empty) == 1 else "them"
        errors.append(f"{step}: {', '.join(empty)} {'has' if len(empty) == 1 else 'have'} no tokens left before the mixture "
                      f"(empty files, or every document was removed), but {mode} asks for some "
                      f"({', '.join(f'{s}: {asked[s]:g}' for s in empty)}); give {them} 0 to leave {them} out "
                      f"(--set stages.{step}.{mode}.{empty[0]}=0), or check the inputs and the steps before {step}")
    elif empty := [s for s, v in asked.items() if mode == "maximize" or v > 0]:  # epochs of nothing: met, but said
        warnings += [f"{step}: {s} has no tokens left before the mixture: it adds nothing" for s in empty]
    if over := {s: p for s, p in plan.items() if p["epochs"] > allow_epochs}:
        need = math.ceil(max(p["epochs"] for p in over.values()) * 100) / 100
        lower = {"weights": "weights or total_tokens", "tokens": "token targets", "epochs": "epochs"}.get(mode, "max_epochs")
        errors.append(f"{step}: " + ", ".join(f"{s} would be repeated {p['epochs']:.2f} epochs ({p['chosen_tokens']:,.0f} tokens "
                                               f"of {p['available_tokens']:,.0f})" for s, p in over.items())
                      + f", more than allow_epochs {allow_epochs:g} (past about 16 epochs repeated tokens add almost nothing); "
                        f"lower the {lower}, or allow it with `allow_epochs: {need:g}` in step {step} "
                        f"(--set stages.{step}.allow_epochs={need:g})")
    warnings += [f"{step}: {s} is repeated {p['epochs']:.2f} epochs (more than {WARN_EPOCHS:g}): its {p['chosen_tokens']:,.0f} "
                 f"tokens are worth {p['effective_tokens']:,.0f} fresh ones ({p['effective_tokens'] / p['chosen_tokens']:.0%})"
                 for s, p in plan.items() if WARN_EPOCHS < p["epochs"] <= allow_epochs]
    out = {"mode": mode, "total_tokens": total, "sources": plan, "allow_epochs": allow_epochs,
           "effective_tokens": sum(p["effective_tokens"] for p in plan.values()), "warnings": warnings, "errors": errors}
    if level is not None:  # the water level, and the objective when a quality prior weighs the sources
        out["marginal_value"] = level
        out["quality_weighted_effective_tokens"] = sum(p["quality"] * p["effective_tokens"] for p in plan.values())
    if check and errors:
        raise CurateError(errors[0])
    return out


def render_plan(plan: dict) -> str:
    """The plan as a table: one line per source, then the totals (and the water level when maximizing)."""
    maximize = plan["mode"] == "maximize"
    head = f"  {'source':10} {'available':>14} {'share':>7} {'chosen':>14} {'epochs':>7} {'effective':>14}"
    lines = [f"mixture plan ({plan['mode']}):", head + (f" {'cap':>6} {'quality':>7}" if maximize else "")]
    for s, p in plan["sources"].items():
        share = f"{p['share']:.1%}" if p.get("share") is not None else "-"
        line = (f"  {s:10} {p['available_tokens']:14,.0f} {share:>7} {p['chosen_tokens']:14,.0f} {p['epochs']:7.3f} "
                f"{p['effective_tokens']:14,.0f}")
        lines.append(line + (f" {p['max_epochs']:6g} {p['quality']:7g}" if maximize else ""))
    chosen = sum(p["chosen_tokens"] for p in plan["sources"].values())
    available = sum(p["available_tokens"] for p in plan["sources"].values())
    lines.append(f"  {'total':10} {available:14,.0f} {'':>7} {chosen:14,.0f} {'':>7} {plan['effective_tokens']:14,.0f}")
    if plan.get("rehydrate"):
        lines.append(render(plan["rehydrate"]))
    if maximize:
        weighted = any(p["quality"] != 1 for p in plan["sources"].values())
        best = (f"the most quality-weighted effective tokens ({plan['quality_weighted_effective_tokens']:,.0f})" if weighted
                else "the most effective tokens")
        lines.append(f"  (chosen for {best} from {plan['total_tokens']:,.0f}: one more token of any source below its cap "
                     f"would be worth {plan['marginal_value']:.3f}{'' if weighted else ' of a fresh one'})")
    return "\n".join(lines)


def doc_copies(run, plan: dict, source: str, shard: str, ids: pa.Array) -> np.ndarray:
    """Each document's whole number of copies under the plan (the mix and pack steps both call this)."""
    r = plan.get("rehydrate")
    doc_sizes = sizes(run.clusters(r["dedup"], source, shard), ids) if r else None
    return copies(epochs_of(plan, source, doc_sizes), uniform(plan["seed"], source, ids.to_pylist()))
