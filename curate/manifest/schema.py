"""The manifest's JSON Schema, kept in Python so it ships inside the package (a wheel carries no `manifests/`).

`manifests/manifest.schema.json` is this dict exported by `export()`; a test keeps the two equal. Checks
a schema cannot express (unique file paths, outputs whose files are listed) live here too, so
`write_manifest` and `verify` apply exactly the same rules.
"""

from __future__ import annotations

import json

from curate.errors import CurateError

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
SCHEMA_ID = "https://curate.invalid/manifest.schema.json"

_HEX64 = "^[0-9a-f]{64}$"
# relative POSIX path inside the run: no leading or trailing '/', no '//', no '.' or '..' segment, no '\'
REL_PATH = r"^(?!/)(?!.*/$)(?!.*//)(?!.*\\)(?!(?:.*/)?\.{1,2}(?:/|$)).+$"
_SOURCE = r"^[^/\s]+$"
_COUNT = {"type": "integer", "minimum": 0}
_AMOUNT = {"type": "number", "minimum": 0}
_FRACTION = {"type": "number", "minimum": 0, "maximum": 1}


def _object(properties: dict, required: list[str] | None = None, **extra) -> dict:
    """A closed object: every listed key required (unless `required` says otherwise), nothing else allowed."""
    required = sorted(properties if required is None else required)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False, **extra}


SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "curate run manifest",
    "description": "RUN/manifest.json: what a run produced (files with sizes and sha256), how (pipeline, tokenizer, "
                   "packing, mixture) and with which software. Only created_at may differ between identical runs.",
    **_object({
        "format_version": {"const": FORMAT_VERSION},
        "created_by": {"type": "string", "minLength": 1, "description": "e.g. 'curate 0.1.0'"},
        "created_at": {"type": "string", "format": "date-time",
                       "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$",
                       "description": "ISO 8601 time the manifest was written (the one field that differs between "
                                      "identical runs)"},
        "pipeline": _object({
            "name": {"type": "string", "minLength": 1},
            "hash": {"type": "string", "pattern": _HEX64, "description": "sha256 of the resolved pipeline"},
            "resolved": {"type": "object", "description": "the pipeline after interpolation and defaults"},
        }),
        "tokenizer": _object({
            "name": {"type": "string", "minLength": 1},
            "identity": {"type": "string", "pattern": r"^\S+@sha256:[0-9a-f]{64}$",
                         "description": "name@sha256:<hex> of the tokenizer files"},
            "vocab_size": {"type": "integer", "minimum": 1},
            "eos_id": _COUNT,
            "bos_id": {"type": ["integer", "null"], "minimum": 0},
        }),
        "seq_len": {"type": "integer", "minimum": 1},
        "packing": _object({
            "method": {"enum": ["best_fit", "concat", "none"]},
            "density": _FRACTION,
            "split_share": _FRACTION,
            "sequences": _COUNT,
        }),
        "mixture": _object({
            "mode": {"enum": ["weights", "tokens", "epochs", "maximize", "none"],
                     "description": "maximize: the tokens per source that give the most effective tokens for total_tokens"},
            "seed": {"type": "integer"},
            "total_tokens": {"type": ["number", "null"], "minimum": 0},
            "effective_tokens": {**_AMOUNT, "description": "the planned mixture's worth in fresh tokens (sum over sources)"},
            "allow_epochs": {**_AMOUNT, "description": "the most epochs of a source the run accepted"},
            "sources": {"type": "object", "propertyNames": {"pattern": _SOURCE},
                        "additionalProperties": _object({
                            "weight": {"type": ["number", "null"], "minimum": 0},
                            "available_tokens": _AMOUNT,
                            "chosen_tokens": _AMOUNT,
                            "epochs": _AMOUNT,
                            "effective_tokens": {**_AMOUNT, "description": "chosen_tokens' worth in fresh tokens: "
                                                 "U + U·R*·(1 - exp(-R/R*)), U available, R = epochs - 1, R* = 15.4 "
                                                 "(Muennighoff et al. 2023); chosen_tokens when epochs <= 1"},
                            "documents": _COUNT,
                            "tokens": _COUNT,
                        }, required=["weight", "available_tokens", "chosen_tokens", "epochs", "documents", "tokens"])},
        }, required=["mode", "seed", "total_tokens", "sources"]),
        "megatron_data_path": {"type": "string", "pattern": r"^\S+ \S+( \S+ \S+)*$",
                               "description": "'w1 prefix1 w2 prefix2 ...' for Megatron's --data-path"},
        "outputs": {"type": "object", "propertyNames": {"pattern": _SOURCE},
                    "additionalProperties": _object({
                        "prefix": {"type": "string", "pattern": REL_PATH,
                                   "description": "path of <prefix>.bin/.idx relative to the run"},
                        "documents": _COUNT,
                        "tokens": _COUNT,
                        "sequences": _COUNT,
                    })},
        "files": {"type": "array", "minItems": 1,
                  "items": _object({
                      "path": {"type": "string", "pattern": REL_PATH, "not": {"const": MANIFEST_NAME},
                               "description": "relative to the run, '/'-separated"},
                      "bytes": _COUNT,
                      "sha256": {"type": "string", "pattern": _HEX64},
                  })},
        "accounting": {"type": "array",
                       "items": _object({
                           "stage": {"type": "string", "minLength": 1},
                           "source": {"type": "string", "minLength": 1},
                           "in": _COUNT,
                           "kept": _COUNT,
                           "removed": {"type": "object", "additionalProperties": _COUNT},
                       })},
        "versions": {"type": "object", "additionalProperties": {"type": "string"},
                     "description": "package -> version of the software that wrote the run"},
        "empty_sources": {"type": "array", "items": {"type": "string", "pattern": _SOURCE},
                          "description": "sources with no tokens, left out of megatron_data_path (an empty .bin "
                                         "cannot be memory-mapped)"},
        "models": {"type": "object", "description": "model name -> what ran it (classify and dual_use steps)",
                   "additionalProperties": _object({
                       "stage": {"type": "string", "minLength": 1},
                       "kind": {"enum": ["fasttext", "hf", "nemo_quality"]},
                       "path": {"type": "string", "minLength": 1},
                       "standin": {"type": "boolean", "description": "a model made with the sample corpus ran instead"},
                       "replaces": {"type": ["string", "null"], "description": "the model a stand-in ran instead of"},
                       "sources": {"type": ["array", "null"], "items": {"type": "string"}},
                       "documents": _COUNT,
                       "seconds": _AMOUNT,
                       "device": {"enum": ["cpu", "gpu"]},
                       "seconds_per_1000": _AMOUNT,
                       "hours_per_billion": _AMOUNT,
                   })},
    }, required=["format_version", "created_by", "created_at", "pipeline", "tokenizer", "seq_len", "packing", "mixture",
                 "megatron_data_path", "outputs", "files", "accounting", "versions"]),
}


def _validator():
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        raise CurateError("checking a manifest needs the jsonschema package (pip install jsonschema)") from None
    return Draft202012Validator(SCHEMA)


def _where(error) -> str:
    return error.json_path if hasattr(error, "json_path") else "$" + "".join(f"[{p!r}]" for p in error.absolute_path)


def problems(manifest) -> list[str]:
    """Every way `manifest` breaks the schema or the cross-field rules, as '$.json.path: what is wrong'."""
    found = [f"{_where(e)}: {e.message}"
             for e in sorted(_validator().iter_errors(manifest), key=lambda e: [str(p) for p in e.absolute_path])]
    if not isinstance(manifest, dict):
        return found
    files = manifest.get("files")
    listed = set()
    if isinstance(files, list):
        for i, entry in enumerate(files):
            path = entry.get("path") if isinstance(entry, dict) else None
            if isinstance(path, str):
                if path in listed:
                    found.append(f"$.files[{i}].path: '{path}' is listed twice")
                listed.add(path)
    outputs = manifest.get("outputs")
    if isinstance(outputs, dict) and isinstance(files, list):
        for source, out in sorted(outputs.items()):
            prefix = out.get("prefix") if isinstance(out, dict) else None
            if isinstance(prefix, str):
                for suffix in (".bin", ".idx"):
                    if prefix + suffix not in listed:
                        found.append(f"$.outputs.{source}.prefix: '{prefix}{suffix}' is not listed in $.files")
    return found


def check(manifest, what: str) -> None:
    """Raise CurateError naming every problem (with its JSON path) if `manifest` is not valid."""
    found = problems(manifest)
    if found:
        shown = "\n  ".join(found[:20]) + (f"\n  ... and {len(found) - 20} more" if len(found) > 20 else "")
        raise CurateError(f"{what} is not a valid manifest:\n  {shown}")


def dumps(manifest: dict) -> bytes:
    """The canonical manifest text: sorted keys, indent 1, trailing newline."""
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


def export() -> str:
    """The text of manifests/manifest.schema.json. Regenerate that file with
    python -c "from curate.manifest.schema import export; print(export(), end='')" \\
        > manifests/manifest.schema.json
    """
    return json.dumps(SCHEMA, indent=1, sort_keys=True) + "\n"
