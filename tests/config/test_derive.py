"""Derived defaults are resolved once at load into the step's options (so pipeline.yaml and the resume
fingerprints show them); a stage reads only its own options."""

from __future__ import annotations

import pytest

import curate
from curate.errors import ConfigError
from conftest import ZYDA2

SAMPLE = "/nonexistent/sample"


def load(*overrides: str, sample: bool = True):
    """zyda2 with its sources inside (or outside) `sample.dir`; nothing is read or made."""
    where = SAMPLE if sample else "/data"
    paths = [f"sources.{s}.paths={where}/{s}/*.parquet" for s in ("fwe", "dclm", "zyda", "dolma_cc")]
    return curate.load_pipeline(ZYDA2, [f"sample.dir={SAMPLE}", *paths, *overrides])


def test_mix_measures_with_the_tokenize_steps_tokenizer_unless_given():
    assert load().stage("mix").options["tokenizer"] == "gpt2"
    assert load("stages.tokenize.tokenizer=/tok/tokenizer.json").stage("mix").options["tokenizer"] == "/tok/tokenizer.json"
    given = load("stages.tokenize.tokenizer=/tok/tokenizer.json", "stages.mix.tokenizer=gpt2")
    assert given.stage("mix").options["tokenizer"] == "gpt2"
    assert given.resolved["stages"]["mix"]["tokenizer"] == "gpt2"  # pipeline.yaml shows it


def test_signals_add_dt_words_when_a_filter_rule_reads_them():
    assert load().stage("signals").options["datatrove_words"] is False
    recipe = load("stages.quality_filter.recipes={all: [gopher_quality]}")
    assert recipe.stage("signals").options["datatrove_words"] is True
    assert recipe.resolved["stages"]["signals"]["datatrove_words"] is True
    inline = load("stages.quality_filter.where={all: 'dt_words.n_words > 50'}")
    assert inline.stage("signals").options["datatrove_words"] is True
    with pytest.raises(ConfigError, match="dt_words"):  # switched off by hand while a rule reads it: refused at load
        load("stages.quality_filter.where={all: 'dt_words.n_words > 50'}", "stages.signals.datatrove_words=false")


def test_a_stand_in_model_stays_only_on_the_sample():
    on = load().stage("quality_model").options["models"]
    off = load(sample=False).stage("quality_model").options["models"]
    assert any(m["standin"] for m in on.values())
    assert all(m["standin"] is None for m in off.values())
    from curate.stages.model_choice import choose_models

    assert {n: c.replaces for n, c in choose_models(on).items()} == {n: m["path"] for n, m in on.items() if m["standin"]}
    assert all(c.replaces is None for c in choose_models(off).values())



def test_mix_finds_the_dedup_clusters_through_the_chain_not_by_scanning_steps():
    assert load().stage("mix").upstream["clusters"] == "dedup"
    assert "clusters" not in load("stages.dedup.enabled=false", "stages.quality_model.enabled=false").stage("mix").upstream
