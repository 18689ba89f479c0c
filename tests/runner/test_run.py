"""End-to-end runs of pipelines/zyda2.yaml on the sample corpus (inline): accounting, resume, re-thresholding."""

import json

import duckdb

from conftest import ZYDA2, run_cli, tree_digest


def _counts(run):
    kept = dict(duckdb.sql(f"""SELECT split_part(filename, '/', -2), count(*) FROM
        read_parquet('{run}/kept/*/*.parquet', filename=true, union_by_name=true) GROUP BY 1""").fetchall())
    removed = dict(duckdb.sql(f"SELECT source, count(*) FROM read_parquet('{run}/ledger/*/*/*.parquet') GROUP BY 1").fetchall())
    return kept, removed


def test_every_input_record_is_kept_or_in_the_ledger(sample_env, tmp_path):
    run = tmp_path / "run"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q") == 0
    expected = json.loads((sample_env / "expected.json").read_text())
    kept, removed = _counts(run)
    for source, exp in expected.items():
        assert kept[source] + removed.get(source, 0) == exp["records"], source
    # nothing is both kept and removed, and nothing is removed twice
    overlap = duckdb.sql(f"""SELECT count(*) FROM read_parquet('{run}/kept/*/*.parquet', union_by_name=true) k
        JOIN read_parquet('{run}/ledger/*/*/*.parquet') l USING (id)""").fetchall()[0][0]
    twice = duckdb.sql(f"SELECT count(*) - count(DISTINCT (source, id)) FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall()[0][0]
    assert overlap == 0 and twice == 0
    bad = dict(duckdb.sql(f"""SELECT reason, count(*) FROM read_parquet('{run}/ledger/ingest/*/*.parquet')
        GROUP BY 1""").fetchall())
    for kind in ("invalid_json", "invalid_utf8", "missing_text", "empty_text", "truncated_file"):
        assert bad[f"bad_record:{kind}"] >= 1
    summary = json.loads((run / "summary.json").read_text())
    for row in summary:
        assert row["in"] == row["kept"] + sum(row["removed"].values())
    fwe_filter = next(r for r in summary if r["stage"] == "quality_filter" and r["source"] == "fwe")
    low = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/docs/fwe/*.parquet') WHERE int_score < 3").fetchall()[0][0]
    assert fwe_filter["removed"] == ({"where:int_score >= 3": low} if low else {})
    assert (run / "pipeline.yaml").read_text().startswith("# resolved from")


def test_kept_files_keep_the_sources_own_columns(sample_env, tmp_path):
    run = tmp_path / "run"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q") == 0
    cols = lambda s: duckdb.sql(f"SELECT * FROM read_parquet('{run}/kept/{s}/*.parquet') LIMIT 0").columns
    assert {"id", "text", "url", "dump", "int_score", "score", "language_score"} <= set(cols("fwe"))
    assert {"id", "text", "url", "meta", "fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob"} <= set(cols("dclm"))
    assert {"source", "id", "text", "source_column", "filtering_features"} <= set(cols("zyda"))  # zyda's own source: source_column
    assert {"id", "text", "url", "meta"} <= set(cols("dolma_cc"))
    ids = duckdb.sql(f"SELECT count(*) = count(DISTINCT id) FROM read_parquet('{run}/kept/*/*.parquet', union_by_name=true)").fetchall()[0][0]
    assert ids


def test_until_then_continue_gives_the_same_outputs(sample_env, tmp_path):
    assert run_cli(ZYDA2, "--output", tmp_path / "full", "--inline", "-q") == 0
    assert run_cli(ZYDA2, "--output", tmp_path / "steps", "--inline", "-q", "--until", "ingest") == 0
    assert not (tmp_path / "steps" / "kept").exists()
    assert run_cli(ZYDA2, "--output", tmp_path / "steps", "--inline", "-q") == 0
    assert tree_digest(tmp_path / "full") == tree_digest(tmp_path / "steps")


def test_changing_a_threshold_recomputes_only_what_depends_on_it(sample_env, tmp_path, capsys):
    run = tmp_path / "run"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q") == 0
    docs_before = tree_digest(run, ("docs",))
    ingest_markers = sorted(p.stat().st_mtime_ns for p in (run / "_state" / "ingest").rglob("0*.json"))
    assert run_cli(ZYDA2, "--output", run, "--inline", "--set", "stages.quality_filter.where.fwe=int_score >= 4") == 0
    assert "stage 'quality_filter' changed" in capsys.readouterr().err
    assert tree_digest(run, ("docs",)) == docs_before
    assert sorted(p.stat().st_mtime_ns for p in (run / "_state" / "ingest").rglob("0*.json")) == ingest_markers
    reasons = {r[0] for r in duckdb.sql(f"SELECT DISTINCT reason FROM read_parquet('{run}/ledger/quality_filter/*/*.parquet')").fetchall()}
    assert reasons <= {"where:int_score >= 4"} and reasons
    fresh = tmp_path / "fresh"
    assert run_cli(ZYDA2, "--output", fresh, "--inline", "-q", "--set", "stages.quality_filter.where.fwe=int_score >= 4") == 0
    assert tree_digest(run) == tree_digest(fresh)


def test_a_stage_removed_from_the_pipeline_leaves_no_ledger(sample_env, tmp_path, capsys):
    run = tmp_path / "run"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q") == 0
    assert (run / "ledger" / "quality_filter").exists()
    nofilter = tmp_path / "nofilter.yaml"
    nofilter.write_text(ZYDA2.read_text().split("  quality_filter:")[0])
    assert run_cli(nofilter, "--output", run, "--inline", "-q") == 0
    assert not (run / "ledger" / "quality_filter").exists()
    kept, removed = _counts(run)
    assert removed.get("fwe", 0) == 0


def test_summary_table_is_printed(sample_env, tmp_path, capsys):
    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline") == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ["stage", "source", "in", "kept", "removed", "reasons", "tasks", "time"]
    assert "bad_record:truncated_file" in out
    assert "[ingest]" in err and "docs/s" in err  # progress lines when not a terminal


def test_a_relative_output_path_works_end_to_end(sample_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli(ZYDA2, "--output", "runs/rel", "--inline", "-q") == 0
    from curate.manifest.verify import verify
    assert (tmp_path / "runs" / "rel" / "manifest.json").exists()
    assert verify("runs/rel") == []
