"""Training a DCLM-style fastText quality classifier: the core of a `curate train-quality` command.

Positive documents (`__label__hq`) against negative ones (`__label__cc`), one line per document
(newlines -> spaces), word bigrams, fastText's supervised softmax. A fixed share of each class is held
out (chosen by a seeded shuffle) and the model is judged on it: precision, recall, F1 and accuracy at
0.5, ROC AUC, and a table of thresholds with precision, recall and the share of documents kept. The
model file and a JSON card beside it (`<model>.json`) are written; the card carries the inputs'
description, counts, parameters, metrics, thresholds and the model's sha256.

Determinism: with threads=1 and a seed, fastText's training is deterministic, *but* fastText 0.9.3
trips its own NaN guard at random when it trains more than once in one process (the same data and
parameters succeed in a fresh process and fail on a later call; the failures do not depend on the
learning rate). So each attempt trains in a fresh interpreter (a subprocess), and a NaN is retried in another; a model
that trained is byte-identical from run to run. With threads > 1 fastText trains Hogwild-style and the
model is not reproducible.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

log = logging.getLogger("curate")
POSITIVE, NEGATIVE = "hq", "cc"
THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def _line(text: str) -> str:
    return " ".join(text.replace("\r", " ").replace("\n", " ").split())


def _split(n: int, holdout: float, rng: random.Random) -> tuple[list[int], list[int]]:
    """(train, holdout) indices of one class: a seeded shuffle, the first round(holdout * n) held out."""
    order = list(range(n))
    rng.shuffle(order)
    h = int(round(holdout * n))
    if holdout > 0 and n >= 2:
        h = min(max(h, 1), n - 1)
    return order[h:], order[:h]


def _child(job_path: str) -> None:
    """Entry point of the training process: train, save, score the holdout, write the result."""
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    result = Path(job["result"])
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    try:
        model = fasttext.train_supervised(input=job["train_file"], verbose=0, **job["params"])
    except RuntimeError as exc:
        result.write_text(json.dumps({"error": str(exc)}), encoding="utf-8")
        return
    model.save_model(job["out"])
    label, scores = job["label"], []
    if job["holdout"]:
        labels, probs = model.f.multilinePredict([t + "\n" for t in job["holdout"]], -1, 0.0, "replace")
        scores = [float(p[lb.index(label)]) if label in lb else 0.0 for lb, p in zip(labels, probs)]
    result.write_text(json.dumps({"scores": scores}), encoding="utf-8")


def _train_in_fresh_process(job: dict) -> list[float]:
    """Run `_child` in a new interpreter (a clean heap for fastText; no re-import of the caller's
    __main__, unlike multiprocessing's spawn) and return P(positive) for the holdout lines."""
    base = Path(job["out"])
    job_path = base.parent / f".{base.name}.job.json"
    job["result"] = str(base.parent / f".{base.name}.result.json")
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the curate package
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        job_path.write_text(json.dumps(job), encoding="utf-8")
        proc = subprocess.run([sys.executable, "-c", "import sys; from curate.models.train import _child; "
                               "_child(sys.argv[1])", str(job_path)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or [f"exit {proc.returncode}"]
            raise RuntimeError(f"fastText training process failed: {tail[0]}")
        result = json.loads(Path(job["result"]).read_text(encoding="utf-8"))
    finally:
        job_path.unlink(missing_ok=True)
        Path(job["result"]).unlink(missing_ok=True)
    if "error" in result:
        raise RuntimeError(result["error"])
    return result["scores"]


def _auc(scores: np.ndarray, truth: np.ndarray) -> float | None:
    """ROC AUC as the Mann-Whitney statistic, ties counted half."""
    pos, neg = int(truth.sum()), int((~truth).sum())
    if pos == 0 or neg == 0:
        return None
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float64)
    s = scores[order]
    i = 0
    while i < len(s):  # average ranks over ties (loops once per distinct score)
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[truth].sum() - pos * (pos + 1) / 2) / (pos * neg))


def _at(scores: np.ndarray, truth: np.ndarray, threshold: float) -> dict:
    kept = scores >= threshold
    tp = int((kept & truth).sum())
    fp = int((kept & ~truth).sum())
    fn = int((~kept & truth).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return {"threshold": threshold, "precision": precision, "recall": recall,
            "kept_share": float(kept.mean()) if len(kept) else None}


def evaluate(scores, truth, thresholds=THRESHOLDS) -> tuple[dict, list[dict]]:
    """(metrics at 0.5 with AUC, table per threshold) for P(positive) scores against 0/1 truth."""
    scores, truth = np.asarray(scores, dtype=np.float64), np.asarray(truth, dtype=bool)
    half = _at(scores, truth, 0.5)
    p, r = half["precision"], half["recall"]
    metrics = {"threshold": 0.5, "precision": p, "recall": r,
               "f1": 2 * p * r / (p + r) if p is not None and r is not None and p + r else None,
               "accuracy": float(((scores >= 0.5) == truth).mean()) if len(truth) else None,
               "auc": _auc(scores, truth), "docs": int(len(truth)), "positive": int(truth.sum())}
    return metrics, [_at(scores, truth, t) for t in thresholds]


MAX_BUCKET = 2_000_000  # fastText's default, and DCLM's
MIN_BUCKET = 10_000


def size_for(lines: list[str], word_ngrams: int, cap: int = MAX_BUCKET) -> tuple[int, int]:
    """(distinct words, hash buckets) for the training lines: one bucket per distinct word n-gram (2 to
    `word_ngrams` words), at least MIN_BUCKET and at most `cap`. fastText's 2,000,000 buckets make an
    800 MB model whatever the data: for 2,300 documents nearly all of it is never touched."""
    words, grams = set(), set()
    for line in lines:
        tokens = line.split()[1:]  # after the label
        words.update(tokens)
        if len(grams) < cap:
            for n in range(2, word_ngrams + 1):
                grams.update(hash(tuple(tokens[i:i + n])) for i in range(len(tokens) - n + 1))
    return len(words), max(MIN_BUCKET, min(cap, len(grams)))


def model_bytes(words: int, bucket: int, dim: int, labels: int = 2) -> int:
    """About the size of a fastText model file: float32 input rows for words and buckets, output rows for labels."""
    return (words + bucket + labels) * dim * 4


def threshold_lines(card: dict) -> list[str]:
    """The held-out metrics and the threshold table as text; a metric with no documents to measure (a
    threshold that keeps none) is '-'."""
    def f(value, spec: str, width: int = 0) -> str:
        return (format(value, spec) if value is not None else "-").rjust(width)

    m = card["metrics"]
    out = [f"held-out {m['docs']:,} documents ({m['positive']:,} positive): precision {f(m['precision'], '.3f')}  "
           f"recall {f(m['recall'], '.3f')}  F1 {f(m['f1'], '.3f')}  accuracy {f(m['accuracy'], '.3f')}"
           + (f"  AUC {m['auc']:.3f}" if m.get("auc") is not None else ""),
           f"{'threshold':>9}  {'precision':>9}  {'recall':>6}  {'kept':>6}"]
    for row in card["thresholds"]:
        out.append(f"{row['threshold']:9.2f}  {f(row['precision'], '.3f', 9)}  {f(row['recall'], '.3f', 6)}  "
                   f"{f(row['kept_share'], '.1%', 6)}")
    return out


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def train_fasttext(positive: list[str], negative: list[str], out_path, *, inputs=None, dim: int = 100,
                   epoch: int = 5, lr: float = 0.1, word_ngrams: int = 2, min_count: int = 1,
                   bucket: int | None = None, seed: int = 0, holdout: float = 0.1, threads: int = 1,
                   thresholds=THRESHOLDS, nan_retries: int = 4,
                   labels: tuple[str, str] = (POSITIVE, NEGATIVE)) -> dict:
    """Train `__label__<labels[0]>` (positive) vs `__label__<labels[1]>` (negative), write the model at
    out_path and its card at out_path with suffix .json; return the card.

    `labels` names the positive and negative classes (default DCLM's hq / cc; a stand-in for a model
    with other label names, e.g. High / Low, uses those). Defaults are fastText's supervised ones with
    DCLM's word bigrams. The model file holds
    (vocabulary + bucket) x dim float32 weights: `bucket` None sizes it for the data (`size_for`: one
    bucket per distinct word n-gram, at most fastText's 2,000,000, which is about 800 MB); the size is
    logged before training. `inputs` is any JSON-able
    description of where the documents came from; it is copied into the card.
    """
    out = Path(out_path)
    if out.suffix == ".json":
        raise ValueError("out_path names the model file; its card is written beside it as .json")
    if not 0 <= holdout < 1:
        raise ValueError(f"holdout must be in [0, 1), got {holdout}")
    labels = tuple(labels)
    if len(labels) != 2 or labels[0] == labels[1] or \
            any(not isinstance(lb, str) or not lb or len(lb.split()) != 1 or lb != lb.strip() for lb in labels):
        raise ValueError(f"labels must be two different words (positive, negative), got {labels!r}")
    positive_label, negative_label = labels
    pos = [_line(t) for t in positive if t is not None]
    neg = [_line(t) for t in negative if t is not None]
    pos, neg = [t for t in pos if t], [t for t in neg if t]
    if len(pos) < 2 or len(neg) < 2:
        raise ValueError(f"need at least 2 non-empty documents per class, got {len(pos)} positive "
                         f"and {len(neg)} negative")
    rng = random.Random(seed)
    pos_train, pos_hold = _split(len(pos), holdout, rng)
    neg_train, neg_hold = _split(len(neg), holdout, rng)
    lines = [f"__label__{positive_label} {pos[i]}" for i in pos_train] + \
            [f"__label__{negative_label} {neg[i]}" for i in neg_train]
    rng.shuffle(lines)
    hold_texts = [pos[i] for i in pos_hold] + [neg[i] for i in neg_hold]
    truth = [True] * len(pos_hold) + [False] * len(neg_hold)

    words, sized = size_for(lines, word_ngrams)
    bucket = sized if bucket is None else bucket
    log.info("training a fastText model of about %.1f MB (%s words + %s buckets) x dim %d; --bucket and --dim size it",
             model_bytes(words, bucket, dim) / 1e6, f"{words:,}", f"{bucket:,}", dim)
    out.parent.mkdir(parents=True, exist_ok=True)
    train_file = out.parent / f".{out.name}.train.txt"
    params = {"dim": dim, "epoch": epoch, "lr": lr, "wordNgrams": word_ngrams, "minCount": min_count,
              "bucket": bucket, "seed": seed, "thread": threads, "loss": "softmax"}
    attempts = 0
    try:
        train_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        while True:
            attempts += 1
            try:
                scores = _train_in_fresh_process({"train_file": str(train_file), "out": str(out),
                                                  "params": params, "holdout": hold_texts,
                                                  "label": f"__label__{positive_label}"})
                break
            except RuntimeError as exc:
                if "NaN" not in str(exc):
                    raise
                if attempts > nan_retries:
                    raise RuntimeError(
                        f"fastText hit its NaN guard in {attempts} fresh attempts; the learning rate "
                        f"({lr}) is likely too high for this data") from None
    finally:
        train_file.unlink(missing_ok=True)

    metrics, table = evaluate(scores, truth, thresholds)
    import fasttext

    card = {
        "model": out.name,
        "sha256": sha256_file(out),
        "bytes": out.stat().st_size,
        "kind": "fasttext",
        "labels": {"positive": positive_label, "negative": negative_label},
        "score": f"probability of __label__{positive_label} (ModelSpec kind 'fasttext', "
                 f"label '{positive_label}')",
        "inputs": inputs,
        "counts": {"positive": {"given": len(positive), "used": len(pos), "train": len(pos_train),
                                "holdout": len(pos_hold)},
                   "negative": {"given": len(negative), "used": len(neg), "train": len(neg_train),
                                "holdout": len(neg_hold)}},
        "parameters": {"dim": dim, "epoch": epoch, "lr": lr, "word_ngrams": word_ngrams,
                       "min_count": min_count, "bucket": bucket, "loss": "softmax", "seed": seed,
                       "threads": threads, "holdout": holdout, "deterministic": threads == 1},
        "training": {"attempts": attempts, "nan_retries": attempts - 1,
                     "fasttext": getattr(fasttext, "__version__", None) or _version("fasttext")},
        "metrics": metrics,
        "thresholds": table,
    }
    card_path = out.with_suffix(".json")
    card_path.write_text(json.dumps(card, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return card


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None
