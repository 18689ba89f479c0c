"""Stages by name: the `use:` of a stage in a pipeline file (default: the stage's own name)."""

from curate.stages.filter import FilterStage
from curate.stages.ingest import IngestStage
from curate.stages.signals import SignalsStage

STAGES = {
    "ingest": IngestStage,
    "filter": FilterStage,
    "signals": SignalsStage,
}

__all__ = ["STAGES"]
