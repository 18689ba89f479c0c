"""`curate report`: the data behind each section checked against the run's own files, the page itself
(self-contained, every section present, partial runs and fsspec runs), and a real browser drawing it."""

import argparse
import re
import shlex
import shutil
import struct
import zlib
from html import escape as html_escape
from pathlib import Path

import duckdb
import fsspec
import numpy as np
import pytest

from curate.report import classify, dedup, dualuse, examples, funnel, languages, mixture, removals, signals, timing, write_report
from curate.report.binning import make_bins
from curate.report.build import gather, render
from curate.report.context import open_run
from curate.report.sampling import spread
from curate.report.thresholds import parse, split_and
from curate.sql import MEMORY_ENV
from curate.tokens.megatron import read_megatron
from curate.why import command, story

import browser
from conftest import ZYDA2, run_cli

QUALITY = ("quality_filter", "quality_model", "dual_use")


@pytest.fixture(scope="session")
def zrun(sample_dir, tmp_path_factory) -> Path:
    """The Zyda-2 recipe on the session sample, with the dual-use step and a recipe of thresholds (rpv2_gopher)."""
    out = tmp_path_factory.mktemp("report") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CURATE_SAMPLE", str(sample_dir))
        assert run_cli(ZYDA2, "--output", out, "--inline", "-q", "--set", "stages.dual_use.enabled=true",
                       "--set", "stages.quality_filter.recipes={all: [rpv2_gopher]}") == 0
    return out


@pytest.fixture(scope="session")
def report(zrun) -> Path:
    return Path(write_report(str(zrun)))


def sql(q: str, run: Path):
    return duckdb.sql(q.replace("RUN", str(run))).fetchall()


# ---- data gathering ------------------------------------------------------------------------------

def test_document_funnel_is_the_accounting(zrun):
    run = open_run(str(zrun))
    docs = funnel.documents(run)
    assert docs["stages"][0] == "ingest" and docs["stages"][-1] == "kept"
    kept_files = dict(sql("SELECT split_part(filename, '/', -2), count(*) FROM read_parquet('RUN/kept/*/*.parquet', "
                          "filename=true, union_by_name=true) GROUP BY 1", zrun))
    ledger = dict(sql("SELECT source, count(*) FROM read_parquet('RUN/ledger/*/*/*.parquet') GROUP BY 1", zrun))
    for source, v in docs["sources"].items():
        assert v["kept"][-1] == kept_files.get(source, 0)
        assert v["in"] == kept_files.get(source, 0) + ledger.get(source, 0), "entering = kept + every ledger row"
        assert all(a >= b for a, b in zip(v["kept"], v["kept"][1:])), "a funnel never grows in documents"


def test_tokens_are_exact_once_written_and_match_the_mix_measurement_before(zrun):
    run = open_run(str(zrun))
    tok = funnel.tokens(run)
    stages = tok["stages"]
    manifest = run.manifest
    mix_at = stages.index("mix")
    for source, v in tok["sources"].items():
        plan = manifest["mixture"]["sources"][source]
        # every docs shard of the sample is read whole, so characters x tokens/char is the mix step's own number
        assert v["tokens"][mix_at - 1] == pytest.approx(plan["available_tokens"], rel=1e-9)
        assert v["tokens"][mix_at] == pytest.approx(plan["chosen_tokens"]) and v["estimate"][mix_at]
        for i in range(stages.index("tokenize"), len(stages)):
            assert v["tokens"][i] == manifest["outputs"][source]["tokens"] and not v["estimate"][i]
        assert all(v["estimate"][:mix_at + 1])
    assert any("estimate" in n for n in tok["notes"])


def test_removals_by_reason_are_the_ledger(zrun):
    run = open_run(str(zrun))
    got = {(r["stage"], r["reason"], s): n for r in removals.by_reason(run)["rows"] for s, n in r["by_source"].items()}
    want = {(st, re_, s): n for st, re_, s, n in sql(
        "SELECT stage, reason, source, count(*) FROM read_parquet('RUN/ledger/*/*/*.parquet') GROUP BY ALL", zrun)}
    assert got == want
    assert any(k[1].startswith("rpv2_gopher.") for k in got), "the recipe removed something in this fixture"
    bad = removals.bad_records(run)
    assert bad["counts"] and all(bad["examples"][kind] for kind in bad["counts"])
    details = {d for (d,) in sql("SELECT detail FROM read_parquet('RUN/ledger/ingest/*/*.parquet')", zrun)}
    assert all(d in details for ex in bad["examples"].values() for _, d in ex)


def test_examples_for_every_reason_that_removed_something(zrun):
    run = open_run(str(zrun))
    got = examples.removal_examples(run)
    reasons = [(r["stage"], reason) for r in run.summary for reason, n in r["removed"].items() if n]
    assert sorted({(e["stage"], e["reason"]) for e in got}) == sorted(set(reasons))
    ledger = {(st, re_, s, i): d for st, re_, s, i, d in sql(
        "SELECT stage, reason, source, id, detail FROM read_parquet('RUN/ledger/*/*/*.parquet')", zrun)}
    texts = {(s, i): t for s, i, t in sql(
        "SELECT split_part(filename, '/', -2), id, text FROM read_parquet('RUN/docs/*/*.parquet', filename=true, union_by_name=true)", zrun)}
    removed = {}
    for st, re_, _, _ in ledger:
        removed[(st, re_)] = removed.get((st, re_), 0) + 1
    for e in got:  # every reason shows as many examples as it removed documents, up to PER_REASON
        assert len(e["examples"]) == min(examples.PER_REASON, removed[(e["stage"], e["reason"])])
        for d in e["examples"]:
            assert ledger[(e["stage"], e["reason"], d["source"], d["id"])] == (d["detail"] or None)
            if e["reason"].startswith("bad_record:"):
                assert d["snippet"] == "" and d["detail"] and "why" not in d
            else:
                assert d["snippet"] and " ".join(texts[(d["source"], d["id"])].split()).startswith(d["snippet"].removesuffix(" …"))
                assert d["why"] == command(d["source"], d["id"], run.root)


def test_every_example_document_shows_the_command_that_tells_its_story(zrun):
    run = open_run(str(zrun))
    got = examples.removal_examples(run)
    html = examples.removal_section(got, {})
    d = next(d for e in got for d in e["examples"] if "why" in d)
    assert html_escape(d["why"]) in html and f"curate why {run.root} " in html
    argv = shlex.split(d["why"])[1:]
    assert story(argv[1], argv[2], argv[3])["status"].startswith("removed by ")   # the command answers
    clusters = examples.cross_source_clusters(run, "dedup")
    assert all(m["why"] == command(m["source"], m["id"], run.root) for c in clusters for m in c["members"])
    assert html_escape(clusters[0]["members"][0]["why"]) in examples.clusters_section(clusters, {})


def test_filter_removals_carry_the_values_the_rule_failed_on(zrun):
    rows = sql("SELECT l.reason, l.detail, s.rps_doc_word_count, d.int_score FROM read_parquet('RUN/ledger/quality_filter/*/*.parquet') l "
               "JOIN read_parquet('RUN/signals/*/*.parquet', union_by_name=true) s USING (id) "
               "LEFT JOIN read_parquet('RUN/docs/fwe/*.parquet') d USING (id)", zrun)
    by_reason = {r[0] for r in rows}
    assert "rpv2_gopher.word_count" in by_reason
    for reason, detail, words, score in rows:
        if reason == "rpv2_gopher.word_count":
            assert detail == f"rps_doc_word_count={words}" and not 50 <= words <= 100000
        elif reason == "where:int_score >= 3":
            assert detail == f"int_score={score}" and score < 3
        else:
            assert re.fullmatch(r"rps_\w+=\S+(, rps_\w+=\S+)*", detail), detail


def test_filter_detail_reads_only_the_named_columns_and_text_by_its_length():
    from curate.recipes import Rule
    from curate.recipes import reason_sql
    from curate.stages.filter import detail_sql

    rules = [Rule("short", "length(text) >= 10"), Rule("score", "x_score > 0.5 AND n <> 3")]
    carried, detail = detail_sql(rules, ["id", "text", "x_score", "n", "other"])
    assert carried == ', length("text") AS "text", "x_score", "n"'
    con = duckdb.connect()
    con.execute("CREATE TABLE docs AS SELECT * FROM (VALUES ('a', 'tiny', 0.9, 1, 'o'), ('b', 'long enough text', 0.1, 3, 'o'), "
                "('c', 'long enough text', 0.9, 1, 'o')) t(id, text, x_score, n, other)")
    got = con.sql(f"SELECT id, reason, {detail} FROM (SELECT id, {reason_sql(rules)} AS reason{carried} FROM docs) "
                  "WHERE reason IS NOT NULL ORDER BY id").fetchall()
    assert got == [("a", "short", "length(text)=4"), ("b", "score", "x_score=0.1, n=3")]


def test_cross_source_clusters_side_by_side(zrun):
    run = open_run(str(zrun))
    got = examples.cross_source_clusters(run, "dedup")
    members = {(c, s, i, k) for c, s, i, k in sql("SELECT cluster, source, id, kept FROM read_parquet('RUN/dedup/clusters/*/*.parquet')", zrun)}
    spanning = {c for c in {m[0] for m in members} if len({s for c2, s, _, _ in members if c2 == c}) > 1}
    assert spanning and len(got) == min(examples.CLUSTERS, len(spanning))  # the sample plants cross-source duplicates
    for c in got:
        assert len({m["source"] for m in c["members"]}) > 1 and c["members"][0]["kept"]
        assert all((c["cluster"], m["source"], m["id"], m["kept"]) in members for m in c["members"])
        assert all(m["snippet"] for m in c["members"])


def test_language_mix_kept_and_removed(zrun):
    run = open_run(str(zrun))
    mix = languages.language_mix(run)
    langs = dict(sql("SELECT lang, count(*) FROM read_parquet('RUN/signals/*/*.parquet', union_by_name=true) GROUP BY 1", zrun))
    kept = sql("SELECT count(*) FROM read_parquet('RUN/kept/*/*.parquet', union_by_name=true)", zrun)[0][0]
    assert sum(sum(v) for v in mix["counts"].values()) == sum(langs.values()) and not mix["sampled"]
    assert sum(mix["counts"]["kept"]) == kept, "every kept document went through the signals step"
    top = max(langs, key=langs.get)
    assert mix["languages"][0] == top and len(langs) > 1


def test_compile_time_is_shown_apart_from_the_stage_work(zrun):
    summary = {r["stage"]: r for r in open_run(str(zrun)).summary}
    assert all("compile_seconds" in r for r in summary.values())
    t = {r["stage"]: r for r in timing.timing(open_run(str(zrun)))["rows"]}
    assert t["minhash"]["compile_seconds"] == summary["minhash"]["compile_seconds"] <= t["minhash"]["wall_seconds"]
    assert t["ingest"]["compile_seconds"] == 0


def test_thresholds_read_from_sql():
    assert parse("int_score >= 3") == ([("int_score", ">=", 3.0)], [])
    assert parse("rps_doc_word_count BETWEEN 50 AND 100000")[0] == [("rps_doc_word_count", ">=", 50.0),
                                                                    ("rps_doc_word_count", "<=", 100000.0)]
    assert parse("3 < x")[0] == [("x", ">", 3.0)]
    assert parse("a.b / a.c BETWEEN 3 AND 10 AND d <> 1")[0] == [("a.b / a.c", ">=", 3.0), ("a.b / a.c", "<=", 10.0), ("d", "!=", 1.0)]
    assert parse("a > 1 OR b < 2") == ([], []), "an OR at the top level states no threshold"
    assert parse("coalesce(list_sum(x), 0) <= 0.9 AND y < 2")[0] == [("y", "<", 2.0)], "functions are skipped, not guessed"
    assert parse("a >= 1 AND (b > 1 OR c < 2)")[0] == [("a", ">=", 1.0)]
    assert parse("q_label = 'High'") == ([], [("q_label", "=", "High")])
    assert split_and("x BETWEEN 1 AND 2 AND y > 'a AND b'") == ["x BETWEEN 1 AND 2", "y > 'a AND b'"]


def test_signal_distributions_split_kept_from_removed_with_the_recipe_thresholds(zrun):
    run = open_run(str(zrun))
    data = signals.distributions(run)
    charts = {c["expr"]: c for c in data["charts"]}
    assert data["stages"] == list(QUALITY)
    removed = {i for (i,) in sql(f"SELECT id FROM read_parquet([{', '.join(repr(f'RUN/ledger/{s}/*/*.parquet') for s in QUALITY)}])", zrun)}
    rows = sql("SELECT id, rps_doc_word_count FROM read_parquet('RUN/signals/*/*.parquet', union_by_name=true)", zrun)
    wc = charts["rps_doc_word_count"]
    assert wc["n"] == {"kept": sum(r[0] not in removed for r in rows), "removed": sum(r[0] in removed for r in rows)}
    assert sum(wc["groups"]["kept"]) == pytest.approx(1.0) and sum(wc["groups"]["removed"]) == pytest.approx(1.0)
    marks = {(t["rule"], t["op"], t["value"], t["scope"]) for t in wc["thresholds"]}
    assert marks == {("rpv2_gopher.word_count", ">=", 50.0, "all"), ("rpv2_gopher.word_count", "<=", 100000.0, "all")}
    assert wc["log"] and wc["edges"][0] <= 50 <= wc["edges"][-1]
    score = charts["int_score"]  # a document column, named by the fwe `where` predicate
    assert score["sources"] == ["fwe"] and score["integer"]
    assert score["thresholds"] == [{"op": ">=", "value": 3.0, "rule": "where:int_score >= 3", "scope": "fwe"}]
    assert "rps_doc_frac_chars_top_2gram" in charts, "every column a recipe thresholds gets a chart"


def test_a_sample_is_a_bounded_sample(zrun):
    run = open_run(str(zrun))
    small = signals.distributions(run, budget=40)
    for c in small["charts"]:
        assert c["n"]["kept"] + c["n"]["removed"] <= 40
    assert sorted(spread(13)) == list(range(13)) and spread(8)[:4] == [0, 4, 2, 6] and spread(0) == []


def test_bins_keep_the_kept_shape_when_junk_has_a_long_tail():
    rng = np.random.default_rng(0)
    kept = rng.normal(5.5, 0.3, 5000)
    junk = np.concatenate([kept, np.full(300, 120.0)])
    b = make_bins(junk, core=kept)
    assert b.edges[-1] < 20 and b.clipped, "the tail is clipped into the edge bin instead of squashing the bulk"
    assert sum(b.shares(junk)) == pytest.approx(1.0)
    ints = make_bins(np.array([0, 1, 2, 3, 4, 5.0]), [3])
    assert ints.integer and ints.edges[0] == -0.5 and ints.edges[-1] == 5.5


def test_dedup_clusters_and_who_lost_to_whom(zrun):
    run = open_run(str(zrun))
    [d] = dedup.dedup(run)
    c = d["clusters"]
    clusters, docs = sql("SELECT count(DISTINCT cluster), count(*) FROM read_parquet('RUN/dedup/clusters/*/*.parquet')", zrun)[0]
    assert c["clusters"] == clusters == sum(c["within"]) + sum(c["across"]) and c["documents"] == docs
    m = d["matrix"]
    cells = {(x, y): v for x, row in zip(m["sources"], m["values"]) for y, v in zip(m["sources"], row) if v}
    # the ledger detail names the source of the kept copy: `kept <id> (<source>); cluster N[; similarity S (method)]`
    want = {}
    for source, reason, detail in sql("SELECT source, reason, detail FROM read_parquet('RUN/ledger/dedup/*/*.parquet')", zrun):
        kept_in = re.search(r"\(([^)]+)\); cluster \d+(; similarity [0-9.]+ \([a-z ]+\))?$", detail).group(1)
        assert reason == f"minhash_duplicate_of:{kept_in}"
        want[(source, kept_in)] = want.get((source, kept_in), 0) + 1
    assert cells == want and m["removed"] == sum(want.values())
    assert all(x != "fwe" for x, _ in cells), "the first source in priority never gives way across sources"


def test_classifier_scores_and_labels(zrun):
    run = open_run(str(zrun))
    [c] = classify.classifiers(run)
    [m] = c["models"]
    assert m["model"] == "zyda2_quality" and set(m["sources"]) == {"zyda", "dolma_cc"}
    removed = sql("SELECT count(*) FROM read_parquet('RUN/ledger/quality_model/*/*.parquet')", zrun)[0][0]
    scored = sql("SELECT count(*) FROM read_parquet('RUN/quality_model/*/*.parquet', union_by_name=true) "
                 "WHERE zyda2_quality_score IS NOT NULL", zrun)[0][0]
    assert sum(v["removed"] for v in m["labels"].values()) == pytest.approx(removed)
    assert sum(v["kept"] + v["removed"] for v in m["labels"].values()) == pytest.approx(scored)
    assert m["labels"]["Low"]["kept"] == 0 and m["labels"]["High"]["removed"] == 0
    assert m["keep_labels"][0]["value"] == "High"
    [score] = m["charts"]
    assert score["column"] == "zyda2_quality_score" and score["thresholds"] == []
    assert sum(score["groups"]["removed"]) == pytest.approx(removed)
    assert c["info"]["zyda2_quality"]["standin"] is True


def test_dual_use_funnel_is_the_decisions_table(zrun):
    run = open_run(str(zrun))
    [d] = dualuse.dual_uses(run)
    rows = {s: (n, e, f) for s, n, e, f in sql(
        "SELECT split_part(filename, '/', -2), count(*), count(*) FILTER (escalated), count(*) FILTER (flagged) "
        "FROM read_parquet('RUN/dual_use/*/*.parquet', filename=true) GROUP BY 1", zrun)}
    for source, counts in d["funnel"]["counts"].items():
        assert (counts["scanned"], counts["escalated"], counts["flagged"]) == rows[source]
        assert counts["escalated"] == counts["flagged"] + counts["backfilled"]
    assert sum(d["hits"]) == pytest.approx(sum(r[0] for r in rows.values()))
    assert d["escalate_at"] == 2 and d["threshold"] == 0.5 and d["top_terms"]
    flagged = sum(v for v in d["scores"]["groups"]["flagged"])
    assert flagged == pytest.approx(sum(r[2] for r in rows.values()))


def test_mixture_plan_and_sequence_fill(zrun):
    run = open_run(str(zrun))
    plan = mixture.plan(run)
    assert plan["sources"] == run.manifest["mixture"]["sources"]
    pack = mixture.packing(run)
    assert pack["density"] == run.manifest["packing"]["density"]
    for source, fill in pack["fill"].items():
        index = read_megatron(str(zrun / "pack" / source))
        full = np.add.reduceat(index.lengths.astype(np.int64), index.document_indices[:-1])
        assert np.array_equal(fill["lengths"], full) and fill["total"] == pack["outputs"][source]["sequences"]
        assert fill["lengths"].sum() == pack["outputs"][source]["tokens"] and fill["lengths"].max() <= pack["seq_len"]
        if len(full) >= 8:  # a large index is read in windows: each window is a run of the real lengths
            windows = mixture.sequence_lengths(str(zrun / "pack" / source), "best_fit", limit=8)["lengths"]
            assert len(windows) == 8 and np.array_equal(windows[:2], full[:2]) and np.array_equal(windows[-2:], full[-2:])


def test_timing_counts_the_markers_and_does_not_invent_retries(zrun):
    run = open_run(str(zrun))
    t = timing.timing(run)
    by = {r["stage"]: r for r in t["rows"]}
    assert list(by) == run.stage_order
    markers = list((zrun / "_state" / "dedup").glob("*/**/*.json"))
    assert sum(p["tasks"] for p in by["dedup"]["phases"]) == len(markers)
    assert {p["phase"] for p in by["mix"]["phases"]} == {"measure", "shards"}
    assert all(r["retries"] == "not recorded" for r in t["rows"])


# ---- the page ------------------------------------------------------------------------------------

def test_the_report_is_one_self_contained_page(zrun, report):
    assert report == zrun / "report.html"
    html = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I), "nothing is fetched from a network"
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    quoted = re.sub(r'<div class="(snippet|detail)">.*?</div>', "", html)  # documents' own text may name URLs
    assert "http://" not in quoted and "https://" not in quoted
    for anchor in ("overview", "funnel", "removals", "signals", "dedup", "classify", "dual-use", "mixture", "performance"):
        assert f'id="{anchor}"' in html
    assert html.count('<svg class="chart"') >= 15
    assert "rpv2_gopher.word_count" in html and "not recorded" in html and "stands in for" in html


def test_a_partial_run_gets_a_report_with_notes(sample_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("CURATE_SAMPLE", str(sample_dir))
    run = tmp_path / "partial"
    assert run_cli(ZYDA2, "--output", run, "--inline", "-q", "--until", "dedup") == 0
    html = Path(write_report(str(run), str(tmp_path / "r.html"))).read_text()
    assert "no manifest.json" in html and "no signals table" in html and "no mixture plan" in html
    assert 'id="dedup"' in html
    assert re.search(r'id="classify".*Not run yet: quality_model', html) and "Not run yet: dual_use" not in html  # dual_use is off
    (run / "summary.json").unlink()  # a run still running has no summary yet: counts come from the markers
    view = open_run(str(run))
    assert view.summary_from == "task markers"
    assert funnel.documents(view)["sources"]["zyda"]["kept"][-1] == \
        sql("SELECT count(*) FROM read_parquet('RUN/docs/zyda/*.parquet')", run)[0][0] - \
        sql("SELECT count(*) FROM read_parquet('RUN/ledger/dedup/zyda/*.parquet')", run)[0][0]
    assert "no summary.json" in Path(write_report(str(run), str(tmp_path / "r2.html"))).read_text()


def test_an_fsspec_run_reads_the_same(zrun, report, tmp_path):
    memory = fsspec.filesystem("memory")
    for path in zrun.rglob("*"):
        if path.is_file() and path.name != "report.html" and "_work" not in path.parts:
            memory.pipe(f"/rep/{path.relative_to(zrun)}", path.read_bytes())
    try:
        out = write_report("memory://rep")
        assert out == "memory://rep/report.html"
        remote = memory.cat("/rep/report.html").decode()
    finally:
        memory.rm("/rep", recursive=True)
    stamp = re.compile(r"report \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    local = stamp.sub("", report.read_text()).replace(str(zrun), "RUN")
    assert stamp.sub("", remote).replace("memory://rep", "RUN") == local


def test_the_report_is_the_same_within_a_small_duckdb_memory_limit(zrun, report, tmp_path, monkeypatch):
    """Every section's queries complete (spilling where they must) with DuckDB held to 48 MB (a fifth of the default), and say the same."""
    monkeypatch.setenv(MEMORY_ENV, "48")
    view = open_run(str(zrun))
    assert view.sql("SELECT current_setting('memory_limit')")[0][0] == "45.7 MiB"
    html = render(view, gather(view))   # not write_report's path alone: a section that fails must fail here
    stamp = re.compile(r"report \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert stamp.sub("", html) == stamp.sub("", report.read_text())


def test_cli_helpers(zrun, tmp_path, capsys):
    from curate.report.cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", str(zrun), "--out", str(tmp_path / "x.html")])
    assert args.func(args) == 0
    assert (tmp_path / "x.html").read_text().startswith("<!DOCTYPE html>")
    assert str(tmp_path / "x.html") in capsys.readouterr().out


# ---- a real browser ------------------------------------------------------------------------------

def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _png_distinct_rows(path: Path) -> int:
    """Distinct (filtered) scanlines of a PNG: a page of one color has one or two, a drawn page thousands."""
    data, pos, idat = path.read_bytes(), 8, b""
    width, _ = _png_size(path)
    depth, color = data[24], data[25]
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + (width * channels * depth + 7) // 8
    return len({raw[i:i + stride] for i in range(0, len(raw), stride)})


@pytest.mark.parametrize("width", [1400, 390])
def test_chromium_draws_every_chart(report, zrun, tmp_path, width):
    if browser.find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium); the browser check needs it")
    html = report.read_text()
    check = browser.render_check(report, width)
    assert check["viewport"] == width and check["scroll_width"] <= width and not check["overflowing"], check["overflowing"]
    assert len(check["charts"]) == html.count('<svg class="chart"') >= 15
    for chart in check["charts"]:
        assert chart["width"] > min(200, width / 2) and chart["height"] > (80 if width >= 1000 else 40), chart  # scaled to fit
        assert chart["drawn"] > 0, f"chart {chart['label']!r} drew no data"
    shown = set(re.findall(r'data-reason="([^"]+)"', html))
    removed = {f"{r['stage']}/{reason}" for r in open_run(str(zrun)).summary for reason, n in r["removed"].items() if n}
    assert removed and removed <= shown, "an example document for every reason that removed something"
    assert 'id="clusters"' in html and 'id="languages"' in html
    png = browser.screenshot(report, tmp_path / "report.png", width=width)
    png_width, height = _png_size(png)
    assert png_width == max(width, browser.MIN_WINDOW) and height >= check["height"] > 3000
    if width < 1000:
        return
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body style='background:#f5f7fa'></body></html>")
    empty = browser.screenshot(blank, tmp_path / "blank.png", width=1400, height=height)
    assert _png_distinct_rows(empty) <= 3, "the measure sees a blank page as blank"
    assert _png_distinct_rows(png) > 1000, "the screenshot is not a blank page"


def test_without_chromium_the_browser_helpers_say_so(monkeypatch, tmp_path):
    monkeypatch.setenv("CURATE_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert browser.find_chromium() is None
    with pytest.raises(FileNotFoundError, match="no Chromium"):
        browser.dump_dom(tmp_path / "x.html")
    monkeypatch.delenv("CURATE_CHROMIUM")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert browser.find_chromium() is None


# ---- other step kinds: exact dedup (policy all), a numeric keep threshold, repeats, no packing ----------

ALT = """name: alt
priority: [fwe, zyda]
sources:
  fwe: {{format: fineweb, paths: '{sample}/fwe/data/*/*.parquet'}}
  zyda: {{format: zyda, paths: '{sample}/zyda/data/*/*.parquet'}}
stages:
  ingest: {{}}
  exact: {{use: exact_dedup, policy: all}}
  quality:
    use: classify
    models:
      q: {{kind: fasttext, path: '{sample}/models/quality_standin.bin', label: High, sources: [zyda]}}
    keep:
      zyda: "q_score >= 0.5"
  mix: {{epochs: {{fwe: 2.0, zyda: 0.5}}}}
  tokenize: {{tokenizer: gpt2}}
  pack: {{seq_len: 2049, method: none, formats: [megatron]}}
  manifest: {{}}
"""


@pytest.fixture(scope="session")
def alt_run(sample_dir, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("alt")
    recipe = folder / "alt.yaml"
    recipe.write_text(ALT.format(sample=sample_dir))
    assert run_cli(recipe, "--output", folder / "run", "--inline", "-q") == 0
    return folder / "run"


def test_other_step_kinds(alt_run, tmp_path):
    run = open_run(str(alt_run))
    [d] = dedup.dedup(run)
    assert d["kind"] == "exact_dedup" and d["clusters"]["clusters"] == sql(
        "SELECT count(DISTINCT cluster) FROM read_parquet('RUN/exact/clusters/*/*.parquet')", alt_run)[0][0]
    assert d["matrix"]["reason"] in ("exact_duplicate_of", None)
    [c] = classify.classifiers(run)
    [score] = c["models"][0]["charts"]
    assert score["thresholds"] == [{"op": ">=", "value": 0.5, "rule": "keep: q_score >= 0.5", "scope": "zyda"}]
    below = sql("SELECT count(*) FROM read_parquet('RUN/quality/zyda/*.parquet') WHERE q_score < 0.5", alt_run)[0][0]
    assert sum(score["groups"]["removed"]) == pytest.approx(below)
    pack = mixture.packing(run)
    for source, fill in pack["fill"].items():  # one sequence per document: its lengths are the documents' token counts
        index = read_megatron(str(alt_run / "pack" / source))
        assert np.array_equal(fill["lengths"], index.lengths) and fill["lengths"].sum() == pack["outputs"][source]["tokens"]
    assert mixture.plan(run)["sources"]["fwe"]["epochs"] == 2.0
    tok = funnel.tokens(run)
    assert tok["sources"]["fwe"]["tokens"][-1] > tok["sources"]["fwe"]["tokens"][0], "two epochs write more than one"
    out = Path(write_report(str(alt_run), str(tmp_path / "alt.html")))
    html = out.read_text()
    assert "≥ 0.5 (keep, zyda)" in html and "<code>q_score &gt;= 0.5</code>" in html
    assert 'id="signals"' in html and "no signals table" in html
    if browser.find_chromium() is not None:
        check = browser.render_check(out)
        assert check["charts"] and all(ch["drawn"] > 0 for ch in check["charts"])
