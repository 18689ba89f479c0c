"""What repeated tokens are worth, and the mixture that gets the most from a token budget.

Muennighoff et al. 2023 (arXiv 2305.16264, "Scaling Data-Constrained Language Models") fit the value of
repeated data for language models: `U` unique tokens seen `1 + R` times are worth
`D' = U + U·R*·(1 - e^(-R/R*))` fresh tokens, `R* ≈ 15.4`. Up to about 4 epochs this is nearly `U·(1 + R)`;
past about 16 more epochs add almost nothing. A plan with fewer tokens than `U` (down-sampling) is all fresh.

`maximize_effective` chooses tokens per source for a fixed total: `D'` is concave in tokens, so the optimum
gives every source the same marginal value `λ` (water-filling). A token of source `s` is worth `q_s` while it
is fresh and `q_s·e^(-R/R*)` at `R` repetitions beyond the first epoch; caps bound each source's epochs.
"""

from __future__ import annotations

import math

from curate.errors import CurateError

R_STAR = 15.4  # Muennighoff et al. 2023, fitted R*_D for data repetition


def effective_tokens(tokens: float, unique: float) -> float:
    """Fresh-token equivalent of `tokens` drawn from `unique` distinct tokens (whole epochs or not)."""
    if unique <= 0 or tokens <= 0:
        return 0.0
    if tokens <= unique:
        return float(tokens)
    return unique + unique * R_STAR * -math.expm1(-(tokens / unique - 1.0) / R_STAR)


def marginal_value(tokens: float, unique: float) -> float:
    """What one more token is worth at this many tokens: 1 within the first epoch, `e^(-R/R*)` after."""
    if unique <= 0:
        return 0.0
    return 1.0 if tokens < unique else math.exp(-(tokens / unique - 1.0) / R_STAR)


def maximize_effective(available: dict, total: float, caps: dict, quality: dict) -> tuple[dict, float]:
    """Tokens per source maximising `sum_s q_s·D'_s(t_s)` with `sum_s t_s = total` and `t_s <= caps_s·U_s`.

    Returns (tokens per source, λ: the value of the last token of every source still below its cap).
    While nothing repeats several sources can tie (equal `q`, all fresh): they share what is left in
    proportion to their fresh tokens, i.e. every tied source gets the same fraction of an epoch.
    A source with no tokens, quality 0 or cap 0 gets nothing.
    """
    live = [s for s in available if available[s] > 0 and quality[s] > 0 and caps[s] > 0]
    room = {s: caps[s] * available[s] for s in live}
    if total > sum(room.values()) * (1 + 1e-12):
        raise CurateError(f"total_tokens {total:,.0f} is more than the caps allow: max_epochs x available tokens is "
                          + ", ".join(f"{s} {room[s]:,.0f}" for s in live) + f" ({sum(room.values()):,.0f} in all); "
                          "raise max_epochs (and allow_epochs) or lower total_tokens")
    fresh = {s: min(caps[s], 1.0) * available[s] for s in live}

    def take(s: str, level: float, tie: bool) -> float:
        """Tokens of `s` at marginal value `level` (a tied source counts as full when `tie`)."""
        q = quality[s]
        if level > q or (level == q and not tie):
            return 0.0
        if level == q:
            return fresh[s]
        return min(room[s], available[s] * (1.0 + R_STAR * math.log(q / level)))

    levels = sorted({quality[s] for s in live}, reverse=True)
    for q in levels:  # a tie: the total falls inside the jump of the sources whose fresh tokens are worth q
        below, full = sum(take(s, q, False) for s in live), sum(take(s, q, True) for s in live)
        if below <= total <= full:
            tied = [s for s in live if quality[s] == q]
            share = (total - below) / sum(fresh[s] for s in tied)
            return {s: 0.0 if s not in live else fresh[s] * share if s in tied else take(s, q, False) for s in available}, q
    # no tie: λ lies strictly between two levels (or below the lowest, down to where every source is at its cap)
    lo, hi = 0.5 * min(quality[s] * math.exp(-max(caps[s] - 1.0, 0.0) / R_STAR) for s in live), levels[0]
    for q in levels:
        if sum(take(s, q, False) for s in live) > total:
            lo = q
            break
        hi = q
    lo, hi = math.log(lo), math.log(hi)
    for _ in range(200):  # bisection on log λ: the tokens taken fall as λ rises
        mid = (lo + hi) / 2
        if sum(take(s, math.exp(mid), False) for s in live) < total:
            hi = mid
        else:
            lo = mid
    level = math.exp((lo + hi) / 2)
    tokens = {s: take(s, level, False) for s in live}
    moving = [s for s in live if fresh[s] < tokens[s] < room[s]]
    if moving:  # the sources between their first epoch and their cap: sum U_s·(1 + R*·ln(q_s/λ)) = the rest
        rest = total - sum(t for s, t in tokens.items() if s not in moving)
        log_level = (sum(available[s] * (1.0 + R_STAR * math.log(quality[s])) for s in moving) - rest) / (
            R_STAR * sum(available[s] for s in moving))
        level = math.exp(log_level)
        tokens.update({s: min(room[s], max(fresh[s], available[s] * (1.0 + R_STAR * (math.log(quality[s]) - log_level))))
                       for s in moving})
    return {s: tokens.get(s, 0.0) for s in available}, level
