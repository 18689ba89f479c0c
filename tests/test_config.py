"""Config errors are one line naming the file, the key path and what was expected."""

import pytest

from curate.config import load_pipeline
from curate.config.pipeline import parse_override
from curate.errors import ConfigError

from conftest import ZYDA2, run_cli

BASE = """
name: t
sources:
  a:
    format: jsonl
    paths: {path}
stages:
  ingest: {{}}
"""


def _write(tmp_path, text):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    return f


def _error(path, overrides=()):
    with pytest.raises(ConfigError) as info:
        load_pipeline(path, list(overrides))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_zyda2_recipe_declares_the_four_sources_in_priority_order(sample_env):
    p = load_pipeline(ZYDA2)
    assert list(p.sources) == ["fwe", "dclm", "zyda", "dolma_cc"]
    assert p.priority == ["fwe", "dclm", "zyda", "dolma_cc"]
    assert {n: s.format for n, s in p.sources.items()} == {"fwe": "fineweb", "dclm": "dclm", "zyda": "zyda", "dolma_cc": "dolma"}
    assert p.sources["dclm"].paths[0].endswith("dclm/global-shard_*/local-shard_*/*.jsonl.zst")
    assert p.stages[0].kind == "ingest"


def test_set_overrides_a_source_path_with_a_glob():
    p = load_pipeline(ZYDA2, ["sources.dclm.paths=s3://bucket/dclm/**/*.jsonl.zst"])
    assert p.sources["dclm"].paths == ["s3://bucket/dclm/**/*.jsonl.zst"]


def test_parse_override_values():
    assert parse_override("a.b=3") == (["a", "b"], 3)
    assert parse_override("a=*.jsonl") == (["a"], "*.jsonl")  # not a YAML alias
    assert parse_override("a=[1, 2]") == (["a"], [1, 2])


@pytest.mark.parametrize("override, key, expected", [
    ("sources.a.pathz=x", "sources.a.pathz", "did you mean 'paths'"),
    ("sources.a.fields={txt: body}", "sources.a.fields.txt", "did you mean 'text'"),
    ("sources.a.format=jsonll", "sources.a.format", "expected one of"),
    ("execution.max_bad_fraction=-0.1", "execution.max_bad_fraction", ">= 0.0"),
    ("execution.workers=two", "execution.workers", "expected an integer"),
    ("execution.workers=0", "execution.workers", ">= 1"),
    ("execution.batch_rows=true", "execution.batch_rows", "expected an integer"),
    ("stages.dedupe={}", "stages.dedupe", "unknown stage"),
    ("stages.x={use: filtre}", "stages.x.use", "did you mean 'filter'"),
    ("stages.ingest.colour=red", "stages.ingest.colour", "unknown key"),
    ("stages.f={use: filter, where: {zz: 'x > 1'}}", "stages.f.where.zz", "not a source"),
    ("stages.f={use: filter, where: {a: 'x >'}}", "stages.f.where.a", "invalid SQL"),
    ("priority=[a, b]", "priority", "'b' is not a source"),
    ("sources.a.paths=[]", "sources.a.paths", "at least one"),
])
def test_each_mistake_is_named(tmp_path, override, key, expected):
    f = _write(tmp_path, BASE.format(path="x.jsonl"))
    message = _error(f, [override])
    assert message.startswith(f"{f}: {key}: "), message
    assert expected in message


def test_yaml_syntax_error_names_the_line(tmp_path):
    f = _write(tmp_path, "name: t\nsources: [\n")
    assert "line 3" in _error(f) and "invalid YAML" in _error(f)


def test_yaml_is_loaded_safely(tmp_path):
    f = _write(tmp_path, "name: !!python/object/apply:os.system ['echo hacked']\nsources: {}\nstages: {}\n")
    assert "invalid YAML" in _error(f)


def test_env_interpolation_with_default_and_missing(tmp_path, monkeypatch):
    f = _write(tmp_path, BASE.format(path="${DATA:-default.jsonl}"))
    assert load_pipeline(f).sources["a"].paths == ["default.jsonl"]
    monkeypatch.setenv("DATA", "/data/x.jsonl")
    assert load_pipeline(f).sources["a"].paths == ["/data/x.jsonl"]
    g = _write(tmp_path, BASE.format(path="${NOT_SET_ANYWHERE}"))
    assert "NOT_SET_ANYWHERE is not set" in _error(g)


def test_first_stage_must_be_ingest(tmp_path):
    f = _write(tmp_path, BASE.format(path="x").replace("ingest: {}", "f: {use: filter, where: {}}"))
    assert "first stage must be 'ingest'" in _error(f)


def test_glob_matching_nothing_and_missing_file_fail_before_running(tmp_path, capsys):
    f = _write(tmp_path, BASE.format(path=str(tmp_path / "nothing" / "*.jsonl")))
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"curate: error: {f}: sources.a.paths[0]: no files match '{tmp_path / 'nothing' / '*.jsonl'}'"
    g = _write(tmp_path, BASE.format(path=str(tmp_path / "missing.jsonl")))
    assert run_cli(g, "--output", tmp_path / "run", "--inline") == 2
    assert "no files match" in capsys.readouterr().err


def test_unknown_until_stage(tmp_path, capsys):
    (tmp_path / "x.jsonl").write_text('{"text": "hello world"}\n')
    f = _write(tmp_path, BASE.format(path=str(tmp_path / "x.jsonl")))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "--until", "dedupe") == 2
    assert "--until: dedupe: no such stage" in capsys.readouterr().err
