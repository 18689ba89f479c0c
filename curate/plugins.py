"""Outside code: modules a pipeline file names (`plugins:`) and installed packages' entry points.

Importing a plugin is what registers it: its module applies `@stage(...)` to a stage class, or
`curate.readers.register` to a reader; the registries ask for their entry-point group only when a
name they do not know is looked up, so a run without plugins scans no package metadata. The groups:

    [project.entry-points."curate.stages"]          my_stage = "my_pkg.stages"        (a module, or the class)
    [project.entry-points."curate.readers"]         my_kind = "my_pkg.reader"
    [project.entry-points."curate.token_formats"]   my_fmt = "my_pkg.tokens"

A module named in `plugins:` is imported with the pipeline file's folder first on `sys.path` (a `my_stage.py`
beside the YAML works); Ray workers get its code with each task (pickled by value, `by_value`), so it
needs to be importable on the driver only. Installed packages must be installed on every node.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from importlib.metadata import entry_points

from curate.errors import ConfigError, CurateError

GROUPS = ("curate.stages", "curate.readers", "curate.token_formats")

IMPORTED: list[str] = []
"""Modules imported for a pipeline's `plugins:`, in order: the Ray executor pickles them by value."""

_loaded: dict[str, list] = {}


class PluginError(CurateError):
    """An installed package's entry point cannot be loaded: one line naming it and the cause."""

    exit_code = 2


def _cause(exc: BaseException) -> str:
    """`Type: message (at file:line)`, the innermost frame of the failing import."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}{where}"


def import_modules(names: list[str], file: str) -> None:
    """Import the modules a pipeline file names under `plugins:`, its folder first on `sys.path`; an import
    that fails is one ConfigError naming the module."""
    if not names:
        return
    folder = os.path.dirname(os.path.abspath(file))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    for i, name in enumerate(names):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of user code at import is the user's to read in one line
            raise ConfigError(file, f"plugins[{i}]", f"cannot import module '{name}': {_cause(exc)}") from None
        if name not in IMPORTED:
            IMPORTED.append(name)


def load_group(group: str) -> list:
    """The objects of every entry point in `group`, loaded (imported) once per process."""
    if group not in _loaded:
        objects = []
        for ep in entry_points(group=group):
            try:
                objects.append((ep.name, ep.load()))
            except Exception as exc:  # noqa: BLE001 - a broken installed plugin is named, not a traceback
                dist = getattr(ep.dist, "name", None)
                raise PluginError(f"plugin '{ep.name}' ({group} entry point {ep.value}"
                                  f"{' of package ' + dist if dist else ''}) cannot be imported: {_cause(exc)}") from None
        _loaded[group] = objects
    return _loaded[group]


def load_all() -> None:
    """Every entry-point group (a pipeline being loaded: its names must all resolve)."""
    for group in GROUPS:
        load_group(group)


def by_value(pickler) -> None:
    """Have `pickler` (Ray's cloudpickle) carry the `plugins:` modules' code with each task, so a worker
    that cannot import them (they sit beside the pipeline file on the driver) still runs them."""
    for name in IMPORTED:
        if name in sys.modules:
            pickler.register_pickle_by_value(sys.modules[name])
