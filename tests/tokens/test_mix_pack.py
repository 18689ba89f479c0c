"""mix -> tokenize -> pack end to end: the plan, whole-document repetition, and megatron-core reading our files."""

import hashlib
import json
from collections import Counter

import duckdb
import numpy as np
import pytest

from curate.rundir.views import connect
from curate.stages.mix import copies, plan_mixture, uniform
from curate.tokens.repetition import effective_tokens
from curate.why import story

from conftest import run_cli


def test_zyda2_weights_give_the_stated_token_shares():
    available = {"dclm": 3348.9, "fwe": 1319.2, "zyda": 163.6, "dolma_cc": 238.4}
    plan = plan_mixture("weights", {"dclm": 4.0, "fwe": 4.0, "zyda": 0.16, "dolma_cc": 0.24}, available, None)
    shares = {s: round(p["share"] * 100, 1) for s, p in plan["sources"].items()}
    assert shares == {"dclm": 47.6, "fwe": 47.6, "zyda": 1.9, "dolma_cc": 2.9}
    # no total given: the largest mixture that repeats nothing; fwe is the binding source
    assert plan["sources"]["fwe"]["epochs"] == pytest.approx(1.0)
    assert all(p["epochs"] <= 1.0 + 1e-9 for p in plan["sources"].values())
    big = plan_mixture("weights", {"dclm": 4.0, "fwe": 4.0, "zyda": 0.16, "dolma_cc": 0.24}, available, 5000.0)
    assert big["sources"]["fwe"]["epochs"] == pytest.approx(5000 * 4 / 8.4 / 1319.2)


def test_copies_are_deterministic_and_match_epochs_on_average():
    ids = [f"doc{i}" for i in range(20000)]
    u = uniform(7, "s", ids)
    assert np.array_equal(u, uniform(7, "s", ids)) and not np.array_equal(u, uniform(8, "s", ids))
    # what a published mixture was sampled by: blake2b-64 of (seed, source, id) over 2**64, never another hash
    assert u[123] == int.from_bytes(hashlib.blake2b(b"7\x00s\x00doc123", digest_size=8).digest(), "little") / 2**64
    assert copies(2.0, u).tolist() == [2] * len(ids)
    assert abs(copies(0.25, u).mean() - 0.25) < 0.01
    assert abs(copies(1.5, u).mean() - 1.5) < 0.01


def _pipeline(tmp_path, sample, mix: str, seq_len: int = 1 << 16, method="best_fit", sources: str = "", stages: str = ""):
    f = tmp_path / "mp.yaml"
    f.write_text(f"""name: mp
sources:
  fwe: {{format: fineweb, paths: '{sample}/fwe/data/*/*.parquet'}}
  dclm: {{format: dclm, paths: '{sample}/dclm/global-shard_*/local-shard_*/*.jsonl.zst'}}
{sources}stages:
  ingest: {{}}
  mix: {mix}
  tokenize: {{tokenizer: gpt2}}
  pack: {{seq_len: {seq_len}, method: {method}, formats: [megatron, datatrove]}}
{stages}""")
    return f


def _megatron_docs(prefix):
    torch = pytest.importorskip("torch")  # noqa: F841
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from curate.tokens.tokenizer import load_tokenizer

    tok = load_tokenizer("gpt2")
    ds = IndexedDataset(str(prefix), mmap=True)
    texts = []
    for i in range(len(ds)):
        ids = np.asarray(ds[i])
        assert ids[-1] == tok.eos_id
        texts.append(tok.decode(ids[:-1].tolist()))
    return texts


def test_megatron_core_reads_the_packed_output_back_to_the_kept_documents(tmp_path, sample_dir):
    pytest.importorskip("megatron.core")
    f = _pipeline(tmp_path, sample_dir, "{epochs: {fwe: 1.0, dclm: 2.0}}")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    for source, times in (("fwe", 1), ("dclm", 2)):
        kept = duckdb.sql(f"SELECT text FROM read_parquet('{tmp_path}/run/kept/{source}/*.parquet')").fetchall()
        got = Counter(_megatron_docs(tmp_path / "run" / "pack" / source))
        want = Counter()
        for (text,) in kept:
            want[text] += times
        assert got == want, source


def test_downsampling_goes_to_the_ledger_and_packing_is_deterministic(tmp_path, sample_dir):
    f = _pipeline(tmp_path, sample_dir, "{tokens: {fwe: 20000, dclm: 2.0e5}}", seq_len=512)
    assert run_cli(f, "--output", tmp_path / "a", "--inline", "-q") == 0
    assert run_cli(f, "--output", tmp_path / "b", "--inline", "-q") == 0
    down = duckdb.sql(f"SELECT count(*) FROM read_parquet('{tmp_path}/a/ledger/mix/fwe/*.parquet') WHERE reason = 'mix:downsampled'").fetchall()[0][0]
    assert down > 0
    for name in ("fwe.bin", "fwe.idx", "dclm.bin", "dclm.ds", "dclm.ds.index"):
        assert (tmp_path / "a" / "pack" / name).read_bytes() == (tmp_path / "b" / "pack" / name).read_bytes()
    from curate.tokens.megatron import read_megatron
    index = read_megatron(str(tmp_path / "a" / "pack" / "fwe"))
    assert index.lengths.max() <= 512


def _accounted(run, sample, sources=("fwe", "dclm")) -> None:
    """Every input record is kept or in the ledger, exactly once."""
    inputs = sum(json.loads((sample / "expected.json").read_text())[s]["records"] for s in sources)
    kept = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/kept/*/*.parquet', union_by_name=true)").fetchall()[0][0]
    removed = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall()[0][0]
    assert kept + removed == inputs


def test_a_weighted_source_with_no_tokens_stops_the_run_before_tokenizing(tmp_path, sample_dir, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "only.jsonl").write_bytes(b"")
    f = _pipeline(tmp_path, sample_dir, "{weights: {fwe: 4.0, dclm: 4.0, empty: 0.24}}",
                  sources=f"  empty: {{format: jsonl, paths: '{tmp_path}/empty/*.jsonl'}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("curate: error: mix: empty has no tokens left before the mixture")
    assert "give it 0 to leave it out (--set stages.mix.weights.empty=0)" in last
    assert not (tmp_path / "run" / "tokenize").exists() and not (tmp_path / "run" / "_state" / "tokenize").exists()
    # what the error says to do: the same run goes on, with the stated shares of the others
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q", "--set", "stages.mix.weights.empty=0") == 0
    plan = json.loads((tmp_path / "run" / "_state" / "mix" / "record.json").read_text())["plan"]
    assert plan["sources"]["fwe"]["share"] == 0.5 and plan["sources"]["empty"]["chosen_tokens"] == 0
    _accounted(tmp_path / "run", sample_dir)


def test_repetition_past_allow_epochs_stops_before_tokenizing_until_allowed(tmp_path, sample_dir, capsys):
    f = _pipeline(tmp_path, sample_dir, "{weights: {fwe: 1.0, dclm: 0.1}, total_tokens: 2.1e6}", seq_len=2048)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("curate: error: mix: fwe would be repeated ") and "more than allow_epochs 16" in last
    assert not (tmp_path / "run" / "_state" / "tokenize").exists()
    allow = last.split("--set stages.mix.allow_epochs=")[1].rstrip(")")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "--set", f"stages.mix.allow_epochs={allow}") == 0
    err = capsys.readouterr().err
    assert "curate: warning: mix: fwe is repeated 16." in err and "dclm is repeated" not in err
    plan = json.loads((tmp_path / "run" / "_state" / "mix" / "record.json").read_text())["plan"]
    assert [w.split(" epochs")[0] for w in plan["warnings"]] == [f"mix: fwe is repeated {plan['sources']['fwe']['epochs']:.2f}"]
    assert 16 < plan["sources"]["fwe"]["epochs"] <= float(allow) and plan["allow_epochs"] == float(allow)
    _accounted(tmp_path / "run", sample_dir)


def test_maximize_effective_tokens_on_the_sample(tmp_path, sample_dir, capsys):
    """7e5 tokens from ~2.2e5 unique, dclm capped at 2 epochs: dclm stops at its cap, fwe takes the rest."""
    f = _pipeline(tmp_path, sample_dir, "{maximize: effective_tokens, total_tokens: 7.0e5, max_epochs: {fwe: 5, dclm: 2}}",
                  seq_len=2048, stages="  manifest: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 0
    err = capsys.readouterr().err
    assert "mixture plan (maximize):" in err and "curate: warning: mix: fwe is repeated 4." in err
    plan = json.loads((tmp_path / "run" / "_state" / "mix" / "record.json").read_text())["plan"]
    assert len(plan["warnings"]) == 1 and plan["warnings"][0].startswith("mix: fwe is repeated 4.")
    fwe, dclm = plan["sources"]["fwe"], plan["sources"]["dclm"]
    assert fwe["chosen_tokens"] + dclm["chosen_tokens"] == pytest.approx(7.0e5)
    assert dclm["epochs"] == pytest.approx(2.0) and 4 < fwe["epochs"] < 5
    assert fwe["marginal_value"] == pytest.approx(plan["marginal_value"]) and dclm["marginal_value"] > plan["marginal_value"]
    for p in (fwe, dclm):
        assert p["effective_tokens"] == pytest.approx(effective_tokens(p["chosen_tokens"], p["available_tokens"]))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())["mixture"]
    assert manifest["mode"] == "maximize" and manifest["effective_tokens"] == pytest.approx(plan["effective_tokens"])
    for source, p in manifest["sources"].items():
        assert p["epochs"] == plan["sources"][source]["epochs"]
        assert p["effective_tokens"] == plan["sources"][source]["effective_tokens"] < p["chosen_tokens"]
        assert p["tokens"] == pytest.approx(p["chosen_tokens"], rel=0.1)  # whole documents, estimated tokens
    _accounted(tmp_path / "run", sample_dir)


def test_split_share_is_of_the_copies_packed_when_the_mix_repeats_documents(tmp_path, sample_dir):
    """Three epochs at a short seq_len split almost every copy: the share stays a fraction (it once divided the
    copies split by the distinct documents, and the manifest refused to be written)."""
    f = _pipeline(tmp_path, sample_dir, "{epochs: {fwe: 3.0, dclm: 3.0}}", seq_len=64, stages="  manifest: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    outputs = json.loads((tmp_path / "run" / "_state" / "pack" / "record.json").read_text())["outputs"]
    assert all(o["copies"] == 3 * o["documents"] for o in outputs.values())
    split = sum(o["docs_split"] for o in outputs.values())
    assert split > sum(o["documents"] for o in outputs.values()), "more copies split than distinct documents"
    assert manifest["packing"]["split_share"] == split / sum(o["copies"] for o in outputs.values()) <= 1
    # the copies are the pack step's (tokenize writes each document once): the tokens view and `curate why` say 3
    assert connect(str(tmp_path / "run")).sql("SELECT DISTINCT copies FROM tokens").fetchall() == [(3,)]
    source, doc = connect(str(tmp_path / "run")).sql("SELECT source, id FROM tokens ORDER BY id LIMIT 1").fetchall()[0]
    assert next(s for s in story(str(tmp_path / "run"), source, doc)["steps"] if s["step"] == "tokenize")["tokens"]["copies"] == 3
