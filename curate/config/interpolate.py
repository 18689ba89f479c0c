"""`${VAR}` and `${VAR:-default}` in string values, so one recipe serves laptop and cluster."""

import os
import re

from curate.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value, file: str, key: str = ""):
    """Return `value` with environment variables substituted in every string, recursively."""
    if isinstance(value, dict):
        return {k: interpolate(v, file, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, file, f"{key}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ and (os.environ[name] or default is None):
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(file, key, f"environment variable {name} is not set (write ${{{name}:-default}} to give a default)")

    return _VAR.sub(substitute, value)
