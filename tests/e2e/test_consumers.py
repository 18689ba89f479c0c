"""A zyda2 run read by the tools users train and analyse with, each in one call: HF `datasets`, pandas,
polars, pyarrow.dataset and DuckDB over kept/ and the id-keyed tables (every column, a `source` column,
the `(source, id)` key), datatrove's readers and checker over the `.ds` files (exactly the kept tokens,
no padding), megatron-core over `.bin/.idx`. Skips a consumer that is not installed."""

from __future__ import annotations

import json
import shutil

import duckdb
import numpy as np
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from curate.tokens.tokenizer import load_tokenizer
from conftest import ZYDA2, run_cli, token_documents

TABLES = ("kept", "signals", "quality_model", "ledger", "tokenize")   # quality_model, tokenize: steps (RUN/<step>/)


@pytest.fixture(scope="module")
def run(sample_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("consumers") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CURATE_SAMPLE", str(sample_dir))
        assert run_cli(ZYDA2, "--output", out, "--inline", "-q") == 0
    return out


def _files(run, table):
    return sorted((run / table).rglob("*.parquet"))


def _columns(run, table) -> list[str]:
    """Every column any file of the table has, in first-seen order."""
    return list(dict.fromkeys(n for f in _files(run, table) for n in pq.read_schema(f).names))


def _per_source(run, table) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in _files(run, table):
        for source, n in duckdb.sql(f"SELECT source, count(*) FROM '{f}' GROUP BY 1").fetchall():
            out[source] = out.get(source, 0) + n
    return out


def test_every_file_shares_one_schema_and_the_source_key(run, sample_dir):
    for table in TABLES:
        schemas = {pq.read_schema(f).remove_metadata() for f in _files(run, table)}
        assert len(schemas) == 1, table
        assert {"source", "id"} <= set(_columns(run, table)), table
    kept = _columns(run, "kept")
    assert kept[:3] == ["source", "id", "text"]
    assert {"int_score", "score", "filtering_features", "source_column", "meta"} <= set(kept)  # fwe's, zyda's (its own `source`), dclm's
    for folder in (run / "kept").iterdir():   # the folder name and the stored column agree
        assert _per_source(run, f"kept/{folder.name}").keys() == {folder.name}
    # accounting: every input record is kept or in the ledger once, keyed by (source, id)
    expected = json.loads((sample_dir / "expected.json").read_text())
    kept_n, ledger_n = sum(_per_source(run, "kept").values()), sum(_per_source(run, "ledger").values())
    assert kept_n + ledger_n == sum(v["records"] for k, v in expected.items() if isinstance(v, dict) and "records" in v)
    keys = duckdb.sql(f"SELECT count(DISTINCT (source, id)), count(*) FROM '{run}/kept/*/*.parquet'").fetchall()[0]
    assert keys[0] == keys[1] == kept_n


def test_hf_datasets_loads_each_table_in_one_call(run):
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    for table in TABLES:
        loaded = datasets.load_dataset("parquet", data_dir=str(run / table), split="train")
        assert loaded.column_names == _columns(run, table), table
        assert loaded.num_rows == sum(_per_source(run, table).values())
    kept = datasets.load_dataset("parquet", data_files=str(run / "kept" / "*" / "*.parquet"), split="train")
    summary = {r["source"]: r["kept"] for r in json.loads((run / "summary.json").read_text()) if r["stage"] == "kept"}
    assert dict(zip(*np.unique(kept["source"], return_counts=True))) == _per_source(run, "kept") == summary


def test_pandas_polars_pyarrow_duckdb_load_each_table_in_one_call(run):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    for table in TABLES:
        columns, counts = _columns(run, table), _per_source(run, table)
        frame = pd.read_parquet(run / table)
        assert list(frame.columns) == columns and frame["source"].value_counts().to_dict() == counts, table
        frame = pl.read_parquet(run / table)
        assert frame.columns == columns and dict(frame["source"].value_counts().iter_rows()) == counts, table
        arrow = pads.dataset(run / table).to_table()
        assert arrow.column_names == columns and arrow.num_rows == sum(counts.values()), table
        rel = duckdb.sql(f"SELECT * FROM '{run}/{table}/**/*.parquet'")
        assert rel.columns == columns and dict(duckdb.sql("SELECT source, count(*) FROM rel GROUP BY 1").fetchall()) == counts
    zyda = pd.read_parquet(run / "kept", filters=[("source", "==", "zyda")])
    assert len(zyda) and zyda["source_column"].notna().all() and zyda["int_score"].isna().all()


def _copy_ds(run, source, prefix, folder):
    folder.mkdir(parents=True)
    for suffix in (".ds", ".ds.index", ".ds.metadata"):
        shutil.copy(run / f"{prefix}{suffix}", folder / f"{source}{suffix}")
    return folder


def _kept_documents(run, source) -> list[tuple]:
    """Token ids of every kept document of a source, each repeated as many times as the mixture takes it."""
    return token_documents(run, "tokenize", source)


def test_datatrove_serves_exactly_the_kept_tokens(run, tmp_path):
    pytest.importorskip("torch")
    dataset = pytest.importorskip("datatrove.utils.dataset")
    from datatrove.io import get_datafolder
    from datatrove.pipeline.tokens.merger import DocumentTokenizerMerger
    from datatrove.tools.check_dataset import check_dataset

    manifest = json.loads((run / "manifest.json").read_text())
    eos = load_tokenizer("gpt2").eos_id
    tokenizer = tmp_path / "gpt2.json"   # check_dataset loads a tokenizer: give it GPT-2's file, nothing downloads
    load_tokenizer("gpt2").hf.save(str(tokenizer))
    assert not list((run / "pack").glob("*.ds.loss"))
    for source, out in manifest["outputs"].items():
        folder = _copy_ds(run, source, out["prefix"], tmp_path / source)
        check_dataset(get_datafolder(str(folder)), str(tokenizer))   # EOS at every index entry, sizes agree
        stream = np.fromfile(folder / f"{source}.ds", np.uint16)
        ends = np.fromfile(folder / f"{source}.ds.index", np.uint64).astype(np.int64)
        assert len(stream) == int(ends[-1]) == out["tokens"]       # the manifest's real tokens, nothing else
        assert sorted(tuple(d) for d in np.split(stream, ends[:-1])) == _kept_documents(run, source)
        seq_len = 255
        ds = dataset.DatatroveFolderDataset(str(folder), seq_len, token_size=2, return_positions=True)
        assert len(ds) == len(stream) // (seq_len + 1)
        served = np.concatenate([ds[i]["input_ids"].numpy() for i in range(len(ds))])
        assert np.array_equal(served, stream[: len(served)])      # every window is real tokens of kept documents
        merged = tmp_path / "merged" / source
        DocumentTokenizerMerger(str(folder), str(merged), save_filename=source, seed=0, progress=False,
                                save_final_metadata=False).run(None, 0, 1)
        shuffled = np.concatenate([np.fromfile(f, np.uint16) for f in sorted(merged.glob("*.ds"))])
        assert len(shuffled) == len(stream) and not ((shuffled[1:] == eos) & (shuffled[:-1] == eos)).any()  # no EOS runs


def test_megatron_core_reads_the_same_tokens(run):
    pytest.importorskip("torch")
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset")
    manifest = json.loads((run / "manifest.json").read_text())
    for out in manifest["outputs"].values():
        ds = indexed.IndexedDataset(str(run / out["prefix"]), mmap=True)   # the manifest names the prefix
        assert int(ds.sequence_lengths.sum()) == out["tokens"] and len(ds.document_indices) - 1 == out["sequences"]
