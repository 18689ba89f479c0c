"""Resume: which results in a run directory still hold for this pipeline, per stage and per source.

Each stage's results for a source have a fingerprint made of named parts (`Stage.fingerprint_parts`):
its code version, the options that concern the source, the settings and files it reads (by content)
and the fingerprint of the source's results before it, so a change anywhere upstream reaches every
stage after it. `RUN/_state/<stage>/stage.json` keeps, per source, the fingerprint and the hash of
each part. When a source's fingerprint changed, the stage's outputs for that source (and the markers
of its unkeyed phases) are removed and recomputed, with one line naming what changed; the other
sources keep theirs. A GLOBAL stage (dedup, mix, manifest) depends on every source, so any change
recomputes all of it. Keyed phases (model scores, blocklist scans) are checked per source by the
phase runner against their own key, so a new `keep` threshold never runs a model again.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from curate.config.pipeline import canonical_json
from curate.io import fs
from curate.rundir import RunDir
from curate.rundir.layout import ACCOUNTING
from curate.runner.shardkeys import ShardInputs
from curate.runner.phaserunner import remove_source, source_markers
from curate.stages.base import Stage

log = logging.getLogger("curate")

READABLE = {"version": "curate's code for this stage", "pipeline.priority": "priority", "pipeline.resolved": "the pipeline",
            "reads.inputs": "input files", "reads.rules": "rules (recipe files included)", "reads.source": "source settings",
            "reads.id_partitions": "id partitions", "upstream": "results of the steps before it"}


def hash_parts(parts: dict) -> dict[str, str]:
    return {name: hashlib.sha256(canonical_json(value).encode()).hexdigest()[:16] for name, value in sorted(parts.items())}


def fingerprint(hashed: dict[str, str]) -> str:
    return hashlib.sha256(canonical_json(hashed).encode()).hexdigest()


def describe_change(before: dict | None, now: dict[str, str]) -> str:
    """Which parts of a source's fingerprint changed, in words."""
    if before is None:
        return "not computed yet"
    old = before.get("parts") or {}
    names = sorted(n for n in set(old) | set(now) if old.get(n) != now.get(n))
    words, sources = [], [n.split(".", 1)[1] for n in names if n.startswith("upstream.")]
    for n in names:
        if n.startswith("upstream."):
            word = f"results of the steps before it for {', '.join(sources)}"
        else:
            word = READABLE.get(n) or (f"option {n[8:]}" if n.startswith("options.") else n.removeprefix("reads."))
        if word not in words:
            words.append(word)
    return ", ".join(words) or "recorded by an older curate"


def upstream_of(stage, done: dict[str, dict[str, str]], sources) -> dict[str, str]:
    """Per source, the fingerprint of what the stage reads from the steps before it: the documents and
    the ledgers of the steps that remove (its live documents), and the steps providing what it needs or
    uses (side tables, records); a final step (the manifest) reads every step. A step it does not read
    (the pack step, for `kept`) can change without recomputing it."""
    steps = list(done) if stage.FINAL else sorted(set(stage.previous) | set(stage.upstream.values()))
    body = {s: [(step, done[step].get(s, "")) for step in steps if step in done] for s in sources}
    return {s: hashlib.sha256(canonical_json(v).encode()).hexdigest() if v else "" for s, v in body.items()}


@dataclass
class Settlement:
    """A stage's fingerprints now against the recorded ones: which sources changed (and why), which are gone."""

    stage: Stage
    parts: dict[str, dict[str, str]]
    fingerprints: dict[str, str]
    recorded: dict | None
    changed: dict[str, str]
    gone: list[str]
    shards: dict[str, dict[str, str]] = field(default_factory=dict)   # per changed source of a PER_SHARD stage: shard -> key
    inputs: dict[tuple[str, str], str] = field(default_factory=dict)  # (source, shard) -> digest of what it reads there

    @property
    def any(self) -> bool:
        return self.recorded is None or bool(self.changed or self.gone)


def compare(run: RunDir, stage: Stage, upstream: dict[str, str], tasks, inputs: ShardInputs | None = None) -> Settlement:
    """The stage's fingerprints per source, compared with what its last run recorded; changes nothing. With
    `inputs`, a PER_SHARD stage also keys each shard of a changed source by its options and what it reads there."""
    parts = {s: hash_parts(p) for s, p in stage.fingerprint_parts(upstream, tasks).items()}
    fps = {s: fingerprint(p) for s, p in parts.items()}
    recorded = run.read_json(run.stage_file(stage.name))
    before = (recorded or {}).get("sources") or {}
    changed = {s: describe_change(before.get(s), parts[s]) for s in fps if (before.get(s) or {}).get("fingerprint") != fps[s]}
    out = Settlement(stage, parts, fps, recorded, changed, sorted(s for s in before if s not in fps))
    if inputs is not None and stage.PER_SHARD and not stage.GLOBAL:
        for source in changed:
            own = {name: h for name, h in parts[source].items() if name != "upstream" and name not in stage.SHARD_PARTS}
            digests = stage.shard_identities(tasks, source) or \
                {t.shard: inputs.digest(stage, source, t.shard) for t in tasks if t.source == source and t.shard}
            out.inputs.update({(source, shard): d for shard, d in digests.items()})
            out.shards[source] = {shard: fingerprint({**own, "inputs": d}) for shard, d in digests.items()}
    return out


def settle(run: RunDir, s: Settlement, running: bool = True) -> None:
    """Remove what no longer holds and record the new fingerprints (when the stage does not run now, the
    sources whose results were removed are left out, so that its next run makes them)."""
    if not s.any:
        return
    stage = s.stage
    if s.recorded is None:
        for path in stage.owned_paths():  # never run here: no output of an earlier pipeline may pass for its own
            fs.remove(path)
    else:
        _report(stage, s.changed, s.gone, running)
        if stage.GLOBAL:
            for path in stage.owned_paths():
                fs.remove(path)
        else:
            before = s.recorded.get("sources") or {}
            for source in s.gone:
                remove_source_outputs(run, stage, source)
            for source in s.changed:
                recorded = (before.get(source) or {}).get("shards")
                if running and source in s.shards and recorded is not None:
                    now = s.shards[source]
                    on_disk = {p.rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
                               for p in fs.glob(run.state(stage.name, ACCOUNTING, source, "*.json"))}
                    stale = sorted(sh for sh in set(recorded) | on_disk if sh not in now or recorded.get(sh) != now[sh])
                    remove_shard_outputs(run, stage, source, stale, whole=bool(stale) or any(sh not in recorded for sh in now))
                else:
                    remove_source_outputs(run, stage, source)
    keep = s.fingerprints if running else \
        {k: fp for k, fp in s.fingerprints.items() if k not in s.changed and not (stage.GLOBAL and (s.changed or s.gone))}
    before = (s.recorded or {}).get("sources") or {}
    shards = {k: s.shards[k] if k in s.shards else (before.get(k) or {}).get("shards") for k in keep} if running else {}
    run.write_json(run.stage_file(stage.name), {"complete": False, "sources": {
        k: {"fingerprint": s.fingerprints[k], "parts": s.parts[k], **({"shards": shards[k]} if shards.get(k) is not None else {})}
        for k in keep}})


def _report(stage: Stage, changed: dict[str, str], gone: list[str], running: bool) -> None:
    what = "recomputing it" if running else "removing its results (--until stops before it)"
    by_reason: dict[str, list[str]] = {}
    for source, reason in changed.items():
        by_reason.setdefault(reason, []).append(source)
    every = stage.GLOBAL or len(changed) == len(stage.pipeline.sources)
    for reason, sources in by_reason.items():
        whom = "every source" if stage.GLOBAL else ", ".join(sources)
        log.info("stage '%s' changed since the last run (%s): %s for %s%s", stage.name, reason, what, whom,
                 "" if every else f"; unchanged for {', '.join(s for s in stage.pipeline.sources if s not in changed)}")
    if gone:
        log.info("stage '%s': removing the results of %s, which the pipeline no longer has", stage.name, ", ".join(gone))


def remove_shard_outputs(run: RunDir, stage: Stage, source: str, shards: list[str], whole: bool = True) -> None:
    """Some shards' outputs of a stage and the markers of its unkeyed phases. A task of the whole source (its marker is
    `<phase>/<source>.json` or `<phase>/<source>.<part>.json`: pack's merge) read every shard, so it goes too when
    `whole`: when a shard is stale or new;
    with every shard's key the same it still holds (an append that moved another source's epochs merges only the
    sources with a shard packed again)."""
    for shard in shards:
        for path in stage.shard_outputs(source, shard):
            fs.remove(path)
    for phase in fs.glob(run.state(stage.name, "*")):
        name = phase.rstrip("/").rsplit("/", 1)[-1]
        if not name.endswith(".json") and not fs.exists(run.phase_key(stage.name, name)):
            if whole:
                for path in source_markers(phase, source):
                    fs.remove(path)
            for shard in shards:
                fs.remove(fs.join(phase, source, f"{shard}.json"))


def remove_source_outputs(run: RunDir, stage: Stage, source: str) -> None:
    """A source's outputs of a stage and the markers of its unkeyed phases (keyed phases check their own key)."""
    for path in stage.source_outputs(source):
        fs.remove(path)
    for phase in fs.glob(run.state(stage.name, "*")):
        name = phase.rstrip("/").rsplit("/", 1)[-1]
        if not name.endswith(".json") and not fs.exists(run.phase_key(stage.name, name)):
            remove_source(phase, source)
