"""Load a pipeline YAML: safe parsing, `${VAR:-default}`, `--set` overrides, validation, resolution."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from curate.config.chain import check_chain, final_last
from curate.config.derive import derive_defaults
from curate.config.interpolate import interpolate
from curate.common.schema import SEED_MAX, Field, check, check_finite, check_mapping, describe, suggest
from curate.common.yaml_strict import AliasBombError, DuplicateKeyError, one_line
from curate.common.yaml_strict import load as strict_yaml
from curate.errors import ConfigError

RESERVED_STAGE_NAMES = {"kept"}
STEP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def _formats():
    from curate.readers import FORMATS
    from curate.readers.base import plugin_readers

    plugin_readers()
    return sorted(FORMATS)


SOURCE_KEYS = {
    "format": Field((str,), choices=_formats, doc="the native format of the files"),
    "paths": Field((str, list), item=Field((str,)), doc="files or globs: local, s3://, gs://, hf://"),
    "fields": Field((dict,), default=dict, doc="our field -> the source's field, e.g. {text: content}",
                    keys={k: Field((str,), default=None, nullable=True) for k in ("text", "id", "url")}),
    "columns": Field((list,), default=None, item=Field((str,)), nullable=True, doc="columns to keep (parquet projection); all when null"),
    "storage_options": Field((dict,), default=dict, doc="fsspec options, e.g. {anon: true}"),
}

EXECUTION_KEYS = {
    "workers": Field((int,), default=None, min=1, max=1_000_000, nullable=True, doc="tasks in flight; default: CPUs of the cluster"),
    "max_bad_fraction": Field((float,), default=0.5, min=0.0, max=1.0, doc="fail when a shard has more bad records than this"),
    "task_size_mb": Field((int,), default=256, min=1, max=1 << 20, doc="split Parquet files into tasks of about this many MB"),
    "batch_rows": Field((int,), default=8192, min=1, max=1 << 24, doc="rows per Arrow batch inside a task (bounds memory)"),
    "retries": Field((int,), default=3, min=0, max=100, doc="retries of a task whose worker died"),
    "task_memory_mb": Field((int,), default=None, min=1, max=1 << 24, nullable=True, doc="memory Ray reserves per task"),
    "fingerprint": Field((str,), default="stat", choices=["stat", "content"],
                         doc="how a changed input is recognised: size and modification time (or ETag), or a hash of its bytes"),
    "shared_fs": Field((bool,), default=False,
                       doc="local paths are on a file system every node mounts (NFS, Lustre): allowed on a multi-node cluster"),
    "env": Field((list,), default=list, item=Field((str,)),
                 doc="environment variables the driver forwards to every Ray worker, for nodes that lack them (credentials)"),
}

SAMPLE_KEYS = {
    "dir": Field((str,), doc="where the quickstart corpus is made"),
    "docs": Field((int,), default=4000, min=10, max=10_000_000),
    "seed": Field((int,), default=0, min=0, max=SEED_MAX),
}

TOP_KEYS = {
    "name": Field((str,)),
    "output": Field((str,), default=None, nullable=True),
    "sample": Field((dict,), default=None, nullable=True, keys=SAMPLE_KEYS),
    "priority": Field((list,), default=None, nullable=True, item=Field((str,)), doc="source names, highest priority first"),
    "sources": Field((dict,), item=Field((dict,), keys=SOURCE_KEYS)),
    "execution": Field((dict,), default=dict, keys=EXECUTION_KEYS),
    "stages": Field((dict,), doc="stage name -> options, in order"),
    "plugins": Field((list,), default=None, nullable=True, item=Field((str,)),
                     doc="modules to import before the stages are resolved (your own stages, readers); the pipeline file's folder is searched first"),
}


@dataclass
class Source:
    name: str
    format: str
    paths: list[str]
    fields: dict
    columns: list[str] | None
    storage_options: dict


@dataclass
class StageConfig:
    name: str   # unique step name in this pipeline
    kind: str   # which stage implementation (`use:`), defaults to the name
    options: dict
    upstream: dict = field(default_factory=dict)  # what it needs or uses -> the earlier step providing it
    enabled: bool = True                          # `enabled: false` keeps a step in the file but out of the run


@dataclass
class Pipeline:
    file: str
    name: str
    output: str | None
    sample: dict | None
    priority: list[str]
    sources: dict[str, Source]
    execution: dict
    stages: list[StageConfig]
    resolved: dict = field(repr=False, default_factory=dict)

    def hash(self) -> str:
        """The configuration's identity: where a run is written (`output`) is recorded beside it, not part of it,
        so one recipe run into two folders has one hash."""
        return hashlib.sha256(canonical_json({k: v for k, v in self.resolved.items() if k != "output"}).encode()).hexdigest()

    def stage(self, name: str) -> StageConfig:
        return next(s for s in self.stages if s.name == name)

    @property
    def uses_sample(self) -> bool:
        """Whether a source reads the quickstart corpus (`sample.dir`), which curate makes itself offline."""
        return reads_sample(self.sample, self.sources)


def reads_sample(sample: dict | None, sources: dict[str, Source]) -> bool:
    """Whether some source's paths lie inside `sample.dir`."""
    if not sample:
        return False
    root = os.path.normpath(sample["dir"])
    return any(os.path.normpath(p).startswith(root + os.sep) for s in sources.values() for p in s.paths)


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def parse_override(text: str) -> tuple[list[str], object]:
    """`a.b.c=value` -> (["a","b","c"], value); the value is YAML when it parses as a scalar, list or mapping."""
    if "=" not in text:
        raise ConfigError("--set", text, "expected KEY.PATH=VALUE")
    key, raw = text.split("=", 1)
    try:
        value = strict_yaml(raw) if raw.strip() else raw
    except (DuplicateKeyError, AliasBombError) as exc:
        raise ConfigError("--set", key.strip(), f"invalid YAML: {one_line(exc)}") from None
    except yaml.YAMLError:
        value = raw
    if value is None and raw.strip() not in ("null", "~"):
        value = raw
    return key.strip().split("."), value


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    for text in overrides:
        path, value = parse_override(text)
        node = raw
        for i, part in enumerate(path[:-1]):
            nxt = node.get(part) if isinstance(node, dict) else None
            if nxt is None:
                nxt = node[part] = {}
            if not isinstance(nxt, dict):
                raise ConfigError("--set", ".".join(path[: i + 1]), f"is {type(nxt).__name__}, cannot set a key inside it")
            node = nxt
        node[path[-1]] = value
    return raw


def load_pipeline(path: str | os.PathLike, overrides: list[str] | None, stages: Mapping[str, type]) -> Pipeline:
    """Read, interpolate, override and validate a pipeline file against the stage registry `stages`;
    every problem is one ConfigError line."""
    file = str(path)
    try:
        text = Path(file).read_text()
    except FileNotFoundError:
        raise ConfigError(file, "", "no such pipeline file") from None
    except IsADirectoryError:
        raise ConfigError(file, "", "is a directory, expected a YAML pipeline file") from None
    try:
        raw = strict_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(file, "", f"invalid YAML: {one_line(exc)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(file, "", "expected a mapping at the top level (name, sources, stages, ...)")
    raw = apply_overrides(interpolate(raw, file), overrides or [])
    return validate(raw, file, stages)


def validate(raw: dict, file: str, registry: Mapping[str, type]) -> Pipeline:
    check_finite(raw, file)
    load_plugins(raw, file)
    top = check_mapping(raw, TOP_KEYS, file, "")
    if not top["sources"]:
        raise ConfigError(file, "sources", "expected at least one source")
    for name in top["sources"]:
        if not str(name).replace("_", "").replace("-", "").isalnum():
            raise ConfigError(file, f"sources.{name}", "source names are letters, digits, '_' and '-' (they name directories)")
    sources = {name: Source(name=name, **spec) for name, spec in top["sources"].items()}
    from curate.readers.base import unknown_kind  # the readers register their kinds on import

    for s in sources.values():
        if not s.paths:
            raise ConfigError(file, f"sources.{s.name}.paths", "expected at least one path or glob")
        if problem := unknown_kind(s.format):
            raise ConfigError(file, f"sources.{s.name}.format", problem)
    priority = top["priority"] or list(sources)
    unknown = [p for p in priority if p not in sources]
    if unknown:
        raise ConfigError(file, "priority", f"'{unknown[0]}' is not a source; sources are {', '.join(sources)}")
    missing = [s for s in sources if s not in priority]
    if missing or len(set(priority)) != len(priority):
        raise ConfigError(file, "priority", "expected each source exactly once, highest first; missing or repeated: "
                          f"{', '.join(missing) or 'repeated names'}")
    steps = _validate_stages(top["stages"], sources, file, registry)
    stages = final_last([s for s in steps if s.enabled], registry)
    check_chain(stages, registry, file, sources)
    derive_defaults(stages, registry, file, reads_sample(top["sample"], sources))
    execution = top["execution"]
    resolved = {**{k: v for k, v in top.items() if k != "plugins" or v}, "priority": priority,
                "stages": {s.name: {"use": s.kind, **({} if s.enabled else {"enabled": False}), **s.options} for s in steps}}
    return Pipeline(file=file, name=top["name"], output=top["output"], sample=top["sample"], priority=priority,
                    sources=sources, execution=execution, stages=stages, resolved=resolved)


def load_plugins(raw: dict, file: str) -> None:
    """Before any name is resolved: import the file's `plugins:` and installed packages' entry points, whose
    modules register their stages, readers and token formats (`curate.plugins`)."""
    from curate.plugins import import_modules, load_all

    import_modules(check(raw.get("plugins"), TOP_KEYS["plugins"], file, "plugins") or [], file)
    load_all()


def _validate_stages(raw_stages: dict, sources: dict, file: str, registry: Mapping[str, type]) -> list[StageConfig]:
    out = []
    for name, options in raw_stages.items():
        key = f"stages.{name}"
        options = {} if options is None else options
        if not isinstance(options, dict):
            raise ConfigError(file, key, f"expected a mapping of options (or {{}}), got {type(options).__name__}")
        if not isinstance(name, str) or not STEP_NAME.fullmatch(name):
            raise ConfigError(file, key, "a step name names folders of the run: letters, digits, '_' and '-', starting with a letter "
                                         "or digit (e.g. quality_filter)")
        if name in RESERVED_STAGE_NAMES:
            raise ConfigError(file, key, f"'{name}' is reserved for the final output; choose another stage name")
        enabled = options.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(file, f"{key}.enabled", f"expected true or false, got {describe(enabled)}")
        kind = options.get("use", name)
        if kind not in registry:
            what = f"{key}.use" if "use" in options else key
            raise ConfigError(file, what, f"unknown stage '{kind}'{suggest(kind, list(registry))}; stages are {', '.join(sorted(registry))}"
                              + ("" if "use" in options else " (or give this step a `use:` naming one)"))
        stage_cls = registry[kind]
        opts = check_mapping({k: v for k, v in options.items() if k not in ("use", "enabled")}, stage_cls.OPTIONS, file, key)
        stage_cls.validate_options(opts, sources, file, key)
        out.append(StageConfig(name=name, kind=kind, options=opts, enabled=enabled))
    if not out or out[0].kind != "ingest":
        raise ConfigError(file, "stages", "the first stage must be 'ingest' (it reads the sources)")
    if sum(s.kind == "ingest" for s in out) > 1:
        raise ConfigError(file, "stages", "only one 'ingest' stage is allowed")
    return out
