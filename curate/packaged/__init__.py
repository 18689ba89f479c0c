"""The recipes that ship with curate: `pipelines/*.yaml` and `filters/*.yaml` of the repository, linked here
so that an installed curate (a wheel, without the repository) can run `curate run zyda2` and find its
filter recipes."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def pipelines() -> dict[str, Path]:
    """Packaged pipeline files by name (`zyda2` -> .../pipelines/zyda2.yaml)."""
    return {p.stem: p for p in sorted((ROOT / "pipelines").glob("*.yaml"))}


def filters_dir() -> Path:
    return ROOT / "filters"


def describe(path: Path, width: int = 76) -> str:
    """The first comment line of a recipe file (what it is), cut to `width` characters."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("# ").strip().rstrip(":,")
            return text if len(text) <= width else text[: width - 3].rstrip() + "..."
        if line.strip():
            break
    return ""
