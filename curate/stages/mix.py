"""The mix stage: how many tokens of each source go into the mixture, and which documents carry them.

Phase `measure` estimates each shard's tokens from its characters and a tokenized sample, kept per shard by what
it read (`curate.stages.measured`: an append measures only new or changed shards); the plan
(`curate.tokens.mixture`: epochs and effective tokens per source) is printed with its warnings and
published before any heavy work, or, if it cannot be met (a share of a source with no tokens, a source
repeated past `allow_epochs`), the run stops there, before anything is tokenized. The accounting phase
then records the documents that get no copy as `mix:downsampled`, and names each shard's copies by a digest (its
marker's `copies`); the pack step gives the documents their copies from the same plan (the tokenize step writes each
document once, whatever the plan) and keys each shard by that digest.
"""

from __future__ import annotations

import functools
import hashlib
import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.config.pipeline import canonical_json
from curate.common.schema import SEED_MAX, Field
from curate.errors import ConfigError, CurateError
from curate.rundir import MixRecord, outcomes
from curate.stages.phase import Phase
from curate.stages import measured
from curate.stages.reads import tokenizer_identity
from curate.stages.facets import Facets
from curate.stages.registry import stage
from curate.stages.shard import Output, ShardRef, ShardStage, removals
from curate.tokens import rehydrate
from curate.tokens.tokenizer import shared_tokenizer
from curate.tokens.mixture import ALLOW_EPOCHS, copies, doc_copies, plan_mixture, render_plan, uniform

__all__ = ["MixStage", "copies", "plan_mixture", "uniform"]

log = logging.getLogger("curate")
SAMPLE_CHARS = 1 << 17   # a shard's tokens per character: its first documents up to this many characters, tokenized
                         # (~50 web pages; a source's ratio pools every shard's sample. 256 documents was 28% of the
                         # sample corpus's small shards, and the mix step cost two thirds of the tokenize step)
TOKENS_MAX = 1e16     # tokens: far past any training run, short of where float64 counts stop being exact
EPOCHS_MAX = 10_000.0


class MixFacets(Facets):
    REPORT = ("curate.report.mixture:SECTION",)   # the plan against the tokens written, and how well they pack


@stage("mix")
class MixStage(ShardStage):
    USES = ("clusters",)
    PRODUCES = ("mix",)
    FACETS = MixFacets
    REMOVES = True
    COLUMNS = ["id"]
    OPTIONS = {
        "weights": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0, max=1e12),
                         doc="token-wise weights per source (every source; 0 leaves one out)"),
        "tokens": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0, max=TOKENS_MAX),
                        doc="target tokens per source (every source)"),
        "epochs": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0, max=EPOCHS_MAX), doc="epochs per source (default 1)"),
        "maximize": Field((str,), default=None, nullable=True, choices=["effective_tokens"],
                          doc="choose the tokens per source that give the most effective tokens for total_tokens"),
        "total_tokens": Field((float,), default=None, nullable=True, min=1.0, max=TOKENS_MAX, doc="with weights or maximize: the mixture's size"),
        "max_epochs": Field((float, dict), default=None, nullable=True, min=0.0, max=EPOCHS_MAX, item=Field((float,), min=0.0, max=EPOCHS_MAX),
                            doc="with maximize: the most epochs of every source (a number) or of each (a mapping); default allow_epochs"),
        "quality": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0, max=1e12),
                         doc="with maximize: what a fresh token of each source is worth (every source; default 1 each)"),
        "allow_epochs": Field((float,), default=ALLOW_EPOCHS, min=1.0, max=EPOCHS_MAX,
                              doc="the most epochs of any source accepted without an error (more than 4 is a warning)"),
        "seed": Field((int,), default=0, min=0, max=SEED_MAX),
        "tokenizer": Field((str,), default=None, nullable=True,
                           doc="the tokenizer tokens are measured with; default: the tokenize step's (else gpt2), resolved at load"),
        "rehydrate": Field((dict,), default=None, nullable=True, item=Field((float,), min=0.0, max=1e12),
                           doc="weight by dedup cluster size, FineWeb-2 style: {size threshold: weight}, e.g. {1: 1, 2: 2, 5: 3, 100: 1}"),
    }
    MODES = ("weights", "tokens", "epochs", "maximize")
    GLOBAL = True                  # the plan weighs every source against the others
    CONCURRENT = True              # inline, shards on threads: each measures with a one-thread tokenizer
    PIPELINE_READS = ("priority",)

    def reads(self, tasks, source):
        """It measures tokens with the tokenize step's tokenizer: a new tokenizer re-plans the mixture."""
        return {f"tokenizer {self.tokenizer_spec()}": tokenizer_identity(self.tokenizer_spec())}

    @classmethod
    def validate_options(cls, options, sources, file, key):
        """One line for each way a mix can be wrong before any data is read (the rest is checked on the plan)."""
        given = [m for m in cls.MODES if options[m] is not None]
        if len(given) > 1:
            raise ConfigError(file, key, f"give one of weights, tokens, epochs, maximize (got {', '.join(given)})")
        mode = given[0] if given else "epochs"
        for name in ("weights", "tokens", "epochs", "quality", "max_epochs"):
            for s in options[name] if isinstance(options[name], dict) else ():
                if s not in sources:
                    raise ConfigError(file, f"{key}.{name}.{s}", f"not a source; sources are {', '.join(sources)}")
        for name, what in (("weights", "weight"), ("tokens", "token target"), ("quality", "quality"), ("max_epochs", "cap")):
            if isinstance(options[name], dict) and (missing := [s for s in sources if s not in options[name]]):
                fix = (f"every source needs one ({missing[0]}: 0 leaves it out of the mixture)" if name != "max_epochs"
                       else "name every source, or give one number for all")
                raise ConfigError(file, f"{key}.{name}", f"no {what} for {', '.join(missing)}; {fix}")
        for name in ("weights", "quality"):
            if options[name] is not None and not any(v > 0 for v in options[name].values()):
                raise ConfigError(file, f"{key}.{name}", f"every {name[:-1] if name == 'weights' else name} is 0: nothing would be mixed")
        if options["total_tokens"] is not None and mode not in ("weights", "maximize"):
            raise ConfigError(file, f"{key}.total_tokens", "only goes with weights or maximize")
        if mode == "maximize" and options["total_tokens"] is None:
            raise ConfigError(file, f"{key}.total_tokens", "missing; maximize: effective_tokens needs the mixture's size in tokens")
        for name in ("max_epochs", "quality"):
            if options[name] is not None and mode != "maximize":
                raise ConfigError(file, f"{key}.{name}", "only goes with maximize: effective_tokens")
        for k in options["rehydrate"] or {}:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ConfigError(file, f"{key}.rehydrate.{k}", "not a cluster size; give sizes (whole numbers >= 1) and their weights, "
                                                                "e.g. {1: 1, 2: 2, 5: 3, 100: 1}")
        allow, cap = options["allow_epochs"], options["max_epochs"]
        limits = {f"{key}.epochs.{s}": e for s, e in (options["epochs"] or {}).items()}
        limits.update({f"{key}.max_epochs.{s}": e for s, e in cap.items()} if isinstance(cap, dict)
                      else {f"{key}.max_epochs": cap} if cap is not None else {})
        for where, e in limits.items():
            if e > allow:
                raise ConfigError(file, where, f"{e:g} epochs is more than allow_epochs {allow:g} (past about 16 epochs repeated "
                                               f"tokens add almost nothing); to allow it, set allow_epochs: {e:g}")

    @property
    def mode(self) -> str:
        return next((m for m in self.MODES if self.options[m] is not None), "epochs")

    def tokenizer_spec(self) -> str:
        """The tokenizer tokens are measured with (resolved at load: the tokenize step's, else gpt2)."""
        return self.options["tokenizer"] or "gpt2"

    def dedup_step(self) -> str | None:
        """The last dedup step before this one (from the chain): its clusters table says how many documents each
        kept one stands for."""
        return self.upstream.get("clusters")

    def execute(self, tasks, run_phase) -> None:
        if self.options["rehydrate"] is not None and self.dedup_step() is None:
            raise CurateError(f"stages.{self.name}.rehydrate: needs a dedup step before {self.name} (its cluster sizes)")
        spec = self.tokenizer_spec()
        identity = (spec, canonical_json(tokenizer_identity(spec)))
        measure = functools.partial(self.measure, identity)
        stats = measured.stored(self, tasks) if self.holds else None   # a no-op re-run: no shard is hashed or measured
        if stats is None:
            stats = measured.reuse(self, tasks, identity[1], lambda todo: run_phase(Phase("measure", todo, measure, concurrent=True)))
        available = {}
        for source in self.pipeline.priority:  # a source without shards has no tokens: a share of it cannot be met
            mine = [m for m in stats if m["source"] == source]
            chars = sum(m["chars"] for m in mine)
            sample_chars = sum(m["sample_chars"] for m in mine)
            ratio = sum(m["sample_tokens"] for m in mine) / sample_chars if sample_chars else 0.0
            available[source] = chars * ratio
        mode = self.mode
        values = self.options["quality"] if mode == "maximize" else self.options[mode]
        plan = plan_mixture(mode, values or {}, available, self.options["total_tokens"], allow_epochs=self.options["allow_epochs"],
                            max_epochs=self.options["max_epochs"], step=self.name, check=False)
        plan["seed"] = self.options["seed"]
        plan["tokenizer"] = self.tokenizer_spec()
        if self.options["rehydrate"] is not None:
            plan["rehydrate"] = rehydrate.plan_part(self.options["rehydrate"], self.dedup_step(), stats, self.pipeline.priority)
        log.info("%s", render_plan(plan))
        for warning in plan["warnings"]:
            log.warning("curate: warning: %s", warning)
        if errors := plan.pop("errors"):
            raise CurateError(errors[0])  # the first; fixing it changes the plan
        self.run.publish(self.name, MixRecord(plan))
        super().execute(tasks, run_phase)
        outcomes.prune(self.kept_outcomes(), {t.key for t in tasks})

    def measure(self, spec: tuple[str, str], shard: ShardRef) -> dict:
        """Characters of the shard's live documents, and tokens per character on a sample of them; with rehydration,
        the characters times each document's weight and the documents of each weight."""
        docs = chars = sample_chars = sample_tokens = 0
        weighted, by_weight = 0.0, {}
        table_of = self.options["rehydrate"]
        for table in self.live_batches(shard, ["id", "text"]):
            text = table.column("text")
            docs += table.num_rows
            chars += pc.sum(pc.utf8_length(text)).as_py() or 0
            if table_of is not None and table.num_rows:
                ids = table.column("id").combine_chunks()
                w = rehydrate.weights(table_of, rehydrate.sizes(self.run.clusters(self.dedup_step(), shard.source, shard.shard), ids))
                weighted += float((pc.utf8_length(text).to_numpy(zero_copy_only=False) * w).sum())
                for value, n in zip(*np.unique(w, return_counts=True)):
                    by_weight[f"{value:g}"] = by_weight.get(f"{value:g}", 0) + int(n)
            if sample_chars == 0 and table.num_rows:
                upto = np.cumsum(pc.utf8_length(text).to_numpy(zero_copy_only=False))
                sample = text.slice(0, int(np.searchsorted(upto, SAMPLE_CHARS)) + 1).combine_chunks()
                sample_tokens = int(shared_tokenizer(*spec).encode_batch(sample).num_tokens) + len(sample)  # + one EOS each
                sample_chars = pc.sum(pc.utf8_length(sample)).as_py() or 0
        return {"in": docs, "docs": docs, "chars": chars, "sample_chars": sample_chars, "sample_tokens": sample_tokens,
                "weighted_chars": weighted, "by_weight": by_weight}

    def owned_paths(self) -> list[str]:
        """All but the kept measurements (`measured`): they are keyed by what each shard's measurement read."""
        return [p for p in super().owned_paths() if p != self.run.work(self.name)]

    def setup(self) -> None:
        self.plan = self.run.record(self.name, MixRecord).plan
        self.tokenizer = canonical_json(tokenizer_identity(self.tokenizer_spec()))

    def kept_outcomes(self) -> str:
        """Each shard's accounting kept by what it follows from (`curate.rundir.outcomes`)."""
        return self.run.work(self.name, "outcomes")

    def run_shard(self, shard: ShardRef) -> dict:
        """The shard's downsampled documents, put back from an earlier run where its live documents and its source's
        part of the plan (epochs, seed, rehydration) are the same: an append that moves one source's epochs writes
        only that source's shards and the new ones again."""
        key, name, target = self.kept_where(shard, self.plan, self.tokenizer)
        return outcomes.reuse(self.kept_outcomes(), name, key, target, functools.partial(self.account, shard))

    def kept_where(self, shard: ShardRef, plan: dict, tokenizer: str) -> tuple[str, str, dict[str, str]]:
        """(key, kept name, targets) of a shard's accounting: its live documents and its source's part of the plan."""
        part = {"version": self.VERSION, "epochs": plan["sources"][shard.source]["epochs"], "seed": plan["seed"],
                "rehydrate": plan.get("rehydrate"), "docs": measured.shard_key(self, shard.source, shard.shard, tokenizer)}
        return (hashlib.sha256(canonical_json(part).encode()).hexdigest(), f"{shard.source}/{shard.shard}",
                {"ledger": self.run.ledger(self.name, shard.source, shard.shard)})

    def restore(self, tasks) -> dict[str, dict]:
        """The shards whose kept accounting still holds, put back by the driver at once (`Phase.restore`): in an append
        that moves one source's epochs, every other source's."""
        plan, tokenizer = self.run.record(self.name, MixRecord).plan, canonical_json(tokenizer_identity(self.tokenizer_spec()))
        return outcomes.restore_all(self.kept_outcomes(), ((t.key, *self.kept_where(t.payload, plan, tokenizer)) for t in tasks))

    def account(self, shard: ShardRef) -> dict:
        """Also names the shard's copies by content (`copies`, in its marker): the pack step keys each shard by them,
        so a plan whose epochs moved re-packs only the shards where some document's copies did."""
        digest = hashlib.sha256()

        def process_shard(batches, shard):
            for table in batches:
                n = doc_copies(self.run, self.plan, shard.source, shard.shard, table.column("id").combine_chunks())
                digest.update(n.astype("<i8").tobytes())
                yield Output(removed=removals(table.column("id").filter(pa.array(n == 0)), "mix:downsampled"))

        return {**self.map_shard(shard, process_shard, None, ledger=True), "copies": digest.hexdigest()}
