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


# --- issue 13: trailing bytes, multi-member streams, corruption mid-stream, byte-order mark ---

import pytest

import curate.io.lines as lines_mod

TEN = b"".join(b'{"i": %d}\n' % i for i in range(10))


def _run(data: bytes):
    result = {}
    out = [line for _, line in iter_lines(io.BytesIO(data), result)]
    return out, result


@pytest.mark.parametrize("tail, zeros", [(b"this is not gzip\n", False), (b"\0" * 4096, True), (b"\x1f", False)])
def test_gzip_with_trailing_bytes_reads_every_line_and_reports_the_bytes_once(tail, zeros):
    data = gzip.compress(TEN, mtime=0)
    out, result = _run(data + tail)
    assert out == TEN.split(b"\n")[:-1], "zcat reads all 10 lines; so must we"
    assert "truncation" not in result
    trailing = result["trailing"]
    assert (trailing.offset, trailing.length, trailing.zeros, trailing.line) == (len(data), len(tail), zeros, 10)
    assert str(len(tail)) in trailing.describe() and "gzip" in trailing.describe()


def test_zstd_with_trailing_bytes_and_a_skippable_frame():
    z = zstandard.ZstdCompressor()
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"skip"
    data = z.compress(TEN[:40]) + skippable + z.compress(TEN[40:])
    out, result = _run(data + b"\0\0\0\0\0")
    assert out == TEN.split(b"\n")[:-1]
    assert "truncation" not in result
    assert (result["trailing"].offset, result["trailing"].length, result["trailing"].zeros) == (len(data), 5, True)
    out, result = _run(data)
    assert out == TEN.split(b"\n")[:-1] and result == {}


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_member_boundaries_and_trailing_bytes_anywhere_in_the_read_chunks(monkeypatch, chunk):
    monkeypatch.setattr(lines_mod, "CHUNK", chunk)
    members = gzip.compress(TEN[:33], mtime=0) + gzip.compress(TEN[33:], mtime=0)
    out, result = _run(members)
    assert out == TEN.split(b"\n")[:-1] and result == {}
    out, result = _run(members + b"\x1fjunk")
    assert out == TEN.split(b"\n")[:-1] and "truncation" not in result
    assert (result["trailing"].offset, result["trailing"].length) == (len(members), 5)
    out, result = _run(b"\xef\xbb\xbf" + TEN)
    assert out == TEN.split(b"\n")[:-1] and result == {}


def test_a_truncated_second_member_keeps_the_first_and_reports_truncation():
    first, second = gzip.compress(TEN[:40], mtime=0), gzip.compress(TEN[40:], mtime=0)
    out, result = _run(first + second[: len(second) // 2])
    assert out[: TEN[:40].count(b"\n")] == TEN[:40].split(b"\n")[:-1]
    assert "truncated" in result["truncation"].cause and "trailing" not in result


def test_corruption_in_the_middle_keeps_the_lines_before_it():
    raw = b"".join(b'{"i": %d, "r": "%s"}\n' % (i, b"%x" % (i * 7919 % 104729) * 20) for i in range(40000))
    data = bytearray(gzip.compress(raw, mtime=0))
    cut = len(data) * 3 // 4
    data[cut:cut + 64] = bytes(range(64))
    out, result = _run(bytes(data))
    assert "corrupt" in result["truncation"].cause
    assert len(out) > 20000, "lines decoded before the corrupt bytes are kept, not lost with their read chunk"
    assert out == raw.split(b"\n")[: len(out)]
    assert result["truncation"].line == len(out)


def test_a_leading_byte_order_mark_is_dropped_plain_gzip_and_zstd():
    with_bom = b"\xef\xbb\xbf" + TEN
    for data in (with_bom, gzip.compress(with_bom, mtime=0), zstandard.ZstdCompressor().compress(with_bom)):
        out, result = _run(data)
        assert out[0] == b'{"i": 0}' and len(out) == 10 and result == {}
    assert _run(b"\xef\xbb\xbf")[0] == []


# --- issue 28: a lone CR ends a line (universal newlines), however the file is read or split ---

from curate.io.lines import iter_byte_range  # noqa: E402

CR_FILE = b'\xef\xbb\xbf{"i": 0}\r{"i": 1}\r\r{"i": 2}\r\n{"i": 3}\n{"i": 4}\r'
CR_LINES = [(0, b'{"i": 0}'), (1, b'{"i": 1}'), (3, b'{"i": 2}\r'), (4, b'{"i": 3}'), (5, b'{"i": 4}')]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 4 << 20])
def test_lone_cr_ends_a_line_plain_gzip_and_zstd(monkeypatch, chunk):
    monkeypatch.setattr(lines_mod, "CHUNK", chunk)
    for data in (CR_FILE, gzip.compress(CR_FILE, mtime=0), zstandard.ZstdCompressor().compress(CR_FILE)):
        result = {}
        assert list(iter_lines(io.BytesIO(data), result)) == CR_LINES and result == {}
    # a CRLF file reads as it always did: each line keeps its CR, the numbers are those of its LFs
    crlf = b'{"i": 0}\r\n{"i": 1}\r\n'
    assert list(iter_lines(io.BytesIO(crlf), {})) == [(0, b'{"i": 0}\r'), (1, b'{"i": 1}\r')]


@pytest.mark.parametrize("chunk", [1, 2, 4 << 20])
def test_byte_ranges_of_a_cr_file_give_each_line_once_with_its_number(monkeypatch, chunk):
    monkeypatch.setattr(lines_mod, "CHUNK", chunk)
    data = CR_FILE + b'{"i": 5}\r\n\r{"i": 6}'
    whole = list(iter_lines(io.BytesIO(data), {}))
    assert whole[-2:] == [(6, b'{"i": 5}\r'), (8, b'{"i": 6}')]
    for cut in range(len(data) + 1):
        parts = list(iter_byte_range(io.BytesIO(data), 0, cut)) + list(iter_byte_range(io.BytesIO(data), cut, 1 << 62))
        assert parts == whole, f"split at byte {cut}"


def test_a_jsonl_file_with_lone_cr_line_ends_reads_as_records(tmp_path):
    from conftest import run_cli
    import duckdb

    src = tmp_path / "mac.jsonl"
    src.write_bytes(b"".join(b'{"id": "d%d", "text": "doc %d"}\r' % (i, i) for i in range(5)))
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  s: {{format: jsonl, paths: '{src}'}}\nstages:\n  ingest: {{}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") == 0
    kept = duckdb.sql(f"SELECT id, text FROM read_parquet('{tmp_path}/run/kept/*/*.parquet') ORDER BY id").fetchall()
    assert kept == [(f"s/mac.jsonl/{i}", f"doc {i}") for i in range(5)], "five records on five lines, not one bad record"
