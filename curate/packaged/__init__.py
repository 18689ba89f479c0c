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


def describe(path: Path) -> str:
    """What a recipe file is: the first paragraph of its leading comment (up to a blank line or a bare '#'),
    whole, as one line."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text.startswith("#"):
            if text or words:
                break
            continue
        text = text.lstrip("#").strip()
        if not text:
            if words:
                break
            continue
        words.append(text)
    return " ".join(words)
