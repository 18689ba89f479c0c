"""The columns a model writes, built from whole arrays of logits or predictions at once.

Every kind writes `NAME_score` (float64); classifiers add `NAME_label` (top label); multi-class
transformer heads add `NAME_prob_<label>` per class; one-logit regression heads add `NAME_int_score`
(FineWeb-Edu's rule: round(clamp(score, 0, 5)), halves to even as Python's `round`). A null input text
gets nulls in every column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.models.spec import sanitize_label

INT_SCORE_RANGE = (0.0, 5.0)


class Outputs:
    """Schema and table builder for one model's columns."""

    def __init__(self, name: str, *, labels: list[str] | None = None, regression: bool = False,
                 probs: bool = False, label: str | None = None):
        self.name = name
        self.labels = list(labels) if labels is not None else None
        self.regression = regression
        self.probs = probs and not regression
        self.label_index = None
        if label is not None and self.labels is not None:
            self.label_index = self.labels.index(label)
        self.prob_columns = [f"{name}_prob_{sanitize_label(lb)}" for lb in self.labels] if self.probs else []
        if len(set(self.prob_columns)) != len(self.prob_columns):
            raise ValueError(f"labels {self.labels} collide once made column names "
                             f"({', '.join(self.prob_columns)})")
        fields = [pa.field(f"{name}_score", pa.float64())]
        if regression:
            fields.append(pa.field(f"{name}_int_score", pa.int64()))
        else:
            fields.append(pa.field(f"{name}_label", pa.string()))
            fields += [pa.field(c, pa.float64()) for c in self.prob_columns]
        self.schema = pa.schema(fields)

    # ---- transformer heads: logits [rows, classes] ----

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        z = logits.astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        return z

    def row_scores(self, logits: np.ndarray) -> np.ndarray:
        """The score each row would get: what `windows: max` compares between windows."""
        if self.regression:
            return logits[:, 0].astype(np.float64)
        p = self.probabilities(logits)
        return p[:, self.label_index] if self.label_index is not None else p.max(axis=1)

    def from_logits(self, n: int, docs: np.ndarray, logits: np.ndarray) -> pa.Table:
        """Table of n rows; row docs[i] (docs ascending) gets the result of logits[i], others null."""
        if self.regression:
            score = logits[:, 0].astype(np.float64)
            ints = np.rint(np.clip(score, *INT_SCORE_RANGE)).astype(np.int64)
            return self._table(n, docs, [score, ints])
        p = self.probabilities(logits)
        top = p.argmax(axis=1)
        score = p[:, self.label_index] if self.label_index is not None else p[np.arange(len(p)), top]
        return self._table(n, docs, [score, top] + [p[:, j] for j in range(len(self.prob_columns))])

    # ---- fastText: a chosen score and label per document ----

    def from_predictions(self, n: int, docs: np.ndarray, score: np.ndarray, label: np.ndarray) -> pa.Table:
        """label: indices into self.labels."""
        return self._table(n, docs, [score, label])

    def _table(self, n: int, docs: np.ndarray, values: list[np.ndarray]) -> pa.Table:
        """Scatter per-document values to n rows; the label column holds indices into self.labels
        and is decoded through a dictionary (no per-row Python strings)."""
        docs = np.asarray(docs, dtype=np.int64)
        mask = None
        if len(docs) != n:  # docs ascending and unique: len == n means every row, in order
            mask = np.ones(n, dtype=bool)
            mask[docs] = False
        arrays = []
        for field, v in zip(self.schema, values):
            if mask is not None:
                full = np.zeros(n, dtype=v.dtype)
                full[docs] = v
                v = full
            if field.type == pa.string():
                idx = pa.array(v.astype(np.int32), pa.int32(), mask=mask)
                arrays.append(pa.DictionaryArray.from_arrays(idx, pa.array(self.labels, pa.string()))
                              .dictionary_decode())
            else:
                arrays.append(pa.array(v, field.type, mask=mask))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def empty(self, n: int) -> pa.Table:
        return pa.Table.from_arrays([pa.nulls(n, f.type) for f in self.schema], schema=self.schema)
