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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """An ingest-only run of two documents, beside a second run: the --out and SQL edge cases."""
    d = tmp_path_factory.mktemp("tiny")
    (d / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    f = d / "p.yaml"
    f.write_text(f"name: t\nsources:\n  s: {{format: jsonl, paths: '{d}/a.jsonl'}}\nstages: {{ingest: {{}}}}\n")
    for name in ("run", "other"):
        assert run_cli(f, "--output", d / name, "--inline", "-q") == 0
    return d


@pytest.mark.parametrize("target", ["run/manifest.json", "run/pipeline.yaml", "run/kept/s/KEPT", "run/new.csv",
                                    "run/kept/../x.csv", "other/x.csv", "link/x.csv", "other/_state/deep/x.csv"])
def test_out_is_refused_inside_any_run_directory(tiny, target, capsys):
    d = tiny
    if not (d / "link").exists():
        (d / "link").symlink_to(d / "other" / "kept")
    kept = next((d / "run" / "kept" / "s").glob("*.parquet"))
    target = str(d / target).replace("KEPT", kept.name)
    before = {p: p.read_bytes() for p in (d / "run").rglob("*") if p.is_file() and "logs" not in p.parts}
    assert main(["query", str(d / "run"), "SELECT 42 AS x", "--format", "parquet", "--out", target, "--force"]) == 2
    err = capsys.readouterr().err
    assert "refusing to write inside the run directory" in err and len(err.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in before} == before and not (d / "other" / "x.csv").exists()


def test_out_replaces_an_existing_file_only_with_force(tiny, tmp_path, capsys):
    out = tmp_path / "r.csv"
    out.write_text("mine\n")
    assert main(["query", str(tiny / "run"), "SELECT 42 AS x", "--format", "csv", "--out", str(out)]) == 2
    assert "the file exists; pass --force to replace it" in capsys.readouterr().err and out.read_text() == "mine\n"
    assert main(["query", str(tiny / "run"), "SELECT 42 AS x", "--format", "csv", "--out", str(out), "--force"]) == 0
    assert out.read_text() == "x\n42\n"


@pytest.mark.parametrize("sql", ["SELECT * FROM sniff_csv('/etc/hostname')", "SELECT * FROM duckdb_extensions()",
                                 "SELECT * FROM duckdb_secrets()", "SELECT * FROM read_text('/etc/hostname') -- c"])
def test_table_functions_that_reach_outside_the_run_are_one_line(tiny, sql, capsys):
    assert main(["query", str(tiny / "run"), sql]) == 1
    err = capsys.readouterr().err
    assert "curate query reads the files of the run" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sql", ["SELECT count(*) AS n FROM kept -- how many", "SELECT count(*) AS n FROM kept; -- how many",
                                 "SELECT count(*) AS n FROM kept /* a */ -- b\n-- c", "SELECT '--' || count(*) AS n FROM kept"])
def test_a_query_ending_in_a_comment_runs(tiny, sql):
    assert query(str(tiny / "run"), sql, fmt="csv").splitlines()[1] in ("2", "--2")
    assert query(str(tiny / "run"), sql).splitlines()[-1] == "1 row"


def test_explain_shows_its_plan(tiny):
    assert query(str(tiny / "run"), "EXPLAIN SELECT 1 -- why").splitlines()[-1] == "1 row"
