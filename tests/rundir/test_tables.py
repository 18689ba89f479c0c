"""rundir/tables.py: one schema for the documents of every source, and `source` on every side table."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.errors import CurateError
from curate.rundir.tables import DocumentSchema, SourceSink, with_source


def test_sources_share_one_schema_with_their_own_columns_and_ours_first():
    fwe = pa.schema([("id", pa.string()), ("text", pa.string()), ("int_score", pa.int64()), ("score", pa.float64())])
    zyda = pa.schema([("text", pa.string()), ("id", pa.string()), ("source", pa.string()), ("score", pa.int32())])
    other = pa.schema([("id", pa.string()), ("text", pa.string()), ("score", pa.string())])   # no common type with the others
    shared = DocumentSchema({"fwe": [fwe], "zyda": [zyda], "other": [other]})
    assert shared.schema.names == ["source", "id", "text", "int_score", "fwe_score", "zyda_score", "other_score", "source_column"]
    assert shared.schema.field("zyda_score").type == pa.int32() and shared.schema.field("other_score").type == pa.string()
    rows = shared.conform(pa.table({"text": ["t"], "id": ["7"], "source": ["arxiv"], "score": pa.array([2], pa.int32())}, schema=zyda), "zyda")
    assert rows.schema == shared.schema
    assert rows.to_pylist() == [{"source": "zyda", "id": "7", "text": "t", "int_score": None, "fwe_score": None, "zyda_score": 2,
                                 "other_score": None, "source_column": "arxiv"}]


def test_types_that_widen_stay_one_column():
    a = pa.schema([("id", pa.string()), ("text", pa.string()), ("n", pa.int32())])
    b = pa.schema([("id", pa.string()), ("text", pa.string()), ("n", pa.int64())])
    shared = DocumentSchema({"a": [a], "b": [b]})
    assert shared.schema.field("n").type == pa.int64() and "a_n" not in shared.schema.names


def test_one_source_whose_files_disagree_is_named():
    a = pa.schema([("id", pa.string()), ("text", pa.string()), ("x", pa.string())])
    b = pa.schema([("id", pa.string()), ("text", pa.string()), ("x", pa.list_(pa.int64()))])
    with pytest.raises(CurateError, match="source 'fwe': column 'x'"):
        DocumentSchema({"fwe": [a, b], "dclm": [pa.schema([("id", pa.string()), ("x", pa.struct([("y", pa.int64())]))])]})


def test_side_table_rows_carry_source_and_keep_one_schema_when_empty(tmp_path):
    schema = pa.schema([("id", pa.string()), ("score", pa.float64())])
    with SourceSink(str(tmp_path / "empty.parquet"), "fwe", schema):
        pass
    with SourceSink(str(tmp_path / "full.parquet"), "fwe", schema) as sink:
        sink.write(pa.table({"id": ["a"], "score": pa.array([1], pa.int64())}))   # cast to the fixed schema
    assert pq.read_schema(tmp_path / "empty.parquet").names == ["source", "id", "score"]
    assert pq.read_schema(tmp_path / "empty.parquet").remove_metadata() == pq.read_schema(tmp_path / "full.parquet").remove_metadata()
    assert pq.read_table(tmp_path / "full.parquet").to_pylist() == [{"source": "fwe", "id": "a", "score": 1.0}]
    assert with_source(pa.table({"source": ["x"]}), "zyda").column_names == ["source", "source_column"]


def test_the_docs_schema_is_read_once_for_the_same_files_and_again_when_one_changes(tmp_path, monkeypatch):
    """A step asks for its docs' shared schema per source and once whole: the footers are read once while the files
    hold, and a docs file replaced (a new column) is read again."""
    from curate.rundir import RunDir, tables

    from conftest import write_docs

    run = RunDir(str(tmp_path / "run"))
    write_docs(run, {"web": ["a", "b", "c"], "books": [{"text": "d", "year": 1999}]}, shard_rows=2)
    shards = [("web", "00000"), ("web", "00001"), ("books", "00000")]
    calls = []
    read = tables.DocumentSchema._read_docs.__func__
    monkeypatch.setattr(tables.DocumentSchema, "_read_docs", classmethod(lambda cls, r, s: calls.append(len(s)) or read(cls, r, s)))
    first = DocumentSchema.of_docs(run, shards).schema
    assert DocumentSchema.of_docs(run, shards).schema.equals(first) and calls == [3]
    assert "year" in first.names and "pages" not in first.names
    pq.write_table(pa.table({"id": ["web-2"], "text": ["c"], "pages": [12]}), run.docs("web", "00001") + ".new")
    (tmp_path / "run/docs/web/00001.parquet.new").rename(run.docs("web", "00001"))
    assert "pages" in DocumentSchema.of_docs(run, shards).schema.names and calls == [3, 3]
