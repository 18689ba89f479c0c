"""Kind `fasttext`: a supervised fastText classifier (`.bin`, or quantized `.ftz`).

Scoring goes through fastText's own C++ multi-line predictor (`f.multilinePredict`, the code under
fastText's list `predict`, which is not the numpy-2-broken single-line wrapper): one call per Arrow
batch, each line ending in "\n" exactly as the single-line API and the CLI read it, so the results are
those of fastText's per-line `predict`. Newlines inside a text become spaces (DCLM, RedPajama-V2).
fastText predicts on one core and holds the GIL; scale out with more actors, not threads.

`check_model` reads only the file header (magic, version, arguments, dictionary) to validate the kind
of model and a requested `label` without loading multi-GB input matrices.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.models.output import Outputs
from curate.models.spec import ModelSpec

MAGIC, VERSION = 793712314, 12
SUPERVISED = 3
_CHUNK = 1 << 22


def read_header(path: str | Path) -> dict:
    """{model, loss, dim, word_ngrams, nwords, labels} from a fastText `.bin`/`.ftz` header.

    The dictionary's labels sort after its words, so every entry up to the labels is walked (about a
    second per million words); the input matrix after the dictionary is never read.
    """
    with open(path, "rb") as fh:
        head = fh.read(8 + 56 + 28)
        if len(head) < 8 + 56 + 28:
            raise ValueError("not a fastText model (file too short)")
        magic, version = struct.unpack_from("<ii", head, 0)
        if magic != MAGIC:
            raise ValueError("not a fastText model (bad magic number)")
        if version > VERSION:
            raise ValueError(f"fastText file format version {version} is newer than this fastText reads")
        dim, _ws, _epoch, _mc, _neg, ngrams, loss, model = struct.unpack_from("<8i", head, 8)
        size, nwords, nlabels, _ntokens, _prune = struct.unpack_from("<iiiqq", head, 64)
        buf, pos, entries = b"", 0, []
        for i in range(size):
            end = buf.find(b"\0", pos)
            while end < 0 or end + 10 > len(buf):
                more = fh.read(_CHUNK)
                if not more:
                    raise ValueError("not a fastText model (dictionary cut short)")
                buf, pos = buf[pos:] + more, 0
                end = buf.find(b"\0", pos)
            if i >= nwords:
                entries.append(buf[pos:end].decode("utf-8", "replace"))
            pos = end + 10  # '\0', int64 count, int8 type
    return {"model": model, "loss": loss, "dim": dim, "word_ngrams": ngrams, "nwords": nwords,
            "nlabels": nlabels, "labels": entries}


def _resolve_label(label: str | None, labels: list[str], prefix: str = "__label__") -> str | None:
    """A requested label given with or without the `__label__` prefix -> the bare name."""
    if label is None:
        return None
    bare = label.removeprefix(prefix)
    if bare not in labels:
        raise ValueError(f"label {label!r} is not one of the model's labels: {', '.join(labels[:20])}"
                         + (" ..." if len(labels) > 20 else ""))
    return bare


def check_fasttext(spec: ModelSpec) -> list[str]:
    path = Path(spec.path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"no such file: {spec.path}")
    if not path.is_file():
        raise ValueError("expected a fastText .bin/.ftz file, got a directory")
    header = read_header(path)
    if header["model"] != SUPERVISED:
        raise ValueError("not a supervised (classifier) fastText model: word vectors cannot score text")
    labels = [lb.removeprefix("__label__") for lb in header["labels"]]
    _resolve_label(spec.label, labels)
    return labels


class FastTextModel:
    """fastText scores: `NAME_score` (top-label or `label` probability) and `NAME_label` (top label)."""

    device = "cpu"

    def __init__(self, spec: ModelSpec, model):
        self.spec, self.model = spec, model
        args = model.f.getArgs()
        if args.model.name not in ("supervised", "sup"):
            raise ValueError("not a supervised (classifier) fastText model: word vectors cannot score text")
        self.prefix = args.label
        raw = list(model.get_labels())
        self._raw_labels = pa.array(raw, pa.string())
        self.labels = [lb.removeprefix(self.prefix) for lb in raw]
        self.label = _resolve_label(spec.label, self.labels, self.prefix)
        self.outputs = Outputs(spec.name, labels=self.labels)
        self._predict = model.f.multilinePredict

    def output_schema(self) -> pa.Schema:
        return self.outputs.schema

    def score(self, texts) -> pa.Table:
        from curate.models.encoder import non_null_texts

        texts, valid, n = non_null_texts(texts)
        if len(valid) == 0:
            return self.outputs.empty(n)
        if self.spec.max_chars is not None:
            texts = pc.utf8_slice_codeunits(texts, 0, self.spec.max_chars)
        lines = pc.binary_join_element_wise(pc.replace_substring(texts, "\n", " "), "", "\n")
        k = len(self.labels) if self.label is not None else 1
        labels, probs = self._predict(lines.to_pylist(), k, 0.0, "replace")
        top = pc.index_in(pa.array([lb[0] for lb in labels], pa.string()), value_set=self._raw_labels)
        if self.label is None:
            score = np.concatenate(probs).astype(np.float64)
        else:
            want = self.prefix + self.label
            score = np.array([p[lb.index(want)] for lb, p in zip(labels, probs)], dtype=np.float64)
        return self.outputs.from_predictions(n, valid, score, top.to_numpy(zero_copy_only=False))
