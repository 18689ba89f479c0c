"""Hostile round 3 (issue 19): documents lost to file names, SQL that is more than an expression, configs
that fail open, inputs that stop a run, and the traps around a run. Each test failed before its fix."""

from __future__ import annotations

import json

import duckdb

from conftest import run_cli
from curate.io import fs


def _pipeline(tmp_path, sources: str, extra: str = "", stages: str = "  ingest: {}\n") -> str:
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n{sources}\n{extra}\nstages:\n{stages}")
    return str(f)


def _counts(run, source, stage="ingest"):
    rows = json.loads((run / "summary.json").read_text())
    rows = rows["stages"] if isinstance(rows, dict) else rows
    r = next(r for r in rows if r["stage"] == stage and r["source"] == source)
    return r["in"], r["kept"], r["removed"]


def _kept_ids(run, source):
    return [r[0] for r in duckdb.sql(f"SELECT id FROM read_parquet('{run}/kept/{source}/*.parquet') ORDER BY id").fetchall()]


# --- 1. documents lost to file names ----------------------------------------------------------------

def test_two_globs_with_same_named_files_keep_every_document(tmp_path):
    for dump in ("dumpA", "dumpB"):
        (tmp_path / dump).mkdir()
        (tmp_path / dump / "part-0000.jsonl").write_text("".join(json.dumps({"text": f"{dump} doc {i}"}) + "\n" for i in range(3)))
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: ['{tmp_path}/dumpA/*.jsonl', '{tmp_path}/dumpB/*.jsonl']")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert _counts(tmp_path / "run", "s") == (6, 6, {})
    assert _kept_ids(tmp_path / "run", "s") == [f"s/{d}/part-0000.jsonl/{i}" for d in ("dumpA", "dumpB") for i in (0, 1, 2)]


def test_a_single_glob_keeps_its_own_base_for_ids(tmp_path):
    (tmp_path / "d" / "x").mkdir(parents=True)
    (tmp_path / "d" / "x" / "a.jsonl").write_text('{"text": "t"}\n')
    files = fs.expand(f"{tmp_path}/d/*/*.jsonl", base=fs.common_base([fs.glob_base(f"{tmp_path}/d/*/*.jsonl")]))
    assert [f.relative for f in files] == ["x/a.jsonl"]


def test_same_relative_names_that_still_collide_are_a_loud_error(tmp_path, capsys, monkeypatch):
    for dump in ("dumpA", "dumpB"):
        (tmp_path / dump).mkdir()
        (tmp_path / dump / "part.jsonl").write_text('{"text": "t"}\n')
    monkeypatch.setattr(fs, "common_base", lambda bases: "/nowhere/")  # every name falls back to its basename
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: ['{tmp_path}/dumpA/*.jsonl', '{tmp_path}/dumpB/*.jsonl']")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") != 0
    err = capsys.readouterr().err
    assert "would both be named 'part.jsonl'" in err and "sources.s.paths[1]" in err and "Traceback" not in err
