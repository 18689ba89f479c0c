"""The signals stage: RedPajama-V2 quality signals and language id, stored beside the documents.

Writes `RUN/signals/<source>/<shard>.parquet` keyed by `id` (joinable with docs, kept and ledger),
with every `rps_doc_*` signal as a scalar column, every `rps_lines_*` signal as a list (one value per
line), `lang` and `lang_score`. It removes nothing: filters decide on the signals later, so a threshold
can be changed and re-run without recomputing a signal. RedPajama-V2 inputs keep their shipped signals.
"""

from __future__ import annotations

import time

import orjson
import pyarrow as pa

from curate.config.schema import Field
from curate.io.parquet import ParquetSink
from curate.models.langid import identify
from curate.runner.tasks import Task
from curate.stages.base import ShardStage


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


class SignalsStage(ShardStage):
    OPTIONS = {
        "langid": Field((bool,), default=True, doc="add lang and lang_score (fastText lid.176)"),
        "use_shipped": Field((bool,), default=True, doc="use RedPajama-V2's shipped quality_signals where present"),
    }

    def owned_paths(self) -> list[str]:
        return [self.run.path("signals"), *super().owned_paths()]

    def run_task(self, task: Task) -> dict:
        from curate.signals import compute_signals

        started = time.monotonic()
        n_in = 0
        path = self.run.path("signals", task.source, f"{task.shard}.parquet")
        with ParquetSink(path) as sink:
            for table in self.live_batches(task):
                n_in += table.num_rows
                urls = table.column("url").combine_chunks() if "url" in table.column_names else None
                texts = table.column("text").combine_chunks()
                signals = compute_signals(texts, urls)
                if self.options["use_shipped"] and "quality_signals" in table.column_names:
                    signals = self._prefer_shipped(signals, table.column("quality_signals").combine_chunks())
                columns = {"id": table.column("id")}
                columns.update({n: signals.column(n) for n in signals.column_names})
                if self.options["langid"]:
                    columns["lang"], columns["lang_score"] = identify(texts)
                sink.write(pa.table(columns))
            if sink.schema is None:
                sink.schema = pa.schema([("id", pa.string())])
        return self.finish_task(task, started, n_in, {})

    @staticmethod
    def _prefer_shipped(signals: pa.Table, shipped: pa.Array) -> pa.Table:
        """Rows with shipped RPv2 signals take those values; rows without (tail buckets) keep ours."""
        import pyarrow.compute as pc

        has = pc.is_valid(shipped)
        if not pc.any(has).as_py():
            return signals
        line_level = {n for n in signals.column_names if n.startswith("rps_lines_")}
        theirs = shipped_signals(shipped, signals.column_names, line_level)
        out = {}
        for n in signals.column_names:
            ours = signals.column(n).combine_chunks()
            out[n] = pc.if_else(has, theirs[n].cast(ours.type), ours)
        return pa.table(out)
