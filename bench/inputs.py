"""The texts the benchmarks run on: the real Common Crawl pages of ../shared/data/dolma when present (absent on
a user's machine), else the offline sample corpus, made in a temp dir."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

DOLMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dolma" / "formats"


def dolma_texts() -> list[str]:
    """Every page of the Dolma CC sample (697 WET pages), or [] where it is absent."""
    texts = []
    for path in sorted(DOLMA.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for line in f]
    return texts


def sample_texts(docs: int = 2000, sources: str = "*", seed: int = 0) -> list[str]:
    """The non-empty texts of a fresh sample corpus of `docs` documents (Parquet sources only; `sources` a glob)."""
    from curate.sample import make_sample

    tmp = tempfile.mkdtemp(prefix="bench-")
    make_sample(tmp, docs=docs, seed=seed)
    return [t for p in sorted(Path(tmp).glob(f"{sources}/data/**/*.parquet"))
            for t in pq.read_table(p, columns=["text"])["text"].to_pylist() if t]


def save_tokenizer(texts: list[str], folder, unigram: bool = False, max_len: int = 512) -> object:
    """A fast tokenizer trained on the texts: SentencePiece-style Unigram (DeBERTa-v3's kind) or BERT's WordPiece,
    [CLS] text [SEP], saved as a transformers tokenizer folder (models with random weights need one; none is downloaded)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    if unigram:
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=32000, special_tokens=special, unk_token="[UNK]", show_progress=False)
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=30522, special_tokens=special, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_len)
    fast.save_pretrained(folder)
    return fast
