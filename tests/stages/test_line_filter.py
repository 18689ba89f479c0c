"""The line_filter stage (C4's line rules as edits): which lines go and why, recorded and replayed like pii's."""

import json

import duckdb

from curate.rundir.edits import apply_steps
from curate.rundir.views import connect

from conftest import run_cli

PAGE = ("Welcome to the Shop\n"
        "Our beekeeping kits ship to every country in Europe.\n"
        "Please enable JavaScript to view this page.\n"
        "\n"
        "This site uses cookies to improve your experience.\n"
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n"
        "Buy now!\n"
        "\"Best honey I ever had,\" said one customer.\n"
        "Home | About | Contact")
KEPT = ("Our beekeeping kits ship to every country in Europe.\n"
        "\n"
        "\"Best honey I ever had,\" said one customer.\n")


def test_each_rule_drops_its_lines_and_records_why(run_stage):
    done = run_stage("line_filter", docs={"web": [PAGE, "Clean prose stays as it is.", "", "one two"]})
    edits = done.table("edits", "line_filter").sort_by([("id", "ascending"), ("start", "ascending")]).to_pylist()
    by_doc = {}
    for e in edits:
        by_doc.setdefault(e["id"], []).append(e)
    assert [e["kind"] for e in by_doc["web-0"]] == ["no_terminal_punctuation", "javascript", "policy", "lorem_ipsum",
                                                    "too_few_words", "no_terminal_punctuation"]
    assert all(e["placeholder"] == "" for e in edits)
    assert apply_steps(PAGE, [("line_filter", e["start"], e["end"], "") for e in by_doc["web-0"]], ["line_filter"]) == KEPT
    assert [e["kind"] for e in by_doc["web-3"]] == ["too_few_words"] and "web-1" not in by_doc and "web-2" not in by_doc
    assert [(c["in"], c["kept"], c["edited"]) for c in done.counts] == [(4, 4, 2)]


def test_rules_switch_off(run_stage):
    done = run_stage("line_filter", {"min_words": 0, "terminal_punctuation": False, "javascript": False, "lorem_ipsum": False,
                                     "policy": False}, docs={"web": [PAGE]})
    assert [(c["edited"]) for c in done.counts] == [0]
    assert done.run.read_json(done.run.path("_state", "line_filter", "record.json"))["kinds"] == []


def test_a_pipeline_with_it_keeps_the_edited_text_and_shows_it(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    texts = [PAGE, "Nothing to drop here at all.", "Short\nA line that is long enough to stay."]
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    (tmp_path / "p.yaml").write_text(f"name: lf\nsources:\n  web: {{format: jsonl, paths: '{src}'}}\n"
                                     "stages:\n  ingest: {}\n  clean: {use: line_filter}\n  pii: {}\n")
    assert run_cli(tmp_path / "p.yaml", "--output", tmp_path / "run", "--inline") == 0
    out = capsys.readouterr().out
    assert "clean: dropped 7 lines in 2 of 3 documents (66.7%): javascript 1, lorem_ipsum 1, policy 1, too_few_words 2, " \
           "no_terminal_punctuation 2" in out
    run = tmp_path / "run"
    kept = dict(duckdb.sql(f"SELECT id, text FROM read_parquet('{run}/kept/*/*.parquet')").fetchall())
    docs = dict(duckdb.sql(f"SELECT id, text FROM read_parquet('{run}/docs/*/*.parquet')").fetchall())
    assert sorted(kept.values()) == sorted([KEPT, texts[1], "A line that is long enough to stay."]), "kept/ holds the edited text"
    assert sorted(docs.values()) == sorted(texts), "docs/ stays as ingested"
    con = connect(str(run))
    for i, original in docs.items():   # replay: the recorded edits of every editing step, in order, give kept/
        rows = con.sql(f"SELECT step, start, \"end\", placeholder FROM edits WHERE id = '{i}'").fetchall()
        assert apply_steps(original, rows, ["clean", "pii"]) == kept[i]
    summary = json.loads((run / "summary.json").read_text())
    [row] = [r for r in summary if r["stage"] == "clean"]
    assert row["edits"] == {"documents": 2, "spans": {"javascript": 1, "lorem_ipsum": 1, "no_terminal_punctuation": 2,
                                                      "policy": 1, "too_few_words": 2}}
    html = (run / "report.html").read_text()
    assert 'id="line-filter"' in html and "Lines dropped by rule" in html
