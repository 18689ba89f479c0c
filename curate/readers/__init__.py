"""Readers of the native formats, by kind, and their format presets by name (the `format:` of a source).

Each reader kind is one module defining a registered `Reader`; importing it here makes its kind and its
presets known. A new kind is one new file plus its import below.
"""

from curate.readers import jsonl, parquet, rpv2  # noqa: F401  (registers the parquet, jsonl and rpv2 kinds)
from curate.readers.base import FORMATS, READERS, Format, ReadOptions, Reader, ReadTask, register

__all__ = ["FORMATS", "READERS", "Format", "ReadOptions", "ReadTask", "Reader", "register"]
