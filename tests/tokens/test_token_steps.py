"""Token files live under their step: two tokenize/pack pairs never collide, an older run's RUN/tokens/ migrates
once, and a token format is one class found through the registry (a toy one written here is usable by pack)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from curate.io import fs
from curate.manifest.verify import verify
from curate.rundir import RunDir
from curate.rundir.views import connect
from curate.runner.migrate import migrate
from curate.tokens.formats import TokenFormat, names, token_format, unregister
from curate.tokens.megatron import read_megatron

from conftest import run_cli, token_documents

TEXTS = {"web": [f"document {i} of the web, " + "word " * (i % 37) for i in range(60)],
         "books": [f"chapter {i}: " + "page " * (3 * i % 50) for i in range(40)]}


def _pipeline(tmp_path: Path, steps: str) -> Path:
    for source, texts in TEXTS.items():
        (tmp_path / "in" / source).mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / source / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    f = tmp_path / "p.yaml"
    f.write_text("name: steps\nsources:\n" + "".join(f"  {s}: {{format: jsonl, paths: '{tmp_path}/in/{s}/*.jsonl'}}\n"
                                                    for s in TEXTS) + "stages:\n  ingest: {}\n" + steps)
    return f


def _token_docs(run: Path, step: str, source: str) -> list[tuple]:
    return token_documents(run, step, source)


def _packed_docs(prefix: Path) -> list[tuple]:
    """Documents of a Megatron prefix whose packing split none: each chunk (Megatron sequence) is one document."""
    index = read_megatron(str(prefix))
    return sorted(tuple(index[i].tolist()) for i in range(len(index)))


TWO_PAIRS = """  tok_eos: {use: tokenize, tokenizer: gpt2}
  pack_64: {use: pack, seq_len: 64, formats: [megatron, datatrove]}
  tok_plain: {use: tokenize, tokenizer: gpt2, eos: false}
  pack_128: {use: pack, seq_len: 128}
  manifest: {}
"""


def test_a_format_no_longer_asked_for_leaves_with_its_map_and_the_others_merge_as_before(tmp_path):
    """Each format merges in a task of its own: dropping datatrove removes its merged files and map, and megatron's
    files are those of a run that never asked for datatrove."""
    steps = "  tokenize: {}\n  pack: {seq_len: 64, formats: [megatron, datatrove]}\n"
    f = _pipeline(tmp_path, steps)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--no-report") == 0
    assert all((tmp_path / "run/pack" / f"{s}{suffix}").is_file() for s in TEXTS for suffix in (".ds", ".ds.map.parquet"))
    f.write_text(f.read_text().replace("formats: [megatron, datatrove]", "formats: [megatron]"))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--no-report") == 0
    assert run_cli(f, "--output", tmp_path / "fresh", "--inline", "-q", "--no-report") == 0
    for run in ("run", "fresh"):
        assert sorted(p.name for p in (tmp_path / run / "pack").iterdir() if p.is_file()) == sorted(
            f"{s}{suffix}" for s in TEXTS for suffix in (".bin", ".idx", ".idx.map.parquet"))
    for name in ("web.bin", "web.idx", "web.idx.map.parquet", "books.bin"):
        assert (tmp_path / "run/pack" / name).read_bytes() == (tmp_path / "fresh/pack" / name).read_bytes()


def test_two_tokenize_and_pack_pairs_write_apart_and_both_verify(tmp_path):
    f = _pipeline(tmp_path, TWO_PAIRS)
    run = tmp_path / "run"
    assert run_cli(f, "--output", run, "--inline", "-q", "--no-report") == 0
    assert not (run / "tokens").exists()
    for tok, pack, seq_len in (("tok_eos", "pack_64", 64), ("tok_plain", "pack_128", 128)):
        record = json.loads((run / "_state" / pack / "record.json").read_text())
        for source in TEXTS:
            assert record["outputs"][source]["prefix"] == f"{pack}/{source}"
            assert all((run / f).is_file() for f in record["outputs"][source]["files"])
            assert _packed_docs(run / pack / source) == _token_docs(run, tok, source)   # each pack read its own tokens
            assert read_megatron(str(run / pack / source)).lengths.max() <= seq_len
    eos, plain = (sum(len(d) for s in TEXTS for d in _token_docs(run, t, s)) for t in ("tok_eos", "tok_plain"))
    assert eos == plain + sum(len(t) for t in TEXTS.values())   # one EOS per document apart: neither overwrote the other
    assert (run / "pack_64" / "web.ds").is_file() and not (run / "pack_128" / "web.ds").exists()
    manifest = json.loads((run / "manifest.json").read_text())
    assert verify(str(run)) == [] and {o["prefix"] for o in manifest["outputs"].values()} == {"pack_128/web", "pack_128/books"}
    con = connect(str(run))
    counts = dict(con.sql("SELECT step, sum(tokens * copies) FROM tokens GROUP BY 1").fetchall())
    assert counts == {"tok_eos": eos, "tok_plain": plain}


def test_a_tokenize_step_named_after_a_run_folder_is_refused_at_load(tmp_path, capsys):
    f = _pipeline(tmp_path, "  docs: {use: tokenize}\n  pack: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert "stages.docs: a tokenize step writes its files to RUN/<step name>/" in capsys.readouterr().err


ONE_PAIR = "  tokenize: {tokenizer: gpt2}\n  pack: {seq_len: 64, formats: [megatron, datatrove]}\n  manifest: {}\n"


def _to_old_layout(run: Path) -> None:
    """The run as an earlier version left it: RUN/tokens/docs, RUN/tokens/_shards, RUN/tokens/<source>.*,
    and the pack step's results recorded under its earlier code version."""
    (run / "tokens").mkdir()
    (run / "tokenize").rename(run / "tokens" / "docs")
    for path in (run / "pack").iterdir():
        path.rename(run / "tokens" / path.name)
    (run / "pack").rmdir()
    state = run / "_state" / "pack" / "stage.json"
    value = json.loads(state.read_text())
    for source in value["sources"].values():
        source["fingerprint"], source["parts"]["version"] = "earlier", "pack/2"
        source.pop("shards", None)   # (a pack step keyed no shard then)
    state.write_text(json.dumps(value))


def test_a_run_of_the_old_layout_migrates_once_keeping_its_token_documents(tmp_path, caplog):
    f = _pipeline(tmp_path, ONE_PAIR)
    run, fresh = tmp_path / "run", tmp_path / "fresh"
    assert run_cli(f, "--output", fresh, "--inline", "-q", "--no-report") == 0
    shutil.copytree(fresh, run)
    _to_old_layout(run)
    markers = {p: p.read_bytes() for p in (run / "_state" / "tokenize").rglob("*.json")}
    with caplog.at_level(logging.INFO, logger="curate"):
        assert run_cli(f, "--output", run, "--inline", "--no-report") == 0
    assert "moving tokens/docs/ to tokenize/" in caplog.text
    assert not (run / "tokens").exists()
    assert {p: p.read_bytes() for p in markers} == markers, "the token documents were moved, not made again"
    for part in ("tokenize", "pack"):
        files = sorted(p.relative_to(run / part) for p in (run / part).rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(fresh / part) for p in (fresh / part).rglob("*") if p.is_file())
        assert all((run / part / p).read_bytes() == (fresh / part / p).read_bytes() for p in files), part
    manifest = json.loads((run / "manifest.json").read_text())
    assert verify(str(run)) == [] and manifest["outputs"]["web"]["prefix"] == "pack/web"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="curate"):   # once: the next run has nothing to move
        assert run_cli(f, "--output", run, "--inline", "--no-report") == 0
    assert "tokens/" not in caplog.text and "recomputing" not in caplog.text


def test_old_token_documents_of_several_tokenize_steps_are_made_again(tmp_path):
    run = RunDir(str(tmp_path))
    fs.write_bytes(run.path("tokens", "docs", "web", "00000.parquet"), b"x")
    fs.write_bytes(run.path("tokens", "web.bin"), b"x")
    for step in ("a", "b"):
        run.write_json(run.stage_file(step), {"complete": True, "sources": {}})
    pipeline = SimpleNamespace(stages=[SimpleNamespace(name="a", kind="tokenize"), SimpleNamespace(name="b", kind="tokenize")])
    migrate(run, pipeline, {"tokenize": SimpleNamespace(PRODUCES=("tokens",))})
    assert not fs.exists(run.path("tokens")) and not fs.exists(run.state("a")) and not fs.exists(run.state("b"))
    assert not fs.exists(run.path("a")) and not fs.exists(run.path("b"))


@pytest.fixture
def raw32():
    """A token format written in a test: every document's ids, whole, as little-endian uint32 in `<prefix>.u32`."""

    @token_format
    class Raw32(TokenFormat):
        name = "raw32"
        suffixes = (".u32",)

        def write(self, prefix, tokens, packed, *, vocab_size, tokenizer_name, layout="chunks"):
            fs.write_bytes(prefix + ".u32", tokens.ids.astype("<u4").tobytes())
            return len(tokens.ids)

        def merge(self, prefix, parts, *, vocab_size, tokenizer_name):
            fs.write_bytes(prefix + ".u32", b"".join(fs.read_bytes(p + ".u32") for p in parts))

    yield Raw32
    unregister("raw32")


def test_a_format_added_in_a_test_is_usable_by_pack(run_stage, raw32):
    assert "raw32" in names()
    docs = {"web": [f"text number {i} " * (i % 5 + 1) for i in range(30)]}
    done = run_stage("pack", {"seq_len": 32, "formats": ["raw32"]}, docs=docs, shard_rows=7, before=[("tokenize", {})])
    record = json.loads(Path(done.run.path("_state", "pack", "record.json")).read_text())
    assert record["formats"] == ["megatron", "raw32"]
    assert record["outputs"]["web"]["files"] == ["pack/web.bin", "pack/web.idx", "pack/web.idx.map.parquet", "pack/web.u32"]
    table = done.table("tokenize", "web")   # shards in order, documents in order: what the toy format concatenates
    expected = np.concatenate([np.asarray(t, np.uint32) for t in table.column("tokens").to_pylist()])
    assert np.array_equal(np.frombuffer(fs.read_bytes(done.run.path("pack", "web.u32")), "<u4"), expected)
    assert record["outputs"]["web"]["tokens"] == len(expected)


def test_an_unknown_format_is_one_line_naming_the_known_ones(run_stage):
    from curate.errors import ConfigError

    with pytest.raises(ConfigError, match=r"stages\.pack\.formats\[0\]: expected one of datatrove, megatron, got string 'nope'"):
        run_stage("pack", {"formats": ["nope"]}, before=[("tokenize", {})])


def test_trace_decodes_with_the_tokenizer_its_pack_step_read(tmp_path):
    """Two tokenize/pack pairs with different tokenizers: each packed output is decoded with its own (not the
    run's last tokenize step's), so the text `curate trace` prints is the document's."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    from curate.trace import trace

    hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator([t for texts in TEXTS.values() for t in texts], trainers.BpeTrainer(
        vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"]))
    hf.save(str(tmp_path / "tiny.json"))
    f = _pipeline(tmp_path, "  tok_gpt2: {use: tokenize, tokenizer: gpt2}\n  pack_gpt2: {use: pack, seq_len: 64, method: none}\n"
                            f"  tok_tiny: {{use: tokenize, tokenizer: '{tmp_path}/tiny.json'}}\n"
                            "  pack_tiny: {use: pack, seq_len: 64, method: none}\n")
    run = tmp_path / "run"
    assert run_cli(f, "--output", run, "--inline", "-q", "--no-report") == 0
    first = trace(str(run), "pack_gpt2/web", sequence=0, snippet=1000)[0]
    assert first["text"].startswith("document "), first["text"]
    assert trace(str(run), "pack_tiny/web", sequence=0, snippet=1000)[0]["text"].replace(" ", "").startswith("document")
