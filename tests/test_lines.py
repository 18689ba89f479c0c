"""Streaming lines out of plain, gzip and zstd files, with truncation reported instead of raised."""

import gzip
import io

import zstandard

from curate.io.lines import iter_lines


def _lines(data: bytes):
    result = {}
    out = [(n, line) for n, line in iter_lines(io.BytesIO(data), result)]
    return out, result.get("truncation")


def test_plain_gzip_and_zstd_give_the_same_lines():
    raw = b'{"a": 1}\n{"a": 2}\n\n{"a": 3}'
    plain, _ = _lines(raw)
    assert plain == [(0, b'{"a": 1}'), (1, b'{"a": 2}'), (3, b'{"a": 3}')]
    assert _lines(gzip.compress(raw, mtime=0)) == (plain, None)
    assert _lines(zstandard.ZstdCompressor().compress(raw)) == (plain, None)


def test_extension_is_not_trusted_magic_bytes_are():
    # a ".zst" file that is really plain JSONL, as in Dolma's test data
    assert _lines(b'{"x": 1}\n')[0] == [(0, b'{"x": 1}')]


def test_multi_member_gzip_and_multi_frame_zstd():
    assert [l for _, l in _lines(gzip.compress(b"a\nb\n") + gzip.compress(b"c\n"))[0]] == [b"a", b"b", b"c"]
    z = zstandard.ZstdCompressor()
    assert [l for _, l in _lines(z.compress(b"a\n") + z.compress(b"b\n"))[0]] == [b"a", b"b"]


def test_truncated_gzip_recovers_complete_lines_and_reports_truncation():
    raw = b"".join(b'{"i": %d, "pad": "%s"}\n' % (i, b"x" * 50) for i in range(2000))
    data = gzip.compress(raw, mtime=0)
    lines, trunc = _lines(data[: len(data) // 2])
    assert trunc is not None and "truncated" in trunc.cause
    assert 0 < len(lines) < 2000
    assert all(line.endswith(b"}") for _, line in lines), "the partial last line must not be yielded"
    assert trunc.line == len(lines)


def test_truncated_zstd_is_reported():
    raw = b"".join(b"line %d\n" % i for i in range(5000))
    data = zstandard.ZstdCompressor().compress(raw)
    lines, trunc = _lines(data[: len(data) - 10])
    assert trunc is not None
    assert len(lines) < 5000
