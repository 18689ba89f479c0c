"""Hostile YAML: an alias bomb (billion laughs) and a self-referring alias are refused at load in one line
(exit 2), not expanded by interpolation until memory or patience runs out; ordinary anchors still work."""

import pytest

from conftest import run_cli
from curate import load_pipeline
from curate.config.pipeline import parse_override
from curate.common import yaml_strict
from curate.common.yaml_strict import load
from curate.errors import ConfigError

PIPELINE = """
name: t
sources:
  a:
    format: jsonl
    paths: {path}
    storage_options: {{bomb: *l{top}}}
stages:
  ingest: {{}}
"""


def _bomb(levels: int) -> str:
    """Anchors l0..l{levels}: each a list aliasing the one before ten times (10^(levels+1) strings expanded)."""
    lines = ["x:", "  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  - &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_load(tmp_path, capsys):
    # 10^6 strings expanded: the old loader accepted it after walking them all; a dozen levels hung it
    f = tmp_path / "p.yaml"
    f.write_text(_bomb(5) + PIPELINE.format(path=tmp_path / "in.jsonl", top=5))
    with pytest.raises(ConfigError, match=r"line \d+, column \d+: aliases expand this document past 100,000 more nodes"):
        load_pipeline(f)
    f.write_text(_bomb(12) + PIPELINE.format(path=tmp_path / "in.jsonl", top=12))
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "alias bomb" in err[0] and str(f) in err[0]


def test_an_alias_that_contains_itself_is_refused():
    with pytest.raises(Exception, match="an alias refers to a node that contains it"):
        load("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match="an alias refers to a node that contains it"):
        parse_override("sources.a.storage_options=&a {k: *a}")


def test_ordinary_anchors_and_merges_still_load(monkeypatch):
    doc = load("base: &b {x: 1, y: [1, 2]}\nuse: {<<: *b, z: 3}\nagain: [*b, *b]\n")
    assert doc["use"] == {"x": 1, "y": [1, 2], "z": 3} and doc["again"] == [doc["base"]] * 2
    monkeypatch.setattr(yaml_strict, "MAX_EXPANDED", 50)
    big = "xs: [" + ", ".join(["1"] * 200) + "]\n"
    assert len(load(big)["xs"]) == 200, "a document that writes its nodes out (no aliases) is not limited"
    with pytest.raises(Exception, match="past 50 more nodes"):
        load("a: &a [" + ", ".join(["1"] * 20) + "]\nb: [*a, *a, *a, *a]\n")
