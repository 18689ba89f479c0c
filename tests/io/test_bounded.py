"""Whole files read with a bound on what they inflate to: every member or frame, a cut-short stream said so."""

import gzip
import io

import pytest
import zstandard

from curate.io.bounded import TooLarge, Unreadable, inflate

TEXT = b"".join(b'{"q": %d}\n' % i for i in range(50000))
KINDS = {"gzip": gzip.compress, "zstd": zstandard.ZstdCompressor().compress, "plain": lambda b: b}


def read(data: bytes, limit: int = 1 << 40, chunk: int = 1 << 20) -> bytes:
    return b"".join(inflate(io.BytesIO(data), limit, chunk))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_members_frames_and_padding_are_read_and_a_cut_stream_is_unreadable(kind):
    pack = KINDS[kind]
    assert read(pack(TEXT)) == TEXT
    assert read(pack(TEXT[:1000]) + pack(TEXT[1000:]), chunk=4096) == TEXT
    if kind != "plain":
        assert read(pack(TEXT) + b"\0" * 7) == TEXT, "zero padding after the last member is not data"
        with pytest.raises(Unreadable, match=f"the {kind} stream ends early"):
            read(pack(TEXT)[:-20])
    with pytest.raises(TooLarge):
        read(pack(TEXT), limit=len(TEXT) - 1)
    assert read(pack(TEXT), limit=len(TEXT)) == TEXT
