"""`curate query`: DuckDB views over a run, output formats, remote runs."""

import csv
import io
import json

import pytest

from curate.cli import main
from curate.errors import CurateError
from curate.query import connect, query

from conftest import ZYDA2, run_cli


@pytest.fixture(scope="module")
def run(tmp_path_factory, sample_dir):
    out = tmp_path_factory.mktemp("q") / "run"
    import os
    os.environ["CURATE_SAMPLE"] = str(sample_dir)
    try:
        assert run_cli(ZYDA2, "--output", out, "--inline", "-q") == 0
    finally:
        del os.environ["CURATE_SAMPLE"]
    return str(out)


def test_views_and_the_accounting_identity_in_sql(run):
    con = connect(run)
    views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert {"docs", "kept", "ledger"} <= views
    rows = con.sql("""SELECT d.source, count(*) AS docs, count(k.id) AS kept, count(l.id) AS removed
                      FROM docs d LEFT JOIN kept k USING (source, id) LEFT JOIN ledger l USING (source, id)
                      GROUP BY 1""").fetchall()
    for source, docs, kept, removed in rows:
        assert docs == kept + removed, source
    # Zyda's own `source` column does not clash with ours
    assert con.sql("SELECT count(*) FROM kept WHERE source = 'zyda' AND source_column IS NOT NULL").fetchall()[0][0] > 0


def test_formats(run, tmp_path, capsys):
    sql = "SELECT stage, reason, count(*) AS n FROM ledger GROUP BY ALL ORDER BY ALL"
    rows = list(csv.reader(io.StringIO(query(run, sql, fmt="csv"))))
    assert rows[0] == ["stage", "reason", "n"] and len(rows) > 3
    lines = [json.loads(line) for line in query(run, sql, fmt="json").splitlines()]
    assert lines[0].keys() == {"stage", "reason", "n"}
    assert main(["query", run, sql, "--format", "parquet", "--out", str(tmp_path / "r.parquet")]) == 0
    import pyarrow.parquet as pq
    assert pq.read_table(tmp_path / "r.parquet").num_rows == len(rows) - 1
    assert main(["query", run, "--describe"]) == 0
    assert "ledger: id VARCHAR" in capsys.readouterr().out


def test_errors_are_clear(run, tmp_path):
    with pytest.raises(CurateError, match="not a run directory"):
        connect(str(tmp_path))
    with pytest.raises(CurateError, match="query failed: .*nope"):
        query(run, "SELECT nope FROM ledger")


def test_remote_run_through_fsspec(tmp_path):
    import fsspec

    mem = fsspec.filesystem("memory")
    with mem.open("/qin/a.jsonl", "wb") as fh:
        fh.write(b'{"text": "one"}\n{"text": ""}\n{"text": "two"}\n')
    f = tmp_path / "p.yaml"
    f.write_text("name: m\nsources:\n  m: {format: jsonl, paths: 'memory://qin/*.jsonl'}\nstages: {ingest: {}}\n")
    assert run_cli(f, "--output", "memory://qruns/r", "--inline", "-q") == 0
    assert connect("memory://qruns/r").sql("SELECT count(*) FROM kept").fetchall()[0][0] == 2


def test_clusters_say_kept_by_dedup_and_in_kept_and_tokens_per_document(run):
    con = connect(run)
    columns = [c[0] for c in con.sql("DESCRIBE clusters").fetchall()]
    assert "kept_by_dedup" in columns and "in_kept" in columns and "kept" not in columns
    # kept by dedup but removed later (a filter, the classifier, the mix) is not in kept/
    later = con.sql("SELECT count(*) FROM clusters c JOIN ledger l USING (source, id) WHERE c.kept_by_dedup AND l.stage <> 'dedup'").fetchall()[0][0]
    assert con.sql("SELECT count(*) FROM clusters WHERE kept_by_dedup AND NOT in_kept").fetchall()[0][0] == later
    assert con.sql("SELECT count(*) FROM clusters WHERE in_kept AND NOT kept_by_dedup").fetchall()[0][0] == 0
    per_source = dict(con.sql("SELECT source, sum(tokens * copies) FROM tokens GROUP BY 1").fetchall())
    manifest = json.loads(open(f"{run}/manifest.json").read())
    assert per_source == {s: o["tokens"] for s, o in manifest["outputs"].items() if o["tokens"]}


def test_table_cells_are_cut_only_where_asked(run):
    sql = "SELECT id, text FROM kept ORDER BY length(text) DESC LIMIT 1"
    longest = connect(run).sql(sql).fetchall()[0][1]
    whole = query(run, sql, width=0)
    assert longest.replace("\n", "\\n") in whole
    flat = longest.replace("\n", "\\n")
    cut = query(run, sql, width=60).splitlines()[2]
    assert cut.endswith(flat[:57] + "...")
    assert query(run, sql).splitlines()[2].endswith(flat[:97] + "..."), "the default shows 100 characters, not 40"
