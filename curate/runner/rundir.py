"""The layout of a run directory (local path or fsspec URI), in one place."""

from __future__ import annotations

import json
from dataclasses import dataclass

from curate.io import fs


@dataclass(frozen=True)
class RunDir:
    root: str

    def path(self, *parts: str) -> str:
        return fs.join(self.root, *parts)

    def docs(self, source: str, shard: str) -> str:
        return self.path("docs", source, f"{shard}.parquet")

    def ledger(self, stage: str, source: str, shard: str) -> str:
        return self.path("ledger", stage, source, f"{shard}.parquet")

    def kept(self, source: str, shard: str) -> str:
        return self.path("kept", source, f"{shard}.parquet")

    def marker(self, stage: str, source: str, shard: str) -> str:
        """Per-task completion marker; it also holds the task's counts (in, kept, removed by reason, time)."""
        return self.path("_state", stage, source, f"{shard}.json")

    def stage_file(self, stage: str) -> str:
        return self.path("_state", stage, "_stage.json")

    def read_json(self, path: str):
        try:
            return json.loads(fs.read_bytes(path))
        except FileNotFoundError:
            return None

    def write_json(self, path: str, value) -> None:
        fs.write_bytes(path, json.dumps(value, indent=1, sort_keys=True).encode())

    def markers(self, stage: str) -> list[dict]:
        """Stats of every finished task of a stage, in a stable order."""
        found = []
        for path in fs.glob(self.path("_state", stage, "*", "*.json")):
            if path.rsplit("/", 2)[-2].startswith("_"):
                continue  # phase bookkeeping (_phases, _measure, _merge), not shard tasks
            value = self.read_json(path)
            if value is not None:
                found.append(value)
        return sorted(found, key=lambda s: (s["source"], s["shard"]))
