"""A large JSON Lines file is read by several tasks (byte ranges when plain, line ranges when compressed), and
the documents, their ids and the ledger are exactly those of reading it whole."""

import gzip
import json
import random

import duckdb
import pytest
import zstandard

from conftest import run_cli


def _lines(n: int) -> bytes:
    rng = random.Random(5)
    out = [b"\xef\xbb\xbf"]  # a byte-order mark first
    for i in range(n):
        if i % 97 == 3:
            out.append(b"not json at all\n")
        elif i % 89 == 5:
            out.append(b"\n")  # blank lines count as lines, and are skipped
        else:
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "tau"]) for _ in range(rng.randint(20, 400)))
            out.append(json.dumps({"text": f"doc {i}: {words}", "n": i}).encode() + b"\n")
    out.append(json.dumps({"text": "the last line has no newline"}).encode())
    return b"".join(out)


def _outputs(run):
    kept = set(duckdb.sql(f"SELECT id, text FROM read_parquet('{run}/kept/*/*.parquet')").fetchall())
    ledger = set(duckdb.sql(f"SELECT id, reason, detail FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall())
    return kept, ledger


@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd", "gzip-truncated"])
def test_a_split_file_reads_like_a_whole_one(tmp_path, compression):
    data = _lines(6000)
    name = "big.jsonl"
    if compression.startswith("gzip"):
        data, name = gzip.compress(data, compresslevel=1), name + ".gz"
        if compression.endswith("truncated"):
            data = data[: len(data) * 2 // 3]
    elif compression == "zstd":
        data, name = zstandard.ZstdCompressor(level=1).compress(data), name + ".zst"
    (tmp_path / name).write_bytes(data)
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  s: {{format: jsonl, paths: '{tmp_path / name}'}}\n"
                 "execution: {max_bad_fraction: 1.0}\nstages:\n  ingest: {}\n")
    assert run_cli(f, "--output", tmp_path / "whole", "--inline", "-q") == 0
    assert run_cli(f, "--output", tmp_path / "split", "--inline", "-q", "--set", "execution.task_size_mb=1") == 0
    shards = list((tmp_path / "split" / "docs" / "s").glob("*.parquet"))
    assert len(shards) >= 3, "the file was split into several tasks"
    assert len(list((tmp_path / "whole" / "docs" / "s").glob("*.parquet"))) == 1
    whole, split = _outputs(tmp_path / "whole"), _outputs(tmp_path / "split")
    assert split == whole
    kept, ledger = whole
    reasons = {r for _, r, _ in ledger}
    assert "bad_record:invalid_json" in reasons
    assert ("bad_record:truncated_file" in reasons) == compression.endswith("truncated")
    records = 6001 - sum(1 for i in range(6000) if i % 89 == 5 and i % 97 != 3)
    if not compression.endswith("truncated"):
        assert len(kept) + len(ledger) == records
        assert any(t == "the last line has no newline" for _, t in kept)
