"""A run directory made by an earlier version, brought to the present layout once, before anything else changes.

Token documents and packed files used to live in fixed folders (`RUN/tokens/docs/`, `RUN/tokens/_shards/`,
`RUN/tokens/<source>.*`), so two tokenize or pack steps overwrote each other; now each lives under its step's
name (`RUN/<tokenize step>/`, `RUN/<pack step>/`). The token documents cost the most to make again, so they move
to the tokenize step that made them (the one step of the pipeline that produces tokens and has run before) and it
keeps its results. Packing is cheap: the pack stage's VERSION went up, so it packs once more into its own folder.
When the old documents cannot be told apart (several tokenize steps ran before), they are removed and those
steps run again.
"""

from __future__ import annotations

import logging

from curate.io import fs
from curate.rundir import RunDir

log = logging.getLogger("curate")
OLD = "tokens"   # the fixed folder of earlier versions


def migrate(run: RunDir, pipeline, registry) -> None:
    """Move `RUN/tokens/docs/` to its tokenize step's folder and remove the rest of `RUN/tokens/`."""
    if not fs.exists(run.path(OLD)):
        return
    docs = run.path(OLD, "docs")
    ran = [s.name for s in pipeline.stages if "tokens" in registry[s.kind].PRODUCES and fs.exists(run.stage_file(s.name))]
    if fs.exists(docs) and len(ran) == 1 and not fs.exists(run.path(ran[0])):
        log.info("moving tokens/docs/ to %s/: a step's files now live under its name (this run was made by an "
                 "earlier version)", ran[0])
        fs.move(docs, run.path(ran[0]))
    elif fs.exists(docs):
        for step in ran:   # whose documents these are cannot be told: the steps tokenize again
            log.info("removing the results of step '%s': tokens/docs/ held the documents of several tokenize steps "
                     "(this run was made by an earlier version)", step)
            fs.remove(run.state(step))
    log.info("removing tokens/: packed files now live in RUN/<pack step>/ (this run was made by an earlier version; "
             "the pack step packs again)")
    fs.remove(run.path(OLD))
