"""A small declarative schema whose errors are one line: file, key path, what was expected."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable

from curate.errors import ConfigError

REQUIRED = object()
SEED_MAX = 2**32 - 1      # seeds are 32-bit (the minhash permutations' are; numpy's accept no negative)
COUNT_MAX = 10**12        # a count of documents: more than any corpus holds

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list", dict: "a mapping"}


@dataclass
class Field:
    """One configuration value: accepted types, default, bounds and, for containers, what they hold.

    Every numeric option declares `min` and `max` (tests/config/test_bounds.py walks them all): 10^20 permutations
    or tokens per sequence is refused at load, naming the option and its range, not after hours of work."""

    types: tuple = (str,)
    default: Any = REQUIRED
    min: float | None = None
    max: float | None = None
    choices: Callable[[], list] | list | None = None
    item: "Field | None" = None          # for lists: each element; for open mappings: each value
    keys: dict[str, "Field"] | None = None  # for mappings with a fixed set of keys
    nullable: bool = False
    doc: str = ""


def describe(value) -> str:
    if value is None:
        return "null"
    name = {str: "string", bool: "boolean", int: "integer", float: "number", list: "list", dict: "mapping"}.get(type(value), type(value).__name__)
    text = repr(value) if isinstance(value, (str, int, float, bool)) else ""
    return f"{name} {text[:60]}".strip()


def _is(value, t) -> bool:
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, t)


def check(value, spec: Field, file: str, key: str):
    """Validate and normalise `value` against `spec`; raise ConfigError naming `key` on the first problem."""
    if value is None:
        if spec.nullable or (spec.default is None):
            return None
        raise ConfigError(file, key, f"expected {_expected(spec)}, got null")
    if float in spec.types and str not in spec.types and isinstance(value, str):
        try:  # YAML 1.1 reads `1e9` as a string; a number was meant
            value = float(value)
        except ValueError:
            pass
    if str in spec.types and list in spec.types and isinstance(value, str):
        value = [value]  # "paths: one/glob" is the common case of a list of one
    if not any(_is(value, t) for t in spec.types):
        raise ConfigError(file, key, f"expected {_expected(spec)}, got {describe(value)}")
    if float in spec.types and isinstance(value, int) and int not in spec.types:
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(file, key, _not_finite(value))
    if _is(value, float) and ((spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max)):
        raise ConfigError(file, key, f"expected {_range(spec)}, got {value}")
    if spec.choices is not None:
        choices = spec.choices() if callable(spec.choices) else spec.choices
        if value not in choices:
            raise ConfigError(file, key, f"expected one of {', '.join(map(str, choices))}, got {describe(value)}{suggest(value, choices)}")
    if isinstance(value, list) and spec.item is not None:
        value = [check(v, spec.item, file, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        if spec.keys is not None:
            value = check_mapping(value, spec.keys, file, key)
        elif spec.item is not None:
            value = {k: check(v, spec.item, file, f"{key}.{k}") for k, v in value.items()}
    return value


def _range(spec: Field) -> str:
    """`a value >= 2 and <= 65536`: the allowed range of a numeric option, as its error says it."""
    bounds = [f">= {spec.min}"] * (spec.min is not None) + [f"<= {spec.max}"] * (spec.max is not None)
    return "a value " + " and ".join(bounds)


def numeric(spec: Field) -> bool:
    """Whether `spec` accepts a number (and so must declare both bounds: an absurd value fails at load)."""
    return int in spec.types or float in spec.types


def _not_finite(value: float) -> str:
    return f"expected a finite number, got {value} (NaN and infinity are never a valid weight, threshold or limit)"


def check_finite(value, file: str, key: str = "") -> None:
    """No NaN or infinity anywhere in a config, free-form mappings (resources, storage options) included:
    they would pass every `>=` bound and fail late, or never."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(file, key, _not_finite(value))
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, file, _join(key, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_finite(v, file, f"{key}[{i}]")


def check_mapping(value: dict, keys: dict[str, Field], file: str, key: str) -> dict:
    """Check a mapping with a fixed set of keys: unknown keys (with a suggestion), required keys, defaults."""
    out = {}
    for k in value:
        if not isinstance(k, str) or k not in keys:
            raise ConfigError(file, _join(key, k), f"unknown key{suggest(k, list(keys))}; expected one of {', '.join(keys)}")
    for k, spec in keys.items():
        if k in value:
            out[k] = check(value[k], spec, file, _join(key, k))
        elif spec.default is REQUIRED:
            raise ConfigError(file, _join(key, k), f"missing; expected {_expected(spec)}{' (' + spec.doc + ')' if spec.doc else ''}")
        else:
            default = spec.default() if callable(spec.default) else spec.default
            out[k] = check_mapping(default, spec.keys, file, _join(key, k)) if spec.keys and isinstance(default, dict) else default
    return out


def _join(key: str, k) -> str:
    return f"{key}.{k}" if key else str(k)


def _expected(spec: Field) -> str:
    names = [_TYPE_NAMES.get(t, t.__name__) for t in spec.types]
    if spec.item is not None and list in spec.types:
        names = [n if n != "a list" else f"a list of {_expected(spec.item).removeprefix('a ').removeprefix('an ')}s" for n in names]
    return " or ".join(names)


def suggest(value, choices) -> str:
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
