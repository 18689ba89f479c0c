"""Stream the lines of a possibly compressed file, and say so when the compressed stream is cut short.

The compression is sniffed from magic bytes, not trusted from the extension (real dumps have `.zst`
files that are plain JSONL). Decompression is driven chunk by chunk so that every complete line before
a truncation is recovered, and the truncation itself is reported instead of raised.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CHUNK = 4 << 20


@dataclass
class Truncation:
    """The stream ended early: the line number where reading stopped and the decoder's complaint."""

    line: int
    cause: str


class _Gzip:
    def __init__(self):
        self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            out.append(self.d.decompress(data))
            data = self.d.unused_data if self.d.eof else b""
            if data:  # a further gzip member (multi-member files are legal)
                self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return b"".join(out)

    def finished(self) -> bool:
        return self.d.eof


class _Zstd:
    def __init__(self):
        self.ctx = zstandard.ZstdDecompressor()
        self.d = self.ctx.decompressobj()
        self.started = False

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            self.started = True
            out.append(self.d.decompress(data))
            data = self.d.unused_data if self.d.eof else b""
            if data:  # a further zstd frame
                self.d = self.ctx.decompressobj()
        return b"".join(out)

    def finished(self) -> bool:
        return self.d.eof or not self.started


class _Plain:
    def feed(self, data: bytes) -> bytes:
        return data

    def finished(self) -> bool:
        return True


def sniff(head: bytes):
    if head.startswith(GZIP_MAGIC):
        return _Gzip()
    if head.startswith(ZSTD_MAGIC):
        return _Zstd()
    return _Plain()


def iter_lines(handle, result: dict):
    """Yield `(line_number, bytes)` for each line (without the newline); blank lines are skipped.

    On a cut-short stream, `result["truncation"]` is set to a `Truncation`; the partial last line
    belongs to the truncation and is not yielded.
    """
    first = handle.read(CHUNK)
    decoder = sniff(first)
    pending = b""
    lineno = 0
    chunk = first
    while chunk:
        try:
            data = decoder.feed(chunk)
        except (zlib.error, zstandard.ZstdError) as exc:
            result["truncation"] = Truncation(lineno, f"corrupt compressed data: {exc}")
            return
        if data:
            parts = (pending + data).split(b"\n")
            pending = parts.pop()
            for line in parts:
                if line.strip():
                    yield lineno, line
                lineno += 1
        chunk = handle.read(CHUNK)
    if not decoder.finished():
        result["truncation"] = Truncation(lineno, "compressed stream ends early (truncated file)")
        return
    if pending.strip():
        yield lineno, pending
