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
