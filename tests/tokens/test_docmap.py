"""Document maps beside every packed output: re-tokenizing each mapped document reproduces exactly the tokens at its
mapped range, for every sequence of whole runs (best_fit, concat, none; Megatron and datatrove; documents split
across sequences; mix copies), and the packed files' bytes are those written without maps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.manifest.verify import verify
from curate.tokens.batch import Tokens
from curate.tokens.docmap import SHARD_MAPS, SHARDS, DocKeys, merge_maps
from curate.tokens.megatron import read_megatron
from curate.tokens.shard import pack_shard
from curate.tokens.tokenizer import load_tokenizer
from curate.trace import DocumentMap, trace

from curate.cli import main
from conftest import run_cli

TEXTS = {"web": [f"document {i} of the web, " + "word " * (i % 37) for i in range(60)],
         "books": [f"chapter {i}: " + "page " * (3 * i % 50) for i in range(40)]}


def _run(tmp_path: Path, method: str, mix: str = "") -> Path:
    seq_len = 64 if method == "none" else 16   # none: one document a sequence (longer ones make a density over 1)
    for source, texts in TEXTS.items():
        (tmp_path / "in" / source).mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / source / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    f = tmp_path / "p.yaml"
    f.write_text("name: maps\nsources:\n" + "".join(f"  {s}: {{format: jsonl, paths: '{tmp_path}/in/{s}/*.jsonl'}}\n"
                                                   for s in TEXTS) + "stages:\n  ingest: {}\n" + mix +
                 f"  tokenize: {{tokenizer: gpt2}}\n  pack: {{seq_len: {seq_len}, method: {method}, formats: [megatron, datatrove]}}\n"
                 "  manifest: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    return tmp_path / "run"


def _stream(prefix: Path, fmt: str) -> np.ndarray:
    if fmt == "megatron":
        return read_megatron(str(prefix)).tokens
    return np.frombuffer((prefix.parent / (prefix.name + ".ds")).read_bytes(), "<u2")


def _check_run(run: Path) -> dict:
    """Every row of every map against the re-tokenized text of its document; returns counts seen."""
    tok = load_tokenizer("gpt2")
    texts = {(r["source"], r["id"]): r["text"] for r in pq.read_table(run / "kept").to_pylist()}
    encoded = {key: np.append(tok.encode_batch([text]).ids, tok.eos_id) for key, text in texts.items()}
    seen = {"split": 0, "rows": 0, "copies": 0}
    for source in TEXTS:
        prefix = run / "pack" / source
        for fmt, suffix in (("megatron", ".idx.map.parquet"), ("datatrove", ".ds.map.parquet")):
            rows = pq.read_table(f"{prefix}{suffix}").to_pydict()
            stream = _stream(prefix, fmt)
            token, length = np.array(rows["token"]), np.array(rows["length"])
            assert token[0] == 0 and (token[1:] == (token + length)[:-1]).all() and (token + length)[-1] == len(stream)
            covered: dict = {}
            for i in range(len(token)):
                doc = encoded[(rows["source"][i], rows["id"][i])]
                start = rows["doc_offset"][i]
                assert stream[token[i]: token[i] + length[i]].tolist() == doc[start: start + length[i]].tolist()
                covered.setdefault((rows["id"][i], rows["copy"][i]), []).append((start, start + int(length[i])))
            for (doc_id, _), ranges in covered.items():   # each copy's pieces tile its document exactly once
                ranges.sort()
                assert ranges[0][0] == 0 and ranges[-1][1] == len(encoded[(source, doc_id)])
                assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
                seen["split"] += len(ranges) > 1
            seen["rows"] += len(token)
            seen["copies"] = max(seen["copies"], max(rows["copy"]) + 1)
            if fmt == "megatron":   # keyed as the .idx counts: chunk = .idx sequence, sequence = .idx document
                index = read_megatron(str(prefix))
                assert rows["chunk"] == list(range(len(index))) and (index.lengths == length).all()
                doc_of_chunk = np.searchsorted(index.document_indices, np.arange(len(index)), side="right") - 1
                assert rows["sequence"] == doc_of_chunk.tolist()
            else:                   # keyed as datatrove counts: one .ds.index entry per document
                ends = np.frombuffer((prefix.parent / (prefix.name + ".ds.index")).read_bytes(), "<u8")
                assert (ends == token + length).all() and rows["sequence"] == list(range(len(ends)))
    return seen


@pytest.mark.parametrize("method", ["best_fit", "concat", "none"])
def test_every_mapped_range_is_the_retokenized_document(tmp_path, method):
    run = _run(tmp_path, method)
    seen = _check_run(run)
    assert seen["rows"] > 100
    if method != "none":
        assert seen["split"] > 10, "documents longer than seq_len are split across sequences"
    assert verify(str(run)) == []
    listed = {f["path"] for f in json.loads((run / "manifest.json").read_text())["files"]}
    assert {"pack/web.idx.map.parquet", "pack/web.ds.map.parquet", "pack/books.idx.map.parquet"} <= listed


def test_maps_follow_the_copies_of_the_mix(tmp_path):
    run = _run(tmp_path, "best_fit", mix="  mix: {epochs: {web: 3.0, books: 2.0}}\n")
    assert _check_run(run)["copies"] == 3


@pytest.mark.parametrize("method", ["best_fit", "concat", "none"])
def test_the_packed_bytes_are_those_written_without_maps(tmp_path, method):
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 60, 50)
    tokens = Tokens(rng.integers(0, 50000, int(lengths.sum())).astype(np.int32), np.concatenate([[0], np.cumsum(lengths)]))
    keys = DocKeys("web", pa.array([f"d{i}" for i in range(50)]), np.ones(50, np.int64))
    digests = []
    for name, k in (("plain", None), ("mapped", keys)):
        pack_shard(tokens, str(tmp_path / name), vocab_size=50257, seq_len=32, method=method, seed=3,
                   formats=("megatron", "datatrove"), keys=k)
        digests.append({s: hashlib.sha256((tmp_path / f"{name}{s}").read_bytes()).hexdigest()
                        for s in (".bin", ".idx", ".ds", ".ds.index", ".ds.metadata")})
    assert digests[0] == digests[1]
    assert not (tmp_path / "plain.maps.arrow").exists() and (tmp_path / "mapped.maps.arrow").exists()


def test_a_pack_shard_writes_its_formats_maps_in_one_file_the_merge_splits(tmp_path):
    """One maps file a shard (small shards paid a Parquet file and a rename per format); the merge gives each format
    its own map, positions shifted past the shards before, each shard's rows named in the footer."""
    rng = np.random.default_rng(2)
    parts = []
    for i in range(3):
        lengths = rng.integers(1, 60, 20)
        tokens = Tokens(rng.integers(0, 50000, int(lengths.sum())).astype(np.int32), np.concatenate([[0], np.cumsum(lengths)]))
        keys = DocKeys("web", pa.array([f"s{i}d{j}" for j in range(20)]), np.ones(20, np.int64))
        pack_shard(tokens, str(tmp_path / f"{i:06d}"), vocab_size=50257, seq_len=32, method="best_fit", seed=i,
                   formats=("megatron", "datatrove"), keys=keys)
        parts.append(str(tmp_path / f"{i:06d}"))
    assert sorted(p.name for p in tmp_path.iterdir() if "map" in p.name) == [f"{i:06d}.maps.arrow" for i in range(3)]
    merge_maps({"megatron": str(tmp_path / "all.idx.map.parquet"), "datatrove": str(tmp_path / "all.ds.map.parquet")},
               [p + SHARD_MAPS for p in parts])
    for suffix in (".idx.map.parquet", ".ds.map.parquet"):
        handle = pq.ParquetFile(tmp_path / f"all{suffix}")
        table, where = handle.read(), json.loads(handle.schema_arrow.metadata[SHARDS])
        assert list(where) == ["000000", "000001", "000002"] and sum(n for _, n in where.values()) == table.num_rows
        first, rows = where["000001"]
        ids = table.column("id").to_pylist()
        assert {x[:2] for x in ids[first:first + rows]} == {"s1"} and set(ids[:first]) == {f"s0d{j}" for j in range(20)}
        tokens = table.column("token").to_numpy()
        assert tokens[0] == 0 and (np.diff(tokens) == table.column("length").to_numpy()[:-1]).all()


def test_trace_and_the_python_map_name_the_documents_of_a_sequence(tmp_path, capsys):
    run = _run(tmp_path, "best_fit")
    dmap = DocumentMap(str(run / "pack" / "web"))
    rows = dmap.sequence(5)
    assert rows and [r["offset"] for r in rows] == sorted(r["offset"] for r in rows)
    flat = rows[-1]["token"] + rows[-1]["length"] - 1
    assert dmap.token(flat) == [rows[-1]]
    traced = trace(str(run), "pack/web", sequence=5)
    assert [r["id"] for r in traced] == [r["id"] for r in rows] and all(r["text"] for r in traced)
    assert main(["trace", str(run), "pack/web", "--sequence", "5"]) == 0
    out = capsys.readouterr().out
    assert rows[0]["id"] in out and "tokens" in out
    assert main(["trace", str(run), "pack/web", "--token", "10000000"]) == 2
    assert "no token 10000000" in capsys.readouterr().err
