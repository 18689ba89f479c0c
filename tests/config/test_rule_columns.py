"""A rule's columns are checked before any work: a typo, `lang` with language id off, or a column one input
file lacks is one line naming the rule, the column (and the file), with close matches, not a DuckDB binder
error after the expensive steps."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from curate import load_pipeline
from curate.config.columns import column_refs
from curate.errors import ConfigError


def _jsonl(tmp_path, steps: str):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": f"document number {i} " * 20}) + "\n" for i in range(4)))
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  web: {{format: jsonl, paths: '{src}'}}\nstages:\n  ingest: {{}}\n{steps}")
    return f


def _error(f) -> str:
    with pytest.raises(ConfigError) as info:
        load_pipeline(f)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_column_refs_come_from_the_parse_tree():
    assert column_refs("len(list_filter(rps_lines_num_words, x -> x > 3)) > 1 AND docs.lang = 'rps_doc_x' -- c") == \
        ("rps_lines_num_words", "lang")
    assert column_refs("dt_words.words > 2 AND list_transform(a, lambda text, i: text > i) IS NOT NULL") == ("dt_words", "a")
    assert column_refs("(SELECT max(z) FROM range(3) t(z)) > upper(\"Weird Col\")") == ("Weird Col",)


def test_a_signal_name_typo_is_refused_at_load_with_close_matches(tmp_path):
    message = _error(_jsonl(tmp_path, "  signals: {}\n  filter: {where: {all: 'rps_doc_word_cont >= 50'}}\n"))
    assert "stages.filter: rule where.all reads column rps_doc_word_cont" in message
    assert "close matches: rps_doc_word_count" in message


def test_lang_with_language_id_off_is_refused_at_load(tmp_path):
    message = _error(_jsonl(tmp_path, "  signals: {langid: false}\n  filter: {where: {web: \"lang = 'en'\"}}\n"))
    assert "rule where.web reads column lang, which neither the documents of source 'web' nor an earlier step has" in message
    assert "step 'signals' does not write it with its options" in message
    message = _error(_jsonl(tmp_path, "  filter: {where: {all: \"lang = 'en'\"}}\n"))
    assert "a `signals` step before 'filter' writes it" in message


def test_a_document_column_typo_is_refused_and_a_real_one_accepted(tmp_path):
    message = _error(_jsonl(tmp_path, "  filter: {where: {all: 'length(txt) > 10'}}\n"))
    assert "reads column txt" in message and "close matches: text" in message
    load_pipeline(_jsonl(tmp_path, "  signals: {}\n  filter: {where: {all: \"length(Text) > 10 AND lang = 'en' "
                                   "AND json_extract(meta, '$.x') IS NULL\"}}\n"))


def _parquet(tmp_path, where: str, *, projection: str = ""):
    (tmp_path / "in").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["a b c d", "e f g h"], "int_score": [3, 1]}), tmp_path / "in" / "a.parquet")
    pq.write_table(pa.table({"text": ["i j k l"]}), tmp_path / "in" / "b.parquet")
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  edu: {{format: parquet, paths: '{tmp_path}/in/*.parquet'{projection}}}\n"
                 f"stages:\n  ingest: {{}}\n  filter: {{where: {{all: '{where}'}}}}\n")
    return f


def test_a_column_missing_in_one_parquet_file_is_named_before_ingest(tmp_path, capsys):
    f = _parquet(tmp_path, "int_score >= 2")
    load_pipeline(f)   # the files' columns are unknown until ingest plans
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "rule where.all reads column int_score, which file b.parquet of source 'edu' lacks (file a.parquet has it)" in err[0]
    assert not (tmp_path / "run" / "docs").exists(), "refused before ingest read a file"


def test_a_parquet_column_typo_and_a_projection_missing_in_a_file(tmp_path, capsys):
    f = _parquet(tmp_path, "int_scor >= 2")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err
    assert "reads column int_scor" in err and "close matches: int_score" in err
    g = _parquet(tmp_path / "x", "length(text) > 1", projection=", columns: [text, int_score]")
    assert run_cli(g, "--output", tmp_path / "run2", "--inline", "-q") == 2
    err = capsys.readouterr().err
    assert "sources.edu: file b.parquet: columns ['int_score'] not in file" in err
    with pytest.raises(ConfigError, match="reads column lang"):   # with a projection, the columns are known at load
        load_pipeline(_parquet(tmp_path / "y", "lang = 1", projection=", columns: [text, int_score]"))
