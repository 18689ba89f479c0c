"""Stages by name (the `use:` of a step in a pipeline file), filled by the `@stage` decorator on each class.

A built-in stage's module is imported when its name is first looked up, not with the package: a Ray worker
that runs ingest's tasks then imports no model, SQL or numba code (~0.4 s of every worker's start), and a
pipeline without a filter step never loads DuckDB. A name that is neither registered nor built in is looked
for in installed packages' `curate.stages` entry points (`curate.plugins`) before it is called unknown.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

BUILT_IN = ("classify", "decontaminate", "dedup", "dual_use", "exact_dedup", "filter", "ingest", "manifest", "minhash",
            "line_filter", "mix", "pack", "pii", "signals", "substring_dedup", "tokenize")
"""The stages this package defines, each in the module of its name (`curate/stages/<name>.py`); a test checks
this list against the `@stage(...)` classes of the folder."""


class Registry(MutableMapping):
    """name -> stage class; looking a built-in name up imports its module (which registers the class)."""

    def __init__(self):
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        if name not in self._classes and name in BUILT_IN:
            importlib.import_module(f"{__package__}.{name}")
        if name not in self._classes:
            self._entry_points()
        return self._classes[name]

    def __setitem__(self, name: str, cls: type) -> None:
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._classes[name]

    def __contains__(self, name: object) -> bool:
        if name in self._classes or name in BUILT_IN:
            return True
        self._entry_points()
        return name in self._classes

    def _entry_points(self) -> None:
        """Import the `curate.stages` entry points (once); one that loads a class not yet registered (its module
        has no `@stage`) registers it under the entry point's name."""
        from curate.plugins import load_group

        for name, obj in load_group("curate.stages"):
            if isinstance(obj, type) and name not in self._classes and obj not in self._classes.values():
                self.register(name, obj)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*BUILT_IN, *self._classes]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*BUILT_IN, *self._classes]))

    def register(self, name: str, cls: type) -> None:
        """Add `cls` under `name`; a second class under a name already taken is refused."""
        known = self._classes.get(name)
        if known is not None and known is not cls:
            raise ValueError(f"two stages are called {name!r}: {known.__name__} and {cls.__name__}")
        cls.KIND = name
        self._classes[name] = cls


STAGES = Registry()


def stage(name: str):
    """Register a stage class under `name`: `@stage("dedup") class DedupStage(Stage): ...`."""

    def register(cls):
        STAGES.register(name, cls)
        return cls

    return register
