"""The stages, registered by name (`@stage("name")`): the `use:` of a step in a pipeline file.

`STAGES[name]` imports a built-in stage's module on first use (`registry.BUILT_IN`), so importing one stage
(a Ray worker unpickling a task) does not import them all.
"""

from curate.stages.registry import STAGES, stage

__all__ = ["STAGES", "stage"]
