"""The stages, registered by name (`@stage("name")`): the `use:` of a step in a pipeline file.

Importing this package imports every stage module so that each registers itself in `STAGES`.
"""

from curate.stages import (  # noqa: F401  (imported for their registration)
    classify,
    decontaminate,
    dedup,
    dual_use,
    exact_dedup,
    filter,
    ingest,
    manifest,
    minhash,
    mix,
    pack,
    pii,
    signals,
    tokenize,
)
from curate.stages.registry import STAGES, stage

__all__ = ["STAGES", "stage"]
