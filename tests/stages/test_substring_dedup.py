"""The substring_dedup stage: which copy is kept, what each cut records, the ledger, bounded work, the pipeline."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from curate.cli import main
from curate.rundir.edits import apply_spans
from curate.rundir.views import connect

from conftest import env_with, kill_9_when, run_cli, tree_digest

BANNER = ("We use cookies to give you the best experience on our website and by continuing to browse you agree "
          "to our use of cookies as described in our policy")
STORY = "the river ran cold that spring and the mill wheel turned slower every week until it stopped"


def edits_of(done) -> dict:
    out = {}
    for e in done.table("edits", "substring_dedup").sort_by([("id", "ascending"), ("start", "ascending")]).to_pylist():
        out.setdefault(e["id"], []).append(e)
    return out


def test_the_first_copy_by_priority_stays_and_later_ones_are_cut_with_evidence(run_stage):
    docs = {"fwe": ["intro words here. " + BANNER + " and the end", STORY],
            "web": [BANNER + " then a page of its own text follows here", "unrelated text of a web page " + BANNER]}
    done = run_stage("substring_dedup", {"min_words": 20, "min_words_left": 0}, docs=docs)
    edits = edits_of(done)
    assert sorted(edits) == ["web-0", "web-1"], "fwe comes first in priority: its copy is kept"
    for doc_id, text in (("web-0", docs["web"][0]), ("web-1", docs["web"][1])):
        (e,) = edits[doc_id]
        assert apply_spans(text, [(e["start"], e["end"], "")]).split() == text.replace(BANNER, "").split()
        assert (e["kind"], e["words"], e["copies"], e["kept_source"], e["kept_id"]) == ("repeat", len(BANNER.split()), 3, "fwe", "fwe-0")
        assert e["kept_start"] == docs["fwe"][0].index(BANNER)
    assert edits["web-1"][0]["end"] == len(docs["web"][1]), "a repeat at a document's end is cut to the end"
    assert edits["web-0"][0]["start"] == 0, "... and one at its start from the start"
    repeats = done.table("substring_dedup", "repeats").to_pylist()
    assert [(r["id"], r["copies"], r["words"]) for r in repeats] == [("fwe-0", 3, len(BANNER.split()))]
    assert repeats[0]["text"].strip() == BANNER


def test_a_repeat_within_one_document_keeps_its_first_copy(run_stage):
    text = f"{STORY} some words between {STORY} and more. {STORY}"
    done = run_stage("substring_dedup", {"min_words": 10, "min_words_left": 0}, docs={"web": [text]})
    kept = apply_spans(text, [(e["start"], e["end"], "") for e in edits_of(done)["web-0"]])
    assert kept.split() == f"{STORY} some words between and more.".split()


def test_overlapping_copies_keep_one_whole_period(run_stage):
    unit = "alpha beta gamma delta"
    text = " ".join([unit] * 10)   # 40 words; every window of 8 words repeats 4 words later
    done = run_stage("substring_dedup", {"min_words": 8, "min_words_left": 0}, docs={"web": [text]})
    (e,) = edits_of(done)["web-0"]
    assert apply_spans(text, [(e["start"], e["end"], "")]).split() == (unit + " " + unit + " " + unit).split()[:11]


def test_multi_byte_text_is_cut_between_words_never_inside_a_character(run_stage):
    shared = "日本語の 文章が ここに 繰り返し 現れる 🙂🙂 naïve café über straße Ωmega"
    docs = {"web": [f"前 {shared} 後", f"x\u3000{shared}\u3000y"]}
    done = run_stage("substring_dedup", {"min_words": 6, "min_words_left": 0}, docs=docs)
    (e,) = edits_of(done)["web-1"]
    text = docs["web"][1]
    assert text[e["start"]:e["end"]].strip() == shared
    assert apply_spans(text, [(e["start"], e["end"], "")]) == "x\u3000y"
    assert e["kept_start"] == 2


def test_documents_left_too_short_go_to_the_ledger_with_evidence(run_stage):
    docs = {"web": [STORY + " one two three four five six", STORY, STORY + " tail"]}
    done = run_stage("substring_dedup", {"min_words": 10, "min_words_left": 3}, docs=docs)
    ledger = done.ledger().to_pylist()
    assert [(r["id"], r["reason"]) for r in ledger] == [("web-1", "substring_duplicate"), ("web-2", "substring_duplicate")]
    assert "17 of 17 words" in ledger[0]["detail"] and "kept in web web-0 at character 0" in ledger[0]["detail"]
    assert sorted(edits_of(done)) == [], "a removed document has no edits"
    (c,) = done.counts
    assert (c["in"], c["kept"], c["edited"], c["chars_removed"]) == (3, 1, 0, len(STORY) * 2 + len(" tail"))


def test_a_span_repeated_thousands_of_times_costs_work_in_proportion_to_the_text(run_stage):
    spam = "buy cheap pills online now best price guaranteed fast shipping today only"
    docs = {"web": [f"page {i} says {spam} and {i}" for i in range(3000)] + [" ".join(["spam"] * 20000)]}
    done = run_stage("substring_dedup", {"min_words": 12, "min_words_left": 0}, docs=docs, shard_rows=1000)
    edits = edits_of(done)
    assert len(edits) == 3000 and "web-0" not in edits
    (e,) = edits["web-3000"]
    assert e["start"] == len("spam " * 12) and e["end"] == len(docs["web"][-1])
    markers = [json.loads(p.read_text()) for p in Path(done.run.path("_state", "substring_dedup", "windows")).rglob("*.json")]
    assert sum(m["windows"] for m in markers) <= 2 * (3000 * 18 + 20000), "windows are hashed once per start, not per pair of copies"


def test_a_hot_partition_is_read_in_chunks_of_task_rows_with_the_same_result(run_stage, tmp_path):
    spam = "buy cheap pills online now best price guaranteed fast shipping today only"
    docs = {"fwe": [f"intro {i} {STORY}" for i in range(20)],
            "web": [f"page {i} says {spam} and {i}" if i % 5 else f"{STORY} then {spam} {i}" for i in range(3000)]}
    results, held = [], {}
    for cap in (None, 500):
        for folder in ("run", "in"):
            shutil.rmtree(tmp_path / folder, ignore_errors=True)
        options = {"min_words": 12, "min_words_left": 0, "partitions": 2} | ({"task_rows": cap} if cap else {})
        done = run_stage("substring_dedup", options, docs=docs, shard_rows=700)
        results.append((done.table("edits", "substring_dedup").to_pylist(), done.ledger().to_pylist(),
                        done.table("substring_dedup", "repeats").to_pylist(),
                        [{k: v for k, v in c.items() if k != "seconds"} for c in done.counts]))
        for phase in ("shared", "match"):
            ms = [json.loads(p.read_text()) for p in Path(done.run.path("_state", "substring_dedup", phase)).rglob("*.json")]
            held[(cap, phase)] = (max(m["rows_held"] for m in ms), max(m["chunks"] for m in ms),
                                 sum(m["keys"] for m in ms) / sum(m.get("fingerprints", m.get("windows")) for m in ms))
    assert results[0] == results[1], "chunks change nothing but what a task holds"
    got = {(e["source"], e["id"]) for e in results[1][0]}
    assert len(got) == 19 + 2999 and ("web", "web-1") not in got, \
        "every later copy is cut (web-1 holds the first copies of the windows around its spam, so the spam stays)"
    for phase in ("shared", "match"):
        most, chunks, keys = held[(500, phase)]
        assert most <= 500 and chunks >= 3, (phase, held)
        assert held[(None, phase)][0] > 1500 and held[(None, phase)][1] == 1, "uncapped, the hot partition is one chunk"
        assert keys < 0.6, "besides a chunk, a task holds one row per distinct key, not one per copy"


def test_min_words_left_above_min_words_is_one_line(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("name: s\nsources:\n  web: {format: jsonl, paths: in.jsonl}\n"
                                     "stages:\n  ingest: {}\n  sub: {use: substring_dedup, min_words: 10, min_words_left: 11}\n")
    assert main(["run", str(tmp_path / "p.yaml"), "--output", str(tmp_path / "run"), "--inline"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stages.sub.min_words_left" in err[0] and "p.yaml" in err[0]


def _pipeline(tmp_path, texts):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    (tmp_path / "p.yaml").write_text(f"name: sd\nsources:\n  web: {{format: jsonl, paths: '{src}'}}\n"
                                     "execution: {batch_rows: 4}\n"
                                     "stages:\n  ingest: {}\n  substring_dedup: {min_words: 10, min_words_left: 2, partitions: 3}\n")
    return tmp_path / "p.yaml"


TEXTS = [f"page {i}: {STORY} and then {i} more words" if i % 3 else f"only {i} here {BANNER}" for i in range(24)] + [STORY]


def test_a_pipeline_keeps_the_edited_text_shows_it_and_reports_it(tmp_path, capsys):
    p = _pipeline(tmp_path, TEXTS)
    assert run_cli(p, "--output", tmp_path / "run", "--inline") == 0
    out = capsys.readouterr().out
    assert "substring_dedup: cut " in out and "of the text" in out
    run = tmp_path / "run"
    kept = dict(duckdb.sql(f"SELECT id, text FROM read_parquet('{run}/kept/*/*.parquet')").fetchall())
    assert sum(STORY in t for t in kept.values()) == 1 and sum(BANNER in t for t in kept.values()) == 1
    con = connect(str(run))
    rows = con.sql("SELECT step, kept_id, count(*) FROM edits GROUP BY ALL ORDER BY 3 DESC").fetchall()
    assert rows[0][0] == "substring_dedup" and rows[0][2] == 15
    assert con.sql("SELECT max(copies) FROM repeats").fetchall()[0][0] == 17
    assert con.sql("SELECT count(*) FROM ledger WHERE reason = 'substring_duplicate'").fetchall()[0][0] == 1
    [row] = [r for r in json.loads((run / "summary.json").read_text()) if r["stage"] == "substring_dedup"]
    assert row["substring_dedup"]["documents"] == 22 and row["substring_dedup"]["chars_cut"] > 0
    html = (run / "report.html").read_text()
    assert 'id="substring-dedup"' in html and "Most repeated spans" in html and "the river ran cold" in html


@pytest.mark.skipif(sys.platform != "linux", reason="Ray workers")
@pytest.mark.slow  # embedded Ray clusters of one and two workers
def test_inline_and_one_or_two_ray_workers_give_identical_bytes(tmp_path):
    p = _pipeline(tmp_path, TEXTS)
    for name, args in (("inline", ["--inline"]), ("w1", ["--workers", "1"]), ("w2", ["--workers", "2"])):
        assert run_cli(p, "--output", tmp_path / name, "-q", *args) == 0
    parts = ("kept", "ledger", "edits", "substring_dedup")
    reference = tree_digest(tmp_path / "inline", parts)
    assert len(reference) > 3
    assert tree_digest(tmp_path / "w1", parts) == reference
    assert tree_digest(tmp_path / "w2", parts) == reference


def test_the_step_is_off_in_zyda2_until_enabled_and_comes_after_the_filters_before_mix(sample_env):
    from curate import load_pipeline

    from conftest import ZYDA2

    assert "substring_dedup" not in [s.name for s in load_pipeline(ZYDA2).stages]
    steps = [s.name for s in load_pipeline(ZYDA2, ["stages.substring_dedup.enabled=true"]).stages]
    at = steps.index("substring_dedup")
    assert steps.index("dedup") < steps.index("quality_model") < at < steps.index("mix") < steps.index("tokenize")


@pytest.mark.slow  # kill -9
def test_killed_with_sigkill_it_resumes_to_the_same_bytes(tmp_path):
    texts = [f"doc {i} {STORY} middle {i % 7} {BANNER} end {i}" for i in range(4000)]
    p = _pipeline(tmp_path, texts)
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(p), "--output", str(run), "--inline", "--workers", "1", "-q"]
    kill_9_when(cmd, lambda: list((run / "_state" / "substring_dedup" / "windows").rglob("*.json")), 180,
                env=env_with(PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert not (run / "summary.json").exists(), "the run finished before the kill"
    assert subprocess.run(cmd, env=env_with(PYTHONPATH=str(Path(__file__).resolve().parents[2]))).returncode == 0
    assert run_cli(p, "--output", tmp_path / "clean", "--inline", "-q") == 0
    parts = ("kept", "ledger", "edits", "substring_dedup")
    assert tree_digest(run, parts) == tree_digest(tmp_path / "clean", parts)
