"""Readers of each native format, run through the ingest stage so ids, columns and bad records are checked end to end."""

import gzip
import json

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from conftest import run_cli


def _pipeline(tmp_path, sources: str, extra: str = "") -> str:
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n{sources}\n{extra}\nstages:\n  ingest: {{}}\n")
    return str(f)


def _docs(run, source):
    return duckdb.sql(f"SELECT * FROM read_parquet('{run}/kept/{source}/*.parquet', union_by_name=true) ORDER BY id").to_arrow_table()


def _ledger(run):
    return duckdb.sql(f"SELECT id, source, stage, reason, detail FROM read_parquet('{run}/ledger/**/*.parquet') ORDER BY id").fetchall()


def test_generic_jsonl_field_mapping_and_every_bad_record_kind(tmp_path):
    lines = [b'{"content": "first doc", "doc_id": 7, "link": "http://a", "extra": {"k": 1}}',
             b'{"content": "broken", ',
             b'{"content": "bad \xff\xfe bytes"}',
             b'[1, 2]',
             b'{"other": "no text here"}',
             b'{"content": 42}',
             b'{"content": "   "}',
             b'{"content": "dup", "doc_id": 7}',
             b'{"content": "second doc", "doc_id": "x"}']
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: {tmp_path}/in.jsonl\n    fields: {{text: content, id: doc_id, url: link}}",
                  "execution: {max_bad_fraction: 0.9}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    docs = _docs(tmp_path / "run", "s").to_pylist()
    assert [(d["id"], d["text"], d["url"]) for d in docs] == [("7", "first doc", "http://a"), ("x", "second doc", None)]
    assert json.loads(docs[0]["meta"]) == {"extra": {"k": 1}}
    reasons = sorted(r[3] for r in _ledger(tmp_path / "run"))
    assert reasons == sorted(["bad_record:invalid_json", "bad_record:invalid_utf8", "bad_record:not_an_object",
                              "bad_record:missing_text", "bad_record:bad_text_type", "bad_record:empty_text",
                              "bad_record:duplicate_id"])
    details = {r[3]: r[4] for r in _ledger(tmp_path / "run")}
    assert details["bad_record:invalid_json"].startswith("in.jsonl line 2:")


def test_max_bad_fraction_fails_the_run_with_a_clear_message(tmp_path, capsys):
    (tmp_path / "in.jsonl").write_bytes(b'{"text": "ok"}\nnot json\nnot json either\n')
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: {tmp_path}/in.jsonl")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 1
    err = capsys.readouterr().err
    assert "stage 'ingest' failed on" in err and "in.jsonl" in err
    assert "2 of 3 records are bad" in err and "max_bad_fraction" in err and "line 2" in err
    assert not list((tmp_path / "run").rglob("kept/**/*.parquet"))


def _fineweb_table(n, start=0):
    return pa.table({"text": [f"document number {i} " * 5 for i in range(start, start + n)],
                     "id": [f"<urn:uuid:{i:08d}>" for i in range(start, start + n)],
                     "url": [f"http://x/{i}" for i in range(start, start + n)],
                     "int_score": pa.array([i % 6 for i in range(start, start + n)], pa.int64())})


def test_large_parquet_is_split_by_row_groups_with_the_same_result(tmp_path):
    data = tmp_path / "data" / "CC-MAIN-2024-10"
    data.mkdir(parents=True)
    pq.write_table(_fineweb_table(1000), data / "000_00000.parquet", row_group_size=100)
    src = f"  fwe:\n    format: fineweb\n    paths: {tmp_path}/data/*/*.parquet"
    whole = _pipeline(tmp_path, src)
    assert run_cli(whole, "--output", tmp_path / "whole", "--inline", "-q") == 0
    assert run_cli(whole, "--output", tmp_path / "split", "--inline", "-q", "--set", "execution.task_size_mb=1",
                   "--set", "execution.batch_rows=64") == 0
    # with tiny tasks: one task per row group
    import curate.readers.parquet as rp
    meta = pq.ParquetFile(data / "000_00000.parquet").metadata
    assert len(rp.plan_row_groups(meta, 1)) == 10
    assert _docs(tmp_path / "whole", "fwe").equals(_docs(tmp_path / "split", "fwe"))


def test_parquet_projection_bad_rows_and_fallback_ids(tmp_path):
    table = pa.table({"text": ["good one", None, "", "  \n", "good two"], "x": [1, 2, 3, 4, 5], "y": ["a"] * 5})
    (tmp_path / "d").mkdir()
    pq.write_table(table, tmp_path / "d" / "part.parquet")
    f = _pipeline(tmp_path, f"  p:\n    format: parquet\n    paths: {tmp_path}/d/*.parquet\n    columns: [text, x]",
                  "execution: {max_bad_fraction: 0.9}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    docs = _docs(tmp_path / "run", "p")
    assert docs.column_names == ["source", "id", "text", "x"]  # projection: y was never read (kept adds source)
    assert docs.column("id").to_pylist() == ["p/part.parquet/0", "p/part.parquet/4"]
    assert sorted((r[0], r[3]) for r in _ledger(tmp_path / "run")) == [
        ("p/part.parquet/1", "bad_record:missing_text"), ("p/part.parquet/2", "bad_record:empty_text"),
        ("p/part.parquet/3", "bad_record:empty_text")]


def test_corrupt_parquet_file_is_a_bad_record(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(_fineweb_table(20), tmp_path / "d" / "a.parquet")
    (tmp_path / "d" / "b.parquet").write_bytes(b"PAR1 this is not parquet")
    f = _pipeline(tmp_path, f"  fwe:\n    format: fineweb\n    paths: {tmp_path}/d/*.parquet", "execution: {max_bad_fraction: 1.0}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert [r[3] for r in _ledger(tmp_path / "run")] == ["bad_record:unreadable_file"]
    assert _docs(tmp_path / "run", "fwe").num_rows == 20


def test_dolma_ids_and_nested_url(tmp_path):
    rows = [{"id": "d1", "text": "hello there", "source": "common-crawl", "metadata": {"url": "http://u"}},
            {"id": "d2", "text": "general kenobi", "source": "common-crawl", "metadata": {}}]
    (tmp_path / "documents").mkdir()
    with gzip.open(tmp_path / "documents" / "cc_en_head-0000.json.gz", "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    f = _pipeline(tmp_path, f"  dolma_cc:\n    format: dolma\n    paths: {tmp_path}/documents/*.json.gz")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    docs = _docs(tmp_path / "run", "dolma_cc").to_pylist()
    assert [(d["id"], d["url"]) for d in docs] == [("d1", "http://u"), ("d2", None)]
    assert json.loads(docs[0]["meta"])["source"] == "common-crawl"


def test_rpv2_documents_are_joined_with_their_quality_signals(tmp_path):
    key = "2023-06/0000/en_head.json.gz"
    docs_dir = tmp_path / "documents" / "2023-06" / "0000"
    sig_dir = tmp_path / "quality_signals" / "2023-06" / "0000"
    docs_dir.mkdir(parents=True)
    sig_dir.mkdir(parents=True)
    docs = [{"raw_content": f"text {i}", "url": f"http://{i}", "language": "en", "language_score": 0.9,
             "perplexity": 100.0 + i, "bucket": "head", "nlines": 1, "cc_segment": "seg"} for i in range(3)]
    docs[1]["raw_content"] = ""  # a bad record: its signals line must be skipped, not misaligned
    with gzip.open(docs_dir / "en_head.json.gz", "wt") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    with gzip.open(sig_dir / "en_head.signals.json.gz", "wt") as fh:
        for i in range(3):
            fh.write(json.dumps({"id": f"{key}/{i}", "id_int": i, "quality_signals": {"rps_doc_word_count": [[0, 6, i + 10]]}}) + "\n")
    tail = tmp_path / "documents" / "2023-06" / "0000" / "en_tail.json.gz"
    with gzip.open(tail, "wt") as fh:
        fh.write(json.dumps({"raw_content": "tail doc", "url": "http://t"}) + "\n")
    f = _pipeline(tmp_path, f"  rpv2:\n    format: rpv2\n    paths: {tmp_path}/documents/**/*.json.gz",
                  "execution: {max_bad_fraction: 0.9}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    out = _docs(tmp_path / "run", "rpv2").to_pylist()
    got = {d["id"]: (d["text"], d["quality_signals"] and json.loads(d["quality_signals"])["rps_doc_word_count"][0][2], d["perplexity"]) for d in out}
    assert got == {f"{key}/0": ("text 0", 10, 100.0), f"{key}/2": ("text 2", 12, 102.0),
                   "2023-06/0000/en_tail.json.gz/0": ("tail doc", None, None)}
    assert [r[3] for r in _ledger(tmp_path / "run")] == ["bad_record:empty_text"]


def test_fsspec_uris_for_inputs_and_the_run_directory(tmp_path):
    import fsspec

    mem = fsspec.filesystem("memory")
    with mem.open("/in/data/a.jsonl", "wb") as fh:
        fh.write(b'{"text": "in memory"}\n{"text": "also in memory"}\n')
    f = _pipeline(tmp_path, "  m:\n    format: jsonl\n    paths: memory://in/data/*.jsonl")
    assert run_cli(f, "--output", "memory://runs/r1", "--inline", "-q") == 0
    with mem.open(mem.glob("/runs/r1/kept/m/*.parquet")[0], "rb") as fh:
        kept = pq.read_table(fh)
    assert kept.column("id").to_pylist() == ["m/a.jsonl/0", "m/a.jsonl/1"]
    assert mem.exists("/runs/r1/pipeline.yaml")


def test_duplicate_ids_in_parquet_are_bad_records_even_across_batches(tmp_path):
    (tmp_path / "d").mkdir()
    t = pa.table({"text": ["a doc", "b doc", "c doc", "d doc"], "id": ["x", "y", "x", "z"]})
    pq.write_table(t, tmp_path / "d" / "f.parquet")
    f = _pipeline(tmp_path, f"  fwe:\n    format: fineweb\n    paths: {tmp_path}/d/*.parquet")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "execution.batch_rows=2") == 0
    assert _docs(tmp_path / "run", "fwe").column("id").to_pylist() == ["x", "y", "z"]
    assert [(r[0], r[3]) for r in _ledger(tmp_path / "run")] == [("fwe/f.parquet/2#dup", "bad_record:duplicate_id")]
