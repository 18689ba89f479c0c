"""Small models made with the sample, so that the quickstart runs its model steps offline.

- `quality_standin.bin`: a fastText classifier, High (articles) against Low (junk pages), standing in for
  NVIDIA's quality-classifier-deberta, which the sample cannot download (`pipelines/zyda2.yaml` uses it
  only when it runs on the sample, and says so);
- `dual_use_demo.bin`: flag (step-by-step hive work) against ok (beekeeping news and history), the
  stage-2 classifier of the dual_use demonstration.
Both are trained with `curate train-quality`'s trainer on fresh draws of the sample's own generators
(never on the sample's documents), deterministically (one thread, fixed seed).
"""

from __future__ import annotations

import random
from pathlib import Path

from . import text as T
from .topic import topic_page

QUALITY = "models/quality_standin.bin"
DUAL_USE = "models/dual_use_demo.bin"
PARAMS = dict(dim=16, epoch=25, lr=0.5, bucket=50_000, word_ngrams=2, seed=0, threads=1)


def make_models(dest: Path, seed: int) -> dict:
    """Train both models under `dest/models`; returns their cards."""
    from curate.models.train import train_fasttext

    rng = random.Random(f"curate-sample:{seed}:models")
    good = [T.english_article(rng) for _ in range(400)]
    junk = [T.junk_page(rng)[0] for _ in range(400)]
    howto = [topic_page(rng, "howto") for _ in range(200)]
    story = [topic_page(rng, "story") for _ in range(200)]
    return {
        "quality": train_fasttext(good, junk, dest / QUALITY, labels=("High", "Low"), **PARAMS,
                                  inputs="curate sample: generated articles (High) vs generated junk pages (Low)"),
        "dual_use": train_fasttext(howto, story, dest / DUAL_USE, labels=("flag", "ok"), **PARAMS,
                                   inputs="curate sample: beekeeping how-to pages (flag) vs beekeeping stories (ok)"),
    }
