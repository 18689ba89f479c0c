"""The pii stage: edits recorded span by span, later steps (a filter, tokenize, kept, manifest) see the edited
text, nothing removed, and a run with nothing to edit is byte-identical to one without the step."""

import hashlib
import json
import os
import subprocess
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.errors import ConfigError
from curate.rundir.edits import apply_spans

from conftest import ZYDA2, env_with, kill_9_when, run_cli, tree_digest

WEB = [
    {"id": "w0", "text": "Contact: jane.doe@mail.example-shop.com or 8.8.8.8. Thanks!", "lang": "en"},
    {"id": "w1", "text": "No address here, just version 1.2.3.4 and 10.0.0.1.", "lang": "en"},
    {"id": "w2", "text": "IPv6 2a00:1450:4007:80e::200e, and again jane.doe@mail.example-shop.com", "lang": "en"},
    {"id": "w3", "text": "This one is filtered out: bob@company.io", "lang": "de"},
]
FORUM = [{"id": f"f{i}", "text": f"post {i} by user{i}@forum-mail.net from 9.9.{i}.1" if i % 3 == 0 else f"post {i}: nothing", "lang": "en"}
         for i in range(12)]
P = {"email": "<EMAIL>", "ipv4": "<IP>", "ipv6": "<IP6>"}
EDITED = {"w0": "Contact: <EMAIL> or <IP>. Thanks!", "w1": WEB[1]["text"], "w2": "IPv6 <IP6>, and again <EMAIL>",
          **{f"f{i}": f"post {i} by <EMAIL> from <IP>" if i % 3 == 0 else f"post {i}: nothing" for i in range(12)}}


def test_the_stage_records_every_span_and_removes_nothing(run_stage):
    r = run_stage("pii", {"placeholders": P}, docs={"web": WEB, "forum": FORUM}, shard_rows=5)
    edits = r.table("edits", "pii").sort_by([("source", "ascending"), ("id", "ascending"), ("start", "ascending")])
    assert edits.column_names == ["source", "id", "kind", "start", "end", "placeholder", "original_sha256"], "no original by default"
    originals = {d["id"]: d["text"] for d in WEB + FORUM}
    spans: dict = {}
    for row in edits.to_pylist():
        original = originals[row["id"]][row["start"]:row["end"]]
        assert row["original_sha256"] == hashlib.sha256(original.encode()).hexdigest()
        spans.setdefault(row["id"], []).append((row["start"], row["end"], row["placeholder"]))
    for doc_id, text in originals.items():
        assert apply_spans(text, spans.get(doc_id, [])) == (EDITED.get(doc_id) or "This one is filtered out: <EMAIL>"), doc_id
    assert all(c["in"] == c["kept"] and not c["removed"] for c in r.counts)
    total = lambda key: sum(c.get(key, 0) for c in r.counts)  # noqa: E731
    assert (total("edited"), total("spans:email"), total("spans:ipv4"), total("spans:ipv6")) == (7, 7, 5, 1)


def test_keep_original_stores_it(run_stage):
    r = run_stage("pii", {"keep_original": True}, docs={"web": WEB[:1]})
    assert r.table("edits", "pii").column("original").to_pylist() == ["jane.doe@mail.example-shop.com", "8.8.8.8"]


@pytest.mark.parametrize("options, message", [
    ({"kinds": ["email", "mac"]}, "stages.pii.kinds"),
    ({"kinds": []}, "nothing to look for"),
    ({"patterns": {"email": "x"}}, "other than the built-in kinds"),
    ({"patterns": {"any": "a*"}}, "matches the empty string"),
    ({"patterns": {"bad": "(unclosed"}}, "not a regular expression"),
    ({"patterns": {"wb": r"\b"}}, "stages.pii.patterns.wb: .* matches the empty string"),   # zero-width only: edits nothing
    ({"patterns": {"ahead": "(?=a)"}}, "matches the empty string"),
    ({"pattern_timeout": 0}, "stages.pii.pattern_timeout"),
    ({"placeholders": {"phone2": "x"}}, "no such kind"),
])
def test_options_are_checked_in_one_line(run_stage, options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        run_stage("pii", options)


def test_a_pattern_of_yours_redacts_where_python_matches(run_stage):
    """RE2 read the pattern itself as the prefilter, and its `$` does not match before a final newline: no edit."""
    r = run_stage("pii", {"patterns": {"tk": "TICKET-[0-9]{6}$"}}, docs={"web": [{"id": "a", "text": "see TICKET-123456\n"}]})
    assert r.table("edits", "pii").select(["id", "kind", "start", "end"]).to_pylist() == [{"id": "a", "kind": "tk", "start": 4, "end": 17}]


def test_a_document_a_pattern_runs_away_on_is_removed_and_named(run_stage, caplog):
    docs = {"web": [{"id": "ok", "text": "aab and a@b.io"}, {"id": "slow", "text": "a" * 60 + "!"}, {"id": "none", "text": "x"}]}
    with caplog.at_level("WARNING", logger="curate"):
        r = run_stage("pii", {"patterns": {"rx": "(a|aa)+b"}, "pattern_timeout": 0.05}, docs=docs)
    ledger = r.ledger().to_pylist()
    assert [(row["id"], row["reason"]) for row in ledger] == [("slow", "pii_timeout")]
    assert "pattern 'rx' ran past its 0.05 s budget" in ledger[0]["detail"]
    assert "pii: document slow removed (pii_timeout)" in caplog.text
    assert sorted(r.table("edits", "pii").column("id").to_pylist()) == ["ok", "ok"], "the other documents are edited"
    assert [(c["in"], c["kept"], c["removed"]) for c in r.counts] == [(3, 2, {"pii_timeout": 1})]
    from curate.stages.edit import edit_counts, removal_lines

    assert removal_lines("pii", edit_counts(r.counts)) == [
        "WARNING: pii: 1 document removed (pii_timeout): curate query RUN \"SELECT * FROM ledger WHERE reason = 'pii_timeout'\" names them and why"]


def _write_corpus(root, docs: dict) -> None:
    for source, rows in docs.items():
        os.makedirs(root / source, exist_ok=True)
        for n in range(0, len(rows), 5):
            pq.write_table(pa.Table.from_pylist(rows[n:n + 5]), root / source / f"part-{n // 5:03d}.parquet")


PIPELINE = """name: p
sources:
  web: {{format: parquet, paths: '{root}/web/*.parquet'}}
  forum: {{format: parquet, paths: '{root}/forum/*.parquet'}}
stages:
  ingest: {{}}
{pii}  drop_german: {{use: filter, where: {{all: "lang != 'de'"}}}}
  tokenize: {{tokenizer: gpt2}}
  pack: {{seq_len: 64, formats: [megatron]}}
  manifest: {{}}
"""
PII = "  pii:\n    placeholders: {email: '<EMAIL>', ipv4: '<IP>', ipv6: '<IP6>'}\n"


def _pipeline(tmp_path, name: str, docs: dict, pii: bool):
    _write_corpus(tmp_path / f"in-{name}", docs)
    f = tmp_path / f"{name}.yaml"
    f.write_text(PIPELINE.format(root=tmp_path / f"in-{name}", pii=PII if pii else ""))
    return f


def _outputs(run) -> dict:
    digest = tree_digest(run, ("kept", "tokenize", "pack"))
    digest.update({p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((run / "pack").glob("*.bin"))})
    return digest


def test_later_steps_see_the_edited_text_and_the_run_shows_the_edits(tmp_path, capsys):
    """kept/ and tokens of a run with pii over the originals equal, byte for byte, those of a run without pii over
    the texts edited by hand; the query view, the summary and the report show the edits."""
    assert run_cli(_pipeline(tmp_path, "pii", {"web": WEB, "forum": FORUM}, True), "--output", tmp_path / "a", "--inline") == 0
    out = capsys.readouterr().out
    assert "pii: 7 of 16 documents edited (43.8%); spans: email 7, ipv4 5, ipv6 1" in out
    by_hand = {"web": [{**d, "text": EDITED.get(d["id"], d["text"])} for d in WEB], "forum": [{**d, "text": EDITED[d["id"]]} for d in FORUM]}
    assert run_cli(_pipeline(tmp_path, "hand", by_hand, False), "--output", tmp_path / "b", "--inline", "-q") == 0
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")
    kept = [t for (t,) in duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/a/kept/*/*.parquet') ORDER BY text").fetchall()]
    assert kept == sorted(EDITED.values()), "w3 filtered out; every other text edited"
    docs = [t for (t,) in duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/a/docs/*/*.parquet') ORDER BY text").fetchall()]
    assert docs == sorted(d["text"] for d in WEB + FORUM), "docs/ stays as ingested"

    from curate.rundir.views import connect

    con = connect(str(tmp_path / "a"))
    assert con.sql("SELECT kind, count(*) FROM edits GROUP BY kind ORDER BY kind").fetchall() == [("email", 7), ("ipv4", 5), ("ipv6", 1)]
    assert con.sql("SELECT count(DISTINCT id) FROM pii").fetchall() == [(7,)], "w3 was edited too, before the filter removed it"
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    row = [r for r in summary if r["stage"] == "pii" and r["source"] == "forum"][0]
    assert row["in"] == row["kept"] == 12 and row["edits"] == {"documents": 4, "spans": {"email": 4, "ipv4": 4}}
    html = (tmp_path / "a" / "report.html").read_text()
    section = html[html.index('<section id="pii">'):]
    section = section[:section.index("</section>")]
    assert "documents edited" in section and "original sha256" in section and "&lt;EMAIL&gt;" in section and "jane.doe" not in html
    assert "bob@company.io" not in html and "This one is filtered out: &lt;EMAIL&gt;" in html, "removed examples show the edited text"


def test_with_nothing_to_edit_the_outputs_are_those_of_a_run_without_the_step(tmp_path):
    clean = {"web": [{**d, "text": EDITED.get(d["id"], "filtered out: <EMAIL>")} for d in WEB],
             "forum": [{**d, "text": EDITED[d["id"]]} for d in FORUM]}
    assert run_cli(_pipeline(tmp_path, "on", clean, True), "--output", tmp_path / "on", "--inline", "-q") == 0
    assert run_cli(_pipeline(tmp_path, "off", clean, False), "--output", tmp_path / "off", "--inline", "-q") == 0
    assert _outputs(tmp_path / "on") == _outputs(tmp_path / "off")
    edits = list((tmp_path / "on" / "edits").rglob("*.parquet"))
    assert len(edits) == 4 and all(pq.read_metadata(f).num_rows == 0 for f in edits), "one empty edits file per docs shard"


def test_a_pii_step_after_tokenize_is_refused(tmp_path, capsys):
    f = tmp_path / "late.yaml"
    _write_corpus(tmp_path / "in", {"web": WEB})
    f.write_text(f"name: p\nsources:\n  web: {{format: parquet, paths: '{tmp_path}/in/web/*.parquet'}}\n"
                 "stages:\n  ingest: {}\n  tokenize: {tokenizer: gpt2}\n  pii: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert "edits text after step 'tokenize' tokenized it" in capsys.readouterr().err


@pytest.mark.slow  # kill -9
def test_kill_9_mid_pii_resumes_to_identical_outputs(tmp_path):
    docs = {s: [{"id": f"d{i}", "text": f"doc {i} mail u{i}@site{i % 7}.org ip 8.8.{i % 250}.8", "lang": "en"} for i in range(60)]
            for s in ("web", "forum")}
    f = _pipeline(tmp_path, "kill", docs, True)
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(f), "--output", str(run), "--inline", "-q", "--set", "execution.batch_rows=8"]
    kill_9_when(cmd, lambda: list((run / "_state" / "pii" / "shards").rglob("*.json")), 120)
    assert subprocess.run(cmd, env=env_with()).returncode == 0
    assert run_cli(f, "--output", tmp_path / "clean", "--inline", "-q", "--set", "execution.batch_rows=8") == 0
    assert tree_digest(run, ("kept", "edits", "ledger")) == tree_digest(tmp_path / "clean", ("kept", "edits", "ledger"))


def test_the_step_is_off_in_zyda2_until_enabled_and_comes_before_mix_and_tokenize(sample_env):
    from curate import load_pipeline

    assert "pii" not in [s.name for s in load_pipeline(ZYDA2).stages]
    steps = [s.name for s in load_pipeline(ZYDA2, ["stages.pii.enabled=true"]).stages]
    assert steps.index("dedup") < steps.index("quality_model") < steps.index("pii") < steps.index("mix") < steps.index("tokenize")


def test_a_sound_dedup_after_pii_checks_the_edited_texts(run_stage):
    """Two pages that differ only in their addresses are duplicates once edited: MinHash sees the edited text, and so
    must the sound mode's exact Jaccard (which reads the docs shards itself), else it would refuse the removal."""
    body = "The annual meeting of the regional beekeeping association will be held in the town hall this spring. " * 3
    docs = {s: [{"id": f"{s}-0", "text": body + " ".join(f"{s}.member{i}@assoc-{s}.org" for i in range(12))}] for s in ("a", "b")}
    r = run_stage("dedup", {"margin": 1.0, "threshold": 0.9}, docs=docs,
                  before=[("pii", {"placeholders": {"email": "<EMAIL>"}}), ("minhash", {})])
    ledger = r.ledger()
    assert ledger.column("id").to_pylist() == ["b-0"] and ledger.column("reason").to_pylist() == ["minhash_duplicate_of:a"]
    assert "similarity 1.000" in ledger.column("detail")[0].as_py()


def test_new_placeholders_recompute_the_steps_after_it(tmp_path):
    f = _pipeline(tmp_path, "p", {"web": WEB, "forum": FORUM}, True)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.pii.placeholders.email=<MAIL>") == 0
    kept = [t for (t,) in duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/run/kept/*/*.parquet') ORDER BY text").fetchall()]
    assert kept == sorted(t.replace("<EMAIL>", "<MAIL>") for t in EDITED.values())
    edits = duckdb.sql(f"SELECT DISTINCT placeholder FROM read_parquet('{tmp_path}/run/edits/pii/*/*.parquet') ORDER BY 1").fetchall()
    assert edits == [("<IP6>",), ("<IP>",), ("<MAIL>",)]


def test_switching_the_step_off_removes_its_edits_and_restores_the_text(tmp_path):
    f = _pipeline(tmp_path, "p", {"web": WEB, "forum": FORUM}, True)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert list((tmp_path / "run" / "edits" / "pii").rglob("*.parquet"))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.pii.enabled=false") == 0
    assert not (tmp_path / "run" / "edits" / "pii").exists()
    kept = [t for (t,) in duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/run/kept/*/*.parquet') ORDER BY text").fetchall()]
    assert kept == sorted(d["text"] for d in WEB + FORUM if d["id"] != "w3")
