"""Read a whole file that may be compressed (gzip or zstd, sniffed from its magic bytes, not its name), with a
bound on what it may inflate to.

A small file can inflate to gigabytes (a decompression bomb: 1.5 MB of gzip is 1.5 GiB of zeros), so every
decoder call here yields at most about `chunk` bytes (zlib's `max_length`; zstd, which has no such bound, is fed
256 bytes at a time: at most 8 MB out) and the reading stops with `TooLarge` as soon as `limit` bytes came out,
having held only a few MB at once. A stream cut short or corrupt raises `Unreadable`. Several gzip members or
zstd frames one after another are all read; bytes after the last one that start no new one are ignored (as
`gzip -d` does). lines.py streams the large inputs of the readers; this is for files read whole (eval sets).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import zstandard

from curate.io.lines import GZIP_MAGIC, starts_zstd

ZSTD_STEP = 256   # compressed bytes per zstd call: a zstd block of 4 bytes can stand for 128 KB


class TooLarge(ValueError):
    """The content is larger than the limit."""


class Unreadable(ValueError):
    """The compressed stream ends early or is corrupt; the message says which."""


def inflate(handle, limit: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The content of an open binary file in pieces of about `chunk` bytes; `TooLarge` past `limit` bytes."""
    head = b""
    while len(head) < 4 and (more := handle.read(4 - len(head))):
        head += more
    pieces = _gzip(head, handle, chunk) if head.startswith(GZIP_MAGIC) else _zstd(head, handle, chunk) if starts_zstd(head) \
        else _plain(head, handle, chunk)
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > limit:
            raise TooLarge(f"more than {limit:,} bytes")
        if piece:
            yield piece


def _plain(head: bytes, handle, chunk: int) -> Iterator[bytes]:
    yield head
    while data := handle.read(chunk):
        yield data


def _gzip(buf: bytes, handle, chunk: int) -> Iterator[bytes]:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        if not buf and not (buf := handle.read(chunk)):
            break
        try:
            yield d.decompress(buf, chunk)
        except zlib.error as exc:
            raise Unreadable(f"corrupt gzip data: {exc}") from None
        buf = d.unused_data if d.eof else d.unconsumed_tail   # at the end both hold what follows the member
        if d.eof:
            while len(buf) < 2 and (more := handle.read(chunk)):
                buf += more
            if not buf.startswith(GZIP_MAGIC):
                return
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    if not d.eof:
        raise Unreadable("the gzip stream ends early (a truncated file)")


def _zstd(buf: bytes, handle, chunk: int) -> Iterator[bytes]:
    ctx = zstandard.ZstdDecompressor()
    d = ctx.decompressobj()
    while True:
        if not buf and not (buf := handle.read(chunk)):
            break
        view, buf = memoryview(buf), b""
        for i in range(0, len(view), ZSTD_STEP):
            try:
                yield d.decompress(view[i:i + ZSTD_STEP])
            except zstandard.ZstdError as exc:
                raise Unreadable(f"corrupt zstd data: {exc}") from None
            if d.eof:
                buf = d.unused_data + bytes(view[i + ZSTD_STEP:])
                break
        if d.eof:
            while len(buf) < 4 and (more := handle.read(chunk)):
                buf += more
            if not starts_zstd(buf):
                return
            d = ctx.decompressobj()
    if not d.eof:
        raise Unreadable("the zstd stream ends early (a truncated file)")
