"""`curate diff`: two runs of the same inputs compared; a threshold change names exactly the documents it moved and
nothing else, and runs that differ only in where they ran diff as identical."""

from __future__ import annotations

import json
from pathlib import Path

from curate.cli import main
from curate.diff import diff

from conftest import run_cli

TEXTS = [f"note {i}: " + "lorem ipsum " * (i % 9) for i in range(80)]


def _pipeline(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    f = tmp_path / "p.yaml"
    f.write_text(f"name: d\nsources:\n  web: {{format: jsonl, paths: '{tmp_path}/in/*.jsonl'}}\nstages:\n  ingest: {{}}\n"
                 "  short: {use: filter, where: {all: 'length(text) > 40'}}\n  tokenize: {tokenizer: gpt2}\n"
                 "  pack: {seq_len: 32}\n  manifest: {}\n")
    return f


def test_a_threshold_change_names_exactly_the_documents_it_moved(tmp_path, capsys):
    f = _pipeline(tmp_path)
    assert run_cli(f, "--output", tmp_path / "a", "--inline", "-q") == 0
    assert run_cli(f, "--output", tmp_path / "b", "--inline", "-q", "--set", "stages.short.where.all=length(text) > 60") == 0
    d = diff(str(tmp_path / "a"), str(tmp_path / "b"), examples=100)
    moved = sorted(f"web/a.jsonl/{i}" for i, t in enumerate(TEXTS) if 40 < len(t) <= 60)
    assert moved and not d["identical"]
    (group,) = d["decisions"]
    assert group["change"] == "kept -> removed" and group["b"] == {"step": "short", "reason": "where:length(text) > 60"}
    assert group["count"] == len(moved) and sorted(e["id"] for e in group["examples"]) == moved
    assert all(e["a"] is None and e["b"] for e in group["examples"])
    assert d["pipeline"] == [{"key": "stages.short.where.all", "a": "length(text) > 40", "b": "length(text) > 60"}]
    assert d["documents_only_in"] == {"a": 0, "b": 0} and d["versions"] == []
    assert [f["own"] for f in d["fingerprints"] if f["step"] == "short"] == [["options.where", "reads.rules"]]
    assert {(f["step"], p) for f in d["fingerprints"] if f["step"] != "short" for p in f["own"]} == {("manifest", "pipeline.resolved")}
    (restated,) = d["restated"]   # removed by the short filter in both runs: not moved, the rule reads differently
    assert restated["count"] == sum(len(t) <= 40 for t in TEXTS)
    (tokens,) = d["tokens"]
    assert tokens["a"] > tokens["b"]
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert f"{len(moved)} kept -> removed: removed by short (where:length(text) > 60)" in out
    assert "stages.short.where.all" in out and moved[0] in out
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identical"] is False


def test_runs_that_differ_only_in_where_they_ran_are_identical(tmp_path, capsys):
    f = _pipeline(tmp_path)
    assert run_cli(f, "--output", tmp_path / "a", "--inline", "-q") == 0
    assert run_cli(f, "--output", tmp_path / "elsewhere" / "b", "--inline", "--workers", "1", "-q") == 0
    d = diff(str(tmp_path / "a"), str(tmp_path / "elsewhere" / "b"))
    assert d["identical"], d
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "elsewhere" / "b")]) == 0
    assert "identical" in capsys.readouterr().out
