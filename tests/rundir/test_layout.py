"""Every path of a run directory comes from RunDir: the layout the README documents, records and markers."""

from __future__ import annotations

import pytest

from curate.rundir import IngestRecord, MixRecord, RunDir


def test_paths_follow_the_documented_layout():
    run = RunDir("/r")
    assert run.docs("web", "00001") == "/r/docs/web/00001.parquet"
    assert run.kept("web", "00001") == "/r/kept/web/00001.parquet"
    assert run.table("signals", "web", "00001") == "/r/signals/web/00001.parquet"
    assert run.ledger("filter", "web", "00001") == "/r/ledger/filter/web/00001.parquet"
    assert run.clusters("dedup", "web", "00001").startswith("/r/dedup/clusters/web")
    assert run.work("minhash", "bands") == "/r/_work/minhash/bands"
    assert run.marker("filter", "shards", "web/00001") == "/r/_state/filter/shards/web/00001.json"
    assert run.stage_file("filter") == "/r/_state/filter/stage.json"
    assert run.phase_key("classify", "model-q") == "/r/_state/classify/model-q.key.json"
    assert run.token_docs("tok", "web", "00001") == "/r/tok/web/00001.parquet"
    assert run.token_shard("pack", "web", "00001") == "/r/pack/_shards/web/00001"
    assert run.token_prefix("pack", "web") == "/r/pack/web"
    assert run.token_files("pack", "web", ["megatron", "datatrove"]) == [
        "pack/web.bin", "pack/web.idx", "pack/web.idx.map.parquet", "pack/web.ds", "pack/web.ds.index", "pack/web.ds.metadata",
        "pack/web.ds.map.parquet"]
    assert (run.pipeline_file, run.summary_file, run.manifest_file, run.lock_file) == \
        ("/r/pipeline.yaml", "/r/summary.json", "/r/manifest.json", "/r/_lock.json")
    assert run.relative(run.docs("web", "1")) == "docs/web/1.parquet"
    assert RunDir("s3://b/run").docs("web", "1") == "s3://b/run/docs/web/1.parquet"


def test_records_round_trip_and_a_missing_one_is_said_plainly(tmp_path):
    run = RunDir(str(tmp_path))
    run.publish("ingest", IngestRecord([{"source": "web", "shard": "00000", "input": "a"}]))
    assert run.record("ingest", IngestRecord).pairs() == [("web", "00000")]
    assert run.find_record("ingest", MixRecord) is None
    with pytest.raises(FileNotFoundError, match="stage 'mix' has not published its MixRecord yet"):
        run.record("mix", MixRecord)


def test_markers_are_the_accounting_phase_sorted_by_source_and_shard(tmp_path):
    run = RunDir(str(tmp_path))
    for source, shard in (("web", "00001"), ("books", "00000"), ("web", "00000")):
        run.write_json(run.marker("filter", "shards", f"{source}/{shard}"), {"source": source, "shard": shard, "in": 1})
    run.write_json(run.marker("filter", "other-phase", "x/y"), {"source": "zz", "shard": "0"})
    assert [(m["source"], m["shard"]) for m in run.markers("filter")] == [("books", "00000"), ("web", "00000"), ("web", "00001")]
    assert run.read_json(run.path("absent.json")) is None


def test_table_sources_lists_the_sources_with_files(tmp_path):
    run = RunDir(str(tmp_path))
    for source in ("web", "books"):
        (tmp_path / "kept" / source).mkdir(parents=True)
        (tmp_path / "kept" / source / "00000.parquet").write_bytes(b"")
    (tmp_path / "kept" / "empty").mkdir()
    assert run.table_sources("kept") == ["books", "web"]
