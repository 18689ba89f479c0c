"""Real web text from ../shared/data (Dolma, C4, HPLT) through the readers; skipped where that folder is absent."""

import gzip
import io

import duckdb
import pytest
import zstandard

from conftest import SHARED_DATA, run_cli

pytestmark = pytest.mark.skipif(not (SHARED_DATA / "dolma").is_dir(), reason="../shared/data is not on this machine")

SOURCES = {
    # name: (format, glob relative to shared/data, fields)
    "dolma_gz": ("dolma", "dolma/formats/*.jsonl.gz", {}),
    "dolma_zst": ("dolma", "dolma/formats/*.jsonl.zst", {}),  # mislabeled: really plain JSONL
    "dolma_ccnet": ("dolma", "dolma/multiple_files/*.jsonl", {}),
    "dolma_provided": ("dolma", "dolma/provided/documents/*.json.gz", {}),
    "c4": ("jsonl", "olmo_test_fixtures/c4*.json*.gz", {"url": "url"}),
    "hplt": ("jsonl", "hplt-warc2text-sample100/*.zst", {"text": "t", "url": "u"}),
}


def _records(path) -> int:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    return sum(1 for line in data.split(b"\n") if line.strip())


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    lines = ["name: real", "sources:"]
    for name, (fmt, pattern, fields) in SOURCES.items():
        lines += [f"  {name}:", f"    format: {fmt}", f"    paths: '{SHARED_DATA / pattern}'", f"    fields: {fields or {}}"]
    lines += ["stages:", "  ingest: {}"]
    (tmp / "real.yaml").write_text("\n".join(lines) + "\n")
    assert run_cli(tmp / "real.yaml", "--output", tmp / "run", "--inline", "-q") == 0
    return tmp / "run"


def test_every_real_record_is_kept_or_recorded(real_run):
    for name, (_, pattern, _) in SOURCES.items():
        expected = sum(_records(p) for p in sorted(SHARED_DATA.glob(pattern)))
        kept = duckdb.sql(f"SELECT count(*) FROM read_parquet('{real_run}/kept/{name}/*.parquet')").fetchall()[0][0]
        removed = duckdb.sql(f"SELECT count(*) FROM read_parquet('{real_run}/ledger/*/{name}/*.parquet')").fetchall()[0][0]
        assert kept + removed == expected, name
        assert kept > 0, name


def test_mislabeled_zst_twin_reads_the_same_as_the_gzip_file(real_run):
    gz = duckdb.sql(f"SELECT id, text, url FROM read_parquet('{real_run}/kept/dolma_gz/*.parquet') ORDER BY id").fetchall()
    zst = duckdb.sql(f"SELECT id, text, url FROM read_parquet('{real_run}/kept/dolma_zst/*.parquet') ORDER BY id").fetchall()
    assert len(gz) > 600 and gz == zst
    bad = lambda name: duckdb.sql(f"SELECT id, reason FROM read_parquet('{real_run}/ledger/ingest/{name}/*.parquet') ORDER BY id").fetchall()
    assert len(gz) + len(bad("dolma_gz")) == 697  # 27 records of this real WET file have empty text
    assert bad("dolma_gz") == bad("dolma_zst")


def test_dolma_ids_are_the_sources_own_and_c4_ids_are_derived(real_run):
    ids = [r[0] for r in duckdb.sql(f"SELECT id FROM read_parquet('{real_run}/kept/dolma_gz/*.parquet') LIMIT 3").fetchall()]
    assert all("/" not in i for i in ids)
    c4 = [r[0] for r in duckdb.sql(f"SELECT id FROM read_parquet('{real_run}/kept/c4/*.parquet') ORDER BY id LIMIT 1").fetchall()]
    assert c4[0].startswith("c4/c4-sample.01.json.gz/")


def test_hplt_bad_lines_are_in_the_ledger_with_reasons(real_run):
    reasons = dict(duckdb.sql(f"SELECT reason, count(*) FROM read_parquet('{real_run}/ledger/ingest/hplt/*.parquet') GROUP BY 1").fetchall())
    assert reasons.get("bad_record:invalid_utf8", 0) >= 1
    assert reasons.get("bad_record:missing_text", 0) >= 1  # pages with no extracted text carry no "t"
