"""An Arrow string array as the compiled kernels take it: its UTF-8 bytes, int64 offsets and validity,
zero-copy where Arrow allows (string_view is cast first; a null-typed array is all nulls)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.errors import CurateError


def string_buffers(texts: pa.Array, who: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data uint8, offsets int64 of len(texts) + 1, valid bool) of one string array; `who` names the caller
    in the error for any other type."""
    t = texts.type
    if pa.types.is_null(t):
        texts = pa.array([None] * len(texts), type=pa.string())
    elif pa.types.is_string_view(t):
        texts = texts.cast(pa.large_string())
    elif not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise CurateError(f"{who}: texts must be strings, got Arrow type {t}")
    n = len(texts)
    _, off_buf, data_buf = texts.buffers()
    if n == 0 or off_buf is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
        offsets = np.frombuffer(off_buf, dtype=width)[texts.offset:texts.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    valid = texts.is_valid().to_numpy(zero_copy_only=False) if texts.null_count else np.ones(n, dtype=np.bool_)
    return data, offsets, valid


def string_spans(texts: pa.Array, who: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(data, starts, ends, valid): each text's [start, end) in `data`, a null's empty; `data` holds at least one
    byte (the kernels index it even for an empty batch)."""
    data, offsets, valid = string_buffers(texts, who)
    starts, ends = offsets[:-1].copy(), offsets[1:].copy()
    ends[~valid] = starts[~valid]
    return (data if len(data) else np.zeros(1, np.uint8)), starts, ends, valid
