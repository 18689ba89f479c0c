"""Nothing lost, nothing stale, nothing raced: hostile inputs and a busy machine (the integrity issue's items)."""

import json
import os
import signal
import subprocess
import sys
import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main

from conftest import ZYDA2, env_with, run_cli, tree_digest


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _recipe(tmp_path, sources: str, stages: str = "  ingest: {}\n", extra: str = "") -> str:
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n{sources}{extra}stages:\n{stages}")
    return f


def _accounted(run, inputs: int) -> None:
    kept = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/kept/*/*.parquet', union_by_name=true)").fetchall()[0][0]
    removed = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall()[0][0]
    assert kept + removed == inputs


@pytest.mark.slow   # a Ray cluster of its own (20-30 s): the fast half leaves it to CI
def test_an_existing_ray_cluster_on_the_machine_does_not_break_a_run(sample_env, tmp_path):
    env = env_with(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0)
    head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--num-cpus", "1",
                             "--include-dashboard=false", "--disable-usage-stats"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(8)  # the head is up (its own cluster, in the same temp dir)
        assert head.poll() is None, "ray start --head did not stay up"
        assert run_cli(ZYDA2, "--output", tmp_path / "ray", "--workers", "2", "-q") == 0
    finally:
        head.send_signal(signal.SIGTERM)
        head.wait(timeout=60)
    assert run_cli(ZYDA2, "--output", tmp_path / "inline", "--inline", "-q") == 0
    assert tree_digest(tmp_path / "ray") == tree_digest(tmp_path / "inline")


def test_a_file_edited_in_place_at_the_same_size_is_read_again(tmp_path):
    data = tmp_path / "a.jsonl"
    _jsonl(data, [{"text": "alpha beta gamma"}, {"text": "delta epsilon zeta"}])
    f = _recipe(tmp_path, f"  s: {{format: jsonl, paths: '{data}'}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    before = data.stat().st_size
    _jsonl(data, [{"text": "ALPHA BETA GAMMA"}, {"text": "delta epsilon zeta"}])
    os.utime(data, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    assert data.stat().st_size == before
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    texts = pq.read_table(next((tmp_path / "run" / "kept" / "s").glob("*.parquet"))).column("text").to_pylist()
    assert texts[0] == "ALPHA BETA GAMMA"


def test_the_content_fingerprint_sees_an_edit_that_keeps_size_and_time(tmp_path):
    data = tmp_path / "a.jsonl"
    _jsonl(data, [{"text": "alpha beta gamma"}])
    stat = data.stat()
    f = _recipe(tmp_path, f"  s: {{format: jsonl, paths: '{data}'}}\n", extra="execution: {fingerprint: content}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    _jsonl(data, [{"text": "ALPHA BETA GAMMA"}])
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert pq.read_table(next((tmp_path / "run" / "kept" / "s").glob("*.parquet"))).column("text").to_pylist() == ["ALPHA BETA GAMMA"]


def test_ids_repeated_across_files_of_a_source_keep_the_first_copy(tmp_path):
    (tmp_path / "d").mkdir()
    _jsonl(tmp_path / "d" / "a.jsonl", [{"id": "x", "text": "first x"}, {"id": "y", "text": "only y"}])
    _jsonl(tmp_path / "d" / "b.jsonl", [{"id": "z", "text": "only z"}, {"id": "x", "text": "second x"}])
    _jsonl(tmp_path / "d" / "c.jsonl", [{"id": "x", "text": "third x"}])
    f = _recipe(tmp_path, f"  s: {{format: jsonl, fields: {{id: id}}, paths: '{tmp_path}/d/*.jsonl'}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    kept = duckdb.sql(f"SELECT id, text FROM read_parquet('{tmp_path}/run/kept/*/*.parquet') ORDER BY id").fetchall()
    assert kept == [("x", "first x"), ("y", "only y"), ("z", "only z")]
    ledger = duckdb.sql(f"SELECT id, reason, detail FROM read_parquet('{tmp_path}/run/ledger/*/*/*.parquet') ORDER BY id").fetchall()
    assert [(i, r) for i, r, _ in ledger] == [("x#dup@b.jsonl", "bad_record:duplicate_id"), ("x#dup@c.jsonl", "bad_record:duplicate_id")]
    assert "already seen in a.jsonl" in ledger[0][2]
    _accounted(tmp_path / "run", 5)
    # a resumed run (the accounting phase redone) gives the same outputs
    marker = next((tmp_path / "run" / "_state" / "ingest" / "shards").rglob("*.json"))
    marker.unlink()
    digest = tree_digest(tmp_path / "run")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert tree_digest(tmp_path / "run") == digest


def test_a_second_writer_is_refused_and_a_dead_writers_lock_is_taken_over(sample_env, tmp_path, capsys):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", str(run), "--workers", "1", "-q",
           "--set", "execution.batch_rows=16"]
    proc = subprocess.Popen(cmd, env=env_with(CURATE_SAMPLE=sample_env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (run / "_lock.json").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    holder = json.loads((run / "_lock.json").read_text())
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q", "--set", "stages.mix.seed=7") == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"curate: error: {run} is being written by another run: pid {holder['pid']} on ")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (run / "_lock.json").exists(), "a killed run leaves its lock behind"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q", "--set", "execution.batch_rows=16") == 0
    assert not (run / "_lock.json").exists()


def test_empty_sources_are_left_out_of_the_megatron_data_path(sample_env, tmp_path):
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline", "-q",
                   "--set", "stages.quality_filter.where.zyda=length(text) < 0", "--set", "stages.mix.weights.zyda=0") == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["empty_sources"] == ["zyda"]
    assert "pack/zyda" not in manifest["megatron_data_path"] and "pack/dclm" in manifest["megatron_data_path"]


def test_a_bad_parquet_shard_carries_its_sources_columns(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(pa.table({"text": ["good page one", "good page two"], "int_score": [3, 4]}), tmp_path / "d" / "a.parquet")
    (tmp_path / "d" / "b.parquet").write_bytes(b"PAR1 not really parquet")
    f = _recipe(tmp_path, f"  s: {{format: parquet, paths: '{tmp_path}/d/*.parquet'}}\n",
                "  ingest: {}\n  f: {use: filter, where: {s: int_score >= 4}}\n", extra="execution: {max_bad_fraction: 1.0}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    schemas = [pq.read_schema(p).names for p in sorted((tmp_path / "run" / "docs" / "s").glob("*.parquet"))]
    assert schemas[0] == schemas[1] and "int_score" in schemas[1]
    _accounted(tmp_path / "run", 3)


def test_a_malformed_predicate_is_one_line_and_downloads_nothing(tmp_path, capsys):
    data = tmp_path / "a.jsonl"
    _jsonl(data, [{"text": "alpha"}])
    f = _recipe(tmp_path, f"  s: {{format: jsonl, paths: '{data}'}}\n", "  ingest: {}\n  f: {use: filter, where: {s: 'length(text) >>= 3'}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"curate: error: {f}: stages.f") and "download" not in last.lower()
    from curate.sql import connect

    settings = dict(connect().sql("SELECT name, value FROM duckdb_settings() WHERE name LIKE 'auto%_known_extensions'").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


def test_temporaries_of_an_interrupted_run_are_removed(sample_env, tmp_path):
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline", "-q", "--until", "ingest") == 0
    stray = tmp_path / "run" / "docs" / "fwe" / ("000000-0000.parquet.tmp-" + "ab" * 16)
    stray.write_bytes(b"half a file")
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline", "-q", "--until", "ingest") == 0
    assert not stray.exists()


def test_raw_tracebacks_become_one_line(tmp_path, sample_env, capsys):
    (tmp_path / "file").write_text("x")
    assert run_cli(ZYDA2, "--output", tmp_path / "file", "--inline", "-q") == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"curate: error: --output {tmp_path / 'file'}: is a file; give a directory (it is made if missing) or an fsspec URI"
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline", "-q", "--until", "ingest") == 0
    capsys.readouterr()
    assert main(["query", str(tmp_path / "run"), "SELECT count(*) AS n FROM docs;", "--format", "json", "--out", str(tmp_path / "n.json")]) == 0
    assert json.loads((tmp_path / "n.json").read_text().splitlines()[0])["n"] > 0
    assert main(["query", str(tmp_path / "run"), "SELECT 1", "--format", "csv", "--out", str(tmp_path / "no" / "x.csv")]) == 2
    assert capsys.readouterr().err.strip() == f"curate: error: --out {tmp_path / 'no' / 'x.csv'}: the folder {tmp_path / 'no'} does not exist"
    with pytest.raises(SystemExit):
        main(["run"])
