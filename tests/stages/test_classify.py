"""The classify stage end to end on the sample corpus: scores, keep decisions, cascades, stand-ins, placement."""

import json
import re
import subprocess
import sys

import duckdb
import pytest

from curate.models.fasttext_model import FastTextModel
from curate.query import query

from conftest import ZYDA2, env_with, kill_9_when, run_cli, tree_digest

SOURCES = """
priority: [fwe, dclm, zyda, dolma_cc]
sources:
  fwe: {format: fineweb, paths: '{sample}/fwe/data/*/*.parquet'}
  dclm: {format: dclm, paths: '{sample}/dclm/global-shard_*/local-shard_*/*.jsonl.zst'}
  zyda: {format: zyda, paths: '{sample}/zyda/data/*/*.parquet'}
  dolma_cc: {format: dolma, paths: '{sample}/dolma_cc/data/*/*.json.gz'}
"""


def pipeline(tmp_path, sample, stages: str, name="p") -> str:
    f = tmp_path / f"{name}.yaml"
    f.write_text(f"name: {name}\n" + SOURCES.replace("{sample}", str(sample)) + "stages:\n  ingest: {}\n" + stages)
    return f


def sql(run, q):
    return duckdb.sql(q.replace("RUN", str(run))).fetchall()


QUALITY = """  quality:
    use: classify
    models:
      q: {{kind: fasttext, path: '{sample}/models/quality_standin.bin', sources: [zyda, dolma_cc]}}
    keep:
      zyda: "q_label = 'High'"
      dolma_cc: "q_label = 'High'"
"""


@pytest.fixture
def counted(monkeypatch):
    """Count the documents fastText models are asked to score (inline runs share this process)."""
    calls = []
    original = FastTextModel.score

    def score(self, texts):
        calls.append(len(texts))
        return original(self, texts)

    monkeypatch.setattr(FastTextModel, "score", score)
    return calls


def test_scores_decide_and_every_removal_is_in_the_ledger(tmp_path, sample_dir, counted):
    f = pipeline(tmp_path, sample_dir, QUALITY.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    run = tmp_path / "run"
    live = sql(run, "SELECT count(*) FROM read_parquet('RUN/docs/*/*.parquet', union_by_name=true)")[0][0]
    rows = sql(run, "SELECT split_part(filename, '/', -2), id, decided_by, q_label, q_score "
                    "FROM read_parquet('RUN/quality/*/*.parquet', filename=true)")
    assert len(rows) == live, "one scores row per live document"
    scored = [r for r in rows if r[0] in ("zyda", "dolma_cc")]
    # fastText's own probabilities can exceed 1 by float rounding (1.00001); curate reports them as fastText does
    assert scored and all(r[3] in ("High", "Low") and 0 <= r[4] <= 1.0001 and r[2] == "q" for r in scored)
    assert all(r[3] is None and r[2] is None for r in rows if r[0] in ("fwe", "dclm")), "only the model's sources are scored"
    assert sum(counted) == len(scored)
    ledger = sql(run, "SELECT id, reason, detail FROM read_parquet('RUN/ledger/quality/*/*.parquet')")
    low = {r[1] for r in scored if r[3] != "High"}
    assert {r[0] for r in ledger} == low and low
    assert all(r[1] == "classify:q" and r[2].startswith("q_score=") and "q_label=Low" in r[2] for r in ledger)
    kept = sql(run, "SELECT count(*) FROM read_parquet('RUN/kept/*/*.parquet', union_by_name=true)")[0][0]
    assert kept + len(ledger) == live
    # the junk pages the sample planted are what the stand-in model removes, mostly
    truth = json.loads((sample_dir / "truth.json").read_text())
    junk = {i for s in ("zyda", "dolma_cc") for i in truth["junk"][s]}
    assert len(junk & low) >= 0.8 * len(junk & {r[1] for r in scored})
    # scores are a view of `curate query`, and filter SQL can use them
    out = query(str(run), "SELECT count(*) AS n FROM scores WHERE q_label = 'Low'", fmt="json")
    assert json.loads(out)["n"] == len(low)


def test_changing_keep_reruns_the_decision_never_the_model(tmp_path, sample_dir, counted):
    f = pipeline(tmp_path, sample_dir, QUALITY.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    first = sum(counted)
    assert first > 0
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.quality.keep.zyda=q_score > 0.99") == 0
    assert sum(counted) == first, "a new keep predicate must not score anything again"
    ledger = sql(tmp_path / "run", "SELECT count(*) FROM read_parquet('RUN/ledger/quality/zyda/*.parquet')")[0][0]
    strict = sql(tmp_path / "run", "SELECT count(*) FROM read_parquet('RUN/quality/zyda/*.parquet') WHERE NOT q_score > 0.99")[0][0]
    assert ledger == strict
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.quality.models.q.max_chars=500") == 0
    assert sum(counted) == 2 * first, "a changed model setting scores again"


def test_a_resume_that_scores_nothing_does_not_say_it_scored(tmp_path, sample_dir, counted, capfd):
    f = pipeline(tmp_path, sample_dir, QUALITY.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 0
    first = sum(counted)
    assert f"scored {first:,} documents" in capfd.readouterr().err
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 0
    assert sum(counted) == first, "the resume scores nothing"
    out = capfd.readouterr()
    said = [line for line in (out.out + out.err).splitlines() if "quality: " in line]
    assert said and not any(re.search(r"scored [\d,]+ documents", line) for line in said), said
    assert any(f"the scores of {first:,} documents from an earlier run still hold" in line for line in said), said


CASCADE = """  quality:
    use: classify
    models:
      cheap: {{kind: fasttext, path: '{sample}/models/quality_standin.bin', max_chars: 300}}
      costly: {{kind: fasttext, path: '{sample}/models/quality_standin.bin', label: High}}
    cascade:
      - {{model: cheap, decides: "cheap_score > 0.97"}}
      - {{model: costly}}
    keep:
      all: "CASE decided_by WHEN 'cheap' THEN cheap_label = 'High' ELSE costly_score > 0.5 END"
"""


def test_a_cascade_decides_each_document_once_and_the_costly_model_sees_only_the_rest(tmp_path, sample_dir, capsys):
    f = pipeline(tmp_path, sample_dir, CASCADE.format(sample=sample_dir))
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 0
    run = tmp_path / "run"
    rows = sql(run, "SELECT id, decided_by, cheap_score, costly_score FROM read_parquet('RUN/quality/*/*.parquet')")
    by = {r[1] for r in rows}
    assert by == {"cheap", "costly"}, "both models decide some documents"
    for _doc, decided_by, cheap, costly in rows:
        assert cheap is not None
        if decided_by == "cheap":
            assert cheap > 0.97 and costly is None, "the costly model never sees what the cheap one decided"
        else:
            assert cheap <= 0.97 and costly is not None
    costly_ids = {r[0] for r in sql(run, "SELECT id FROM read_parquet('RUN/_work/quality/models/costly/*/*.parquet')")}
    assert costly_ids == {r[0] for r in rows if r[1] == "costly"}
    err = capsys.readouterr()
    assert "model cheap (fasttext" in err.err and "model costly (fasttext" in err.err
    assert "CPU-h per billion docs" in err.out
    # audit: every cascade model on every document, the same decisions
    assert run_cli(f, "--output", tmp_path / "audit", "--inline", "-q", "--set", "stages.quality.audit=true") == 0
    audit = sql(tmp_path / "audit", "SELECT id, decided_by, costly_score FROM read_parquet('RUN/quality/*/*.parquet')")
    assert all(r[2] is not None for r in audit)
    assert {(r[0], r[1]) for r in audit} == {(r[0], r[1]) for r in rows}
    assert tree_digest(tmp_path / "audit", ("kept", "ledger")) == tree_digest(run, ("kept", "ledger"))


def test_a_model_that_cannot_load_stops_the_run_before_any_task(tmp_path, sample_dir, capsys):
    bad = QUALITY.format(sample=sample_dir).replace("quality_standin.bin", "missing.bin")
    assert run_cli(pipeline(tmp_path, sample_dir, bad), "--output", tmp_path / "run", "--inline", "-q") == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("curate: error: model 'q' (kind fasttext, path ") and "missing.bin" in last
    assert not (tmp_path / "run" / "docs").exists()


def test_zyda2_on_the_sample_uses_and_names_the_stand_in(sample_env, tmp_path, capsys):
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline") == 0
    out = capsys.readouterr().out
    assert "NOTE: model zyda2_quality is the sample's stand-in, not nvidia/quality-classifier-deberta" in out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    model = manifest["models"]["quality_model.zyda2_quality"]
    assert model["standin"] is True and model["replaces"] == "nvidia/quality-classifier-deberta"
    assert model["kind"] == "fasttext" and model["documents"] > 0
    reasons = sql(tmp_path / "run", "SELECT DISTINCT source, reason FROM read_parquet('RUN/ledger/quality_model/*/*.parquet')")
    assert {r[0] for r in reasons} == {"zyda", "dolma_cc"} and {r[1] for r in reasons} == {"classify:zyda2_quality"}


@pytest.mark.slow  # an embedded Ray cluster that offers a GPU
def test_model_actors_go_to_the_gpu_ray_offers_and_run_on_cpu_without_cuda(tmp_path, sample_dir):
    import ray

    import curate
    from curate.runner.progress import Progress

    stages = QUALITY.format(sample=sample_dir).replace("sources: [zyda, dolma_cc]}", "sources: [zyda, dolma_cc], "
                                                       "resources: {num_cpus: 1, num_gpus: 1}}")
    stages += "  tokenize: {resources: {num_cpus: 1, num_gpus: 0.5}}\n"   # two tokenize actors share the GPU node
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False)
    try:
        curate.run_pipeline(curate.load_pipeline(pipeline(tmp_path, sample_dir, stages)), str(tmp_path / "run"),
                            progress=Progress(quiet=True))
    finally:
        ray.shutdown()
    markers = [json.loads(p.read_text()) for p in (tmp_path / "run" / "_state" / "quality" / "model-q").rglob("*.json")]
    assert markers and all(m["gpus"] == ["0"] for m in markers), "every model actor holds the GPU"
    assert all(m["device"] == "cpu" for m in markers)
    tokenize = [json.loads(p.read_text()) for p in (tmp_path / "run" / "_state" / "tokenize").rglob("*.json")]
    tokenize = [m for m in tokenize if "gpus" in m]
    assert tokenize and all(m["gpus"] == ["0"] for m in tokenize), "the tokenize pool is placed where its resources ask"


@pytest.mark.slow  # kill -9
def test_kill_9_mid_classify_resumes_to_identical_scores_and_outputs(tmp_path, sample_dir):
    f = pipeline(tmp_path, sample_dir, QUALITY.format(sample=sample_dir) + "  mix: {epochs: {zyda: 2.0}}\n  tokenize: {}\n"
                 "  pack: {}\n  manifest: {}\n")
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(f), "--output", str(run), "--workers", "1", "-q",
           "--set", "execution.batch_rows=8", "--set", "stages.quality.models.q.batch_docs=8"]
    kill_9_when(cmd, lambda: list((run / "_state" / "quality" / "model-q").rglob("*.json")), 180)
    assert not (run / "summary.json").exists()
    assert subprocess.run(cmd, env=env_with()).returncode == 0
    assert run_cli(f, "--output", tmp_path / "clean", "--inline", "-q", *cmd[cmd.index("--set"):]) == 0
    parts = ("kept", "ledger", "quality")   # the classify step's table: RUN/<step>/
    assert tree_digest(run, parts) == tree_digest(tmp_path / "clean", parts)
    assert [p.name for p in (run / "pack").glob("*.bin")] and all(
        p.read_bytes() == (tmp_path / "clean" / "pack" / p.name).read_bytes() for p in (run / "pack").glob("*.*"))
