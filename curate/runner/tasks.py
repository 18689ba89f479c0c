"""The unit of work a stage hands to an executor."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    """One shard of one stage. `where` names the input for error messages (a file, or a docs shard)."""

    stage: str
    source: str
    shard: str
    where: str
    payload: object = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.stage, self.source, self.shard)
