"""Readers of the native formats, by name: the `format:` of a source in a pipeline file."""

import pyarrow as pa

from curate.readers.base import Format, ReadTask

FORMATS: dict[str, Format] = {f.name: f for f in [
    Format("fineweb", "parquet", text="text", id="id", url="url",
           doc="FineWeb / FineWeb-Edu parquet (data/<dump>/*.parquet); keeps every column, e.g. int_score"),
    Format("zyda", "parquet", text="text", id="nemo_id",
           doc="Zyda / Zyda-2 parquet per component; nemo_id becomes id when present"),
    Format("parquet", "parquet", text="text", id=None,
           doc="any parquet; map columns with fields: {text: ..., id: ...}"),
    Format("dclm", "jsonl", text="text", id="metadata.WARC-Record-ID", url="url",
           promote=(("fasttext_openhermes_reddit_eli5_vs_rw_v2_bigram_200k_train_prob", pa.float64()),),
           doc="DCLM-baseline global-shard_*/local-shard_*/*.jsonl.zst (also .gz, plain); metadata.WARC-Record-ID becomes id"),
    Format("dolma", "jsonl", text="text", id="id", url="metadata.url",
           doc="Dolma documents/*.json.gz"),
    Format("jsonl", "jsonl", text="text", id=None, url=None,
           doc="any JSON Lines (plain, .gz, .zst); map fields with fields: {text: ..., id: ..., url: ...}"),
    Format("rpv2", "rpv2", text="raw_content", id=None, url="url",
           promote=(("language", pa.string()), ("language_score", pa.float64()), ("perplexity", pa.float64()),
                    ("bucket", pa.string()), ("length", pa.int64()), ("nlines", pa.int64()),
                    ("original_length", pa.int64()), ("original_nlines", pa.int64()), ("source_domain", pa.string()),
                    ("digest", pa.string()), ("date_download", pa.string())),
           doc="RedPajama-V2 documents/<snapshot>/<shard>/<lang>_<bucket>.json.gz joined with quality_signals"),
]}

__all__ = ["FORMATS", "Format", "ReadTask"]
