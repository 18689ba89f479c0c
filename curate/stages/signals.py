"""The signals stage: RedPajama-V2 quality signals and language id, stored beside the documents.

Writes `RUN/signals/<source>/<shard>.parquet` keyed by `id` (joinable with docs, kept and ledger),
with every `rps_doc_*` signal as a scalar column, every `rps_lines_*` signal as a list (one value per
line), `lang` and `lang_score`. It removes nothing: filters decide on the signals later, so a threshold
can be changed and re-run without recomputing a signal. RedPajama-V2 inputs keep their shipped signals.
"""

from __future__ import annotations

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from curate.common.schema import Field
from curate.io import fs
from curate.io.parquet import ParquetSink
from curate.rundir.tables import SourceSink
from curate.models.langid import identify
from curate.stages.reads import file_identity
from curate.stages.facets import WARM_TEXT, Facets, Kernel
from curate.stages.registry import stage
from curate.stages.resources import task_cores
from curate.stages.shard import Output, ShardRef, ShardStage


def shipped_signals(payloads: pa.Array, names: list[str], line_level: set[str]) -> dict[str, pa.Array]:
    """RPv2's `quality_signals` JSON ({name: [[start, end, value], ...]}) as our columns."""
    columns: dict[str, list] = {n: [] for n in names}
    for payload in payloads.to_pylist():
        signals = orjson.loads(payload) if payload else {}
        for n in names:
            spans = signals.get(n)
            if n in line_level:
                columns[n].append([s[2] for s in spans] if spans else None)
            else:
                columns[n].append(spans[0][2] if spans else None)
    return {n: pa.array(v, pa.list_(pa.float64()) if n in line_level else pa.float64()) for n, v in columns.items()}


CCNET = {"length": "ccnet_length", "nlines": "ccnet_nlines", "original_length": "ccnet_original_length",
         "original_nlines": "ccnet_original_nlines", "language_score": "ccnet_language_score",
         "perplexity": "ccnet_perplexity"}
BUCKETS = {"head": 0, "middle": 1, "tail": 2}


def ccnet_columns(table: pa.Table, always: bool = False) -> dict:
    """`ccnet_*` copies of the CCNet fields a source carries (RedPajama-V2 documents do); with `always`
    (some source of the run is RPv2), every one, null where absent, so all signals files share one schema."""
    out = {}
    if "bucket" not in table.column_names or "perplexity" not in table.column_names:
        if always:
            out = {name: pa.nulls(table.num_rows, pa.float64()) for name in CCNET.values()}
            out["ccnet_bucket"] = pa.nulls(table.num_rows, pa.int64())
        return out
    for field, name in CCNET.items():
        out[name] = table.column(field).cast(pa.float64()) if field in table.column_names else pa.nulls(table.num_rows, pa.float64())
    buckets = table.column("bucket").to_pylist()
    out["ccnet_bucket"] = pa.array([BUCKETS.get(b) for b in buckets], pa.int64())
    return out


def warm_signals() -> None:
    from curate.signals import compute_signals

    compute_signals(pa.array([WARM_TEXT, "x"]), pa.array(["https://example.com/a", None]))


def warm_datatrove_words() -> None:
    from curate.signals import datatrove_word_stats

    datatrove_word_stats(pa.array([WARM_TEXT, "x"]))


def warm_langid() -> None:
    identify(pa.array([WARM_TEXT, None]))


SIGNALS = Kernel("the RedPajama-V2 signal kernels", "curate.stages.signals:warm_signals",
                 ("curate.signals.raw_kernel:build_word_set", "curate.signals.raw_kernel:raw_pass", "curate.signals.raw_kernel:scan_docs",
                  "curate.signals.words_kernel:build_phrase_set", "curate.signals.words_kernel:words_pass"))
DATATROVE_WORDS = Kernel("the datatrove word-split kernel", "curate.stages.signals:warm_datatrove_words",
                         ("curate.signals.dtwords_kernel:hash_cps", "curate.signals.dtwords_kernel:stats_pass"))
LANGID = Kernel("the language-id kernel", "curate.stages.signals:warm_langid",
                ("curate.models.lid_kernel:predict_top", "curate.models.lid_kernel:vocabulary_rows"))


class SignalsFacets(Facets):
    REPORT = ("curate.report.signals:SECTION", "curate.report.languages:SECTION")

    @classmethod
    def kernels(cls, options: dict) -> tuple[Kernel, ...]:
        """The signal kernels; the word split only with `dt_words` (as configured or derived at load), language id with `langid`."""
        return (SIGNALS, *([DATATROVE_WORDS] if options["datatrove_words"] else []), *([LANGID] if options["langid"] else []))


@stage("signals")
class SignalsStage(ShardStage):
    PRODUCES = ("signals",)
    VIEW = "signals"
    FACETS = SignalsFacets
    VERSION = 2   # 2: its table moved to RUN/<step>/
    OPTIONS = {
        "langid": Field((bool,), default=True, doc="add lang and lang_score (fastText lid.176)"),
        "use_shipped": Field((bool,), default=True, doc="use RedPajama-V2's shipped quality_signals where present"),
        "ut1_domains": Field((str,), default=None, nullable=True,
                             doc="JSON file domain -> UT1 category id (RPv2's domain_to_category_id.json): adds rps_doc_ut1_blacklist"),
        "ml_models": Field((dict,), default=dict, item=Field((str,)),
                           doc="name -> fastText model path: adds rps_doc_ml_<name>_score (palm, wikiref, wikipedia)"),
        "importance": Field((dict,), default=dict, item=Field((list,), item=Field((str,))),
                            doc="name -> [target.npy, cc.npy] bucket distributions: adds rps_doc_<name>_importance"),
        "datatrove_words": Field((bool,), default=None, nullable=True,
                                 doc="add dt_words (datatrove's spaCy word counts, for the gopher/fineweb recipes); "
                                     "default: when a filter step of the pipeline uses them"),
    }

    @classmethod
    def keyed_columns(cls, options):
        if options is None:
            return ["rps_*", "ccnet_*", "dt_words"]   # not lang: a source may have a `lang` column of its own
        from curate.signals.names import DOC_SIGNALS, LINE_SIGNALS, UT1_SIGNAL

        return [*DOC_SIGNALS, *([UT1_SIGNAL] if options["ut1_domains"] else []), *LINE_SIGNALS,
                *(f"rps_doc_ml_{name}_score" for name in sorted(options["ml_models"])),
                *(f"rps_doc_{name}_importance" for name in sorted(options["importance"])),
                *CCNET.values(), "ccnet_bucket",   # present with an RPv2 source (or a source with CCNet's fields)
                *(["lang", "lang_score"] if options["langid"] else []),
                *([] if options["datatrove_words"] is False else ["dt_words"])]

    def dt_words(self) -> bool:
        """Whether to add `dt_words`: as configured, or as derived from the filter steps' rules at load."""
        return bool(self.options["datatrove_words"])

    def reads(self, tasks, source):
        """The files it reads, by content (whether dt_words is added is an option, derived at load)."""
        o = self.options
        return {"ut1_domains": file_identity(o["ut1_domains"]),
                "ml_models": {n: file_identity(p) for n, p in o["ml_models"].items()},
                "importance": {n: [file_identity(p) for p in paths] for n, paths in o["importance"].items()}}

    def setup(self) -> None:
        path = self.options["ut1_domains"]
        self.ut1 = orjson.loads(fs.read_bytes(path)) if path else None
        self.with_dt_words = self.dt_words()
        self.with_ccnet = any(s.format == "rpv2" for s in self.pipeline.sources.values())

    def sink(self, shard: ShardRef) -> ParquetSink:
        """Rows of every shard share one schema; an empty shard's file gets it from an empty batch."""
        with fs.open_input(self.run.docs(shard.source, shard.shard)) as handle:
            empty = pq.read_schema(handle).empty_table()
        return SourceSink(self.run.table(self.name, shard.source, shard.shard), shard.source, self.process(empty, shard).rows.schema)

    def process(self, table: pa.Table, shard: ShardRef) -> Output:
        from curate.signals import compute_signals

        urls = table.column("url").combine_chunks() if "url" in table.column_names else None
        texts = table.column("text").combine_chunks()
        signals = compute_signals(texts, urls, ut1_domains=self.ut1, threads=task_cores())   # one on Ray, all cores inline
        if self.options["use_shipped"] and "quality_signals" in table.column_names:
            signals = self._prefer_shipped(signals, table.column("quality_signals").combine_chunks())
        columns = {"id": table.column("id")}
        columns.update({n: signals.column(n) for n in signals.column_names})
        columns.update(self._configured(texts))
        columns.update(ccnet_columns(table, self.with_ccnet))
        if self.options["langid"]:
            columns["lang"], columns["lang_score"] = identify(texts, threads=task_cores())
        if self.with_dt_words:
            from curate.signals import datatrove_word_stats

            columns["dt_words"] = datatrove_word_stats(texts)
        return Output(rows=pa.table(columns))

    def _configured(self, texts: pa.Array) -> dict:
        """Signals that need resources the user gives: fastText ml scores, DSIR importance weights."""
        from curate.models.classifiers import rpv2_ml_score
        from curate.signals.importance import importance, load_distributions

        out = {}
        for name, path in sorted(self.options["ml_models"].items()):
            out[f"rps_doc_ml_{name}_score"] = rpv2_ml_score(path, texts)
        for name, (target, reference) in sorted(self.options["importance"].items()):
            out[f"rps_doc_{name}_importance"] = pa.array(importance(texts.to_pylist(), load_distributions(target, reference)), pa.float64())
        return out

    @staticmethod
    def _prefer_shipped(signals: pa.Table, shipped: pa.Array) -> pa.Table:
        """Rows with shipped RPv2 signals take those values; rows without (tail buckets), and signals RPv2 did
        not ship for a row, keep ours."""
        import pyarrow.compute as pc

        has = pc.is_valid(shipped)
        if not pc.any(has).as_py():
            return signals
        line_level = {n for n in signals.column_names if n.startswith("rps_lines_")}
        theirs = shipped_signals(shipped, signals.column_names, line_level)
        out = {}
        for n in signals.column_names:
            ours = signals.column(n).combine_chunks()
            mine = theirs[n].cast(ours.type)
            out[n] = pc.if_else(pc.and_(has, pc.is_valid(mine)), mine, ours)  # a signal RPv2 did not ship stays ours
        return pa.table(out)
