"""mix -> tokenize -> pack end to end: the plan, whole-document repetition, and megatron-core reading our files."""

from collections import Counter

import duckdb
import numpy as np
import pytest

from curate.stages.mix import copies, plan_mixture, uniform

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
    assert copies(2.0, u).tolist() == [2] * len(ids)
    assert abs(copies(0.25, u).mean() - 0.25) < 0.01
    assert abs(copies(1.5, u).mean() - 1.5) < 0.01


def _pipeline(tmp_path, sample, mix: str, seq_len: int = 1 << 16, method="best_fit"):
    f = tmp_path / "mp.yaml"
    f.write_text(f"""name: mp
sources:
  fwe: {{format: fineweb, paths: '{sample}/fwe/data/*/*.parquet'}}
  dclm: {{format: dclm, paths: '{sample}/dclm/global-shard_*/local-shard_*/*.jsonl.zst'}}
stages:
  ingest: {{}}
  mix: {mix}
  tokenize: {{tokenizer: gpt2}}
  pack: {{seq_len: {seq_len}, method: {method}, formats: [megatron, datatrove]}}
""")
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
        got = Counter(_megatron_docs(tmp_path / "run" / "tokens" / source))
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
        assert (tmp_path / "a" / "tokens" / name).read_bytes() == (tmp_path / "b" / "tokens" / name).read_bytes()
    from curate.tokens.megatron import read_megatron
    index = read_megatron(str(tmp_path / "a" / "tokens" / "fwe"))
    assert index.lengths.max() <= 512
