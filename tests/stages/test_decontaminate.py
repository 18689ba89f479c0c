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
