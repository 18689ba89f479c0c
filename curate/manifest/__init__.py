"""Run manifests: record what a run produced (write_manifest), check a run against it (verify), and copy a
verified run to its final home with the manifest written last (publish)."""

from .build import write_manifest
from .publish import publish
from .schema import FORMAT_VERSION, MANIFEST_NAME, SCHEMA
from .verify import verify

__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "SCHEMA", "publish", "verify", "write_manifest"]
