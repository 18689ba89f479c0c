"""A large JSON Lines file in several ingest tasks, so one big file does not serialize the stage.

Plain files are split by byte ranges (each task reads its own bytes, a line belonging to the range it
starts in); compressed ones by line ranges (each task decodes the file up to its range; the lines per
task are estimated from the file's head, and the last range is open-ended, so a wrong estimate only
makes tasks uneven, never loses a line). Line numbers, and the positional ids made from them, are the
same however a file is split.
"""

from __future__ import annotations

from dataclasses import replace

from curate.io import fs
from curate.io.lines import estimate_lines
from curate.readers.base import ReadTask

OPEN_END = 1 << 62


def split_jsonl(base: ReadTask, storage_options: dict, target: int) -> list[ReadTask]:
    """`base` (a whole file, shard `<file>-0000`) as tasks of about `target` bytes of text each."""
    with fs.open_input(base.path, storage_options) as handle:
        compression, ratio, bytes_per_line = estimate_lines(handle)
    parts = -(-int(base.size * ratio) // target)
    if parts < 2:
        return [base]
    shard = lambda k: f"{base.shard[:-4]}{k:04d}"
    if compression == "plain":
        return [replace(base, shard=shard(k), byte_range=(k * target, (k + 1) * target if k < parts - 1 else OPEN_END))
                for k in range(parts)]
    per_task = max(1, int(target / bytes_per_line))
    return [replace(base, shard=shard(k), line_range=(k * per_task, (k + 1) * per_task if k < parts - 1 else None))
            for k in range(parts)]
