"""Eval sets: fields by name or dotted path, answers that index choices, local and remote files, one-line errors."""

import io
import json

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.decontam.evalsets import load_set
from curate.errors import CurateError


def test_fields_default_to_their_names_and_take_dotted_paths(tmp_path):
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"id": 7, "question": "q one", "answer": ["gold a", "gold b"], "passage": "the text"},
        {"question": "q two", "choices": {"text": ["c0", "c1"], "label": ["A", "B"]}, "answer": 1},
        {"question": "q three", "choices": ["x"], "answer": 5}]) + "\n")
    items = load_set("a", {"path": str(tmp_path / "a.jsonl")})
    assert [(i.set, i.id, i.segments) for i in items] == [
        ("a", "7", ("the text", "q one", "gold a", "gold b")), ("a", "1", ("q two", "c1", "c0", "c1")), ("a", "2", ("q three", "x"))]
    pq.write_table(pa.Table.from_pylist([{"m": {"uid": "u1"}, "q": {"text": "nested"}, "opts": ["o0", "o1"], "label": 1}]), tmp_path / "b.parquet")
    spec = {"path": str(tmp_path / "b.parquet"), "fields": {"question": "q.text", "choices": "opts", "answer": "label", "id": "m.uid",
                                                             "passage": None}}
    assert [(i.id, i.segments) for i in load_set("b", spec)] == [("u1", ("nested", "o1", "o0", "o1"))]


def test_a_remote_set_reads_through_fsspec():
    memory = fsspec.filesystem("memory")
    with memory.open("/evals/r.jsonl", "w") as f:
        f.write(json.dumps({"question": "a remote question", "id": "r1"}) + "\n")
    buf = io.BytesIO()
    pq.write_table(pa.table({"question": ["from parquet"]}), buf)
    with memory.open("/evals/r.parquet", "wb") as f:
        f.write(buf.getvalue())
    assert [i.id for i in load_set("r", {"path": "memory://evals/r.jsonl"})] == ["r1"]
    assert [i.segments for i in load_set("r", {"path": "memory://evals/r.parquet"})] == [("from parquet",)]
    with pytest.raises(CurateError, match=r"^eval set 'r': memory://evals/none.jsonl: not found$"):
        load_set("r", {"path": "memory://evals/none.jsonl"})


def test_eval_set_errors_are_one_line(tmp_path):
    with pytest.raises(CurateError, match=r"^eval set 'x': .*nope.jsonl: not found$"):
        load_set("x", {"path": str(tmp_path / "nope.jsonl")})
    (tmp_path / "e.jsonl").write_text('{"prompt": "a b c"}\nnot json\n')
    with pytest.raises(CurateError, match=r"e.jsonl line 2: not JSON"):
        load_set("x", {"path": str(tmp_path / "e.jsonl")})
    (tmp_path / "e.jsonl").write_text('{"prompt": "a b c"}\n')
    with pytest.raises(CurateError, match=r"no item has text in its fields \(passage: passage, question: question, answer: answer, "
                                          r"choices: choices\); name them under sets.x.fields"):
        load_set("x", {"path": str(tmp_path / "e.jsonl")})
    assert [(i.id, i.segments) for i in load_set("x", {"path": str(tmp_path / "e.jsonl"), "fields": {"question": "prompt"}})] == \
        [("0", ("a b c",))]
