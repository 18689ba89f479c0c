"""Config errors are one line naming the file, the key path and what was expected."""

import pytest

from curate import load_pipeline
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


@pytest.mark.parametrize("steps, key, expected", [
    ("dedup: {}\n  pack: {}\n  manifest: {}", "stages.dedup", "needs minhash from an earlier step; add a `minhash` step before 'dedup'"),
    ("dedup: {}\n  minhash: {}", "stages.dedup", "needs minhash from step 'minhash', which comes after it"),
    ("pack: {}", "stages.pack", "needs tokens from an earlier step; add a `tokenize` step"),
    ("minhash: {}\n  signals: {}\n  dedup: {minhash: signals}", "stages.dedup.minhash", "'signals' is not an earlier step that provides minhash"),
])
def test_a_broken_stage_chain_fails_at_load_naming_the_step(tmp_path, steps, key, expected):
    f = _write(tmp_path, BASE.format(path=tmp_path / "x.jsonl") + "  " + steps + "\n")
    message = _error(f)
    assert message.startswith(f"{f}: {key}: ") and expected in message


def test_removing_documents_after_tokenizing_fails_before_any_work(tmp_path, sample_env, capsys):
    f = _write(tmp_path, ZYDA2.read_text().replace("  tokenize:", "  late: {use: filter, where: {fwe: 'true'}}\n  tokenize:", 1)
               .replace("  mix:", "  tokenize_first: {use: tokenize}\n  mix:", 1))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"curate: error: {f}: stages.mix: removes documents after step 'tokenize_first' tokenized them, "
        "so they would still be packed; put it before 'tokenize_first'")
    assert not (tmp_path / "run").exists()


def test_a_final_step_runs_after_steps_added_behind_it(tmp_path):
    f = _write(tmp_path, BASE.format(path=tmp_path / "x.jsonl") + "  tokenize: {}\n  pack: {}\n  manifest: {}\n")
    p = load_pipeline(f, ["stages.mix={}"])  # --set appends: after the manifest in the file
    assert [s.name for s in p.stages] == ["ingest", "tokenize", "pack", "mix", "manifest"]
    assert p.stages[-1].upstream == {"tokens": "tokenize", "packed": "pack", "mix": "mix"}


def test_the_chain_names_each_steps_providers(tmp_path):
    f = _write(tmp_path, BASE.format(path=tmp_path / "x.jsonl") + "  mh: {use: minhash}\n  minhash: {}\n  dedup: {minhash: mh}\n"
               "  mix: {}\n  tokenize: {}\n  pack: {}\n  manifest: {}\n")
    steps = {s.name: s.upstream for s in load_pipeline(f).stages}
    assert steps["dedup"] == {"docs": "ingest", "minhash": "mh"}
    assert steps["tokenize"] == {"docs": "ingest"}   # it writes each document once; pack gives the mix's copies
    assert steps["pack"] == {"docs": "ingest", "tokens": "tokenize", "mix": "mix"}
    assert steps["manifest"] == {"tokens": "tokenize", "packed": "pack", "mix": "mix"}


def test_a_pipeline_missing_stages_fails_before_any_work(tmp_path, sample_env, capsys):
    f = _write(tmp_path, ZYDA2.read_text().split("stages:")[0] + "stages:\n  ingest: {}\n  dedup: {}\n  pack: {}\n  manifest: {}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"curate: error: {f}: stages.dedup: needs minhash from an earlier step; add a `minhash` step before 'dedup'"
    assert not (tmp_path / "run").exists(), "nothing may be ingested before the chain is checked"
