"""Readers on damaged or unusual inputs (issue 13): every input record is a document or one ledger row.

The reader functions are called directly, the way the ingest stage calls them; the last tests run a tiny
pipeline end to end.
"""

from __future__ import annotations

import gzip
import io
import json
import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from conftest import run_cli
from curate.io import fs
from curate.readers import FORMATS, READERS
from curate.readers.base import BadRecords, ReadOptions, ReadTask
from curate.readers.parquet import read_parquet


def _read_jsonl(data: bytes, fmt: str = "jsonl", name: str = "in.json.gz", batch_rows: int = 4, **fields):
    f = FORMATS[fmt].with_fields(fields)
    task = ReadTask("s", f"/data/{name}", name, "000000-0000", len(data))
    bad, stats = BadRecords("s", name), {}
    tables = READERS["jsonl"].read(task, f, io.BytesIO(data), ReadOptions(batch_rows), bad, stats)
    docs = [row for t in tables for row in t.to_pylist()]
    return docs, list(zip(bad.ids, bad.reasons, bad.details)), stats["records"]


def _read_parquet(path, fmt: str = "fineweb", batch_rows: int = 64, columns=None, **fields):
    f = FORMATS[fmt].with_fields(fields)
    task = ReadTask("s", str(path), path.name, "000000-0000", path.stat().st_size)
    bad, stats = BadRecords("s", path.name), {}
    with open(path, "rb") as handle:
        tables = list(read_parquet(task, f, handle, batch_rows, columns, bad, stats))
    docs = pa.concat_tables(tables).to_pylist() if tables else []
    return docs, list(zip(bad.ids, bad.reasons, bad.details)), stats["records"]


TEN = [{"id": f"d{i}", "text": f"document {i}", "metadata": {"url": f"http://x/{i}"}} for i in range(10)]
TEN_LINES = "".join(json.dumps(r) + "\n" for r in TEN).encode()


# --- 1. gzip / zstd: trailing bytes, several members, truncation -------------------------------------

@pytest.mark.parametrize("tail", [b"\0" * 512, b"<html>oops</html>\n"])
@pytest.mark.parametrize("name", ["in.json.gz", "in.jsonl.gz"])
def test_gzip_with_trailing_bytes_keeps_every_record_and_records_the_bytes_once(tail, name):
    data = gzip.compress(TEN_LINES, mtime=0)
    docs, bad, records = _read_jsonl(data + tail, "dolma", name)
    assert [d["id"] for d in docs] == [f"d{i}" for i in range(10)]
    assert [(i, r) for i, r, _ in bad] == [(f"s/{name}/trailing@{len(data)}", "bad_record:trailing_garbage")]
    detail = bad[0][2]
    assert detail.startswith(f"{name} byte {len(data)}: {len(tail)} ") and "gzip" in detail
    assert ("padding" in detail) == (tail[0] == 0)
    assert records == 11  # ten documents + one ledger row: in = kept + removed


def test_zstd_with_several_frames_and_trailing_bytes():
    z = zstandard.ZstdCompressor()
    data = z.compress(TEN_LINES[:200]) + z.compress(TEN_LINES[200:])
    docs, bad, records = _read_jsonl(data + b"\0" * 8, "dolma", "in.jsonl.zst")
    assert len(docs) == 10 and records == 11
    assert [r for _, r, _ in bad] == ["bad_record:trailing_garbage"]
    docs, bad, records = _read_jsonl(data, "dolma", "in.jsonl.zst")
    assert len(docs) == 10 and bad == [] and records == 10


def test_multi_member_gzip_reads_every_member():
    data = b"".join(gzip.compress(TEN_LINES[i:i + 100], mtime=0) for i in range(0, len(TEN_LINES), 100))
    docs, bad, records = _read_jsonl(data, "dolma")
    assert [d["id"] for d in docs] == [f"d{i}" for i in range(10)] and bad == [] and records == 10


def test_truncated_gzip_keeps_the_complete_lines_and_adds_one_truncated_file_row():
    rows = [{"id": f"d{i}", "text": f"document {i} " + "word " * 40} for i in range(3000)]
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), mtime=0)
    docs, bad, records = _read_jsonl(data[: len(data) // 2], "dolma", batch_rows=1000)
    assert 0 < len(docs) < 3000
    assert [d["id"] for d in docs] == [f"d{i}" for i in range(len(docs))]
    assert [(i, r) for i, r, _ in bad] == [(f"s/in.json.gz/truncated@{len(docs)}", "bad_record:truncated_file")]
    assert bad[0][2].startswith(f"in.json.gz line {len(docs) + 1}: ")
    assert records == len(docs) + 1


# --- 2. byte-order mark ------------------------------------------------------------------------------

def test_a_leading_byte_order_mark_does_not_cost_the_first_record():
    docs, bad, _ = _read_jsonl(b"\xef\xbb\xbf" + TEN_LINES, "dolma", "in.jsonl")
    assert [d["id"] for d in docs][:2] == ["d0", "d1"] and len(docs) == 10 and bad == []
    docs, bad, _ = _read_jsonl(gzip.compress(b"\xef\xbb\xbf" + TEN_LINES), "dolma")
    assert len(docs) == 10 and bad == []


# --- 3. exact ids, NaN and Infinity ------------------------------------------------------------------

def test_big_integer_ids_are_kept_exactly_as_strings():
    lines = (b'{"text": "a", "id": 123456789012345678901234567890}\n'
             b'{"text": "b", "id": 123456789012345678901234567891}\n'
             b'{"text": "c", "id": 12}\n'
             b'{"text": "d", "id": -18446744073709551617}\n'
             b'{"text": "e", "id": 0.1000000000000000000001}\n'
             b'{"text": "f", "id": ""}\n')
    docs, bad, records = _read_jsonl(lines, "jsonl", "in.jsonl", id="id")
    assert [d["id"] for d in docs] == ["123456789012345678901234567890", "123456789012345678901234567891", "12",
                                       "-18446744073709551617", "0.1000000000000000000001", "s/in.jsonl/5"]
    assert bad == [] and records == 6


def test_nan_and_infinity_in_metadata_are_accepted_like_pythons_json_does():
    good = {"text": "a fine text", "score": float("nan"), "m": {"lo": float("-inf"), "hi": float("inf")}, "k": 1}
    lines = (json.dumps(good) + "\n").encode()  # json.dumps writes NaN / -Infinity / Infinity by default
    lines += b'{"text": "NaN outside a string", "big": 123456789012345678901234567890, "x": NaN}\n'
    lines += b'{"text": "a lone surrogate \\ud800", "x": NaN}\n'  # Python accepts it; it has no UTF-8 form
    lines += b'{"text": "broken", "x": NaN\n'
    docs, bad, records = _read_jsonl(lines, "jsonl", "in.jsonl")
    assert [d["text"] for d in docs] == ["a fine text", "NaN outside a string"]
    assert json.loads(docs[0]["meta"]) == {"score": None, "m": {"lo": None, "hi": None}, "k": 1}
    assert json.loads(docs[1]["meta"]) == {"big": 1.2345678901234568e29, "x": None}
    assert [(i, r) for i, r, _ in bad] == [("s/in.jsonl/2", "bad_record:invalid_json"), ("s/in.jsonl/3", "bad_record:invalid_json")]
    assert bad[0][2].startswith("in.jsonl line 3: ") and bad[1][2].startswith("in.jsonl line 4: ")
    assert records == 4


def test_a_promoted_float_that_is_nan_becomes_null():
    rec = {"text": "t", "fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob": float("nan"),
           "metadata": {"WARC-Record-ID": "<urn:uuid:1>"}}
    docs, bad, _ = _read_jsonl((json.dumps(rec) + "\n").encode(), "dclm", "in.jsonl.zst")
    assert bad == [] and docs[0]["fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob"] is None


# --- 4. DCLM ids -------------------------------------------------------------------------------------

def test_dclm_ids_are_the_records_warc_record_id_else_positional():
    recs = [{"text": "first", "url": "http://a", "metadata": {"WARC-Record-ID": "<urn:uuid:aaa>", "WARC-Type": "conversion"}},
            {"text": "second", "url": "http://b", "metadata": {"WARC-Type": "conversion"}},
            {"text": "third", "url": "http://c", "metadata": {"WARC-Record-ID": ""}},
            {"text": "fourth", "url": "http://d"},
            {"text": "fifth", "metadata": {"WARC-Record-ID": "<urn:uuid:aaa>"}}]
    data = zstandard.ZstdCompressor().compress("".join(json.dumps(r) + "\n" for r in recs).encode())
    docs, bad, records = _read_jsonl(data, "dclm", "shard_0.jsonl.zst")
    assert [(d["id"], d["url"]) for d in docs] == [("<urn:uuid:aaa>", "http://a"), ("s/shard_0.jsonl.zst/1", "http://b"),
                                                   ("s/shard_0.jsonl.zst/2", "http://c"), ("s/shard_0.jsonl.zst/3", "http://d")]
    assert json.loads(docs[0]["meta"])["metadata"]["WARC-Record-ID"] == "<urn:uuid:aaa>"  # the record's metadata is kept whole
    assert [(i, r) for i, r, _ in bad] == [("s/shard_0.jsonl.zst/4#dup", "bad_record:duplicate_id")]
    assert records == 5


def test_dotted_ids_in_parquet_structs_and_empty_ids_fall_back(tmp_path):
    meta = pa.array([{"id": "m0"}, {"id": ""}, None, {"id": "m3"}], pa.struct([("id", pa.string())]))
    pq.write_table(pa.table({"text": ["a", "b", "c", "d"], "meta": meta, "x": [1, 2, 3, 4]}), tmp_path / "p.parquet")
    docs, bad, _ = _read_parquet(tmp_path / "p.parquet", "parquet", id="meta.id")
    assert [d["id"] for d in docs] == ["m0", "s/p.parquet/1", "s/p.parquet/2", "m3"] and bad == []
    assert set(docs[0]) == {"id", "text", "meta", "x"}
    docs, _, _ = _read_parquet(tmp_path / "p.parquet", "parquet", columns=["text", "x"], id="meta.id")
    assert [d["id"] for d in docs][0] == "m0" and set(docs[0]) == {"id", "text", "x"}  # read for the id only
    pq.write_table(pa.table({"text": ["a", "b"], "id": ["", "k"]}), tmp_path / "q.parquet")
    assert [d["id"] for d in _read_parquet(tmp_path / "q.parquet")[0]] == ["s/q.parquet/0", "k"]


# --- 5. Parquet: a corrupt row group -----------------------------------------------------------------

def _corrupt_row_group(path, group: int, column: str = "text") -> None:
    """Overwrite the page header of one column chunk of one row group."""
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    chunk = meta.row_group(group).column(names.index(column))
    offset = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[offset:offset + 24] = b"\xff" * 24
    path.write_bytes(bytes(data))


def _fineweb(n: int, start: int = 0) -> pa.Table:
    return pa.table({"text": [f"document number {i} " * 5 for i in range(start, start + n)],
                     "id": [f"<urn:uuid:{i:08d}>" for i in range(start, start + n)],
                     "int_score": pa.array([i % 6 for i in range(start, start + n)], pa.int64())})


def test_a_corrupt_row_group_is_recorded_row_by_row_and_reading_goes_on(tmp_path):
    path = tmp_path / "000_00000.parquet"
    pq.write_table(_fineweb(300), path, row_group_size=100)
    _corrupt_row_group(path, 1)
    docs, bad, records = _read_parquet(path, batch_rows=64)
    assert [d["id"] for d in docs] == [f"<urn:uuid:{i:08d}>" for i in [*range(100), *range(200, 300)]]
    assert records == 300  # the lost rows count, from the footer: max_bad_fraction sees 100 of 300
    # the id column of the row group still reads: the ledger names the source's own ids
    assert [i for i, _, _ in bad] == [f"<urn:uuid:{i:08d}>" for i in range(100, 200)]
    assert {r for _, r, _ in bad} == {"bad_record:unreadable_row_group"}
    detail = bad[0][2]
    assert detail.startswith("000_00000.parquet row group 1: unreadable (rows 100-199 of the file; 100 rows lost)")
    assert "OSError" in detail and "\n" not in detail


def test_a_shard_whose_only_row_group_is_lost_still_has_its_columns(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(_fineweb(50), path)
    _corrupt_row_group(path, 0)
    task = ReadTask("s", str(path), "p.parquet", "000000-0000", 0)
    bad, stats = BadRecords("s", "p.parquet"), {}
    with open(path, "rb") as handle:
        tables = list(read_parquet(task, FORMATS["fineweb"], handle, 64, None, bad, stats))
    assert [(t.num_rows, t.schema.names) for t in tables] == [(0, ["id", "text", "int_score"])]
    assert tables[0].schema.field("int_score").type == pa.int64()
    assert len(bad) == 50 and stats["records"] == 50


def test_a_corrupt_row_group_of_the_id_column_gets_positional_ids(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(_fineweb(300), path, row_group_size=100)
    _corrupt_row_group(path, 2, column="id")
    docs, bad, records = _read_parquet(path)
    assert len(docs) == 200 and records == 300
    assert [i for i, _, _ in bad] == [f"s/p.parquet/{i}" for i in range(200, 300)]


def test_a_lost_row_whose_id_a_kept_document_has_is_named_by_position(tmp_path):
    path = tmp_path / "p.parquet"
    ids = [f"<urn:uuid:{i:08d}>" for i in range(300)]
    ids[200] = ids[5]
    pq.write_table(_fineweb(300).set_column(1, "id", pa.array(ids)), path, row_group_size=100)
    _corrupt_row_group(path, 2)
    docs, bad, records = _read_parquet(path)
    assert [i for i, _, _ in bad] == ["s/p.parquet/200#dup", *ids[201:]] and len(docs) == 200 and records == 300


def test_a_row_group_that_fails_once_is_read_again(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(_fineweb(300), path, row_group_size=100)
    group = pq.ParquetFile(path).metadata.row_group(1)
    start = min(group.column(i).dictionary_page_offset or group.column(i).data_page_offset for i in range(group.num_columns))
    end = start + sum(group.column(i).total_compressed_size for i in range(group.num_columns))

    class FailsOnce(io.BytesIO):
        """A remote file whose first read of row group 1 fails (the footer is read from offset 0 here)."""

        failed = False

        def read(self, n=-1):
            if not FailsOnce.failed and start <= self.tell() < end:
                FailsOnce.failed = True
                raise OSError("connection reset by peer")
            return super().read(n)

    task = ReadTask("s", str(path), "p.parquet", "000000-0000", 0)
    bad, stats = BadRecords("s", "p.parquet"), {}
    tables = list(read_parquet(task, FORMATS["fineweb"], FailsOnce(path.read_bytes()), 64, None, bad, stats))
    assert FailsOnce.failed
    assert sum(t.num_rows for t in tables) == 300 and len(bad) == 0 and stats["records"] == 300


# --- 6. file names and symlinks ----------------------------------------------------------------------

def test_a_file_name_that_is_not_utf8_is_read_with_a_utf8_id(tmp_path):
    d = os.fsencode(tmp_path)
    for raw in (b"caf\xe9.jsonl", b"caf\xe8.jsonl"):
        with open(os.path.join(d, raw), "wb") as fh:
            fh.write(b'{"text": "hello"}\n{"text": ""}\n')
    files = fs.expand(str(tmp_path / "*.jsonl"))
    assert [f.relative for f in files] == ["caf\\xe8.jsonl", "caf\\xe9.jsonl"]  # distinct, valid UTF-8
    f = files[1]
    task = ReadTask("s", f.path, f.relative, "000000-0000", f.size)
    bad, stats = BadRecords("s", f.relative), {}
    with fs.open_input(f.path) as handle:
        tables = list(READERS["jsonl"].read(task, FORMATS["jsonl"], handle, ReadOptions(100), bad, stats))
    assert tables[0].column("id").to_pylist() == ["s/caf\\xe9.jsonl/0"]
    assert bad.ids == ["s/caf\\xe9.jsonl/1"] and bad.details[0].startswith("caf\\xe9.jsonl line 2:")
    pa.array(bad.details, pa.string())  # storable


def test_broken_symlinks_are_unreadable_files_and_symlinked_directories_are_skipped_with_a_note(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.jsonl").write_bytes(b'{"text": "x"}\n')
    d = tmp_path / "d"
    d.mkdir()
    (d / "ok.jsonl").write_bytes(b'{"text": "ok"}\n')
    (d / "link.jsonl").symlink_to(tmp_path / "real" / "x.jsonl")
    (d / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (d / "loop1.jsonl").symlink_to(d / "loop2.jsonl")
    (d / "loop2.jsonl").symlink_to(d / "loop1.jsonl")
    (d / "dir.jsonl").symlink_to(tmp_path / "real")
    got = {f.relative: f.unreadable for f in fs.expand(str(d / "*.jsonl"))}
    assert set(got) == {"ok.jsonl", "link.jsonl", "dangling.jsonl", "loop1.jsonl", "loop2.jsonl"}
    assert got["ok.jsonl"] is None and got["link.jsonl"] is None
    assert "dangling symlink" in got["dangling.jsonl"] and "nowhere.jsonl" in got["dangling.jsonl"]
    assert "symlink loop" in got["loop1.jsonl"] and "symlink loop" in got["loop2.jsonl"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dir.jsonl" in err and "symlink to a directory" in err
    # the same through a directory path, and a symlinked directory named explicitly is searched
    assert {f.relative for f in fs.expand(str(d))} == set(got)
    assert [f.relative for f in fs.expand(str(d / "dir.jsonl"))] == ["x.jsonl"]
    assert fs.expand(str(d / "dangling.jsonl"))[0].unreadable.startswith("a dangling symlink")
    if hasattr(os, "mkfifo"):
        os.mkfifo(d / "pipe.jsonl")
        assert "FIFO" in {f.relative: f.unreadable for f in fs.expand(str(d / "*.jsonl"))}["pipe.jsonl"]


# --- end to end, through `curate run --inline` -------------------------------------------------------

def _pipeline(tmp_path, sources: str, extra: str = "") -> str:
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n{sources}\n{extra}\nstages:\n  ingest: {{}}\n")
    return str(f)


def _ledger(run):
    return duckdb.sql(f"SELECT id, reason, detail FROM read_parquet('{run}/ledger/**/*.parquet') ORDER BY id").fetchall()


def _summary(run, source):
    rows = json.loads((run / "summary.json").read_text())
    rows = rows["stages"] if isinstance(rows, dict) else rows
    return next(r for r in rows if r["stage"] == "ingest" and r["source"] == source)


def test_end_to_end_trailing_garbage_bom_and_a_non_utf8_name(tmp_path):
    (tmp_path / "documents").mkdir()
    data = gzip.compress(TEN_LINES, mtime=0) + b"\0" * 100
    (tmp_path / "documents" / "a.json.gz").write_bytes(data)
    with open(os.path.join(os.fsencode(tmp_path / "documents"), b"b\xff.json.gz"), "wb") as fh:
        fh.write(gzip.compress(b"\xef\xbb\xbf" + TEN_LINES.replace(b'"d', b'"e')))
    f = _pipeline(tmp_path, f"  dolma_cc:\n    format: dolma\n    paths: {tmp_path}/documents/*.json.gz")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    kept = duckdb.sql(f"SELECT id FROM read_parquet('{tmp_path}/run/kept/dolma_cc/*.parquet') ORDER BY id").fetchall()
    assert len(kept) == 20
    assert [(i, r) for i, r, _ in _ledger(tmp_path / "run")] == [(f"dolma_cc/a.json.gz/trailing@{len(data) - 100}",
                                                                  "bad_record:trailing_garbage")]
    s = _summary(tmp_path / "run", "dolma_cc")
    assert (s["in"], s["kept"], s["removed"]) == (21, 20, {"bad_record:trailing_garbage": 1})


def test_end_to_end_corrupt_row_group_counts_toward_max_bad_fraction(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "000_00000.parquet"
    pq.write_table(_fineweb(300), path, row_group_size=100)
    _corrupt_row_group(path, 1)
    f = _pipeline(tmp_path, f"  fwe:\n    format: fineweb\n    paths: {tmp_path}/d/*.parquet")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    s = _summary(tmp_path / "run", "fwe")
    assert (s["in"], s["kept"], s["removed"]) == (300, 200, {"bad_record:unreadable_row_group": 100})
    assert run_cli(f, "--output", tmp_path / "strict", "--inline", "-q", "--set", "execution.max_bad_fraction=0.2") == 1
    err = capsys.readouterr().err
    assert "100 of 300 records are bad" in err and "unreadable_row_group x100" in err and "row group 1" in err
    assert "Traceback" not in err


def test_end_to_end_dangling_parquet_symlink_is_an_unreadable_file(tmp_path):
    (tmp_path / "d").mkdir()
    pq.write_table(_fineweb(10), tmp_path / "d" / "a.parquet")
    (tmp_path / "d" / "b.parquet").symlink_to(tmp_path / "gone.parquet")
    f = _pipeline(tmp_path, f"  fwe:\n    format: fineweb\n    paths: {tmp_path}/d/*.parquet", "execution: {max_bad_fraction: 1.0}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert [(i, r) for i, r, _ in _ledger(tmp_path / "run")] == [("fwe/b.parquet/unreadable", "bad_record:unreadable_file")]


def test_end_to_end_dangling_jsonl_symlink_is_an_unreadable_file(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.jsonl").write_bytes(b'{"text": "ok"}\n')
    (tmp_path / "d" / "b.jsonl").symlink_to(tmp_path / "gone.jsonl")
    f = _pipeline(tmp_path, f"  s:\n    format: jsonl\n    paths: {tmp_path}/d/*.jsonl", "execution: {max_bad_fraction: 1.0}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    rows = _ledger(tmp_path / "run")
    assert [(i, r) for i, r, _ in rows] == [("s/b.jsonl/unreadable", "bad_record:unreadable_file")]
    assert "dangling symlink" in rows[0][2]
