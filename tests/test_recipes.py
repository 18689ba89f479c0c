"""Every recipe in filters/ binds and decides as written, over real signals of small texts."""

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from curate.recipes import available, load_recipe, reason_sql
from curate.signals import compute_signals, datatrove_word_stats, datatrove_words

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "pipelines" / "zyda2.yaml")

GOOD = ("The committee met on Tuesday to discuss the new budget for the school year. " * 3 + "\n") * 12
TEXTS = {
    "good": GOOD,
    "short": "Too short to be a document.",
    "lorem": "lorem ipsum lorem ipsum lorem ipsum dolor sit amet. " * 20,
    "code": "function f() { return {a: 1}; } and the rest of the page is here.\n" * 20,
}


def _decide(recipe: str) -> dict:
    """recipe's first failed rule per text, over what the signals stage stores (RPv2 signals and dt_words)."""
    texts = pa.array(list(TEXTS.values()))
    table = (compute_signals(texts).append_column("dt_words", datatrove_word_stats(texts))
             .append_column("text", texts).append_column("id", pa.array(list(TEXTS))))
    con = duckdb.connect()
    con.register("docs", table)
    return dict(con.sql(f"SELECT id, {reason_sql(load_recipe(recipe, PIPELINE, 'test'))} FROM docs").fetchall())


def test_the_recipes_the_issue_names_exist():
    assert {"gopher_quality", "gopher_repetition", "c4", "fineweb", "rpv2_gopher", "zyda1"} <= set(available(PIPELINE))


@pytest.mark.parametrize("recipe", ["gopher_quality", "gopher_repetition", "c4", "fineweb", "rpv2_gopher", "zyda1"])
def test_recipe_binds_and_removes_the_short_page(recipe):
    decisions = _decide(recipe)
    assert set(decisions) == set(TEXTS)
    if recipe not in ("gopher_repetition", "fineweb"):
        assert decisions["short"] is not None and decisions["short"].startswith(recipe + ".")


def test_specific_rules_fire():
    assert _decide("zyda1")["lorem"] == "zyda1.lorem_ipsum"
    assert _decide("c4")["code"] == "c4.curly_bracket"
    assert _decide("gopher_quality")["short"] == "gopher_quality.word_count"
    assert _decide("gopher_repetition")["good"] is not None  # one sentence repeated: duplicate lines


def test_dt_words_is_datatroves_word_split_and_counts():
    """The column the datatrove recipes read: spaCy's English words (exceptions, contractions, URLs kept
    whole) and the counts taken from them; tests/signals/test_parity_datatrove.py checks them against spaCy and
    datatrove themselves."""
    text = "Mr. Smith can't visit the U.S. (see http://x.io/a) -- the end... the end... the end..."
    assert datatrove_words(text) == ["Mr.", "Smith", "ca", "n't", "visit", "the", "U.S.", "(", "see", "http://x.io/a",
                                     ")", "--", "the", "end", "...", "the", "end", "...", "the", "end", "..."]
    (row,) = datatrove_word_stats(pa.array([text])).to_pylist()
    # (the values datatrove's own functions give on spaCy's words: "the end ..." is the top 3-gram, 3 x 11)
    assert row == {"words": 21, "non_symbol_words": 15, "non_symbol_chars": 59, "alpha_words": 15, "stop_words": 1,
                   "top_2gram_chars": 21, "top_3gram_chars": 33, "top_4gram_chars": 30, "dupe_5gram_chars": 15,
                   "dupe_6gram_chars": 18, "dupe_7gram_chars": 0, "dupe_8gram_chars": 0, "dupe_9gram_chars": 0,
                   "dupe_10gram_chars": 0}
    assert datatrove_word_stats(pa.array(["", None], pa.large_string())).to_pylist()[1] is None


def test_curate_recipes_shows_each_description_whole(capsys, monkeypatch):
    from curate.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 80 and "..." not in out
    flat = " ".join(out.split())
    assert "which needs a back-reference that DuckDB's RE2 regexes do not have." in flat   # zyda1's last words
    assert "mixed by token weights, tokenized and packed." in flat                        # zyda2's


@pytest.mark.parametrize("docs", ["0", "-5"])
def test_curate_sample_refuses_no_documents(docs, tmp_path, capsys):
    from curate.cli import main

    assert main(["sample", str(tmp_path / "s"), "--docs", docs]) == 2
    assert capsys.readouterr().err.strip() == f"curate: error: --docs: expected a number of documents >= 1, got {docs}"
    assert not (tmp_path / "s").exists()
