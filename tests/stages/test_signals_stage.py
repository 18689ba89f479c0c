"""The signals stage in a run: stored beside the documents, RPv2's shipped signals reused, configured extras."""

import gzip
import json
import os

import duckdb
import numpy as np
import pytest

from conftest import SHARED_DATA, run_cli


def _rpv2_files(tmp_path):
    key = "2023-06/0000/en_head.json.gz"
    docs_dir, sig_dir = tmp_path / "documents" / "2023-06" / "0000", tmp_path / "quality_signals" / "2023-06" / "0000"
    docs_dir.mkdir(parents=True)
    sig_dir.mkdir(parents=True)
    text = "The cat sat on the mat. It was a sunny day and the birds sang.\nA second line here."
    with gzip.open(docs_dir / "en_head.json.gz", "wt") as fh:
        for i in range(3):
            fh.write(json.dumps({"raw_content": text, "url": f"http://bad.example.com/{i}", "length": 80, "nlines": 2,
                                 "original_length": 120, "original_nlines": 4, "language": "en", "language_score": 0.9,
                                 "perplexity": 150.5, "bucket": "head"}) + "\n")
    with gzip.open(sig_dir / "en_head.signals.json.gz", "wt") as fh:
        for i in range(3):
            fh.write(json.dumps({"id": f"{key}/{i}", "quality_signals": {
                "rps_doc_word_count": [[0, 80, 999]], "rps_lines_num_words": [[0, 40, 7], [40, 80, 5]]}}) + "\n")
    with gzip.open(docs_dir / "en_tail.json.gz", "wt") as fh:
        fh.write(json.dumps({"raw_content": text, "url": "http://good.example.org/x", "bucket": "tail",
                             "perplexity": 900.0, "language_score": 0.8}) + "\n")
    return tmp_path / "documents"


def test_rpv2_shipped_signals_ccnet_copies_and_ut1(tmp_path):
    docs = _rpv2_files(tmp_path)
    (tmp_path / "ut1.json").write_text(json.dumps({"bad.example.com": 7}))
    f = tmp_path / "p.yaml"
    f.write_text(f"""name: s
sources:
  rpv2: {{format: rpv2, paths: '{docs}/**/*.json.gz'}}
stages:
  ingest: {{}}
  signals: {{ut1_domains: '{tmp_path / "ut1.json"}'}}
""")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    rows = {r[0]: r[1:] for r in duckdb.sql(f"""SELECT id, rps_doc_word_count, rps_lines_num_words, ccnet_bucket,
        ccnet_perplexity, rps_doc_ut1_blacklist, lang FROM read_parquet('{tmp_path}/run/signals/rpv2/*.parquet')""").fetchall()}
    head = rows["2023-06/0000/en_head.json.gz/0"]
    assert head[0] == 999 and head[1] == [7.0, 5.0], "shipped signals win where RPv2 has them"
    assert head[2] == 0 and head[3] == 150.5 and head[4] == 7 and head[5] == "en"
    tail = rows["2023-06/0000/en_tail.json.gz/0"]
    assert tail[0] not in (None, 999) and tail[2] == 2 and tail[4] is None, "tail docs get computed signals"


def test_configured_ml_score_and_importance_weights(tmp_path, sample_dir):
    fasttext = pytest.importorskip("fasttext")

    dolma = SHARED_DATA / "dolma" / "formats" / "CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
    if not dolma.exists():
        pytest.skip("fastText training needs real text (../shared/data); on synthetic text it hits its NaN guard")
    train = tmp_path / "train.txt"
    with gzip.open(dolma, "rt") as src, open(train, "w") as fh:  # labels follow two marker words: learnable
        for i, line in enumerate(src):
            words = " ".join(json.loads(line)["text"].split())
            marker = "alpha beta" if i % 2 else "gamma delta"
            fh.write(("__label__wiki " if i % 2 else "__label__cc ") + f"{marker} {words} {marker}\n")
    for attempt in range(5):  # fastText's multi-threaded training now and then trips its own NaN guard
        try:
            model = fasttext.train_supervised(str(train), verbose=0)
            break
        except RuntimeError as exc:
            if "NaN" not in str(exc) or attempt == 4:
                raise
    model.save_model(str(tmp_path / "m.bin"))
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(100)), rng.dirichlet(np.ones(100))
    np.save(tmp_path / "t.npy", p)
    np.save(tmp_path / "c.npy", q)
    f = tmp_path / "p.yaml"
    f.write_text(f"""name: s
sources:
  fwe: {{format: fineweb, paths: '{sample_dir}/fwe/data/*/*.parquet'}}
stages:
  ingest: {{}}
  signals:
    langid: false
    ml_models: {{palm: '{tmp_path / "m.bin"}'}}
    importance: {{books: ['{tmp_path / "t.npy"}', '{tmp_path / "c.npy"}']}}
""")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    got = duckdb.sql(f"""SELECT min(rps_doc_ml_palm_score), max(rps_doc_ml_palm_score), count(rps_doc_books_importance),
        count(*) FROM read_parquet('{tmp_path}/run/signals/fwe/*.parquet')""").fetchall()[0]
    assert 0.0 <= got[0] <= got[1] <= 1.0 and got[2] == got[3] > 0
    from curate.models.classifiers import rpv2_ml_score
    import pyarrow as pa
    wiki, cc = rpv2_ml_score(str(tmp_path / "m.bin"), pa.array(["alpha beta alpha beta", "gamma delta gamma delta"])).to_pylist()
    assert wiki > 0.5 > cc, "cc-labelled text scores 1 - p, low"
    from curate.signals.importance import importance
    one = importance(["the cat sat"], np.log(p) - np.log(q))[0]
    from curate.signals.importance import _bucket
    feats = ["the", "cat", "sat", "the cat", "cat sat"]
    assert one == pytest.approx(sum(np.log(p[_bucket(x, 100)]) - np.log(q[_bucket(x, 100)]) for x in feats), abs=1e-6)


def test_signals_are_queryable_and_gopher_rules_count_per_source(sample_env, tmp_path):
    from conftest import ZYDA2
    from curate.query import query

    assert run_cli(ZYDA2, "--output", tmp_path / "run", "--inline", "-q",
                   "--set", "stages.gopher={use: filter, recipes: {all: [gopher_quality, gopher_repetition]}}",
                   "--until", "gopher") == 0
    out = query(str(tmp_path / "run"), "SELECT source, reason, count(*) AS n FROM ledger WHERE stage = 'gopher' "
                                       "GROUP BY ALL ORDER BY source, n DESC", fmt="csv")
    lines = out.splitlines()
    assert lines[0] == "source,reason,n" and any("gopher_quality." in l for l in lines[1:])


def test_importance_distributions_replaced_at_the_same_path_are_read_again(tmp_path):
    """An inline run in a long-lived process (a notebook, the tests) must not serve the old file's weights."""
    from curate.signals.importance import load_distributions

    target, reference = tmp_path / "t.npy", tmp_path / "c.npy"
    np.save(reference, np.full(4, 0.25))
    np.save(target, np.array([0.1, 0.2, 0.3, 0.4]))
    first = load_distributions(str(target), str(reference))
    np.save(target, np.array([0.4, 0.3, 0.2, 0.1]))
    os.utime(target, ns=(os.stat(target).st_atime_ns, os.stat(target).st_mtime_ns + 1_000_000_000))
    second = load_distributions(str(target), str(reference))
    assert np.allclose(second, np.log([0.4, 0.3, 0.2, 0.1]) - np.log(0.25)) and not np.allclose(first, second)
