"""The mixture plan's repetition arithmetic (effective tokens, warnings, refusals, the effective-token maximum)
and the mix step's configuration checks: every way a plan can be wrong is caught before any tokenizing."""

from __future__ import annotations

import math
import random

import pytest

from curate import load_pipeline
from curate.errors import ConfigError, CurateError
from curate.tokens.mixture import plan_mixture, render_plan
from curate.tokens.repetition import R_STAR, effective_tokens, marginal_value, maximize_effective

ZYDA2_WEIGHTS = {"dclm": 4.0, "fwe": 4.0, "zyda": 0.16, "dolma_cc": 0.24}
SAMPLE = {"fwe": 728451.0, "dclm": 697804.0, "zyda": 383461.0, "dolma_cc": 310148.0}  # zyda2.yaml's sample, measured


# ---------------------------------------------------------------- effective tokens (Muennighoff et al. 2023)


def test_effective_tokens_follow_the_data_constrained_scaling_law():
    u = 1000.0
    assert effective_tokens(600.0, u) == 600.0 and effective_tokens(u, u) == u  # within one epoch: all fresh
    for epochs in (1.5, 4.0, 16.0, 40.0):
        r = epochs - 1
        assert effective_tokens(epochs * u, u) == pytest.approx(u + u * R_STAR * (1 - math.exp(-r / R_STAR)), rel=1e-12)
    # four epochs are nearly as good as fresh data; past sixteen more adds little; the ceiling is U·(1 + R*)
    assert effective_tokens(4 * u, u) / (4 * u) > 0.9
    assert marginal_value(4 * u, u) > 0.8 and marginal_value(17 * u, u) < 0.37  # a token's worth at 4 and past 16 epochs
    assert effective_tokens(1e9 * u, u) == pytest.approx(u * (1 + R_STAR))
    assert effective_tokens(5.0, 0.0) == 0.0
    assert marginal_value(500.0, u) == 1.0 and marginal_value(5 * u, u) == pytest.approx(math.exp(-4 / R_STAR))


def test_every_plan_carries_epochs_and_effective_tokens_per_source():
    for mode, values, total in (("weights", ZYDA2_WEIGHTS, 6.0e6), ("tokens", {s: 2 * a for s, a in SAMPLE.items()}, None),
                                ("epochs", {"fwe": 3.0}, None)):
        plan = plan_mixture(mode, values, SAMPLE, total)
        for s, p in plan["sources"].items():
            assert p["epochs"] == pytest.approx(p["chosen_tokens"] / SAMPLE[s])
            assert p["effective_tokens"] == pytest.approx(effective_tokens(p["chosen_tokens"], SAMPLE[s]))
        assert plan["effective_tokens"] == pytest.approx(sum(p["effective_tokens"] for p in plan["sources"].values()))
        assert plan["allow_epochs"] == 16.0
    assert "effective" in render_plan(plan)


def test_more_than_four_epochs_is_a_warning_naming_the_source():
    plan = plan_mixture("weights", ZYDA2_WEIGHTS, SAMPLE, 6.0e6)  # dclm 4.09 epochs, fwe 3.92
    assert len(plan["warnings"]) == 1
    assert plan["warnings"][0].startswith("mix: dclm is repeated 4.09 epochs (more than 4)")
    assert plan_mixture("weights", ZYDA2_WEIGHTS, SAMPLE, 5.0e6)["warnings"] == []


def test_more_than_sixteen_epochs_is_refused_unless_allow_epochs_says_otherwise():
    with pytest.raises(CurateError) as info:
        plan_mixture("epochs", {"fwe": 20.0}, SAMPLE, None)
    message = str(info.value)
    assert "\n" not in message and message.startswith("mix: fwe would be repeated 20.00 epochs")
    assert "allow_epochs: 20" in message and "--set stages.mix.allow_epochs=20" in message
    plan = plan_mixture("epochs", {"fwe": 20.0}, SAMPLE, None, allow_epochs=20.0)
    assert plan["sources"]["fwe"]["effective_tokens"] < 20 * SAMPLE["fwe"] * 0.6
    assert plan["warnings"][0].startswith("mix: fwe is repeated 20.00 epochs")
    with pytest.raises(CurateError) as info:  # one line naming every source past the limit, and the limit that allows them
        plan_mixture("weights", ZYDA2_WEIGHTS, SAMPLE, 2.5e7)
    message = str(info.value)
    assert "\n" not in message and message.startswith("mix: fwe would be repeated 16.34 epochs (11,904,762 tokens of 728,451), "
                                                      "dclm would be repeated 17.06 epochs")
    assert "lower the weights or total_tokens" in message and message.endswith("(--set stages.mix.allow_epochs=17.07)")


def test_a_share_of_a_source_with_no_tokens_is_an_error_naming_it():
    empty = {**SAMPLE, "dolma_cc": 0.0}
    for mode, values in (("weights", ZYDA2_WEIGHTS), ("tokens", dict.fromkeys(SAMPLE, 1000.0))):
        with pytest.raises(CurateError) as info:
            plan_mixture(mode, values, empty, None)
        assert str(info.value).startswith("mix: dolma_cc has no tokens left before the mixture")
        assert f"--set stages.mix.{mode}.dolma_cc=0" in str(info.value) and "\n" not in str(info.value)
    plan = plan_mixture("weights", {**ZYDA2_WEIGHTS, "dolma_cc": 0.0}, empty, None)  # said explicitly: fine
    assert plan["sources"]["dolma_cc"]["chosen_tokens"] == 0.0 and plan["sources"]["zyda"]["share"] == pytest.approx(0.16 / 8.16)
    unchecked = plan_mixture("weights", ZYDA2_WEIGHTS, empty, None, check=False)
    assert len(unchecked["errors"]) == 1
    epochs = plan_mixture("epochs", {}, empty, None)  # epochs of nothing is met (0 tokens), but said
    assert epochs["warnings"] == ["mix: dolma_cc has no tokens left before the mixture: it adds nothing"]


def test_a_source_missing_from_the_weights_is_an_error_not_a_silent_zero():
    with pytest.raises(CurateError, match="no weight for zyda"):
        plan_mixture("weights", {"fwe": 1.0, "dclm": 1.0, "dolma_cc": 1.0}, SAMPLE, None)


# ---------------------------------------------------------------- the effective-token maximum


def test_maximize_with_equal_quality_gives_every_source_the_same_epochs_until_a_cap_binds():
    plan = plan_mixture("maximize", {}, SAMPLE, 6.0e6, max_epochs=4.0)
    epochs = [p["epochs"] for p in plan["sources"].values()]
    assert sum(p["chosen_tokens"] for p in plan["sources"].values()) == pytest.approx(6.0e6)
    assert max(epochs) - min(epochs) < 1e-9 and epochs[0] == pytest.approx(6.0e6 / sum(SAMPLE.values()))
    assert plan["marginal_value"] == pytest.approx(math.exp(-(epochs[0] - 1) / R_STAR))
    # the Zyda-2 weights at the same size are worth fewer fresh tokens
    assert plan["effective_tokens"] > plan_mixture("weights", ZYDA2_WEIGHTS, SAMPLE, 6.0e6)["effective_tokens"] * 1.02
    capped = plan_mixture("maximize", {}, SAMPLE, 6.0e6, max_epochs={"fwe": 4, "dclm": 4, "zyda": 1.5, "dolma_cc": 1.5})
    assert capped["sources"]["zyda"]["epochs"] == pytest.approx(1.5) and capped["sources"]["dolma_cc"]["epochs"] == pytest.approx(1.5)
    assert capped["sources"]["fwe"]["epochs"] == pytest.approx(capped["sources"]["dclm"]["epochs"])
    assert capped["sources"]["fwe"]["epochs"] > 1.5


def test_maximize_while_nothing_repeats_samples_every_source_alike_and_quality_fills_the_best_first():
    plan = plan_mixture("maximize", {}, SAMPLE, 1.0e6)
    assert all(p["epochs"] == pytest.approx(1.0e6 / sum(SAMPLE.values())) for p in plan["sources"].values())
    assert plan["effective_tokens"] == pytest.approx(1.0e6) and plan["marginal_value"] == 1.0
    prior = plan_mixture("maximize", {"fwe": 1.5, "dclm": 1.0, "zyda": 1.0, "dolma_cc": 1.0}, SAMPLE, 6.0e6,
                         max_epochs={"fwe": 8, "dclm": 4, "zyda": 4, "dolma_cc": 4})
    fwe = prior["sources"]["fwe"]  # repeated until its marginal value, 1.5·e^(-R/R*), falls to the others' 1
    assert fwe["epochs"] == pytest.approx(1 + R_STAR * math.log(1.5))
    assert fwe["marginal_value"] == pytest.approx(1.0) and prior["marginal_value"] == 1.0
    assert prior["sources"]["dclm"]["epochs"] < 1
    assert all(prior["sources"][s]["epochs"] == pytest.approx(prior["sources"]["dclm"]["epochs"]) for s in ("zyda", "dolma_cc"))


def test_maximize_beats_every_other_allocation_and_meets_the_optimality_conditions():
    rng = random.Random(3)
    for _ in range(300):
        available = {f"s{i}": rng.choice([0.0, rng.uniform(10, 1e6)]) for i in range(rng.randint(1, 5))}
        available["s0"] = available["s0"] or 500.0
        caps = {s: rng.choice([0.5, 1.0, 2.0, 4.0, 16.0, rng.uniform(0.1, 20)]) for s in available}
        quality = {s: rng.choice([1.0, 1.0, 2.0, 0.5, rng.uniform(0.1, 3)]) for s in available}
        room = {s: caps[s] * available[s] for s in available}
        total = rng.choice([rng.uniform(0.01, 1.0), 1.0]) * sum(room.values())
        tokens, level = maximize_effective(available, total, caps, quality)
        assert sum(tokens.values()) == pytest.approx(total, rel=1e-9)
        best = sum(quality[s] * effective_tokens(tokens[s], available[s]) for s in available)
        for s in available:  # KKT: below the cap a source's marginal value is at most λ; above zero at least λ
            assert -1e-9 <= tokens[s] <= room[s] * (1 + 1e-12)
            value = quality[s] * marginal_value(tokens[s], available[s])
            if tokens[s] < room[s] * (1 - 1e-9):
                assert value <= level * (1 + 1e-6)
            if tokens[s] > room[s] * 1e-9:
                assert value >= level * (1 - 1e-6)
        for _ in range(5):  # any other feasible allocation is worth no more
            w = {s: rng.random() * room[s] for s in available}
            other = {s: w[s] * total / sum(w.values()) for s in available}
            if all(other[s] <= room[s] for s in available):
                assert sum(quality[s] * effective_tokens(other[s], available[s]) for s in available) <= best * (1 + 1e-9)


def test_maximize_refuses_a_total_the_caps_cannot_hold():
    with pytest.raises(CurateError, match=r"^mix: total_tokens 9,000,000 is more than the caps allow: .*raise max_epochs"):
        plan_mixture("maximize", {}, SAMPLE, 9.0e6, max_epochs=4.0)


# ---------------------------------------------------------------- configuration: one line, at load


def _recipe(tmp_path, mix: str):
    f = tmp_path / "m.yaml"
    f.write_text(f"""name: m
sources:
  fwe: {{format: jsonl, paths: '{tmp_path}/fwe.jsonl'}}
  dclm: {{format: jsonl, paths: '{tmp_path}/dclm.jsonl'}}
stages:
  ingest: {{}}
  mix: {mix}
  tokenize: {{}}
""")
    return f


def _error(tmp_path, mix: str) -> str:
    f = _recipe(tmp_path, mix)
    with pytest.raises(ConfigError) as info:
        load_pipeline(f, [])
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{f}: stages.mix")
    return message.removeprefix(f"{f}: ")


@pytest.mark.parametrize("mix, expected", [
    ("{weights: {fwe: 4.0}}", "stages.mix.weights: no weight for dclm; every source needs one (dclm: 0 leaves it out of the mixture)"),
    ("{tokens: {dclm: 1.0e6}}", "stages.mix.tokens: no token target for fwe; every source needs one (fwe: 0 leaves it out of the mixture)"),
    ("{weights: {fwe: 0, dclm: 0}}", "stages.mix.weights: every weight is 0: nothing would be mixed"),
    ("{epochs: {fwe: 20}}", "stages.mix.epochs.fwe: 20 epochs is more than allow_epochs 16 (past about 16 epochs repeated tokens "
                            "add almost nothing); to allow it, set allow_epochs: 20"),
    ("{maximize: effective_tokens}", "stages.mix.total_tokens: missing; maximize: effective_tokens needs the mixture's size in tokens"),
    ("{maximize: tokens, total_tokens: 1.0e6}", "stages.mix.maximize: expected one of effective_tokens, got string 'tokens'"),
    ("{maximize: effective_tokens, weights: {fwe: 1, dclm: 1}, total_tokens: 1.0e6}",
     "stages.mix: give one of weights, tokens, epochs, maximize (got weights, maximize)"),
    ("{maximize: effective_tokens, total_tokens: 1.0e6, max_epochs: {fwe: 4}}",
     "stages.mix.max_epochs: no cap for dclm; name every source, or give one number for all"),
    ("{maximize: effective_tokens, total_tokens: 1.0e6, max_epochs: 32}",
     "stages.mix.max_epochs: 32 epochs is more than allow_epochs 16 (past about 16 epochs repeated tokens add almost nothing); "
     "to allow it, set allow_epochs: 32"),
    ("{maximize: effective_tokens, total_tokens: 1.0e6, quality: {fwe: 2, dlcm: 1}}",
     "stages.mix.quality.dlcm: not a source; sources are fwe, dclm"),
    ("{maximize: effective_tokens, total_tokens: 1.0e6, quality: {fwe: 2}}",
     "stages.mix.quality: no quality for dclm; every source needs one (dclm: 0 leaves it out of the mixture)"),
    ("{weights: {fwe: 1, dclm: 1}, max_epochs: 4}", "stages.mix.max_epochs: only goes with maximize: effective_tokens"),
    ("{epochs: {fwe: 2}, total_tokens: 1.0e6}", "stages.mix.total_tokens: only goes with weights or maximize"),
])
def test_mix_configuration_mistakes_are_one_line_at_load(tmp_path, mix, expected):
    assert _error(tmp_path, mix) == expected


def test_valid_mix_configurations_load(tmp_path):
    for mix in ("{weights: {fwe: 4.0, dclm: 0}}", "{epochs: {fwe: 2.0}}", "{epochs: {fwe: 20}, allow_epochs: 20}",
                "{maximize: effective_tokens, total_tokens: 5.0e6, max_epochs: {fwe: 8, dclm: 4}, quality: {fwe: 1.5, dclm: 1}}"):
        step = next(s for s in load_pipeline(_recipe(tmp_path, mix), []).stages if s.name == "mix")
        assert step.options["allow_epochs"] in (16.0, 20.0)
