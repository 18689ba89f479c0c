"""Each step owns its table: two signals steps coexist, the filter reads the later one, the load check names
the step to add (the issue's `dt_words` case), and a step cannot be named after a run folder."""

import json

import pytest

from conftest import run_cli
from curate.config.pipeline import load_pipeline
from curate.errors import ConfigError
from curate.query import query
from curate.stages.registry import STAGES

TEXT = "The cat sat on the mat. It was a sunny day and the birds sang in the old oak tree by the river."


def _pipeline(tmp_path, steps: str):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": " ".join([TEXT] * i) or "short"}) + "\n" for i in range(6)))
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  a: {{format: jsonl, paths: '{src}'}}\nstages:\n  ingest: {{}}\n{steps}")
    return f


def test_two_signals_steps_coexist(tmp_path):
    f = _pipeline(tmp_path, "  signals: {langid: false}\n  more_signals: {use: signals, langid: false}\n"
                            "  filter: {where: {all: 'rps_doc_word_count >= 20'}}\n")
    [step] = [s for s in load_pipeline(f, None, STAGES).stages if s.kind == "filter"]
    assert step.upstream == {"docs": "ingest", "tables.signals": "signals", "tables.more_signals": "more_signals"}, \
        "both tables the filter reads are part of its fingerprint (a changed signals step recomputes it)"
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "signals" / "a").glob("*.parquet")) == sorted(p.name for p in (run / "more_signals" / "a").glob("*.parquet"))
    count = lambda sql: int(query(str(run), sql, fmt="csv").splitlines()[1])
    assert count("SELECT count(*) FROM signals") == 12, "the `signals` view holds both steps' rows"
    assert count("SELECT count(*) FROM more_signals") == 6
    kept, removed = count("SELECT count(*) FROM kept"), count("SELECT count(*) FROM ledger")
    assert (kept, removed) == (5, 1) and kept + removed == 6   # d0 ('short') only: kept + ledger == input


def test_dt_words_without_a_signals_step_fails_at_load(tmp_path):
    f = _pipeline(tmp_path, "  filter: {recipes: {all: [fineweb]}}\n")
    with pytest.raises(ConfigError, match=r"reads column dt_words, which no earlier step writes; add a `signals` step before 'filter'"):
        load_pipeline(f, None, STAGES)
    f = _pipeline(tmp_path, "  signals: {datatrove_words: false}\n  filter: {recipes: {all: [fineweb]}}\n")
    with pytest.raises(ConfigError, match="reads column dt_words"):
        load_pipeline(f, None, STAGES)
    load_pipeline(_pipeline(tmp_path, "  signals: {}\n  filter: {recipes: {all: [fineweb]}}\n"), None, STAGES)


def test_a_step_table_cannot_take_a_run_folder_name(tmp_path):
    with pytest.raises(ConfigError, match="'ledger' is a folder of every run; rename the step"):
        load_pipeline(_pipeline(tmp_path, "  ledger: {use: signals}\n"), None, STAGES)
