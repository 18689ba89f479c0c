"""Hostile round 3 (issue 19): documents lost to file names, SQL that is more than an expression, configs
that fail open, inputs that stop a run, and the traps around a run. Each test failed before its fix."""

from __future__ import annotations

import json

import duckdb
import pytest

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


# --- 2. SQL that is more than an expression -------------------------------------------------------

SMUGGLE = "1=1); COPY (SELECT 42) TO '{out}'; SELECT (1"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """An ingest-only run of three documents, for the SQL tests."""
    d = tmp_path_factory.mktemp("tiny")
    (d / "a.jsonl").write_text("".join(json.dumps({"text": f"doc {i}", "n": i}) + "\n" for i in range(3)))
    f = _pipeline(d, f"  s:\n    format: jsonl\n    paths: '{d}/a.jsonl'",
                  stages="  ingest: {}\n  quality_filter: {use: filter, where: {s: 'length(text) > 0'}}\n")
    assert run_cli(f, "--output", d / "run", "--inline", "-q") == 0
    return d, f


def test_a_smuggled_statement_in_a_where_predicate_is_refused_at_load_and_writes_nothing(tiny_run, tmp_path, capsys):
    d, f = tiny_run
    target = tmp_path / "x.csv"
    code = run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.quality_filter.where.s=" + SMUGGLE.format(out=target))
    err = capsys.readouterr().err
    assert code == 2 and not target.exists()
    assert "stages.quality_filter.where.s: invalid SQL predicate: not a single SQL expression" in err and "Traceback" not in err


def test_a_recipe_rule_that_adds_a_statement_is_refused(tmp_path, capsys, monkeypatch):
    (tmp_path / "filters").mkdir()
    monkeypatch.setenv("CURATE_FILTERS", str(tmp_path / "filters"))
    target = tmp_path / "y.csv"
    (tmp_path / "filters" / "evil.yaml").write_text(f'name: evil\nrules:\n  ok: "{SMUGGLE.format(out=target)}"\n')
    (tmp_path / "a.jsonl").write_text('{"text": "t"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'",
                  stages="  ingest: {}\n  f: {use: filter, recipes: {s: [evil]}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err
    assert "evil.yaml: rules.ok: invalid SQL predicate" in err and not target.exists() and "Traceback" not in err


def test_a_predicate_cannot_read_a_file_curate_did_not_register(tmp_path, capsys):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    (tmp_path / "a.jsonl").write_text('{"text": "t"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'",
                  stages=f"  ingest: {{}}\n  f: {{use: filter, where: {{s: \"(SELECT count(*) FROM read_csv('{secret}')) > 0\"}}}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") != 0
    err = capsys.readouterr().err
    assert "file system operations are disabled" in err and "Traceback" not in err


def test_keep_and_decides_predicates_are_single_expressions():
    from curate.models.cascade import check_predicate

    assert check_predicate("fasttext_score > 0.5") is None
    assert "not a single SQL expression" in check_predicate("1) UNION SELECT (1")
    assert "not a single SQL expression" in check_predicate(SMUGGLE.format(out="z.csv"))


@pytest.mark.parametrize("sql, says", [
    ("COPY (SELECT 42) TO '{out}'", "read-only and runs no COPY statement"),
    ("ATTACH '{out}' AS x", "read-only and runs no ATTACH statement"),
    ("DROP VIEW kept", "read-only and runs no DROP statement"),
    ("SELECT 1; COPY (SELECT 42) TO '{out}'", "runs one statement; got 2"),
    ("EXPLAIN ANALYZE COPY (SELECT 42) TO '{out}'", "read-only and runs no COPY statement"),
    ("SELECT * FROM read_csv('{out}')", "file system operations are disabled"),
    ("COPY (SELECT 1) TO '{kept}'", "read-only"),
])
def test_curate_query_is_read_only(tiny_run, tmp_path, capsys, sql, says):
    from curate.cli import main

    d, _ = tiny_run
    out = tmp_path / "x.csv"
    if "read_csv" in sql:
        out.write_text("a\n1\n")
    kept = next((d / "run" / "kept" / "s").glob("*.parquet"))
    before = kept.read_bytes()
    assert main(["query", str(d / "run"), sql.format(out=out, kept=kept)]) != 0
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert kept.read_bytes() == before and (out.exists() == ("read_csv" in sql))


def test_curate_query_still_reads_the_run_and_writes_out(tiny_run, tmp_path):
    from curate.cli import main
    from curate.query import query

    d, _ = tiny_run
    assert query(str(d / "run"), "SELECT count(*) AS n FROM kept;", fmt="csv") == "n\n3"
    for fmt in ("csv", "json", "parquet"):
        assert main(["query", str(d / "run"), "SELECT id FROM kept ORDER BY id", "--format", fmt, "--out", str(tmp_path / f"r.{fmt}")]) == 0
    assert (tmp_path / "r.csv").read_text().splitlines() == ["id", "s/a.jsonl/0", "s/a.jsonl/1", "s/a.jsonl/2"]
    assert json.loads((tmp_path / "r.json").read_text().splitlines()[0]) == {"id": "s/a.jsonl/0"}


# --- 3. configs that fail open or late ------------------------------------------------------------

@pytest.mark.parametrize("override, key", [
    ("stages.mix.weights.s=.nan", "stages.mix.weights.s"),
    ("stages.mix.allow_epochs=.inf", "stages.mix.allow_epochs"),
    ("stages.dual_use.threshold=.nan", "stages.dual_use.threshold"),
    ("execution.max_bad_fraction=.nan", "execution.max_bad_fraction"),
    ("sources.s.storage_options.x=-.inf", "sources.s.storage_options.x"),
    ("stages.dual_use.threshold=nan", "stages.dual_use.threshold"),
])
def test_nan_and_infinity_are_refused_at_load(tmp_path, override, key):
    from curate import load_pipeline
    from curate.errors import ConfigError

    (tmp_path / "a.jsonl").write_text('{"text": "t"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'",
                  stages="  ingest: {}\n  dual_use: {}\n  mix: {weights: {s: 1.0}}\n")
    with pytest.raises(ConfigError, match=rf"{key.replace('.', '[.]')}: expected a finite number"):
        load_pipeline(f, [override])


def test_duplicate_yaml_keys_are_an_error(tmp_path, monkeypatch):
    from curate import load_pipeline
    from curate.errors import ConfigError
    from curate.recipes import load_recipe

    (tmp_path / "a.jsonl").write_text('{"text": "t"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'",
                  stages="  ingest: {}\n  f: {use: filter, where: {s: 'length(text) > 0'}}\n  f: {use: filter, where: {s: 'true'}}\n")
    with pytest.raises(ConfigError, match=r"line 10, column 3: duplicate key 'f' \(first at line 9\)"):
        load_pipeline(f)
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "twice.yaml").write_text("name: twice\nrules:\n  a: x > 1\n  a: x > 2\n")
    monkeypatch.setenv("CURATE_FILTERS", str(tmp_path / "filters"))
    with pytest.raises(ConfigError, match="twice.yaml: invalid YAML: line 4, column 3: duplicate key 'a'"):
        load_recipe("twice", f, "stages.f.recipes.s[0]")
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'", stages="  ingest: {}\n  f: {use: filter}\n")
    with pytest.raises(ConfigError, match="duplicate key 'x'"):
        load_pipeline(f, ["stages.f.where={s: 'a', x: 1, x: 2}"])


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "x y", "..", ""])
def test_a_step_name_that_is_not_a_safe_name_is_refused(tmp_path, name):
    from curate import load_pipeline
    from curate.errors import ConfigError

    (tmp_path / "a.jsonl").write_text('{"text": "t"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'",
                  stages=f"  ingest: {{}}\n  '{name}': {{use: filter, where: {{s: 'true'}}}}\n")
    with pytest.raises(ConfigError, match="a step name names folders of the run"):
        load_pipeline(f)


def test_a_dual_use_model_with_several_labels_must_name_the_flagging_one(tmp_path, sample_dir, capsys):
    from stages.test_classify import pipeline

    f = pipeline(tmp_path, sample_dir, f"  dual_use:\n    model: '{sample_dir}/models/dual_use_demo.bin'\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err
    assert "stages.dual_use.model:" in err and "labels" in err and "name the one that flags" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "docs").exists()


# --- 4. inputs that stop a run ----------------------------------------------------------------------

def test_a_record_nested_300_deep_is_a_bad_record_not_a_dead_ingest(tmp_path, capsys):
    deep = '{"text": "deep", "meta": ' + "[" * 300 + "]" * 300 + "}\n"
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n' + deep + '{"text": "two"}\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl'")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert _counts(tmp_path / "run", "s") == (3, 2, {"bad_record:too_deep": 1})
    ledger = duckdb.sql(f"SELECT id, reason, detail FROM read_parquet('{tmp_path}/run/ledger/**/*.parquet')").fetchall()
    assert ledger == [("s/a.jsonl/1", "bad_record:too_deep", ledger[0][2])] and "line 2" in ledger[0][2]
    assert run_cli(f, "--output", tmp_path / "strict", "--inline", "-q", "--set", "execution.max_bad_fraction=0.1") == 1
    err = capsys.readouterr().err
    assert "1 of 3 records are bad" in err and "too_deep x1" in err and "Traceback" not in err


def _skippable(payload: bytes, magic: int = 0x184D2A50) -> bytes:
    import struct

    return struct.pack("<II", magic, len(payload)) + payload


def test_zstd_written_by_pzstd_a_skippable_frame_first_is_read(tmp_path):
    import zstandard

    lines = [json.dumps({"text": f"doc {i}"}) + "\n" for i in range(6)]
    z = zstandard.ZstdCompressor()
    data = (_skippable(b"\x10\x00\x00\x00") + z.compress("".join(lines[:3]).encode())
            + _skippable(b"index", 0x184D2A5F) + z.compress("".join(lines[3:]).encode()))
    (tmp_path / "a.jsonl.zst").write_bytes(data)
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/a.jsonl.zst'")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert _counts(tmp_path / "run", "s") == (6, 6, {})
    texts = duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/run/kept/s/*.parquet') ORDER BY id").fetchall()
    assert [t for (t,) in texts] == [f"doc {i}" for i in range(6)]


def test_real_pzstd_output_is_read(tmp_path):
    import shutil
    import subprocess

    if not shutil.which("pzstd"):
        pytest.skip("pzstd is not installed")
    plain = tmp_path / "a.jsonl"
    plain.write_text("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(50)))
    subprocess.run(["pzstd", "-q", "-p", "2", str(plain), "-o", str(tmp_path / "b.jsonl.zst")], check=True)
    plain.unlink()
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: '{tmp_path}/b.jsonl.zst'")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert _counts(tmp_path / "run", "s") == (50, 50, {})


def test_a_term_of_200k_characters_builds_in_linear_time_and_matches():
    import random
    import time

    import pyarrow as pa

    from curate.dualuse import Blocklist

    rng = random.Random(0)
    words = ["alpha", "beta", "bee", "hive", "honey", "queen", "wax"]
    long_term = " ".join(rng.choice(words) for _ in range(40_000))[:200_000].strip()
    blocklist = Blocklist([long_term, "honey bee", "queen"])
    start = time.perf_counter()
    hits, _ = blocklist.scan(pa.array([long_term, "a queen bee", "x" + long_term[:-1]]))
    assert time.perf_counter() - start < 10  # before: 40 s, and quadratic (a 1.2 MB term: over 14 minutes)
    assert list(hits) == [1 + ("honey bee" in long_term) + 1, 1, ("honey bee" in long_term[:-1]) + ("queen" in long_term[:-1])]


# --- 5. traps around the run ------------------------------------------------------------------------

def test_publish_into_a_folder_holding_another_run_is_refused(tmp_path):
    from curate.errors import CurateError
    from curate.manifest.build import write_manifest
    from curate.manifest.publish import MARKER, publish
    from curate.manifest.verify import verify
    from manifest.test_manifest import body, make_run

    a, b = tmp_path / "a", tmp_path / "b"
    write_manifest(str(a), body(), make_run(a))
    files = make_run(b)
    (b / files[0]).write_bytes(b"another run's bytes")
    write_manifest(str(b), body(), files)
    dest = tmp_path / "dest"
    publish(str(a), str(dest))
    publish(str(a), str(dest))  # the same run again: fine
    before = sorted(p.relative_to(dest) for p in dest.rglob("*"))
    with pytest.raises(CurateError, match=r"refusing to publish into .*dest: it holds \d+ files \(e\.g\. .*\) of something other than this run"):
        publish(str(b), str(dest))
    assert sorted(p.relative_to(dest) for p in dest.rglob("*")) == before and verify(str(dest)) == []
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(CurateError, match="refusing to publish into"):
        publish(str(a), str(other))
    (dest / "manifest.json").unlink()  # a publish of this run cut short: its marker lets a retry finish
    (dest / MARKER).write_bytes((a / "manifest.json").read_bytes())
    publish(str(a), str(dest))
    assert verify(str(dest)) == [] and not (dest / MARKER).exists()


def test_address_auto_goes_to_ray_as_auto(monkeypatch):
    import ray

    from curate.runner import cluster

    got = {}
    monkeypatch.setattr(cluster, "probe", lambda address, seconds=0: "10.0.0.1:6379")
    monkeypatch.setattr(ray, "init", lambda address=None, **kw: got.setdefault("address", address))
    cluster.join("auto", None)
    assert got["address"] == "auto"  # Ray finds the session (and its auth token) itself
    got.clear()
    cluster.join("10.0.0.2:6379", None)
    assert got["address"] == "10.0.0.1:6379"


@pytest.mark.parametrize("content", [b"", b"\0" * 64, b"[1, 2]"])
def test_an_empty_or_corrupt_lock_is_stale_not_forever(tiny_run, tmp_path, capsys, content):
    import shutil

    d, f = tiny_run
    run = tmp_path / "run"
    shutil.copytree(d / "run", run)
    (run / "_lock.json").write_bytes(content)
    assert run_cli(f, "--output", run, "--inline") == 0
    err = capsys.readouterr().err
    assert "holds no run" in err and "taking it over" in err and "pid None" not in err
    assert not (run / "_lock.json").exists()


@pytest.fixture(scope="module")
def two_shard_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("two")
    for name in ("a", "b"):
        (d / f"{name}.jsonl").write_text("".join(json.dumps({"text": f"{name} doc {i}"}) + "\n" for i in range(3)))
    f = _pipeline(d, f"  s:\n    format: jsonl\n    paths: '{d}/*.jsonl'",
                  stages="  ingest: {}\n  f: {use: filter, where: {s: \"text NOT LIKE '%1'\"}}\n")
    assert run_cli(f, "--output", d / "run", "--inline", "-q") == 0
    return d / "run"


def test_report_on_a_run_in_progress_is_no_accounting_error(two_shard_run, tmp_path, capsys):
    import shutil

    from curate.cli import main

    run = tmp_path / "run"
    shutil.copytree(two_shard_run, run)
    (run / "summary.json").unlink()
    sorted((run / "_state" / "f" / "shards" / "s").glob("*.json"))[-1].unlink()  # the filter has done one shard of two
    shutil.rmtree(run / "_state" / "kept")
    assert main(["report", str(run)]) == 0
    captured = capsys.readouterr()
    assert "accounting error" not in captured.err and "Traceback" not in captured.err
    assert "no summary.json yet" in (run / "report.html").read_text()


def test_report_on_a_read_only_run_is_one_line(two_shard_run, tmp_path, capsys, monkeypatch):
    from curate.cli import main
    from curate.io import fs as curate_fs

    real = curate_fs.write_bytes

    def read_only(path, data, *args, **kwargs):
        if str(path).startswith(str(two_shard_run)):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(curate_fs, "write_bytes", read_only)
    assert main(["report", str(two_shard_run)]) != 0
    err = capsys.readouterr().err
    assert err.strip() == f"curate: error: cannot write the report to {two_shard_run}/report.html: Permission denied; " \
                          "give --out FILE to write it elsewhere"
    assert main(["report", str(two_shard_run), "--out", str(tmp_path / "r.html")]) == 0 and (tmp_path / "r.html").exists()


def test_sigterm_ends_a_run_with_a_curate_line_and_exit_143(sample_env, tmp_path):
    import signal
    import subprocess
    import sys

    from conftest import ZYDA2, env_with

    proc = subprocess.Popen([sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", str(tmp_path / "run"), "--inline"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env_with(CURATE_SAMPLE=sample_env))
    for line in proc.stderr:
        if "tasks" in line:  # a stage is under way
            break
    proc.send_signal(signal.SIGTERM)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 143
    assert err.strip().splitlines()[-1].startswith("curate: terminated (SIGTERM)") and "Traceback" not in err


# --- 6. curate train-quality as the README shows it ------------------------------------------------

def test_train_quality_prints_its_table_when_a_threshold_keeps_nothing_and_sizes_the_model(tmp_path, capsys):
    pytest.importorskip("fasttext")
    from curate.cli import main

    texts = [f"the same page about item {i % 7} and nothing else" for i in range(40)]
    for name in ("good", "bad"):  # the classes cannot be told apart: P(good) stays near 0.5
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    out = tmp_path / "q.bin"
    code = main(["train-quality", str(out), "--positive", str(tmp_path / "good.jsonl"), "--negative", str(tmp_path / "bad.jsonl"),
                 "--dim", "8", "--holdout", "0.25"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [line.split() for line in captured.out.splitlines() if line.strip().startswith("0.9")]
    assert rows == [["0.90", "-", "0.000", "0.0%"]]  # keeps no held-out document: no precision, not a crash
    assert "training a fastText model of about" in captured.err
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["parameters"]["bucket"] == 10_000 and out.stat().st_size < 5_000_000  # fastText's default: 2,000,000 buckets, 64 MB at dim 8


def test_train_quality_examples_sql_is_one_read_only_statement(tiny_run, tmp_path):
    from curate.errors import CurateError
    from curate.train_quality import texts_from

    d, _ = tiny_run
    assert texts_from("SELECT text FROM kept ORDER BY id", [str(d / "run")]) == ["doc 0", "doc 1", "doc 2"]
    with pytest.raises(CurateError, match="runs one statement; got 2"):
        texts_from(f"SELECT text FROM kept; COPY (SELECT 1) TO '{tmp_path}/x.csv'", [str(d / "run")])
    assert not (tmp_path / "x.csv").exists()
