"""The decontaminate stage on a corpus with planted eval passages and near-misses, against an independent reference."""

import pytest

import json
import shutil

from decontam.planted import BOILERPLATE, make, ref_words, reference

OPTS = {"n": 13, "min_short_words": 8, "frequent_docs": 3, "min_overlap": 0.5, "min_match_words": 50}


@pytest.fixture
def planted(tmp_path):
    (tmp_path / "evals").mkdir()
    return make(tmp_path / "evals")


def qa_texts(sets):
    return [r.get("passage") or "" for r in map(json.loads, open(sets["qa"]["path"]))]


def rows_of(result):
    table = result.table(result.stage.name).to_pylist()
    return {(r["source"], r["id"], r["set"], r["item"]): r for r in table}


def test_flags_are_those_of_an_independent_reference_and_near_misses_stay(run_stage, planted):
    sets, docs = planted
    result = run_stage("decontaminate", {"sets": sets, **OPTS, "action": "report"}, docs=docs, shard_rows=4, batch_rows=3)
    rows = rows_of(result)
    want = reference(sets, docs, **{k: OPTS[k] for k in ("n", "frequent_docs", "min_overlap")},
                     min_short=OPTS["min_short_words"], min_words=OPTS["min_match_words"])
    assert {k: (r["overlap"], r["longest_words"], r["flagged"]) for k, r in rows.items()} == want
    flagged = {(s, d, e, i) for (s, d, e, i), r in rows.items() if r["flagged"]}
    assert flagged == {("web", "web-0", "qa", "q-verbatim"), ("web", "web-1", "qa", "q-reformatted"),
                       ("web", "web-2", "qa", "q-partial"), ("web", "web-4", "qa", "q-short"), ("web", "web-6", "qa", "q-boiler"),
                       ("web", "web-8", "mc", "mc-1"), ("news", "news-1", "qa", "q-partial")}
    # near-misses: a small part of a passage, a cut short item, short answers, a common phrase, one choice alone
    assert not rows[("web", "web-3", "qa", "q-small-part")]["flagged"]
    assert not rows[("news", "news-0", "mc", "mc-1")]["flagged"]
    assert not any(d in ("web-5", "web-7") for _, d, _, _ in rows)
    assert not any(i in ("q-yes", "q-common", "q-unseen") for *_, i in rows)
    # boilerplate in many documents never counts alone; beside the item's own words it counts whole
    boiler_docs = {d["id"] for s in docs.values() for d in s if BOILERPLATE in d["text"]}
    assert len(boiler_docs) > OPTS["frequent_docs"]
    assert {d for _, d, _, _ in rows} & boiler_docs == {"web-6"}
    assert rows[("web", "web-6", "qa", "q-boiler")]["overlap"] == 1.0
    # evidence: the matched passage and the eval item's text side by side
    r = rows[("web", "web-1", "qa", "q-reformatted")]
    passage = next(t for t in qa_texts(sets) if t.startswith(r["eval_text"].split()[0]))
    shown = ref_words(r["passage"].removesuffix(" …"))   # an excerpt: the first 400 characters of the match, as written
    assert len(shown) > 30 and shown[:-1] == ref_words(passage)[:len(shown) - 1] and r["passage"].split()[0].isupper()
    assert (r["grams"], r["item_grams"], r["longest_words"]) == (48, 49, 60)   # the question (12 words) is one whole gram
    assert len(r["hashes"]) == r["grams"]
    assert result.ledger().num_rows == 0, "action: report only flags"
    assert sum(c["flagged"] for c in result.counts) == len({(s, d) for s, d, _, _ in flagged})


def test_remove_writes_the_set_and_item_to_the_ledger(run_stage, planted):
    sets, docs = planted
    result = run_stage("decontaminate", {"sets": sets, **OPTS}, docs=docs, shard_rows=4)
    ledger = {r["id"]: r for r in result.ledger().to_pylist()}
    assert set(ledger) == {"web-0", "web-1", "web-2", "web-4", "web-6", "web-8", "news-1"}
    assert ledger["web-8"]["reason"] == "decontaminate:mc"
    assert ledger["web-0"]["reason"] == "decontaminate:qa"
    assert ledger["web-0"]["detail"] == "item q-verbatim: overlap 1.00 (18/18 grams), longest match 30 words"
    kept = sum(c["kept"] for c in result.counts)
    assert kept + len(ledger) == sum(len(d) for d in docs.values())


def test_scan_output_is_the_same_whatever_the_batches(run_stage, planted, tmp_path):
    sets, docs = planted
    a = run_stage("decontaminate", {"sets": sets, **OPTS}, docs=docs, shard_rows=100, batch_rows=1)
    first = sorted(map(str, a.table(a.stage.name).to_pylist()))
    assert len(first) == 9
    shutil.rmtree(tmp_path / "run")
    b = run_stage("decontaminate", {"sets": sets, **OPTS}, docs=docs, shard_rows=100, batch_rows=1000)
    assert sorted(map(str, b.table(b.stage.name).to_pylist())) == first


# ---- whole runs: resume, re-decide, the query view ------------------------------------------------

def pipeline(tmp_path, sets, docs, **options) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    sources = {}
    for s, rows in docs.items():
        (tmp_path / "in" / s).mkdir(parents=True, exist_ok=True)
        for n in range(0, len(rows), 4):   # several shards per source
            pq.write_table(pa.Table.from_pylist(rows[n:n + 4]), tmp_path / "in" / s / f"part-{n:03d}.parquet")
        sources[s] = {"format": "parquet", "paths": str(tmp_path / "in" / s / "*.parquet"), "fields": {"id": "id"}}
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump({"name": "dc", "sources": sources,
                                 "stages": {"ingest": {}, "decontaminate": {"sets": sets, **OPTS, **options}}}, sort_keys=False))
    return f


def flagged_in(run):
    from curate.query import connect

    return set(connect(str(run)).sql("SELECT id, item FROM contamination WHERE flagged").fetchall())


def test_new_thresholds_re_decide_from_stored_matches_without_scanning(tmp_path, planted, capsys, monkeypatch):
    from conftest import run_cli
    from curate.decontam.index import EvalIndex

    f, run = pipeline(tmp_path, *planted), tmp_path / "run"
    assert run_cli(f, "--output", run, "--inline") == 0
    assert len(flagged_in(run)) == 7
    capsys.readouterr()

    def no_scan(*_):
        raise AssertionError("scanned again")

    monkeypatch.setattr(EvalIndex, "scan", no_scan)
    assert run_cli(f, "--output", run, "--inline", "--set", "stages.decontaminate.min_overlap=0.9",
                   "--set", "stages.decontaminate.min_match_words=100", "--set", "stages.decontaminate.action=report") == 0
    out, err = capsys.readouterr()
    assert "[decontaminate: scan] 7 tasks (7 already done)" in err
    assert "decontaminate: mc 2 items (0 too short), 12 grams; qa 9 items (2 too short), 262 grams; 10 grams frequent" in out
    assert "  web        scanned 13  matched an item 7  flagged 4" in out
    assert "changed since the last run (option action, option min_match_words, option min_overlap)" in err
    assert flagged_in(run) == {("web-0", "q-verbatim"), ("web-1", "q-reformatted"), ("web-4", "q-short"), ("web-6", "q-boiler")}
    assert sum(pq_rows(p) for p in (run / "ledger" / "decontaminate").rglob("*.parquet")) == 0, "report: flags only"
    # the frequency rule is a decision too: boilerplate now counts (and still flags nothing on its own)
    assert run_cli(f, "--output", run, "--inline", "-q", "--set", "stages.decontaminate.frequent_docs=100") == 0
    from curate.query import connect

    boiler = connect(str(run)).sql("SELECT count(*), bool_or(flagged) FROM contamination WHERE item = 'q-boiler' AND id <> 'web-6'").fetchall()[0]
    assert boiler == (8, False)


def pq_rows(path):
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows


def test_a_run_that_dies_mid_stage_resumes_to_identical_outputs(tmp_path, planted, monkeypatch):
    from conftest import run_cli, tree_digest
    from curate.stages.decontaminate import DecontaminateStage

    sets, docs = planted
    f = pipeline(tmp_path, sets, docs)
    assert run_cli(f, "--output", tmp_path / "clean", "--inline", "-q") == 0
    original, calls = DecontaminateStage.process_shard, []

    def dies_on_the_fourth_shard(self, batches, shard):
        calls.append(shard)
        if len(calls) == 4:
            raise RuntimeError("killed")
        return original(self, batches, shard)

    monkeypatch.setattr(DecontaminateStage, "process_shard", dies_on_the_fourth_shard)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 1
    assert len(list((tmp_path / "run" / "_state" / "decontaminate" / "shards").rglob("*.json"))) == 3
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    parts = ("kept", "ledger", "decontaminate")
    assert tree_digest(tmp_path / "run", parts) == tree_digest(tmp_path / "clean", parts)
    assert len(tree_digest(tmp_path / "run", ("decontaminate",))) == 7


# ---- the sample's demo eval set and zyda2.yaml -----------------------------------------------------

def test_the_sample_demo_set_flags_exactly_what_its_truth_says(tmp_path, sample_dir):
    from conftest import run_cli
    from stages.test_classify import pipeline as sample_pipeline

    demo = f"{{path: '{sample_dir}/evals/demo.jsonl', fields: {{passage: passage, id: id}}}}"
    step = f"  decontaminate: {{sets: {{demo: {demo}}}}}\n"
    run = tmp_path / "run"
    assert run_cli(sample_pipeline(tmp_path, sample_dir, step), "--output", run, "--inline", "-q") == 0
    truth = json.loads((sample_dir / "evals" / "demo_truth.json").read_text())
    from curate.query import connect

    rows = connect(str(run)).sql("SELECT source, id, item, flagged FROM contamination").fetchall()
    assert {(s, d, i) for s, d, i, f in rows if f} == {(t["source"], t["doc"], i) for i, t in truth.items() if t["flag"]}
    assert {i for _, _, i, f in rows if not f} == {i for i, t in truth.items() if t["doc"] and not t["flag"]}, "the near-miss"
    assert len(truth) == 13 and sum(t["flag"] for t in truth.values()) == 6
    ledger = connect(str(run)).sql("SELECT count(*) FROM ledger WHERE reason = 'decontaminate:demo'").fetchall()[0][0]
    assert ledger == 6
    # the report: the set, and the strongest matches side by side with their items
    from curate.report.build import write_report

    html = open(write_report(str(run))).read()
    section = html[html.index('<section id="decontamination">'):]
    section = section[:section.index("</section>")]
    assert "Eval set <code>demo</code>" in section and section.count('<div class="side">') == 4
    assert "demo-00" in section and "eval item" in section and "training document" in section


def test_the_step_is_off_in_zyda2_until_enabled(sample_env):
    from conftest import ZYDA2
    from curate import load_pipeline

    names = [s.name for s in load_pipeline(ZYDA2).stages]
    assert "decontaminate" not in names
    on = [s.name for s in load_pipeline(ZYDA2, ["stages.decontaminate.enabled=true"]).stages]
    assert on.index("quality_model") < on.index("decontaminate") < on.index("mix")


@pytest.mark.slow  # kill -9
def test_kill_9_mid_scan_resumes_to_identical_outputs(tmp_path, sample_dir):
    import subprocess
    import sys

    from conftest import env_with, kill_9_when, run_cli, tree_digest
    from stages.test_classify import pipeline as sample_pipeline

    demo = f"{{path: '{sample_dir}/evals/demo.jsonl', fields: {{passage: passage, id: id}}}}"
    f = sample_pipeline(tmp_path, sample_dir, f"  decontaminate: {{sets: {{demo: {demo}}}}}\n")
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "curate", "run", str(f), "--output", str(run), "--inline", "-q", "--set", "execution.batch_rows=1"]
    kill_9_when(cmd, lambda: list((run / "_state" / "decontaminate" / "scan").rglob("*.json")), 180)
    scanned = len(list((run / "_state" / "decontaminate" / "scan").rglob("*.json")))
    assert subprocess.run(cmd, env=env_with()).returncode == 0
    assert scanned < len(list((run / "_state" / "decontaminate" / "scan").rglob("*.json"))), "killed mid-scan"
    assert run_cli(f, "--output", tmp_path / "clean", "--inline", "-q", "--set", "execution.batch_rows=1") == 0
    parts = ("kept", "ledger", "decontaminate")
    assert tree_digest(run, parts) == tree_digest(tmp_path / "clean", parts)
    assert len(tree_digest(run, ("ledger",))) > 0


def test_configuration_errors_are_one_line_before_any_work(tmp_path, planted, capsys):
    from conftest import run_cli

    sets, docs = planted
    f = pipeline(tmp_path, {"a:b": sets["qa"]}, docs)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert capsys.readouterr().err.strip().endswith("stages.decontaminate.sets.a:b: a set's name goes into ledger reasons: no ':' or ','")
    f = pipeline(tmp_path, {"qa": {**sets["qa"], "path": str(tmp_path / "missing.jsonl")}}, docs)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"curate: error: {f}: stages.decontaminate.sets.qa.path: {tmp_path / 'missing.jsonl'}: not found"
    assert not (tmp_path / "run" / "docs").exists()


def test_unreadable_eval_sets_are_one_line_and_exit_2(tmp_path, planted, capsys, monkeypatch):
    """A truncated file, a Hub path offline, an s3 path without s3fs: one line naming the set, before any work."""
    import gzip
    import subprocess
    import sys


    from conftest import env_with, run_cli

    sets, docs = planted
    whole = gzip.compress(open(sets["qa"]["path"], "rb").read() * 50)
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[:len(whole) // 2])
    f = pipeline(tmp_path, {"qa": {**sets["qa"], "path": str(tmp_path / "cut.jsonl.gz")}}, docs)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"curate: error: {f}: stages.decontaminate.sets.qa.path: {tmp_path / 'cut.jsonl.gz'}: the gzip stream ends early "
                   "(a truncated file)"]
    f = pipeline(tmp_path, {"mmlu": {"path": "s3://evals/mmlu.parquet"}}, docs)
    monkeypatch.setitem(sys.modules, "s3fs", None)   # s3fs not installed
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"curate: error: {f}: stages.decontaminate.sets.mmlu.path: s3://evals/mmlu.parquet: cannot be read: "
                           "ImportError: ") and "s3fs" in line
    f = pipeline(tmp_path, {"hub": {"path": "hf://datasets/cais/mmlu/all/test.parquet"}}, docs)
    done = subprocess.run([sys.executable, "-m", "curate", "run", str(f), "--output", str(tmp_path / "run"), "--inline", "-q"],
                          env=env_with(HF_HUB_OFFLINE=1, HF_HOME=tmp_path / "hf"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"curate: error: {f}: stages.decontaminate.sets.hub.path: hf://datasets/cais/mmlu/all/test.parquet: "
                                  "cannot be read: ") and "offline" in done.stderr
    assert not (tmp_path / "run" / "docs").exists()


def test_grams_are_counted_over_every_source_and_a_change_in_one_rescans_only_it(tmp_path, planted, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conftest import run_cli
    from curate.query import connect

    sets, docs = planted
    f, run = pipeline(tmp_path, sets, docs, frequent_docs=9), tmp_path / "run"   # 9 documents hold the boilerplate
    assert run_cli(f, "--output", run, "--inline", "-q") == 0
    query = "SELECT source, count(*) FROM contamination WHERE item = 'q-boiler' AND id <> 'web-6' GROUP BY 1 ORDER BY 1"
    assert connect(str(run)).sql(query).fetchall() == [("news", 4), ("web", 4)], "boilerplate alone counts: not frequent yet"
    extra = [{"id": "news-extra", "text": "A new page. " + BOILERPLATE + " The end of it."}]
    pq.write_table(pa.Table.from_pylist(extra), tmp_path / "in" / "news" / "part-999.parquet")
    capsys.readouterr()
    assert run_cli(f, "--output", run, "--inline") == 0
    err = capsys.readouterr().err
    assert "[decontaminate: scan] 8 tasks (4 already done)" in err, "web's documents did not change: its scan stays"
    assert connect(str(run)).sql(query).fetchall() == [], "a tenth document in news makes the boilerplate frequent for web too"


def test_ray_writes_what_inline_writes(tmp_path, planted):
    import subprocess
    import sys

    from conftest import env_with, run_cli, tree_digest

    f = pipeline(tmp_path, *planted)
    assert run_cli(f, "--output", tmp_path / "inline", "--inline", "-q") == 0
    ray = subprocess.run([sys.executable, "-m", "curate", "run", str(f), "--output", str(tmp_path / "ray"), "--workers", "2", "-q"],
                         env=env_with(), capture_output=True, text=True, timeout=300)
    assert ray.returncode == 0, ray.stderr
    parts = ("kept", "ledger", "decontaminate")
    assert tree_digest(tmp_path / "ray", parts) == tree_digest(tmp_path / "inline", parts)


# ---- Unicode forms and scripts without spaces ------------------------------------------------------

LATIN = ("Le café où Zoë goûte une crème brûlée déjà servie à l'hôtel près du théâtre, naïve et sûre, "
         "pendant que François écoute Noël chanter à l'église Saint-Étienne.")
CHINESE = "中华人民共和国成立于一九四九年十月一日，首都北京是全国的政治和文化中心。"
JAPANESE = "データベースのガイドラインについて詳しく説明します"
SHORT_CHINESE = "北京是中国首都城市"      # 9 characters: fewer than n, at least min_short_words: matches only whole
FULLWIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)} | {" ": "\u3000"}


def test_unicode_forms_and_scripts_without_spaces_match(run_stage, tmp_path):
    import unicodedata

    items = [{"id": "latin", "passage": unicodedata.normalize("NFC", LATIN)}, {"id": "zh", "passage": CHINESE},
             {"id": "ja", "question": JAPANESE}, {"id": "zh-short", "question": SHORT_CHINESE}]
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")
    docs = {"web": [
        {"id": "nfd", "text": "Un article. " + unicodedata.normalize("NFD", LATIN) + " Fin."},
        {"id": "fullwidth", "text": "".join(FULLWIDTH.get(c, c) for c in LATIN.upper())},
        {"id": "zh", "text": "新闻报道：" + CHINESE.replace("，", " ") + "以上。"},
        {"id": "ja-halfwidth", "text": "今日は" + "ﾃﾞｰﾀﾍﾞｰｽのｶﾞｲﾄﾞﾗｲﾝについて詳しく説明します" + "。"},
        {"id": "zh-short", "text": "大家都知道北京是中国首都城市吧"},
        {"id": "zh-short-cut", "text": "大家都知道北京是中国首都吧"},
        {"id": "unrelated", "text": "Une autre page, sans rapport, 一些无关的文字。"}]}
    result = run_stage("decontaminate", {"sets": {"e": {"path": str(tmp_path / "e.jsonl")}}, **OPTS, "action": "report"}, docs=docs)
    rows = {(r["id"], r["item"]): r for r in result.table(result.stage.name).to_pylist()}
    assert {k for k, r in rows.items() if r["flagged"]} == {("nfd", "latin"), ("fullwidth", "latin"), ("zh", "zh"),
                                                            ("ja-halfwidth", "ja"), ("zh-short", "zh-short")}
    assert all(rows[k]["overlap"] == 1.0 for k in [("nfd", "latin"), ("fullwidth", "latin"), ("zh", "zh"), ("ja-halfwidth", "ja")])
    assert rows[("zh", "zh")]["item_grams"] == len(ref_words(CHINESE)) - OPTS["n"] + 1, "Chinese grams are character 13-grams"
    assert unicodedata.normalize("NFC", rows[("nfd", "latin")]["passage"]).startswith("Le café"), "shown as written in the document"
    assert result.stage.index().summary()["e"] == {"items": 4, "indexed": 4, "skipped": 0, "grams": rows[("zh", "zh")]["item_grams"]
                                                   + len(ref_words(LATIN)) - 12 + len(ref_words(JAPANESE)) - 12 + 1}
