"""The chain check: each step's needs come from an earlier step, so a wrong order fails at load, not after hours.

Stage classes declare NEEDS, USES, PRODUCES, REMOVES and FINAL (see `curate.stages.base.Stage`); this
module reads those declarations from the registry it is given and fills each step's `upstream`.
"""

from __future__ import annotations

from typing import Mapping

from curate.config.columns import check_rule_columns, source_columns
from curate.errors import ConfigError
from curate.run_folders import RESERVED

TABLES = "tables"   # a USES entry: every id-keyed table of the earlier steps (`Stage.VIEW`)


def final_last(steps: list, registry: Mapping[str, type]) -> list:
    """Steps that describe the finished run (FINAL, e.g. the manifest) move after all others, so a step
    added with `--set stages.NAME=...` (which appends) still runs before them."""
    return [s for s in steps if not registry[s.kind].FINAL] + [s for s in steps if registry[s.kind].FINAL]


def check_chain(steps: list, registry: Mapping[str, type], file: str, sources: Mapping | None = None) -> None:
    """Fill `step.upstream` (need -> providing step) for every step; raise ConfigError on the first break, or on a
    rule reading a column that neither an earlier step nor the documents of `sources` (as far as known) have."""
    provided: dict[str, str] = {}
    for i, step in enumerate(steps):
        cls, key = registry[step.kind], f"stages.{step.name}"
        for need in cls.NEEDS:
            named = step.options.get(need) if isinstance(step.options.get(need), str) else None
            if named is not None:  # the step names its provider, e.g. dedup's `minhash: minhash_strict`
                earlier = {s.name: s for s in steps[:i]}
                if named not in earlier or need not in registry[earlier[named].kind].PRODUCES:
                    raise ConfigError(file, f"{key}.{need}", f"'{named}' is not an earlier step that provides {need}")
                step.upstream[need] = named
            elif need in provided:
                step.upstream[need] = provided[need]
            else:
                raise ConfigError(file, key, _missing(need, step, steps[i + 1:], registry))
        for use in cls.USES:
            if use in provided:
                step.upstream[use] = provided[use]
        if TABLES in cls.USES:   # it reads every id-keyed table before it, so each is part of its fingerprint
            step.upstream.update({f"{TABLES}.{name}": name for name in keyed_steps(steps, registry, step.name)})
        for product in cls.PRODUCES:
            provided[product] = step.name
        if step.name in RESERVED and (cls.VIEW or any(t.split("/")[0] == step.name for t in cls.tables(step.name))):
            raise ConfigError(file, key, f"a {step.kind} step writes its files to RUN/<step name>/, and '{step.name}' is a "
                                         "folder of every run; rename the step")
    docs = {name: [(None, source_columns(source))] for name, source in (sources or {}).items()}
    check_rule_columns(steps, registry, file, docs or {"": [(None, None)]})


def keyed_steps(steps: list, registry: Mapping[str, type], name: str) -> list[str]:
    """The steps before `name` that write a table keyed by id (`Stage.VIEW`), in run order."""
    names = [s.name for s in steps]
    return [s.name for s in steps[:names.index(name)] if registry[s.kind].VIEW]


def _missing(need: str, step, later: list, registry: Mapping[str, type]) -> str:
    makers = sorted(kind for kind, cls in registry.items() if need in cls.PRODUCES)
    after = next((s.name for s in later if need in registry[s.kind].PRODUCES), None)
    if after is not None:
        return f"needs {need} from step '{after}', which comes after it; move '{after}' before '{step.name}'"
    which = " or ".join(f"`{m}`" for m in makers) or "a step"
    return f"needs {need} from an earlier step; add a {which} step before '{step.name}'"


def check_removals_before_tokens(steps: list, registry: Mapping[str, type], file: str, until: str | None) -> None:
    """A step that removes documents after they were tokenized leaves tokens and kept documents disagreeing,
    unless the run stops at that step (`--until`). Checked before any work starts."""
    tokenized_by = None
    for step in steps:
        cls = registry[step.kind]
        if (cls.REMOVES or cls.EDITS) and tokenized_by is not None and step.name != until:
            what = "removes documents after step '{0}' tokenized them, so they would still be packed" if cls.REMOVES else \
                "edits text after step '{0}' tokenized it, so the tokens would keep the original"
            raise ConfigError(file, f"stages.{step.name}", what.format(tokenized_by) + f"; put it before '{tokenized_by}'")
        if step.name == until:
            return
        if "tokens" in cls.PRODUCES:
            tokenized_by = step.name
