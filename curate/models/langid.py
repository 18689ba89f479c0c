"""Language identification with fastText's lid.176 model, shipped in curate's own package data.

The model (CC BY-SA 3.0, see `data/LICENSE-lid.176.md`) is loaded once per worker process (a module-level
cache) and never downloaded: a plain `pip install` of curate is enough for the signals stage.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.errors import CurateError


@functools.cache
def model_path() -> str:
    """lid.176.ftz in curate's package data."""
    path = Path(__file__).parent / "data" / "lid.176.ftz"
    if not path.is_file():
        raise CurateError(f"language identification needs fastText's lid.176 model, which ships with curate at {path}; "
                          "reinstall curate (or set `langid: false` on the signals stage)")
    return str(path)


@functools.cache
def load_model():
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silence the load-time warning
    return fasttext.load_model(model_path())


def identify(texts: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(lang, lang_score) per text: the top lid.176 label without `__label__`, and its probability.

    fastText's own list `predict` is broken with numpy 2 in fasttext 0.9.3, so each line goes through
    the C++ single-line predictor directly.
    """
    flat = pc.replace_substring(pc.fill_null(texts, ""), "\n", " ").to_pylist()
    predict = load_model().f.predict
    langs, scores = [], np.empty(len(flat))
    for i, text in enumerate(flat):
        top = predict(text + "\n", 1, 0.0, "replace")
        langs.append(top[0][1].removeprefix("__label__") if top else None)
        scores[i] = top[0][0] if top else np.nan
    return pa.array(langs, pa.string()), pa.array(np.round(scores, 8), pa.float64(), from_pandas=True)
