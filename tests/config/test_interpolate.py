"""`${VAR}` and `${VAR:-default}`: nested defaults work, a default is expanded only when used, and text that
is not a reference stays as written."""

import pytest

from curate.config.interpolate import interpolate
from curate.errors import ConfigError


@pytest.fixture
def env(monkeypatch):
    for name in ("A", "B", "C"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_nested_defaults(env):
    assert interpolate("${A:-${B:-x}}", "f") == "x"
    env.setenv("B", "b")
    assert interpolate("${A:-${B:-x}}/data", "f") == "b/data"
    env.setenv("A", "a")
    assert interpolate("${A:-${B:-x}}/data", "f") == "a/data"
    assert interpolate("pre-${C:-${C:-${B}}}-post", "f") == "pre-b-post"


def test_a_default_is_expanded_only_when_used(env):
    env.setenv("A", "a")
    assert interpolate("${A:-${C}}", "f") == "a", "C is unset, but A's default is not needed"
    env.delenv("A")
    with pytest.raises(ConfigError, match="environment variable C is not set"):
        interpolate({"k": ["${A:-${C}}"]}, "f")


def test_values_are_not_expanded_again_and_non_references_stay(env):
    env.setenv("A", "${B}")
    assert interpolate("${A}", "f") == "${B}"
    assert interpolate("${A:-x{y}", "f") == "${B}"
    env.delenv("A")
    assert interpolate("${A:-x{y}", "f") == "x{y"
    assert interpolate("cost ${1} and ${A:-a}b}", "f") == "cost ${1} and ab}"
    assert interpolate("unclosed ${A:-x", "f") == "unclosed ${A:-x"


def test_deep_nesting_is_one_line(env):
    deep = "${A:-" * 200 + "x" + "}" * 200
    with pytest.raises(ConfigError, match="nested more than"):
        interpolate(deep, "f")
