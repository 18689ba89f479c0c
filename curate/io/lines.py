"""Stream the lines of a possibly compressed file, and say so when the compressed stream is cut short.

The compression is sniffed from magic bytes, not trusted from the extension (real dumps have `.zst`
files that are plain JSONL). Decompression is driven chunk by chunk so that every complete line before
a truncation is recovered, and the truncation itself is reported instead of raised.

A gzip file may hold several members and a zstd file several frames (concatenated streams): all are read.
Bytes after the last complete member that start no new one (garbage, or zero padding as tape and some
copy tools leave) are not data: every line before them is read, and they are reported once, with their
offset and length, instead of being mistaken for a cut-short stream. A UTF-8 byte-order mark at the start
of the text is dropped.

A line ends at LF, CRLF or a lone CR (old Mac files), as with Python's universal newlines: a file of
CR-ended records is many lines, not one bad record. A lone CR is read as LF, the same length, so byte
offsets (a task's byte range) hold; JSON allows a raw CR only as whitespace between tokens, where no
writer of JSON Lines puts one. CRLF lines keep their CR, as they always did (JSON parsing ignores it).
"""

from __future__ import annotations

import re
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BOM = b"\xef\xbb\xbf"
CHUNK = 4 << 20
# Compressed bytes handed to the decoder at once: a decoder error loses the output of one piece only.
PIECE = 256 << 10
_LONE_CR = re.compile(rb"\r(?!\n)")


class LoneCR:
    """Decoded pieces with each lone CR read as LF. A CR ending a piece waits for the next piece's first byte
    (a CRLF split across pieces stays CRLF); one at the very end of the text ends the last line, which the
    end of the text does anyway, so it is dropped. Pieces without a CR pass through uncopied."""

    def __init__(self):
        self.held = b""

    def feed(self, data: bytes) -> bytes:
        if self.held:
            data, self.held = self.held + data, b""
        elif b"\r" not in data:
            return data
        if data.endswith(b"\r"):
            data, self.held = data[:-1], b"\r"
        return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


class _LoneCRReader:
    """A plain file's `read` with each lone CR read as LF and every other byte where it was, so byte ranges and
    the line numbers counted from them agree with `iter_lines`. A CR ending a read is settled by one byte read
    ahead (kept for the next read)."""

    def __init__(self, handle):
        self.handle = handle
        self.ahead = b""

    def read(self, n: int) -> bytes:
        data = self.ahead + self.handle.read(max(0, n - len(self.ahead))) if self.ahead else self.handle.read(n)
        self.ahead = b""
        if b"\r" not in data:
            return data
        if data.endswith(b"\r"):
            self.ahead = self.handle.read(1)
            return _LONE_CR.sub(b"\n", data + self.ahead)[:len(data)]
        return _LONE_CR.sub(b"\n", data)


@dataclass
class Truncation:
    """The stream ended early: the line number where reading stopped and the decoder's complaint."""

    line: int
    cause: str


@dataclass
class Trailing:
    """Bytes after the last complete gzip member / zstd frame that start no new one.

    `line`: lines read before them; `offset`, `length`: where they are in the (compressed) file;
    `zeros`: they are all zero bytes (padding).
    """

    line: int
    offset: int
    length: int
    zeros: bool
    compression: str

    def describe(self) -> str:
        """What the bytes are, for a ledger detail that already names their offset."""
        plural = "s" if self.length != 1 else ""
        member = "gzip member" if self.compression == "gzip" else "zstd frame"
        verb = "start" if plural else "starts"
        what = f"zero byte{plural} (padding)" if self.zeros else f"byte{plural} that {verb} no further {member}"
        return f"{self.length} {what} after the end of the {self.compression} stream; every line before was read"


class _Members(ABC):
    """Concatenated compressed members (gzip) or frames (zstd), decoded piece by piece.

    `feed` returns the decoded pieces (not joined: joining would copy every byte once more) and never
    raises: a decoder error is kept in `error` and ends the stream (the output decoded before it is
    returned); bytes after a complete member that start no new one are counted in `trailing`.
    """

    name = ""
    errors: tuple = ()
    MAGIC_LEN = 4

    def __init__(self):
        self.d = self._new()
        self.pos = 0              # compressed bytes seen so far
        self.between = False      # the last member is complete; what follows must start a new one
        self.head = b""           # a few bytes after a member, too few yet to tell what they start
        self.error: str | None = None
        self.trailing: list | None = None  # [offset, length, all zero]

    @abstractmethod
    def _new(self):
        """A decoder for one member."""

    @abstractmethod
    def _starts_member(self, head: bytes) -> bool:
        """Whether bytes after a complete member are the start of another one (its magic number)."""

    def feed(self, data: bytes) -> list[bytes]:
        if self.error is not None:
            return []
        if self.trailing is not None:
            self.trailing[1] += len(data)
            self.trailing[2] = self.trailing[2] and data.count(0) == len(data)
            self.pos += len(data)
            return []
        buf = self.head + data if self.head else data
        base = self.pos - len(self.head)  # file offset of buf[0]
        self.pos += len(data)
        self.head = b""
        out = []
        i, n = 0, len(buf)
        while i < n:
            if self.between:
                if n - i < self.MAGIC_LEN:
                    self.head = buf[i:]
                    break
                if not self._starts_member(buf[i:i + self.MAGIC_LEN]):
                    rest = buf[i:]
                    self.trailing = [base + i, len(rest), rest.count(0) == len(rest)]
                    break
                self.d = self._new()
                self.between = False
            piece = buf[i:i + PIECE] if i or n > PIECE else buf
            try:
                out.append(self.d.decompress(piece))
            except self.errors as exc:
                self.error = f"corrupt compressed data near byte {base + i}: {exc}"
                break
            if self.d.eof:
                i += len(piece) - len(self.d.unused_data)
                self.between = True
            else:
                i += len(piece)
        return out

    def close(self) -> None:
        """End of input: a few bytes left after the last member are trailing bytes too."""
        if self.head and self.trailing is None:
            self.trailing = [self.pos - len(self.head), len(self.head), self.head.count(0) == len(self.head)]
            self.head = b""

    def finished(self) -> bool:
        return self.error is None and self.between


class _Gzip(_Members):
    name = "gzip"
    errors = (zlib.error,)
    MAGIC_LEN = 2

    def _new(self):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)

    def _starts_member(self, head: bytes) -> bool:
        return head == GZIP_MAGIC


class _Zstd(_Members):
    name = "zstd"
    errors = (zstandard.ZstdError,)

    def __init__(self):
        self.ctx = zstandard.ZstdDecompressor()
        super().__init__()

    def _new(self):
        return self.ctx.decompressobj()

    def _starts_member(self, head: bytes) -> bool:
        return starts_zstd(head)


class _Plain:
    name = "plain"
    error = None
    trailing = None

    def feed(self, data: bytes) -> list[bytes]:
        return [data]

    def close(self) -> None:
        pass

    def finished(self) -> bool:
        return True


def starts_zstd(head: bytes) -> bool:
    """A zstd frame, or a skippable frame (magic 0x184D2A50-0x184D2A5F, little-endian), which `pzstd` writes
    first (its index of the frames that follow)."""
    return head[:4] == ZSTD_MAGIC or (head[1:4] == b"\x2a\x4d\x18" and head[0] & 0xF0 == 0x50)


def sniff(head: bytes):
    if head.startswith(GZIP_MAGIC):
        return _Gzip()
    if starts_zstd(head):
        return _Zstd()
    return _Plain()


def iter_lines(handle, result: dict, start_line: int = 0, end_line: int | None = None):
    """Yield `(line_number, bytes)` for each line (without the newline); blank lines are skipped.

    On a cut-short or corrupt stream, `result["truncation"]` is set to a `Truncation`; the partial last
    line belongs to the truncation and is not yielded. Bytes after the end of the compressed stream set
    `result["trailing"]` to a `Trailing`; every line before them is yielded.

    `start_line`, `end_line`: only lines [start_line, end_line) are yielded (a task's share of a large compressed file; the
    lines before are decoded and skipped, reading stops at `end_line`). A truncation or trailing bytes are
    reported only by the range they fall in, so across the ranges of a file each is reported once.
    """
    first = handle.read(CHUNK)
    while 0 < len(first) < len(ZSTD_MAGIC):  # a short read: not enough to sniff yet
        more = handle.read(CHUNK)
        if not more:
            break
        first += more
    decoder = sniff(first)
    pending = b""
    lineno = 0
    chunk = first
    at_start = True  # a byte-order mark may still be ahead
    lone_cr = LoneCR()
    while chunk:
        for data in decoder.feed(chunk):
            if data and at_start:
                data, pending = pending + data, b""
                if len(data) < len(BOM) and BOM.startswith(data):
                    pending, data = data, b""  # too few bytes yet to tell
                else:
                    at_start = False
                    if data.startswith(BOM):
                        data = data[len(BOM):]
            if data:
                data = lone_cr.feed(data)
                parts = (pending + data).split(b"\n")
                pending = parts.pop()
                if lineno + len(parts) <= start_line:  # wholly before this range: skip without looking
                    lineno += len(parts)
                    continue
                for line in parts:
                    if end_line is not None and lineno >= end_line:
                        return
                    if lineno >= start_line and line.strip():
                        yield lineno, line
                    lineno += 1
        if decoder.error is not None:
            if lineno >= start_line:
                result["truncation"] = Truncation(lineno, decoder.error)
            return
        chunk = handle.read(CHUNK)
    decoder.close()
    if not decoder.finished():
        if lineno >= start_line:
            result["truncation"] = Truncation(lineno, "compressed stream ends early (truncated file)")
        return
    if at_start and pending == BOM:
        pending = b""
    if pending.strip():
        if lineno >= start_line and (end_line is None or lineno < end_line):
            yield lineno, pending
        lineno += 1
    if decoder.trailing is not None and lineno >= start_line and (end_line is None or lineno < end_line):
        offset, length, zeros = decoder.trailing
        result["trailing"] = Trailing(lineno, offset, length, zeros, decoder.name)


def iter_byte_range(handle, start: int, stop: int):
    """Yield `(line_number, bytes)` for the lines of a plain file that start in bytes [start, stop).

    A task's share of a large uncompressed file: it reads its own bytes (plus the end of its last line),
    and counts the newlines before `start` (a fast scan, no parsing) so that line numbers, and the
    positional ids made from them, are the same however the file is split.
    """
    handle = _LoneCRReader(handle)
    lineno, done = 0, 0
    while done < start:
        chunk = handle.read(min(CHUNK, start - done))
        if not chunk:
            return
        lineno += chunk.count(b"\n")
        done += len(chunk)
        last = chunk[-1:]
    pos, pending, skip = start, b"", 0
    if start > 0 and last != b"\n":  # the line under way belongs to the range before
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                return
            cut = chunk.find(b"\n")
            if cut >= 0:
                pos += cut + 1
                pending, lineno = chunk[cut + 1:], lineno + 1
                break
            pos += len(chunk)
    elif start == 0:
        pending = handle.read(max(CHUNK, len(BOM)))
        skip = len(BOM) if pending.startswith(BOM) else 0  # a byte-order mark: in the first line's bytes, not its text
    line_start = pos
    while True:
        parts = pending.split(b"\n")
        pending = parts.pop()
        for line in parts:
            if line_start >= stop:
                return
            if line[skip:].strip():
                yield lineno, line[skip:]
            lineno += 1
            line_start += len(line) + 1
            skip = 0
        if line_start >= stop:
            return
        chunk = handle.read(CHUNK)
        if not chunk:
            break
        pending += chunk
    if pending[skip:].strip() and line_start < stop:
        yield lineno, pending[skip:]


def estimate_lines(handle, probe: int = CHUNK) -> tuple[str, float, float]:
    """(compression, expansion ratio, uncompressed bytes per line) from a file's first `probe` bytes: how a
    planner sizes the line ranges of a large compressed file without reading all of it."""
    head = handle.read(probe)
    decoder = sniff(head)
    data = b"".join(decoder.feed(head))
    lines = max(1, data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n"))
    ratio = len(data) / max(1, len(head)) if decoder.name != "plain" else 1.0
    return decoder.name, ratio, len(data) / lines
