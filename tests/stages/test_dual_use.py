"""The dual_use stage on the sample's planted demonstration topic (beekeeping, a harmless stand-in)."""

import json
import subprocess
import sys

import duckdb
import pytest

from curate.models.fasttext_model import FastTextModel

from conftest import ZYDA2, env_with, kill_9_when, run_cli, tree_digest
from stages.test_classify import pipeline

DUAL_USE = """  dual_use:
    model: {{kind: fasttext, path: '{sample}/models/dual_use_demo.bin', label: flag}}
"""


def sql(run, q):
    return duckdb.sql(q.replace("RUN", str(run))).fetchall()


@pytest.fixture
def calls(monkeypatch):
    """Documents the classifier is asked to score (inline runs share this process)."""
    seen = []
    original = FastTextModel.score

    def score(self, texts):
        seen.extend(texts.to_pylist())
        return original(self, texts)

    monkeypatch.setattr(FastTextModel, "score", score)
    return seen


@pytest.fixture
def topic(sample_dir):
    truth = json.loads((sample_dir / "truth.json").read_text())
    return {doc_id: kind for per_source in truth["topic"].values() for doc_id, kind in per_source.items()}


def test_the_demo_funnel_escalates_the_topic_and_flags_the_how_to_pages(tmp_path, sample_dir, topic, calls):
    f = pipeline(tmp_path, sample_dir, DUAL_USE.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    run = tmp_path / "run"
    rows = {r[0]: r[1:] for r in sql(run, "SELECT id, blocklist_hits, escalated, classifier_score, flagged, decided_by "
                                          "FROM read_parquet('RUN/dual_use/*/*.parquet')")}
    live = sql(run, "SELECT count(*) FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)")[0][0]
    assert len(rows) == live
    escalated = {i for i, r in rows.items() if r[1]}
    assert escalated == {i for i, k in topic.items() if k in ("howto", "story")}, "two or more distinct terms escalate"
    assert all(rows[i][0] == 1 and not rows[i][1] for i, k in topic.items() if k == "mention")
    assert len(calls) == len(escalated), "only escalated documents reach the classifier"
    flagged = {i for i, r in rows.items() if r[3]}
    assert flagged == {i for i, k in topic.items() if k == "howto"}, "the demo classifier flags the how-to pages"
    assert all(rows[i][4] == "classifier" and rows[i][2] > 0.5 for i in flagged)
    assert all(rows[i][4] == "blocklist" and rows[i][2] is None for i in rows if i not in escalated)
    # quarantine holds exactly the flagged documents, whole; the ledger names terms and score
    quarantine = dict(sql(run, "SELECT id, text FROM read_parquet('RUN/quarantine/*/*/*.parquet', union_by_name=true)"))
    docs = dict(sql(run, "SELECT id, text FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)"))
    assert set(quarantine) == flagged and all(quarantine[i] == docs[i] for i in flagged)
    ledger = sql(run, "SELECT id, reason, detail FROM read_parquet('RUN/ledger/dual_use/*/*.parquet')")
    assert {r[0] for r in ledger} == flagged and {r[1] for r in ledger} == {"dual_use:classifier"}
    assert all(r[2].startswith("terms: ") and "; score 0.9" in r[2] for r in ledger)
    kept = sql(run, "SELECT count(*) FROM read_parquet('RUN/kept/*/*.parquet', union_by_name=true)")[0][0]
    assert kept + len(ledger) == live
    # the cleared stories stay (backfill); without backfill every escalated document leaves
    assert run_cli(f, "--output", run, "--inline", "-q", "--set", "stages.dual_use.backfill=false") == 0
    reasons = dict(sql(run, "SELECT reason, count(*) FROM read_parquet('RUN/ledger/dual_use/*/*.parquet') GROUP BY 1"))
    assert reasons == {"dual_use:classifier": len(flagged), "dual_use:escalated": len(escalated - flagged)}


def test_a_model_that_fails_flags_its_documents_and_loses_nothing(tmp_path, sample_dir, topic, monkeypatch):
    original = FastTextModel.score

    def broken(self, texts):
        if any("oxalic acid" in (t or "") for t in texts.to_pylist()):
            raise RuntimeError("CUDA error: device-side assert triggered")
        return original(self, texts)

    monkeypatch.setattr(FastTextModel, "score", broken)
    f = pipeline(tmp_path, sample_dir, DUAL_USE.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    run = tmp_path / "run"
    rows = sql(run, "SELECT id, flagged, decided_by, classifier_score FROM read_parquet('RUN/dual_use/*/*.parquet') WHERE escalated")
    errors = {r[0] for r in rows if r[2] == "error"}
    texts = dict(sql(run, "SELECT id, text FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)"))
    assert errors == {r[0] for r in rows if "oxalic acid" in texts[r[0]]} and errors
    assert all(r[1] and r[3] is None for r in rows if r[2] == "error"), "an inference error flags the document (fail closed)"
    assert all(r[2] == "classifier" for r in rows if r[0] not in errors), "the rest of the batch is still scored"
    ledger = dict(sql(run, "SELECT id, reason FROM read_parquet('RUN/ledger/dual_use/*/*.parquet')"))
    assert {i for i, r in ledger.items() if r == "dual_use:error"} == errors
    live = sql(run, "SELECT count(*) FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)")[0][0]
    kept = sql(run, "SELECT count(*) FROM read_parquet('RUN/kept/*/*.parquet', union_by_name=true)")[0][0]
    assert kept + len(ledger) == live
    assert set(dict(sql(run, "SELECT id, 1 FROM read_parquet('RUN/quarantine/*/*/*.parquet', union_by_name=true)"))) == \
        {r[0] for r in rows if r[1]}
    # fail open on request: the errors are kept
    assert run_cli(f, "--output", run, "--inline", "-q", "--set", "stages.dual_use.fail_closed=false") == 0
    assert not {i for i, r in dict(sql(run, "SELECT id, reason FROM read_parquet('RUN/ledger/dual_use/*/*.parquet')")).items()
                if r == "dual_use:error"}


def test_new_thresholds_re_decide_from_stored_values(tmp_path, sample_dir, topic, calls):
    f = pipeline(tmp_path, sample_dir, DUAL_USE.format(sample=sample_dir))
    run = tmp_path / "run"
    assert run_cli(f, "--output", run, "--inline", "-q") == 0
    first = len(calls)
    assert run_cli(f, "--output", run, "--inline", "-q", "--set", "stages.dual_use.threshold=0.99999") == 0
    assert len(calls) == first, "a new threshold re-decides without the model"
    strict = sql(run, "SELECT count(*) FROM read_parquet('RUN/dual_use/*/*.parquet') WHERE flagged")[0][0]
    over = sql(run, "SELECT count(*) FROM read_parquet('RUN/dual_use/*/*.parquet') WHERE classifier_score > 0.99999")[0][0]
    assert strict == over
    assert run_cli(f, "--output", run, "--inline", "-q", "--set", "stages.dual_use.escalate_at=1") == 0
    mentions = {i for i, k in topic.items() if k == "mention"}
    texts = dict(sql(run, "SELECT id, text FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)"))
    assert sorted(calls[first:]) == sorted(texts[i] for i in mentions), "only the newly escalated documents are scored"


def test_two_dual_use_steps_each_quarantine_in_a_part_of_their_own(tmp_path, sample_dir, topic):
    model = DUAL_USE.format(sample=sample_dir).split("\n", 1)[1]
    both = "  strict:\n    use: dual_use\n    threshold: 0.9992\n" + model + DUAL_USE.format(sample=sample_dir)
    f = pipeline(tmp_path, sample_dir, both)
    run = tmp_path / "run"
    assert run_cli(f, "--output", run, "--inline", "-q") == 0
    from curate.query import connect

    by_step = dict(connect(str(run)).sql("SELECT step, list(id ORDER BY id) FROM quarantine GROUP BY 1").fetchall())
    for step in ("strict", "dual_use"):   # each part holds what its own step flagged, and only that
        assert by_step[step] and by_step[step] == sorted(dict(sql(run, f"SELECT id, 1 FROM read_parquet('RUN/ledger/{step}/*/*.parquet')")))
    assert set(by_step["strict"]) | set(by_step["dual_use"]) == {i for i, k in topic.items() if k == "howto"}
    # the strict step leaves the pipeline: its part goes, the other step's stays
    assert run_cli(pipeline(tmp_path, sample_dir, DUAL_USE.format(sample=sample_dir)), "--output", run, "--inline", "-q") == 0
    assert not (run / "quarantine" / "strict").exists()
    howto = sum(k == "howto" for k in topic.values())
    assert len(sql(run, "SELECT id FROM read_parquet('RUN/quarantine/dual_use/*/*.parquet')")) == howto


def test_the_stage_is_off_in_zyda2_until_enabled(sample_env):
    from curate import load_pipeline

    assert "dual_use" not in [s.name for s in load_pipeline(ZYDA2).stages]
    on = load_pipeline(ZYDA2, ["stages.dual_use.enabled=true", "stages.dual_use.terms=demo"])
    assert "dual_use" in [s.name for s in on.stages]


def test_a_missing_or_empty_term_file_fails_before_any_task_with_exit_2(tmp_path, sample_dir, capsys, monkeypatch):
    f = pipeline(tmp_path, sample_dir, "  dual_use: {terms: /no/such/terms.txt}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"curate: error: {f}: stages.dual_use.terms: blocklist term file /no/such/terms.txt: not found"
    (tmp_path / "empty.txt").write_text("# only a comment\n\n")
    f = pipeline(tmp_path, sample_dir, f"  dual_use: {{terms: {tmp_path / 'empty.txt'}}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert capsys.readouterr().err.strip().splitlines() == \
        [f"curate: error: {f}: stages.dual_use.terms: blocklist term file {tmp_path / 'empty.txt'}: no terms (only blank lines and # comments)"]
    monkeypatch.setitem(sys.modules, "s3fs", None)   # s3fs not installed
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)
    f = pipeline(tmp_path, sample_dir, "  dual_use: {terms: 's3://lists/terms.txt'}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"curate: error: {f}: stages.dual_use.terms: cannot read s3://lists/terms.txt: ImportError: ") and "s3fs" in line
    assert not (tmp_path / "run" / "docs").exists()


@pytest.mark.slow  # kill -9
def test_kill_9_mid_dual_use_resumes_to_identical_outputs(tmp_path, sample_dir):
    f = pipeline(tmp_path, sample_dir, DUAL_USE.format(sample=sample_dir))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(f), "--output", str(run), "--workers", "1", "-q",
           "--set", "execution.batch_rows=8"]
    kill_9_when(cmd, lambda: list((run / "_state" / "dual_use" / "scan").rglob("*.json")), 180)
    assert subprocess.run(cmd, env=env_with()).returncode == 0
    assert run_cli(f, "--output", tmp_path / "clean", "--inline", "-q", "--set", "execution.batch_rows=8") == 0
    parts = ("kept", "ledger", "dual_use", "quarantine")
    assert tree_digest(run, parts) == tree_digest(tmp_path / "clean", parts)
