"""Stages by name: the `use:` of a stage in a pipeline file (default: the stage's own name)."""

from curate.stages.dedup import DedupStage
from curate.stages.exact_dedup import ExactDedupStage
from curate.stages.filter import FilterStage
from curate.stages.ingest import IngestStage
from curate.stages.manifest import ManifestStage
from curate.stages.mix import MixStage
from curate.stages.pack import PackStage
from curate.stages.tokenize import TokenizeStage
from curate.stages.minhash import MinhashStage
from curate.stages.signals import SignalsStage

STAGES = {
    "ingest": IngestStage,
    "filter": FilterStage,
    "signals": SignalsStage,
    "minhash": MinhashStage,
    "dedup": DedupStage,
    "exact_dedup": ExactDedupStage,
    "mix": MixStage,
    "tokenize": TokenizeStage,
    "pack": PackStage,
    "manifest": ManifestStage,
}

__all__ = ["STAGES"]
