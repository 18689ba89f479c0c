"""Stages by name (the `use:` of a step in a pipeline file), filled by the `@stage` decorator on each class."""

from __future__ import annotations

STAGES: dict[str, type] = {}


def stage(name: str):
    """Register a stage class under `name`: `@stage("dedup") class DedupStage(Stage): ...`."""

    def register(cls):
        if name in STAGES and STAGES[name] is not cls:
            raise ValueError(f"two stages are called {name!r}: {STAGES[name].__name__} and {cls.__name__}")
        cls.KIND = name
        STAGES[name] = cls
        return cls

    return register
