"""`curate why`: one document's story from the run directory alone, with the evidence each kind of step recorded (a
filter's failing values, a dedup's kept twin, classifier scores, dual-use terms, an eval item's matched passage, the
PII spans replaced, the mix's downsampling) and, for a kept document, where its tokens are."""

from __future__ import annotations

import json
import os

from pathlib import Path

import duckdb
import numpy as np
import pytest
import yaml

from curate.cli import main
from curate.rundir.views import connect
from curate.tokens.megatron import read_megatron
from curate.why import command, story

from conftest import ZYDA2, run_cli


@pytest.fixture(scope="module")
def run(sample_dir, tmp_path_factory):
    """The zyda2 recipe on the sample with every step on: each kind of step removes or edits some documents."""
    out = tmp_path_factory.mktemp("why") / "run"
    before = os.environ.get("CURATE_SAMPLE")
    os.environ["CURATE_SAMPLE"] = str(sample_dir)
    try:
        assert run_cli(ZYDA2, "--output", out, "--inline", "-q", "--no-report", "--set", "stages.pii.enabled=true",
                       "--set", "stages.dual_use.enabled=true", "--set", "stages.decontaminate.enabled=true") == 0
    finally:
        os.environ.pop("CURATE_SAMPLE") if before is None else os.environ.__setitem__("CURATE_SAMPLE", before)
    return out


def _one(run, sql: str) -> tuple:
    rows = duckdb.sql(sql.replace("LEDGER", f"read_parquet('{run}/ledger/*/*/*.parquet')")).fetchall()
    assert rows, sql
    return rows[0]


def _removed_by(run, stage: str, reason_like: str = "%") -> dict:
    source, doc = _one(run, f"SELECT source, id FROM LEDGER WHERE stage = '{stage}' AND reason LIKE '{reason_like}' ORDER BY id LIMIT 1")
    s = story(str(run), source, doc)
    assert s["status"] == f"removed by {stage}" and not s["tokens"]
    step = next(x for x in s["steps"] if x["step"] == stage)
    assert step["status"] == "removed" and step["reason"].startswith(reason_like.rstrip("%"))
    later = s["steps"][s["steps"].index(step) + 1:]
    assert {x["status"] for x in later} <= {"not reached"}
    return step


def test_a_filtered_document_shows_the_failing_signal_values(run):
    step = _removed_by(run, "quality_filter")
    assert step["reason"] == "where:int_score >= 3" and step["detail"].startswith("int_score=")


def test_a_deduplicated_document_names_its_kept_twin_and_similarity(run):
    step = _removed_by(run, "dedup")
    assert "kept " in step["detail"] and "similarity" in step["detail"]
    assert step["cluster"]["rep_id"] in step["detail"] and step["cluster"]["kept"] is False


def test_a_classified_document_shows_its_scores_and_label(run):
    step = _removed_by(run, "quality_model")
    (row,) = step["evidence"]["quality_model"]
    assert row["zyda2_quality_label"] == "Low" and 0 <= row["zyda2_quality_score"] <= 1


def test_a_dual_use_document_shows_its_terms_and_score(run):
    step = _removed_by(run, "dual_use")
    assert "terms:" in step["detail"] and "score" in step["detail"]
    assert step["evidence"]["dual_use"] and step.get("quarantined")


def test_a_decontaminated_document_shows_the_eval_item_and_the_matched_passage(run):
    step = _removed_by(run, "decontaminate", "decontaminate:%")
    rows = step["evidence"]["decontaminate"]
    flagged = [r for r in rows if r["flagged"]]
    assert flagged and flagged[0]["item"] in step["detail"] and flagged[0]["passage"] and flagged[0]["eval_text"]


def test_a_downsampled_document_shows_its_source_weight(run):
    step = _removed_by(run, "mix", "mix:downsampled")
    assert step["plan"]["weight"] is not None


def test_an_edited_document_shows_the_spans_replaced(run_stage):
    done = run_stage("pii", {"placeholders": {"email": "<EMAIL>"}},
                     docs={"web": ["write to ada.lovelace@engines.co.uk about it", "nothing to hide here"]})
    Path(done.run.pipeline_file).write_text(yaml.safe_dump(done.stage.pipeline.resolved, sort_keys=False))
    pii = next(x for x in story(done.run.root, "web", "web-0")["steps"] if x["use"] == "pii")
    (edit,) = pii["edits"]
    assert pii["status"] == "edited" and edit["kind"] == "email" and edit["placeholder"] == "<EMAIL>"
    assert (edit["start"], edit["end"]) == (9, 35)
    assert next(x for x in story(done.run.root, "web", "web-1")["steps"] if x["use"] == "pii")["status"] == "passed"


def test_a_kept_document_says_where_its_tokens_are(run, capsys):
    source, doc = connect(str(run)).sql("SELECT source, id FROM tokens WHERE copies = 1 ORDER BY id LIMIT 1").fetchall()[0]
    (tokens,) = _one(run, f"SELECT tokens FROM read_parquet('{run}/tokenize/{source}/*.parquet') WHERE id = '{doc}'")
    s = story(str(run), source, doc)
    assert next(x for x in s["steps"] if x["step"] == "tokenize")["tokens"] == {"tokens": len(tokens), "copies": 1}
    assert s["status"] == "kept" and s["input"] and s["steps"][0]["status"] == "passed"
    chunks = [t for t in s["tokens"] if t["format"] == "megatron"]
    assert sum(c["length"] for c in chunks) == len(tokens)
    stream = read_megatron(str(run / "pack" / source)).tokens
    for c in chunks:   # the tokens where it says they are are the document's own
        assert np.array_equal(stream[c["token"]: c["token"] + c["length"]], tokens[c["doc_offset"]: c["doc_offset"] + c["length"]])
    assert main(["why", str(run), source, doc]) == 0
    out = capsys.readouterr().out
    assert f"tokenize (tokenize): passed: {len(tokens)} tokens x 1 copies" in out
    assert f"{source} {doc}: kept" in out and f"curate trace {run} pack/{source} --sequence {chunks[0]['sequence']}" in out
    assert main(["why", str(run), source, doc, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == s["tokens"]


def test_an_unknown_document_is_one_line(run, capsys):
    assert main(["why", str(run), "fwe", "no-such-id"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no document 'no-such-id' in source 'fwe'" in err
    assert main(["why", str(run), "nope", "x"]) == 2
    assert "sources: dclm, dolma_cc, fwe, zyda" in capsys.readouterr().err


def test_the_command_quotes_what_a_shell_would_split():
    assert command("dclm", "<urn:uuid:1>", "runs/z") == "curate why runs/z dclm '<urn:uuid:1>'"
