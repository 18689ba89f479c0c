"""Filter recipes: named SQL predicates over signals and document columns, kept in `filters/<name>.yaml`.

A recipe is `{name, rules: {rule: predicate}}`; a document passes a rule when its predicate is TRUE
(FALSE or NULL fails it). Recipes are looked up in CURATE_FILTERS (a folder), then in `filters/`
beside the pipeline's folder, then in `./filters`, then among the recipes that ship with curate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from curate.common.yaml_strict import load as strict_yaml
from curate.common.yaml_strict import one_line
from curate.errors import ConfigError
from curate.packaged import filters_dir
from curate.sql import quote
from curate.common.sql_guard import check_expression


@dataclass(frozen=True)
class Rule:
    name: str       # `<recipe>.<rule>`: the reason a failing document is removed with
    predicate: str


def search_path(pipeline_file: str) -> list[Path]:
    paths = []
    if os.environ.get("CURATE_FILTERS"):
        paths.append(Path(os.environ["CURATE_FILTERS"]))
    paths.append(Path(pipeline_file).resolve().parent.parent / "filters")
    paths.append(Path.cwd() / "filters")
    paths.append(filters_dir())  # the recipes that ship with curate
    return paths


def available(pipeline_file: str) -> list[str]:
    return sorted({p.stem for d in search_path(pipeline_file) if d.is_dir() for p in d.glob("*.yaml")})


def load_recipe(name: str, pipeline_file: str, key: str) -> list[Rule]:
    for folder in search_path(pipeline_file):
        path = folder / f"{name}.yaml"
        if path.is_file():
            break
    else:
        raise ConfigError(pipeline_file, key, f"no filter recipe '{name}'; available: {', '.join(available(pipeline_file)) or 'none'}")
    try:
        spec = strict_yaml(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", f"invalid YAML: {one_line(exc)}") from None
    rules = spec.get("rules") if isinstance(spec, dict) else None
    if not isinstance(rules, dict) or not rules or not all(isinstance(v, str) for v in rules.values()):
        raise ConfigError(str(path), "rules", "expected a mapping of rule name -> SQL predicate")
    for rule, predicate in rules.items():
        check_expression(predicate, str(path), f"rules.{rule}")
    return [Rule(f"{name}.{rule}", predicate) for rule, predicate in rules.items()]


def reason_sql(rules: list[Rule]) -> str:
    """A recipe's rules as one CASE expression naming the first failed rule (NULL when all pass)."""
    whens = " ".join(f"WHEN NOT coalesce(({r.predicate}), false) THEN {quote(r.name)}" for r in rules)
    return f"CASE {whens} END"
