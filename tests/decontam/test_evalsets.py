"""Eval sets: fields by name or dotted path, answers that index choices, local and remote files, one-line errors."""

import io
import json

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.decontam.evalsets import load_set
from curate.errors import ConfigError, CurateError


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
    with pytest.raises(CurateError, match=r"^sets.r.path: memory://evals/none.jsonl: not found$"):
        load_set("r", {"path": "memory://evals/none.jsonl"})


def test_eval_set_errors_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"^p.yaml: stages.dc.sets.x.path: .*nope.jsonl: not found$"):
        load_set("x", {"path": str(tmp_path / "nope.jsonl")}, "p.yaml", "stages.dc.sets.x")
    (tmp_path / "e.jsonl").write_text('{"prompt": "a b c"}\nnot json\n')
    with pytest.raises(CurateError, match=r"e.jsonl line 2: not JSON"):
        load_set("x", {"path": str(tmp_path / "e.jsonl")})
    (tmp_path / "e.jsonl").write_text('{"prompt": "a b c"}\n')
    with pytest.raises(CurateError, match=r"^sets.x.fields: no item of .*e.jsonl has text in its fields \(passage: passage, "
                                          r"question: question, answer: answer, choices: choices\); name them here$"):
        load_set("x", {"path": str(tmp_path / "e.jsonl")})
    assert [(i.id, i.segments) for i in load_set("x", {"path": str(tmp_path / "e.jsonl"), "fields": {"question": "prompt"}})] == \
        [("0", ("a b c",))]


def ids_and_segments(items):
    return [(i.id, i.segments) for i in items]


def test_valid_jsonl_is_read_whatever_its_line_separators_mark_or_compression(tmp_path, caplog, monkeypatch):
    import gzip
    import logging

    import zstandard

    monkeypatch.setattr(logging.getLogger("curate"), "propagate", True)   # a CLI run in this process may have stopped it
    caplog.set_level(logging.WARNING, logger="curate")

    records = [{"id": "a", "question": "first\u2028line\u2029para"}, {"id": "b", "question": "second"}]
    text = "\ufeff" + "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records) + "[1, 2]\n7\n"
    data = text.encode()
    want = [("a", ("first\u2028line\u2029para",)), ("b", ("second",))]
    zstd = zstandard.ZstdCompressor().compress(data)
    files = {"plain.jsonl": data, "z.jsonl.zst": zstd, "z-named.jsonl": zstd, "g.jsonl": gzip.compress(data[:40]) + gzip.compress(data[40:])}
    for name, raw in files.items():
        (tmp_path / name).write_bytes(raw)
        caplog.clear()
        assert ids_and_segments(load_set("x", {"path": str(tmp_path / name)})) == want, name
        assert "sets.x (" in caplog.text and "2 lines are not a JSON object, skipped (line 3: a list)" in caplog.text


def test_a_decompression_bomb_is_refused_in_bounded_memory(tmp_path):
    import gzip
    import tracemalloc

    import zstandard

    zeros = b"\0" * (48 << 20)
    (tmp_path / "bomb.jsonl.gz").write_bytes(gzip.compress(zeros, 1))
    (tmp_path / "bomb.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(zeros))
    del zeros
    for name in ("bomb.jsonl.gz", "bomb.jsonl.zst"):
        tracemalloc.start()
        with pytest.raises(ConfigError, match=rf"^p.yaml: sets.b.max_mb: .*{name} inflates to more than 8 MB; raise sets.b.max_mb "):
            load_set("b", {"path": str(tmp_path / name), "max_mb": 8}, "p.yaml")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 24 << 20, f"{name}: {peak >> 20} MB held at once"
    # a Parquet file whose pages inflate (one long string, dictionary-encoded) is refused a batch at a time
    pq.write_table(pa.table({"question": ["x" * 4096] * 4000}), tmp_path / "bomb.parquet")
    assert (tmp_path / "bomb.parquet").stat().st_size < 1 << 20
    with pytest.raises(ConfigError, match=r"^sets.b.max_mb: .*bomb.parquet inflates to more than 8 MB"):
        load_set("b", {"path": str(tmp_path / "bomb.parquet"), "max_mb": 8})
    assert len(load_set("b", {"path": str(tmp_path / "bomb.parquet"), "max_mb": 64})) == 4000


def test_duplicate_ids_and_truncated_files_are_refused_in_one_line(tmp_path):
    import gzip

    rows = [{"id": "a", "question": "one"}, {"id": "b", "question": "two"}, {"id": "a", "question": "three"}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match=r"^sets.d.fields.id: .*d.jsonl: two items have the id 'a' \(line 1 and line 3\): a flag "
                                          r"names its item by id; name a field with unique ids, or `id: null` for row numbers$"):
        load_set("d", {"path": str(tmp_path / "d.jsonl")})
    assert [i.id for i in load_set("d", {"path": str(tmp_path / "d.jsonl"), "fields": {"id": None}})] == ["0", "1", "2"]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet")
    with pytest.raises(ConfigError, match=r"two items have the id 'a' \(row 0 and row 2\)"):
        load_set("d", {"path": str(tmp_path / "d.parquet")})
    whole = gzip.compress("".join(json.dumps({"id": i, "question": f"q {i}"}) + "\n" for i in range(2000)).encode())
    (tmp_path / "t.jsonl.gz").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ConfigError, match=r"^sets.t.path: .*t.jsonl.gz: the gzip stream ends early \(a truncated file\)$"):
        load_set("t", {"path": str(tmp_path / "t.jsonl.gz")})


def test_a_set_of_more_items_than_max_items_is_refused(tmp_path):
    (tmp_path / "many.jsonl").write_text("".join(json.dumps({"question": f"q {i}"}) + "\n" for i in range(11)))
    with pytest.raises(ConfigError, match=r"^sets.m.max_items: .*many.jsonl has more than 10 items; raise sets.m.max_items "):
        load_set("m", {"path": str(tmp_path / "many.jsonl"), "max_items": 10})
    assert len(load_set("m", {"path": str(tmp_path / "many.jsonl"), "max_items": 11})) == 11
