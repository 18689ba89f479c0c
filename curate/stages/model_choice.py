"""The models of a classify step as the run will use them: spec, sources, resources, and the sample's stand-in.

On the quickstart sample (curate's own offline corpus) a model may name a `standin`, a small model made
with the sample, used instead of the real one (which the sample cannot reach offline); the summary,
the stage record and the manifest say so.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

from curate.common.schema import Field
from curate.io import fs
from curate.models.spec import KINDS, WINDOWS, ModelLoadError, ModelSpec
from curate.stages.resources import RESOURCE_OPTIONS, Resources

STANDIN_OPTIONS = {"kind": Field((str,), choices=list(KINDS)), "path": Field((str,)),
                   "label": Field((str,), default=None, nullable=True)}
MODEL_OPTIONS = {
    "kind": Field((str,), choices=list(KINDS), doc="fasttext, hf (AutoModelForSequenceClassification), nemo_quality"),
    "path": Field((str,), doc="a local file or folder, or a Hugging Face Hub name"),
    "sources": Field((list,), default=None, nullable=True, item=Field((str,)), doc="sources it scores (default: all)"),
    "label": Field((str,), default=None, nullable=True, doc="score = probability of this label (default: the top label's)"),
    "max_chars": Field((int,), default=None, nullable=True, min=1, max=1 << 30, doc="cut texts to this many characters first"),
    "max_tokens": Field((int,), default=None, nullable=True, min=2, max=1 << 24, doc="tokens per sequence (default: the model's limit)"),
    "windows": Field((str,), default="truncate", choices=list(WINDOWS), doc="max: score overlapping windows, keep the highest"),
    "batch_tokens": Field((int,), default=None, nullable=True, min=1, max=1 << 30,
                          doc="padded tokens per inference batch (default: 65,536 on a GPU, 2,048 on a CPU)"),
    "batch_docs": Field((int,), default=32768, min=1, max=1 << 24, doc="documents sorted by length and scored together"),
    "dtype": Field((str,), default="auto", doc="auto: bf16 autocast on GPUs, fp32 on CPUs"),
    "resources": Field((dict,), default=dict, keys=RESOURCE_OPTIONS, doc="Ray resources per model actor"),
    "standin": Field((dict,), default=None, nullable=True, keys=STANDIN_OPTIONS,
                     doc="the model to use instead on curate's offline sample corpus"),
}


@dataclass(frozen=True)
class ModelChoice:
    name: str
    spec: ModelSpec
    sources: tuple | None
    resources: Resources
    batch_docs: int
    replaces: str | None = None  # the real model's path, when `spec` is the sample's stand-in

    def applies_to(self, source: str) -> bool:
        return self.sources is None or source in self.sources

    def check(self) -> list[str]:
        """Cheap checks of the model (no weights loaded); its labels."""
        from curate.models.load import check_model

        with self._named():
            return check_model(self._local())

    def load(self):
        from curate.models.load import load_model

        with self._named():
            return load_model(self._local(), device="auto", threads=max(1, int(self.resources.cpus)))

    def _local(self) -> ModelSpec:
        """The spec with a model in object storage (s3://...) replaced by this node's cached copy."""
        if "://" not in self.spec.path:
            return self.spec
        try:
            return replace(self.spec, path=fs.local_copy(self.spec.path))
        except FileNotFoundError:
            raise ModelLoadError.of(self.spec, f"no such file or folder: {self.spec.path}") from None
        except OSError as exc:
            raise ModelLoadError.of(self.spec, exc) from None

    @contextmanager
    def _named(self):
        """Errors name the model's path as the user wrote it, not this node's cached copy."""
        try:
            yield
        except ModelLoadError as exc:
            if exc.path == self.spec.path:
                raise
            raise ModelLoadError(exc.name, exc.kind, self.spec.path, exc.cause) from None

    def fingerprint(self) -> dict:
        """What the scores depend on: the spec, the sources, and the model's files (size, mtime)."""
        return {"spec": asdict(self.spec), "sources": self.sources, "files": _file_identity(self.spec.path)}

    def describe_json(self) -> dict:
        return {"kind": self.spec.kind, "path": self.spec.path, "standin": self.replaces is not None,
                "replaces": self.replaces, "sources": list(self.sources) if self.sources else None}

    def cost(self, results: list[dict]) -> dict:
        """Documents scored, seconds, and the projection to a billion documents in CPU- or GPU-hours."""
        docs = sum(r["scored"] for r in results)
        seconds = sum(r["seconds"] for r in results)
        on_gpu = any(str(r.get("device", "cpu")).startswith("cuda") for r in results)
        units = (self.resources.gpus or 1) if on_gpu else max(self.resources.cpus, 1)
        per_doc = seconds / docs if docs else 0.0
        return {"documents": docs, "seconds": round(seconds, 3), "device": "gpu" if on_gpu else "cpu",
                "seconds_per_1000": round(per_doc * 1000, 4), "hours_per_billion": round(per_doc * 1e9 / 3600 * units, 1)}

    def describe(self, cost: dict) -> str:
        model = f"{self.spec.kind} {self.spec.path}"
        if self.replaces:
            model += f", the sample's STAND-IN for {self.replaces}"
        unit = "GPU" if cost["device"] == "gpu" else "CPU"
        return (f"model {self.name} ({model}) scored {cost['documents']:,} documents in {cost['seconds']:.1f}s on "
                f"{unit}: {cost['seconds_per_1000']:.3f}s per 1,000, {cost['hours_per_billion']:,.0f} {unit}-hours per billion")


def choose_models(options: dict) -> dict[str, ModelChoice]:
    """The step's models as this run uses them (a stand-in replaces a model: kept at load on the sample corpus only)."""
    return {name: model_choice(name, m) for name, m in options.items()}


def model_choice(name: str, m: dict) -> ModelChoice:
    """One model (options as MODEL_OPTIONS) as this run uses it: its stand-in when the options still name one."""
    standin = m["standin"] or None
    kind, path, label = (standin["kind"], standin["path"], standin["label"]) if standin else (m["kind"], m["path"], m["label"])
    spec = ModelSpec(name, kind, path, label, m["max_chars"], m["max_tokens"],
                     m["windows"] if kind != "fasttext" else "truncate", m["batch_tokens"], m["dtype"])
    resources = Resources(actor=True) if standin else Resources.from_options(m["resources"], actor=True)  # a stand-in is small
    return ModelChoice(name, spec, tuple(m["sources"]) if m["sources"] else None, resources, m["batch_docs"],
                       m["path"] if standin else None)


def _file_identity(path: str) -> list:
    if "://" in path:  # object storage: each file's size and version (ETag), read from the store
        try:
            return [(f.relative, f.size, f.version) for f in fs.expand(path)]
        except OSError:
            return []  # unreachable or absent: the model check says so in one line
    if not os.path.exists(path):
        return []  # a Hub name: its revision is in the cache, and the spec names it
    files = [path] if os.path.isfile(path) else sorted(os.path.join(path, f) for f in os.listdir(path))
    return [(os.path.basename(f), os.path.getsize(f), int(os.path.getmtime(f))) for f in files if os.path.isfile(f)]
