"""The driver's DuckDB connections (the report, `curate query`) have a memory limit and spill past it, so what
they read may grow with the run while the driver does not."""

import gc
import os
import tempfile
from types import SimpleNamespace

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main
from curate.errors import UsageError
from curate.report.context import open_run
from curate.report.substring_dedup import _top
from curate.rundir.views import connect as views_connect
from curate.sql import MEMORY_ENV, bound, memory_mb

from conftest import run_cli


def setting(con, name: str) -> str:
    return con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]


def limit_of(mb: int) -> str:
    """DuckDB's own spelling of a memory limit of `mb` MB."""
    return setting(duckdb.connect(config={"memory_limit": f"{mb}MB"}), "memory_limit")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    (d / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (d / "p.yaml").write_text(f"name: t\nsources:\n  s: {{format: jsonl, paths: '{d}/a.jsonl'}}\nstages: {{ingest: {{}}}}\n")
    assert run_cli(d / "p.yaml", "--output", d / "run", "--inline", "-q") == 0
    return d / "run"


def test_a_query_larger_than_the_limit_spills_to_a_private_folder_and_completes():
    con = bound(duckdb.connect(), memory=24, threads=1)
    folder = setting(con, "temp_directory")
    assert setting(con, "memory_limit") == limit_of(24)
    assert os.path.basename(folder).startswith("curate-duckdb-") and folder.startswith(tempfile.gettempdir())
    # 3M groups of 2 (a hash table of ~100 MB) and a window over 2M rows under 24 MB: spilled, not refused
    assert con.sql("SELECT count(*), min(n), max(n) FROM (SELECT i % 3000000 AS k, count(*) AS n "
                   "FROM range(6000000) t(i) GROUP BY k)").fetchall() == [(3_000_000, 2, 2)]
    assert con.sql("SELECT count(*) FROM (SELECT row_number() OVER (PARTITION BY i % 7 ORDER BY hash(i)) AS n "
                   "FROM range(2000000) t(i)) WHERE n <= 3").fetchall() == [(21,)]
    del con
    gc.collect()
    assert not os.path.exists(folder), "the spill folder goes with its connection"


def test_the_report_and_curate_query_connections_are_bounded(tiny, monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    assert setting(open_run(str(tiny)).con, "memory_limit") == limit_of(256)
    assert setting(views_connect(str(tiny)), "memory_limit") == limit_of(256)
    monkeypatch.setenv(MEMORY_ENV, "64")
    assert memory_mb() == 64
    assert setting(open_run(str(tiny)).con, "memory_limit") == limit_of(64)
    con = views_connect(str(tiny))
    assert setting(con, "memory_limit") == limit_of(64)
    assert os.path.basename(setting(con, "temp_directory")).startswith("curate-duckdb-")
    assert con.sql("SELECT count(*) FROM docs").fetchall() == [(2,)], "the locked, bounded connection still reads the run"


@pytest.mark.parametrize("value", ["lots", "8", "-1"])
def test_a_bad_memory_setting_is_one_line(tiny, value, monkeypatch, capsys):
    monkeypatch.setenv(MEMORY_ENV, value)
    with pytest.raises(UsageError, match=f"{MEMORY_ENV}={value}: give DuckDB's memory limit in MB"):
        memory_mb()
    assert main(["query", str(tiny), "SELECT 1"]) == 2
    err = capsys.readouterr().err.strip()
    assert MEMORY_ENV in err and len(err.splitlines()) == 1


def test_the_most_copied_spans_are_a_top_k_in_duckdb(tmp_path):
    """substring_dedup's report: the same top spans as sorting every repeats row in Python, read as a top-k."""
    rows = {"a": [], "b": []}
    for k in range(300):
        source = "ab"[k % 2]
        rows[source].append({"id": f"d{k % 17}", "start": k, "end": k + 9, "words": 50 + k % 5, "copies": k % 23, "text": f"t{k}"})
    for source, rs in rows.items():
        (tmp_path / "s" / "repeats" / source).mkdir(parents=True)
        for part in range(3):
            pq.write_table(pa.Table.from_pylist(rs[part::3]), tmp_path / "s" / "repeats" / source / f"{part:05d}.parquet")
    run = SimpleNamespace(sources=["a", "b", "c"], dir=SimpleNamespace(path=lambda *p: str(tmp_path.joinpath(*p))),
                          con=bound(duckdb.connect(), memory=32))
    every = sorted(({**r, "source": s} for s, rs in rows.items() for r in rs),
                   key=lambda r: (-r["copies"], -r["words"], r["source"], r["id"], r["start"]))
    assert _top(run, "s") == every[:15]
    assert _top(run, "s", top=4) == every[:4]


def test_the_manifest_hashes_a_file_in_blocks_whatever_its_size(tmp_path, monkeypatch):
    """A token file far larger than memory is hashed in blocks of at most BLOCK bytes, never read whole."""
    import hashlib

    from curate.io import fs
    from curate.manifest import digest

    data = os.urandom(300_000)
    (tmp_path / "big.bin").write_bytes(data)
    asked = []

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def read(self, n=-1):
            asked.append(n)
            return self.handle.read(n)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(digest, "BLOCK", 4096)
    monkeypatch.setattr(digest, "open_read", lambda filesystem, path: Counting(open(path, "rb")))
    filesystem, _ = fs.filesystem(str(tmp_path))
    assert digest.sha256_file(filesystem, str(tmp_path / "big.bin")) == (len(data), hashlib.sha256(data).hexdigest())
    assert asked and max(asked) == 4096 and len(asked) >= len(data) // 4096


def test_the_language_mix_reads_a_run_of_many_shards_within_a_small_limit(tmp_path, monkeypatch):
    """The ledger of the sampled shards is one scan per group, not one per file: a union of a scan per ledger file
    takes DuckDB's memory per file and failed within the limit on a run of many shards."""
    import json

    from curate.report import languages

    run, shards, per = tmp_path / "run", 40, 30
    (run / "pipeline.yaml").parent.mkdir()
    (run / "pipeline.yaml").write_text("name: t\nstages:\n  signals: {}\n  q: {use: filter}\n")
    (run / "summary.json").write_text(json.dumps([{"stage": st, "source": "s", "in": shards * per, "kept": shards * per,
                                                   "removed": {}, "tasks": shards} for st in ("signals", "q")]))
    for folder in ("signals/s", "ledger/q/s"):
        (run / folder).mkdir(parents=True)
    for k in range(shards):
        ids = [f"{k}-{i}" for i in range(per)]
        pq.write_table(pa.table({"id": ids, "lang": ["en" if i % 3 else "de" for i in range(per)]}), run / "signals/s" / f"{k:04d}.parquet")
        pq.write_table(pa.table({"id": ids[::5], "source": ["s"] * len(ids[::5]), "reason": ["low"] * len(ids[::5])}),
                       run / "ledger/q/s" / f"{k:04d}.parquet")
    monkeypatch.setenv(MEMORY_ENV, "16")
    mix = languages.language_mix(open_run(str(run)))
    assert mix["languages"] == ["en", "de"] and not mix["sampled"]
    assert mix["counts"]["kept"] == [shards * 16, shards * 8] and mix["counts"]["removed"] == [shards * 4, shards * 2]


def test_a_query_past_the_limit_says_how_to_raise_it(tiny, monkeypatch, capsys):
    monkeypatch.setenv(MEMORY_ENV, "16")   # a sorted list of 3M strings cannot spill: more than 16 MB at once
    assert main(["query", str(tiny), "SELECT list(i::VARCHAR ORDER BY -i) AS l FROM range(3000000) t(i)"]) == 1
    err = capsys.readouterr().err.strip()
    assert "Out of Memory" in err and f"DuckDB may hold 16 MB here; set {MEMORY_ENV} to give it more" in err
    assert len(err.splitlines()) == 1
