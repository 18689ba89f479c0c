"""`${VAR}` and `${VAR:-default}` in string values, so one recipe serves laptop and cluster.

A default may itself hold references, `${A:-${B:-x}}`: it is expanded only when used (A unset or empty), so
an unset B matters only then. A value taken from the environment is used as it is, never expanded again.
Text that is not a complete reference (`${`, `${1}`, an unclosed default) stays as written.
"""

import os
import re

from curate.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACES = re.compile(r"\$\{|\}")
MAX_DEPTH = 32


def interpolate(value, file: str, key: str = ""):
    """Return `value` with environment variables substituted in every string, recursively."""
    if isinstance(value, dict):
        return {k: interpolate(v, file, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, file, f"{key}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    return _expand(value, file, key)


def _expand(text: str, file: str, key: str) -> str:
    return _sub(text, 0, len(text), _pairs(text), file, key, 0)


def _pairs(text: str) -> dict[int, int]:
    """Each `${` -> the position of the `}` that closes it (one pass; an unclosed `${` is absent)."""
    pairs, opened = {}, []
    for match in _BRACES.finditer(text):
        if match.group() == "${":
            opened.append(match.start())
        elif opened:
            pairs[opened.pop()] = match.start()
    return pairs


def _sub(text: str, lo: int, hi: int, pairs: dict[int, int], file: str, key: str, depth: int) -> str:
    """`text[lo:hi]` with its references substituted; a default used is substituted the same way, one level down."""
    if depth > MAX_DEPTH:
        raise ConfigError(file, key, f"defaults nested more than {MAX_DEPTH} levels deep")
    out, i = [], lo
    while (start := text.find("${", i, hi)) >= 0:
        name = _NAME.match(text, start + 2, hi)
        after, end = (name.end() if name else -1), pairs.get(start, -1)
        if name and end == after:
            out += [text[i:start], _lookup(name.group(), file, key)]
            i = end + 1
        elif name and end > after and text.startswith(":-", after):
            value = _lookup(name.group(), file, key, default=True)
            out += [text[i:start], value if value is not None else _sub(text, after + 2, end, pairs, file, key, depth + 1)]
            i = end + 1
        else:  # not a reference: keep the `${` and go on after it
            out.append(text[i:start + 2])
            i = start + 2
    out.append(text[i:hi])
    return "".join(out)


def _lookup(name: str, file: str, key: str, default: bool = False) -> str | None:
    """The variable's value; with a default written, None when it is unset or empty (the default applies)."""
    if name in os.environ and (os.environ[name] or not default):
        return os.environ[name]
    if default:
        return None
    raise ConfigError(file, key, f"environment variable {name} is not set (write ${{{name}:-default}} to give a default)")
