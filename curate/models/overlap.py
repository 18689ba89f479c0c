"""Tokenize the next batch while the model scores this one.

Transformer models split `score` into `prepare` (cut and tokenize, on the CPU, in Rust that releases the
GIL) and `run` (the model); a GPU would otherwise wait for the tokenizer between batches. fastText
models have no split and score batch after batch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

import pyarrow as pa


def scored_batches(model, batches: Iterable[pa.Table]) -> Iterator[tuple[pa.Table, pa.Table]]:
    """(batch, scores) for each batch of (id, text), in order; scores has one row per batch row."""
    if not (hasattr(model, "prepare") and hasattr(model, "run")):
        for batch in batches:
            yield batch, model.score(batch.column("text").combine_chunks())
        return
    it = iter(batches)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize") as pool:
        current = next(it, None)
        pending = pool.submit(model.prepare, current.column("text").combine_chunks()) if current is not None else None
        while current is not None:
            prepared = pending.result()
            following = next(it, None)
            pending = (pool.submit(model.prepare, following.column("text").combine_chunks())
                       if following is not None else None)
            yield current, model.run(prepared)
            current = following
