"""The ingest step's id index (curate/rundir/idindex.py): `curate why` finds a document with random ids by the index,
not by reading every docs shard's ids; a resumed run with a new input file indexes its shard; a run without the index
(made before it) is still answered, by the scan; a row the index names is checked against the docs file."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import curate.why as why
from curate.rundir import RunDir
from curate.rundir.idindex import hash_one, hashes, rows_of, write_index

from conftest import run_cli


def test_the_kernel_and_the_one_id_hash_agree():
    ids = ["", "a", "", "web/part-00001.jsonl/17", "<urn:uuid:0f2daf13-5c1e-4c7a-9f0b-1d2e3f405162>", "é漢字🙂", "x" * 300]
    arr = pa.array(["pad", *ids]).slice(1)   # an offset into the buffers, as a table's column slice has
    assert hashes(arr).tolist() == [hash_one(i) for i in ids]
    chunked = pa.chunked_array([pa.array(ids[:2], pa.large_string()), pa.array(ids[2:], pa.large_string())])
    assert hashes(chunked).tolist() == [hash_one(i) for i in ids]
    many = pa.array([f"{i}." * (1 + i % 7) for i in range(200000)])   # ~3 MB: several batches of BATCH_BYTES
    assert len(set(hashes(many).tolist())) == 200000 and hashes(many)[-5:].tolist() == [hash_one(x) for x in many[-5:].to_pylist()]
    assert hashes(pa.array(["y" * 3_000_000, "a"])).tolist() == [hash_one("y" * 3_000_000), hash_one("a")]   # one id alone
    assert hashes(pa.array(["", ""])).tolist() == [hash_one("")] * 2 and hash_one("a") != hash_one("a\x00")


def test_a_lookup_names_the_rows_of_the_id(tmp_path):
    ids = [str(uuid.UUID(int=int(x))) for x in np.random.default_rng(0).integers(0, 2**62, 20000)]
    write_index(str(tmp_path / "i.parquet"), pa.array(ids))
    assert rows_of(str(tmp_path / "i.parquet"), ids[12345]) == [12345]
    assert rows_of(str(tmp_path / "i.parquet"), "not there") == []


def _write(folder: Path, name: str, ids: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"id": i, "text": f"the page called {i}, with words"}) + "\n" for i in ids))


@pytest.fixture()
def uuid_run(tmp_path):
    rng = np.random.default_rng(3)
    files = {f"{f}.jsonl": [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**62, 40)] for f in range(3)}
    for name, ids in files.items():
        _write(tmp_path / "in", name, ids)
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"name: ids\nsources:\n  web: {{format: jsonl, paths: '{tmp_path}/in/*.jsonl', fields: {{id: id}}}}\n"
                        "stages:\n  ingest: {}\n  short: {use: filter, where: {all: 'length(text) > 1'}}\n")
    assert run_cli(pipeline, "--output", tmp_path / "run", "--inline", "-q", "--no-report") == 0
    return tmp_path, pipeline, files


def _no_scan(monkeypatch):
    def refuse(path, doc_id):
        raise AssertionError(f"scanned {path}")
    monkeypatch.setattr(why, "_scan", refuse)


def test_why_finds_a_random_id_by_the_index_alone(uuid_run, monkeypatch):
    tmp_path, _, files = uuid_run
    run = RunDir(str(tmp_path / "run"))
    assert len(list((tmp_path / "run" / "_work" / "ingest" / "index" / "web").glob("*.parquet"))) == 3
    _no_scan(monkeypatch)
    doc = files["2.jsonl"][17]
    shard, row = why.locate(run, "web", doc)
    assert row == 17 and why._id_at(run.docs("web", shard), row) == doc
    assert why.story(str(tmp_path / "run"), "web", doc)["status"] == "kept"
    assert why.locate(run, "web", "no-such-id") is None


def test_a_resumed_run_with_a_new_file_indexes_its_shard(uuid_run, monkeypatch):
    tmp_path, pipeline, _ = uuid_run
    _write(tmp_path / "in", "3.jsonl", ["new-a", "new-b"])
    assert run_cli(pipeline, "--output", tmp_path / "run", "--inline", "-q", "--no-report") == 0
    _no_scan(monkeypatch)
    shard, row = why.locate(RunDir(str(tmp_path / "run")), "web", "new-b")
    assert row == 1 and shard in {p.stem for p in (tmp_path / "run" / "docs" / "web").glob("*.parquet")}


def test_a_run_without_the_index_is_answered_by_the_scan(uuid_run):
    tmp_path, _, files = uuid_run
    shutil.rmtree(tmp_path / "run" / "_work" / "ingest" / "index")
    shard, row = why.locate(RunDir(str(tmp_path / "run")), "web", files["1.jsonl"][5])
    assert row == 5


def test_a_row_the_index_names_is_checked_against_the_docs(uuid_run, monkeypatch):
    tmp_path, _, files = uuid_run
    monkeypatch.setattr("curate.rundir.idindex.rows_of", lambda path, doc_id: [0])   # every shard claims its row 0
    _no_scan(monkeypatch)
    shard, row = why.locate(RunDir(str(tmp_path / "run")), "web", files["1.jsonl"][0])
    assert row == 0 and why._id_at(RunDir(str(tmp_path / "run")).docs("web", shard), 0) == files["1.jsonl"][0]
    assert why.locate(RunDir(str(tmp_path / "run")), "web", files["1.jsonl"][1]) is None


def test_a_shard_that_loses_a_repeated_id_is_indexed_as_it_is_after(tmp_path, monkeypatch):
    """The index written as a file is read names rows of the shard before its later copies of ids are dropped; the
    shard that loses one is indexed again, so a row after the dropped one is found where it now is."""
    _write(tmp_path / "in", "a.jsonl", ["x", "y"])
    _write(tmp_path / "in", "b.jsonl", ["z", "x", "w", "v"])
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"name: ids\nsources:\n  web: {{format: jsonl, paths: '{tmp_path}/in/*.jsonl', fields: {{id: id}}}}\n"
                        "stages:\n  ingest: {}\n")
    assert run_cli(pipeline, "--output", tmp_path / "run", "--inline", "-q", "--no-report") == 0
    _no_scan(monkeypatch)
    run = RunDir(str(tmp_path / "run"))
    assert why.locate(run, "web", "w")[1] == 1 and why.locate(run, "web", "v")[1] == 2
