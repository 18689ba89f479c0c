"""The `Reader` interface: a new reader kind is one small class, registered by kind, that ingest uses with
no edit elsewhere; a format whose kind has no reader fails at load, in one line."""

import csv
import io

import duckdb
import pyarrow as pa
import pytest

from conftest import run_cli
from curate.readers import FORMATS, READERS, Format, Reader, register


class CsvReader(Reader):
    """One document per CSV row (header `id,text`); a row with a blank text is a bad record."""

    kind = "csv_demo"
    formats = (Format("csv_demo", "csv_demo", text="text", id="id"),)

    def schema(self, fmt):
        return pa.schema([("id", pa.string()), ("text", pa.string())])

    def read(self, task, fmt, handle, options, bad, stats):
        rows = list(csv.DictReader(io.TextIOWrapper(handle, "utf-8", newline="")))
        stats["records"] = stats.get("records", 0) + len(rows)
        ids, texts = [], []
        for n, row in enumerate(rows):
            doc_id = row.get(fmt.id) or f"{task.id_prefix}/{n}"
            if not (row.get(fmt.text) or "").strip():
                bad.add(doc_id, "empty_text", f"row {n + 1}", "text is empty or whitespace")
                continue
            ids.append(doc_id)
            texts.append(row[fmt.text])
        yield pa.table([ids, texts], schema=self.schema(fmt))


@pytest.fixture
def csv_kind():
    register(CsvReader)
    yield
    READERS.pop("csv_demo")
    FORMATS.pop("csv_demo")


def _pipeline(tmp_path, source: str, stages: str = "  ingest: {}\n") -> str:
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  s:\n{source}\nstages:\n{stages}")
    return str(f)


def test_a_new_reader_kind_ingests_through_a_pipeline_with_every_record_accounted(tmp_path, csv_kind):
    for part, body in (("a", "id,text\nx1,first note\n,no id here\nx3,   \n"), ("b", "id,text\nx4,second note\nx5,drop\n")):
        (tmp_path / "in" / part).mkdir(parents=True)
        (tmp_path / "in" / part / "notes.csv").write_text(body)
    f = _pipeline(tmp_path, f"    format: csv_demo\n    paths: ['{tmp_path}/in/a/*.csv', '{tmp_path}/in/b/*.csv']",
                  "  ingest: {}\n  short: {use: filter, where: {s: 'length(text) > 4'}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    kept = duckdb.sql(f"SELECT id, text FROM '{tmp_path}/run/kept/s/*.parquet' ORDER BY id").fetchall()
    assert kept == [("s/a/notes.csv/1", "no id here"), ("x1", "first note"), ("x4", "second note")]
    ledger = duckdb.sql(f"SELECT id, stage, reason FROM '{tmp_path}/run/ledger/*/*/*.parquet' ORDER BY id").fetchall()
    assert ledger == [("x3", "ingest", "bad_record:empty_text"), ("x5", "short", "where:length(text) > 4")]
    assert len(kept) + len(ledger) == 5  # every CSV row: kept or in the ledger


def test_a_format_whose_kind_has_no_reader_fails_at_load_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(FORMATS, "mystery", Format("mystery", "nosuchkind"))
    (tmp_path / "in.txt").write_text("x\n")
    f = _pipeline(tmp_path, f"    format: mystery\n    paths: {tmp_path}/in.txt")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sources.s.format" in err and "'nosuchkind'" in err
    assert "known kinds: jsonl, parquet, rpv2" in err
    assert not (tmp_path / "run" / "docs").exists()


def test_every_preset_is_read_by_a_registered_kind():
    assert {"jsonl", "parquet", "rpv2"} <= set(READERS)
    assert all(f.kind in READERS and READERS[f.kind].kind == f.kind for f in FORMATS.values())
    with pytest.raises(ValueError, match="of kind 'jsonl', not 'other'"):
        register(type("Bad", (CsvReader,), {"kind": "other", "formats": (FORMATS["jsonl"],)}))
    assert "other" not in READERS


class TsvReader(Reader):
    """Only how to read a file: tab-separated `id<TAB>text` rows as they are. Ids, checks, batches, counting: the base."""

    kind = "tsv_demo"
    formats = (Format("tsv_demo", "tsv_demo", text="text", id="id"),)

    def read_file(self, task, fmt, handle, options, bad):
        rows = [line.split("\t", 1) for line in handle.read().decode().splitlines()]
        yield pa.table({"id": [r[0] for r in rows], "text": [r[1] if len(r) > 1 else None for r in rows],
                        "n": list(range(len(rows)))})


def test_a_reader_that_only_reads_a_file_gets_ids_checks_batches_and_counting_from_the_base(tmp_path):
    from curate.readers.base import BadRecords, ReadOptions, ReadTask

    body = b"a\tfirst\n\tno id: positional\nb\t   \na\trepeated id\nc\nd\tlast one\n"
    task = ReadTask("s", str(tmp_path / "x.tsv"), "x.tsv", "x.tsv-0000", len(body))
    bad, stats = BadRecords("s", "x.tsv"), {}
    batches = list(TsvReader().read(task, TsvReader.formats[0], io.BytesIO(body), ReadOptions(batch_rows=2), bad, stats))
    assert [b.num_rows for b in batches] == [2, 1]   # batches of batch_rows documents (the last: the rest), bad ones dropped
    docs = pa.concat_tables(batches)
    assert docs.column_names == ["id", "text", "n"]
    assert docs.column("id").to_pylist() == ["a", "s/x.tsv/1", "d"]
    assert list(zip(bad.ids, bad.reasons)) == [("b", "bad_record:empty_text"), ("s/x.tsv/3#dup", "bad_record:duplicate_id"),
                                               ("c", "bad_record:missing_text")]
    assert stats["records"] == 6 == len(docs) + len(bad)   # every record counted: kept or bad


def _jsonl_documents(body: bytes, batch_rows: int, **fields):
    from curate.readers.base import BadRecords, ReadOptions, ReadTask

    task = ReadTask("s", "/in/x.jsonl", "x.jsonl", "x.jsonl-0000", len(body))
    bad, stats = BadRecords("s", "x.jsonl"), {}
    batches = list(READERS["jsonl"].read(task, FORMATS["jsonl"].with_fields(fields), io.BytesIO(body),
                                         ReadOptions(batch_rows), bad, stats))
    return batches, bad, stats["records"]


def test_json_lines_bad_records_reach_the_ledger_in_line_order_and_documents_come_in_batches_of_batch_rows():
    import json

    deep: dict = {}
    for _ in range(300):   # past orjson's 255 levels: the record cannot be stored
        deep = {"a": deep}
    lines = [{"id": "a", "text": "first"}, "{not json", {"id": "b", "text": "  "}, {"id": "c", "text": "third"}, [1],
             {"id": "a", "text": "again"}, {"id": "m"}, {"id": "b", "text": "b, after its blank twin"},
             {"id": "e", "text": "\u3000", "deep": deep}, {"id": "f", "text": "deep", "deep": deep}, "",
             {"id": "d", "text": "fourth"}, {"text": "no id"}]
    body = b"".join((json.dumps(x) if not isinstance(x, str) else x).encode() + b"\n" for x in lines)
    batches, bad, records = _jsonl_documents(body, 2, id="id")
    assert [b.num_rows for b in batches] == [2, 2, 1]   # batch_rows documents each, whatever read_file yields
    docs = pa.concat_tables(batches)
    assert docs.column("id").to_pylist() == ["a", "c", "b", "d", "s/x.jsonl/12"]   # a blank record's id is no document's
    assert list(zip(bad.ids, bad.reasons, bad.details)) == [
        ("s/x.jsonl/1", "bad_record:invalid_json", bad.details[0]),
        ("b", "bad_record:empty_text", "x.jsonl line 3: text is empty or whitespace"),
        ("s/x.jsonl/4", "bad_record:not_an_object", "x.jsonl line 5: expected a JSON object, got list"),
        ("s/x.jsonl/5#dup", "bad_record:duplicate_id", "x.jsonl line 6: id 'a' already seen in this file"),
        ("m", "bad_record:missing_text", "x.jsonl line 7: no 'text' field"),
        ("e", "bad_record:empty_text", "x.jsonl line 9: text is empty or whitespace"),   # blank comes before too deep
        ("f", "bad_record:too_deep", bad.details[6])]
    assert bad.details[0].startswith("x.jsonl line 2: ")
    assert bad.details[6].startswith("x.jsonl line 10: a field other than the text is nested too deeply")
    assert records == 12 == len(docs) + len(bad)   # the blank line 11 is no record


def test_a_rejected_records_id_does_not_make_a_later_document_a_repeat(tmp_path):
    import pyarrow.parquet as pq

    from curate.readers.base import BadRecords, ReadOptions, ReadTask

    pq.write_table(pa.table({"id": ["x", "x", "y", "y"], "text": ["  ", "x, kept", "y, kept", "y again"]}), tmp_path / "f.parquet")
    task = ReadTask("s", str(tmp_path / "f.parquet"), "f.parquet", "f-0000", 0)
    bad, stats = BadRecords("s", "f.parquet"), {}
    with open(tmp_path / "f.parquet", "rb") as handle:
        docs = pa.concat_tables(READERS["parquet"].read(task, FORMATS["fineweb"], handle, ReadOptions(64), bad, stats))
    assert docs.column("id").to_pylist() == ["x", "y"]   # as in JSON Lines, and as across files (only documents count)
    assert list(zip(bad.ids, bad.reasons)) == [("x", "bad_record:empty_text"), ("s/f.parquet/3#dup", "bad_record:duplicate_id")]


def test_arrows_whitespace_is_pythons_so_json_lines_blank_texts_are_the_same_whichever_checks():
    """JSON Lines checked `not text.strip()`; the base checks with Arrow's utf8_trim_whitespace: the same set."""
    import numpy as np
    import pyarrow.compute as pc

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    arrow = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(pa.array(chars))), 0).to_numpy(zero_copy_only=False)
    assert [c for c, blank in zip(chars, arrow) if blank] == [c for c in chars if c.isspace()]
    assert np.count_nonzero(arrow) == 29
