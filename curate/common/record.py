"""The base of what a step publishes for later steps (a frozen dataclass stored as JSON in its record file):
libraries that define a record of their own (decontam) derive from it without knowing the run directory."""

from __future__ import annotations

from dataclasses import asdict, fields


class Record:
    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in value.items() if k in names})
