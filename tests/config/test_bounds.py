"""Every numeric option has bounds, so an absurd number (10^20 permutations, tokens per sequence or words per
n-gram) is refused at load in one line naming the option and its range, not after all the work."""

import pytest

from curate import load_pipeline
from curate.config.pipeline import TOP_KEYS
from curate.common.schema import Field, numeric
from curate.errors import ConfigError
from curate.stages.registry import STAGES


def _fields(spec: Field, key: str):
    yield key, spec
    for k, sub in (spec.keys or {}).items():
        yield from _fields(sub, f"{key}.{k}")
    if spec.item is not None:
        yield from _fields(spec.item, f"{key}[]")


def _every_field():
    for name, spec in TOP_KEYS.items():
        yield from _fields(spec, name)
    for kind in STAGES:
        for name, spec in STAGES[kind].OPTIONS.items():
            yield from _fields(spec, f"stages.{kind}.{name}")


def test_every_numeric_option_declares_both_bounds():
    found = [(key, spec) for key, spec in _every_field() if numeric(spec)]
    assert len(found) > 40, "the walk reaches the stages' options, nested ones included"
    unbounded = [key for key, spec in found if spec.min is None or spec.max is None]
    assert not unbounded, f"numeric options without a min and a max: {unbounded}"
    assert all(spec.min <= spec.default <= spec.max for _, spec in found if isinstance(spec.default, (int, float))), \
        "every default lies in its own range"


BASE = """
name: t
sources:
  a: {{format: jsonl, paths: {path}}}
stages:
  ingest: {{}}
{steps}
"""


@pytest.mark.parametrize("steps, key, bound", [
    ("  decontaminate: {sets: {e: {path: x.jsonl}}, n: 100000000000000000000}", "stages.decontaminate.n", "<= 1000"),
    ("  tokenize: {}\n  pack: {seq_len: 100000000000000000000}", "stages.pack.seq_len", "<= 16777216"),
    ("  minhash: {num_perm: 100000000000000000000}", "stages.minhash.num_perm", "<= 8192"),
    ("  tokenize: {}\n  pack: {seed: -1}", "stages.pack.seed", ">= 0"),
])
def test_absurd_numbers_are_refused_at_load_naming_the_option_and_range(tmp_path, steps, key, bound):
    f = tmp_path / "p.yaml"
    f.write_text(BASE.format(path=tmp_path / "in.jsonl", steps=steps))
    with pytest.raises(ConfigError) as info:
        load_pipeline(f)
    message = str(info.value)
    assert "\n" not in message and f"{key}: expected a value >= " in message and bound in message, message


def test_an_option_at_its_bound_is_accepted(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(BASE.format(path=tmp_path / "in.jsonl", steps="  minhash: {num_perm: 8192, bands: 64, rows: 128}"))
    assert load_pipeline(f).stage("minhash").options["num_perm"] == 8192
