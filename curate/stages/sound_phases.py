"""Sound dedup's phases (`curate.dedup.sound`), in place of `decide`: the settled components an earlier run left are
recalled (`curate.dedup.settled`), the rest gathered, settled, exact-checked and finalized."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from curate.dedup import exact_cache, frozen, graph, settled, sound
from curate.dedup.layout import WORK, tag_key
from curate.dedup.signature_store import signatures_path
from curate.io import fs
from curate.rundir import RunDir
from curate.rundir.digests import text_digests
from curate.stages.facets import Kernel
from curate.stages.graph_jobs import ShardJob, group_name, grouped, phase, queued, read_column
from curate.stages.phase import PhaseRunner, Task

if TYPE_CHECKING:
    from curate.stages.clustering import Clustering

log = logging.getLogger("curate")

EXACT = Kernel("the exact-Jaccard kernels", "curate.dedup.exact_kernel:warm",
               ("curate.dedup.exact_kernel:hash_sets", "curate.dedup.exact_kernel:jaccard_pairs"))


def settle(c: Clustering, run: RunDir, shards: list[Task], parts: list[Task], final: int, run_phase: PhaseRunner) -> None:
    """The sound mode's phases (`curate.dedup.sound`) in place of `decide`."""
    g, s = c.graph, c.sound
    if (s.cache or s.settled) and not fs.exists(s.ids(g)):   # (a resumed or no-op run has them: its graph holds, so its docs do)
        exact_cache.write_ids(s.ids(g), shard_ids(run, [t.payload for t in shards], s.shingling))
    if s.settled is None:
        run_phase(phase("decide", parts, partial(sound.route, g, final)))
    else:   # components settled by an earlier run are decided here, neither gathered nor settled (`curate.dedup.settled`)
        run_phase(phase("decide", parts, partial(settled.route, g, final)))
        known = run_phase(phase("recall", parts, partial(settled.recall, g, s.settled, s.ids(g), s.context, s.cache)))
        if known.ran:   # (a resumed run's recall is recorded: said by the run that did it)
            log.info("[%s: settle] %s of %s components reused", c.stage, f"{sum(r.get('reused', 0) for r in known):,}",
                     f"{sum(r.get('components', 0) for r in known):,}")
    gathering = grouped(queued(g, shards, "sound", "route"))
    run_phase(phase("gather", gathering, partial(gather, run, g, s, c.by_id),   # (signatures read cold in an append)
                    prefetch=lambda todo: [signatures_path(s.signatures, j.source, j.shard) for t in todo for j in t.payload]))
    done = run_phase(phase("settle", parts, partial(sound.settle, g, s, c.policy, c.by_id)))
    if s.cache is not None and done.ran:   # (a no-op run's settle is recorded: said by the run that did it)
        pairs, reused = sum(r.get("checks", 0) for r in done), sum(r.get("reused", 0) for r in done)
        log.info("[%s: exact] %s of %s pairs reused, %s checked", c.stage, f"{reused:,}", f"{pairs:,}", f"{pairs - reused:,}")
    run_phase(phase("exact-a", grouped(queued(g, shards, "sound", "exact")), partial(exact_a, run, g)))
    buckets = sorted(path.rsplit("/", 1)[1][:-len(WORK)] for path in fs.files_under(g.path("sound", "checks")))
    run_phase(phase("exact-b", [Task(b, f"exact-check bucket {b}", b) for b in buckets], partial(sound.exact_b, g, s), (EXACT,)))
    run_phase(phase("finalize", parts, partial(sound.finalize, g, s)))
    if s.cache is not None:
        exact_cache.prune(s.cache, g.partitions)
    if s.settled is not None:
        settled.prune(s.settled, g.partitions)


def shard_ids(run: RunDir, jobs: list[ShardJob], shingling: dict) -> dict[int, int]:
    """Per docs shard (by shard key), the id of its texts as the exact check reads them (`exact_cache.shard_id`): its
    docs file and the edits before the step, by content (`digests`: hashed once a process, which later steps' per-shard
    keys hash too)."""
    return {tag_key(j.tag): exact_cache.shard_id(j.source, j.shard, text_digests(run, j.source, j.shard, j.editors), shingling)
            for j in jobs}


def gather(run: RunDir, g: graph.GraphDir, s: sound.Sound, by_id: bool, jobs: tuple[ShardJob, ...]) -> dict:
    """`sound.gather` of a group of docs shards (`grouped`), with each one's ids where the policy ranks by id or frozen
    documents are asked about (which members are frozen: their ids against the same-named shard of the frozen kept/)."""
    shards = []
    for job in jobs:
        ids = read_column(run, "id", job) if by_id or s.frozen is not None else None
        fixed = None if s.frozen is None else \
            frozen.frozen_mask(ids, fs.join(frozen.frozen_root(s.frozen), "kept", job.source, f"{job.shard}.parquet"))
        shards.append(sound.Members(signatures_path(s.signatures, job.source, job.shard), job.tag, ids if by_id else None, fixed))
    return sound.gather(g, s, group_name(jobs), shards)


def exact_a(run: RunDir, g: graph.GraphDir, jobs: tuple[ShardJob, ...]) -> dict:
    """`sound.exact_a` of a group of docs shards (`grouped`): each one's text as the step sees it (edited), read in turn."""
    return sound.exact_a(g, group_name(jobs), ((job.tag, read_column(run, "text", job)) for job in jobs))
