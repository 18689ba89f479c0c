"""Are two run directories' outputs byte-identical? Lists the files that differ; exit 1 if any do.

Compares the sha256 of every file under the two runs except what records how and when a run went
(`_state/`, `_work/`, `logs/`, `report.html`, `summary.json`, `pipeline.yaml`, whose header and `output`
name the run's own path, also left out of the manifest's list), and the manifest's list of files with their
hashes (not its creation time). What is
compared is what a consumer reads: docs/, kept/, ledger/, tokens/, edits/, every step's table (RUN/<step>/),
quarantine/ and the manifest's file list.

    python bench/compare_runs.py RUN_BEFORE RUN_AFTER
    python bench/compare_runs.py OLD NEW --rename tokens/docs/=tokenize/ --rename tokens/=pack/   # paths that moved
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

SKIP_DIRS = ("_state", "_work", "logs")
SKIP_FILES = ("report.html", "summary.json", "pipeline.yaml", "manifest.json")


def renamed(path: str, renames: list[tuple[str, str]]) -> str:
    """`path` with the first matching old prefix replaced by its new one (a layout that moved between versions)."""
    for old, new in renames:
        if path.startswith(old):
            return new + path[len(old):]
    return path


def digests(root: str, renames: list[tuple[str, str]] = ()) -> dict[str, str]:
    """Relative path -> sha256 of every compared file under `root` (the manifest's file list as one entry), paths
    under an old prefix of `renames` named by the new one."""
    out = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            files = [f for f in files if f not in SKIP_FILES]
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                out[renamed(os.path.normpath(os.path.join(rel, name)), renames)] = hashlib.file_digest(handle, "sha256").hexdigest()
    manifest = os.path.join(root, "manifest.json")
    if os.path.exists(manifest):
        with open(manifest) as handle:
            files = [{**f, "path": renamed(f["path"], renames)} for f in json.load(handle).get("files") or []
                     if f.get("path") not in SKIP_FILES]   # pipeline.yaml: see above
            files.sort(key=lambda f: f["path"])
        out["manifest.json:files"] = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return out


def compare(before: str, after: str, renames: list[tuple[str, str]] = ()) -> list[str]:
    """The files that differ, are only in `before` (`-`) or only in `after` (`+`), sorted; `renames` apply to `before`."""
    a, b = digests(before, renames), digests(after)
    out = []
    for path in sorted(set(a) | set(b)):
        if path not in b:
            out.append(f"- {path}")
        elif path not in a:
            out.append(f"+ {path}")
        elif a[path] != b[path]:
            out.append(f"~ {path}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="a path prefix of BEFORE that AFTER names otherwise (a folder that moved)")
    args = parser.parse_args(argv)
    renames = [tuple(r.split("=", 1)) for r in args.rename]
    for root in (args.before, args.after):
        if not os.path.isdir(root):
            print(f"{root}: not a directory", file=sys.stderr)
            return 2
    differ = compare(args.before, args.after, renames)
    for line in differ:
        print(line)
    print(f"{len(digests(args.before))} files compared; " + (f"{len(differ)} differ" if differ else "identical"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
