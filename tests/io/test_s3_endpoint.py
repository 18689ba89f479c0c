"""A process that moves from one S3 server to another (AWS_ENDPOINT_URL changed) reaches the new one: fsspec
caches filesystems by their options, so the endpoint must be one of them (the multinode tests met the old
server's filesystem after the four-node test had stopped it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from loopback import S3Server  # noqa: E402

from curate.io import fs  # noqa: E402


def test_a_second_s3_server_is_reached_after_the_first_has_stopped():
    first = S3Server("bucket-one")
    try:
        fs.write_bytes("s3://bucket-one/a.txt", b"one")
        old, _ = fs.filesystem("s3://bucket-one/a.txt")
    finally:
        first.stop()
    second = S3Server("bucket-two")   # makes its bucket through fs.filesystem: fails on the stale endpoint
    try:
        new, _ = fs.filesystem("s3://bucket-two")
        assert new is not old and new.ls("bucket-two") == [] and not fs.exists("s3://bucket-two/a.txt")
        assert fs.filesystem("s3://bucket-two")[0] is new   # still one filesystem per endpoint, not one per call
    finally:
        second.stop()


def test_an_endpoint_in_the_storage_options_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    store, _ = fs.filesystem("s3://b/x", {"client_kwargs": {"endpoint_url": "http://127.0.0.1:2"}})
    assert store.client_kwargs["endpoint_url"] == "http://127.0.0.1:2" and not getattr(store, "endpoint_url", None)
    store, _ = fs.filesystem("s3://b/x")
    assert store.endpoint_url == "http://127.0.0.1:1"
