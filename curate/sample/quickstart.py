"""The quickstart corpus on demand: made once, where a pipeline's `sample.dir` points, before a run reads it."""

from __future__ import annotations

import logging
import os
import tempfile
import time

from curate.io import fs

log = logging.getLogger("curate")


def ensure_sample(sample: dict | None, used: bool) -> None:
    """Make the quickstart corpus in `sample.dir` when the pipeline reads it (`used`) and it is not there yet.
    A `sample.dir` in object storage (the corpus a cluster's nodes read) is made locally, then uploaded."""
    if not used or not sample:
        return
    remote = "://" in sample["dir"]
    root = sample["dir"].rstrip("/") if remote else os.path.normpath(sample["dir"])
    if fs.exists(fs.join(root, "_SUCCESS")):
        return
    from curate.sample.make import make_sample

    log.info("making the sample corpus in %s (%d documents, seed %d) ...", root, sample["docs"], sample["seed"])
    started = time.monotonic()
    if remote:
        with tempfile.TemporaryDirectory(prefix="curate-sample-") as local:
            make_sample(local, docs=sample["docs"], seed=sample["seed"])
            fs.upload_tree(local, root, last="_SUCCESS")
    else:
        make_sample(root, docs=sample["docs"], seed=sample["seed"])
    log.info("sample corpus ready in %.1fs", time.monotonic() - started)
