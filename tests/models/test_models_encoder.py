"""Transformer kinds (hf, nemo_quality) against a direct forward pass of the same weights.

Tiny random-weight models are built here from transformers configs with a WordPiece tokenizer trained
offline on the sample corpus's prose, so nothing is downloaded. Every comparison is fp32 on CPU.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from curate.models.load import Model, check_model, load_model  # noqa: E402
from curate.models.spec import ModelSpec  # noqa: E402
from curate.sample import text as T  # noqa: E402

ATOL = 1e-5
LABELS = {0: "High", 1: "Medium", 2: "Low"}


def make_tokenizer(folder, max_len=128):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(1)
    corpus = [T.english_article(rng, 80, 200) for _ in range(30)] + [T.junk_page(rng)[0] for _ in range(10)]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(corpus, trainers.WordPieceTrainer(
        vocab_size=800, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_len)
    fast.save_pretrained(folder)
    return fast


def calibration_texts():
    rng = random.Random(11)
    return [T.english_article(rng, 30, 120) for _ in range(12)] + [T.junk_page(rng)[0] for _ in range(12)]


def spread_head(linear, features, offset):
    """Point a random linear head along the features' main directions of variation, so that its
    outputs differ a lot between texts (a random encoder's features barely do): std 1.5 around offset."""
    x = features.double()
    mean = x.mean(0)
    _, s, vt = torch.linalg.svd(x - mean, full_matrices=False)
    k = linear.out_features
    w = vt[:k] / s[:k, None] * (len(x) ** 0.5) * 1.5
    with torch.no_grad():
        linear.weight.copy_(w.float())
        linear.bias.copy_((offset - w @ mean).float())


def make_bert(folder, num_labels):
    from transformers import BertConfig, BertForSequenceClassification

    tok = make_tokenizer(folder)
    torch.manual_seed(num_labels)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=128, num_labels=num_labels, initializer_range=0.5,
                     **({"id2label": LABELS, "label2id": {v: k for k, v in LABELS.items()}} if num_labels > 1 else {}))
    model = BertForSequenceClassification(cfg).eval()
    with torch.inference_mode():
        pooled = torch.cat([model.bert(**tok(t, truncation=True, return_tensors="pt")).pooler_output
                            for t in calibration_texts()])
    spread_head(model.classifier, pooled, 2.5 if num_labels == 1 else 0.0)
    model.save_pretrained(folder)
    return folder


def make_nemo(ckpt, with_tokenizer=True):
    """NeMo Curator's quality-classifier layout over a tiny DeBERTa-v2 `base_model` folder beside it."""
    from safetensors.torch import save_file
    from transformers import AutoModel, DebertaV2Config

    base = ckpt.with_name(ckpt.name + "_base")
    base.mkdir(parents=True)
    ckpt.mkdir(parents=True)
    tok = make_tokenizer(base if not with_tokenizer else ckpt)
    if not with_tokenizer:
        make_tokenizer(base)
    cfg = DebertaV2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=128, relative_attention=True,
                          position_buckets=16, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                          type_vocab_size=0, pad_token_id=0, initializer_range=0.5)
    cfg.save_pretrained(base)
    torch.manual_seed(7)
    encoder = AutoModel.from_config(cfg).eval()
    fc = torch.nn.Linear(32, 3)
    with torch.inference_mode():
        first = torch.cat([encoder(**tok(t, truncation=True, max_length=96, return_tensors="pt")).last_hidden_state[:, 0]
                           for t in calibration_texts()])
    spread_head(fc, first, 0.0)
    state = {f"model.{k}": v.contiguous() for k, v in encoder.state_dict().items()}
    state.update({"fc.weight": fc.weight.detach().clone(), "fc.bias": fc.bias.detach().clone()})
    save_file(state, str(ckpt / "model.safetensors"))
    (ckpt / "config.json").write_text(json.dumps({
        "base_model": str(base), "fc_dropout": 0.2, "max_len": 96,
        "id2label": {str(k): v for k, v in LABELS.items()}, "label2id": {v: k for k, v in LABELS.items()}}))
    return ckpt


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a loaded machine torch's OpenMP threads wait on
    each other for every small op; the previous setting is restored after the module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    make_bert(root / "reg", 1)
    make_bert(root / "cls", 3)
    make_nemo(root / "nemo")
    make_nemo(root / "nemo_base_tok", with_tokenizer=False)
    return root


@pytest.fixture(scope="module")
def texts():
    """Mixed lengths: long articles (past every token limit), short junk, non-ASCII, empty and null."""
    rng = random.Random(5)
    out = []
    for i in range(40):
        if i % 4 == 0:
            out.append(T.english_article(rng, 150, 500))
        elif i % 4 == 1:
            out.append(T.junk_page(rng)[0])
        elif i % 4 == 2:
            out.append(" ".join(T.english_article(rng, 20, 40).split()[: rng.randint(1, 40)]))
        else:
            out.append("Ünïcödé café — naïve 漢字 résumé " * rng.randint(1, 30))
    out[7], out[21] = "", None
    return out


# ---- direct references: one text at a time, the way each model is documented to run ----

def direct_hf(folder, texts, max_length, cut=None):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    out = []
    with torch.inference_mode():
        for t in texts:
            if t is None:
                out.append(None)
                continue
            enc = tok(t[:cut] if cut else t, truncation=True, max_length=max_length, return_tensors="pt")
            out.append(model(**enc).logits[0].double().numpy())
    return out


class DirectNemo:
    """The NeMo forward written out: encoder -> first token -> fc -> softmax."""

    def __init__(self, ckpt, tokenizer=None):
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        cfg = json.loads((ckpt / "config.json").read_text())
        self.encoder = AutoModel.from_config(AutoConfig.from_pretrained(cfg["base_model"])).eval()
        state = load_file(str(ckpt / "model.safetensors"))
        self.encoder.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
        self.w, self.b = state["fc.weight"], state["fc.bias"]
        self.tok = AutoTokenizer.from_pretrained(tokenizer or ckpt)

    def ids(self, ids):
        with torch.inference_mode():
            h = self.encoder(input_ids=torch.tensor([ids])).last_hidden_state
            return torch.softmax(h[:, 0, :] @ self.w.T + self.b, dim=-1)[0].double().numpy()

    def __call__(self, texts, max_length, cut=None):
        return [None if t is None else
                self.ids(self.tok(t[:cut] if cut else t, truncation=True, max_length=max_length)["input_ids"])
                for t in texts]


def softmax(z):
    z = np.exp(z - z.max())
    return z / z.sum()


def column(table, name):
    return table[name].to_pylist()


def assert_probs(table, prefix, ref_probs):
    probs = np.array([[r[f"{prefix}_prob_high"], r[f"{prefix}_prob_medium"], r[f"{prefix}_prob_low"]]
                      if r[f"{prefix}_prob_high"] is not None else [np.nan] * 3 for r in table.to_pylist()])
    for got, want in zip(probs, ref_probs):
        if want is None:
            assert np.isnan(got).all()
        else:
            np.testing.assert_allclose(got, want, atol=ATOL)
    labels = [None if w is None else LABELS[int(np.argmax(w))] for w in ref_probs]
    assert column(table, f"{prefix}_label") == labels
    assert column(table, f"{prefix}_score") == pytest.approx(
        [None if w is None else float(np.max(w)) for w in ref_probs], abs=ATOL)


# ---- tests ----

def test_regression_head_equals_direct_forward(models_dir, texts):
    spec = ModelSpec("edu", "hf", str(models_dir / "reg"), batch_tokens=300)
    check_model(spec)
    try:
        model = load_model(spec, device="cpu", threads=2)
        assert torch.get_num_threads() == 2, "threads sets torch's CPU threads"
    finally:
        torch.set_num_threads(1)
    assert isinstance(model, Model) and model.device == "cpu"
    table = model.score(pa.array(texts))
    assert table.schema == model.output_schema()
    assert table.column_names == ["edu_score", "edu_int_score"]
    ref = direct_hf(models_dir / "reg", texts, 128)
    scores, ints = column(table, "edu_score"), column(table, "edu_int_score")
    assert scores[21] is None and ints[21] is None, "null text -> null outputs"
    for got, want, i in zip(scores, ref, ints):
        if want is not None:
            assert got == pytest.approx(want[0], abs=ATOL)
            assert i == int(round(min(max(want[0], 0), 5)))
    assert scores[7] is not None, "empty text is scored like any text (the model's answer on no words)"
    assert len(set(ints) - {None}) >= 3, "the spread head gives several int_scores"


def test_multiclass_head_and_named_label(models_dir, texts):
    ref = [None if r is None else softmax(r) for r in direct_hf(models_dir / "cls", texts, 128)]
    table = load_model(ModelSpec("q", "hf", str(models_dir / "cls"), batch_tokens=500)).score(pa.array(texts))
    assert table.column_names == ["q_score", "q_label", "q_prob_high", "q_prob_medium", "q_prob_low"]
    assert_probs(table, "q", ref)
    assert len(set(column(table, "q_label")) - {None}) >= 2
    low = load_model(ModelSpec("q", "hf", str(models_dir / "cls"), label="low")).score(pa.array(texts))
    assert column(low, "q_score") == pytest.approx([None if r is None else r[2] for r in ref], abs=ATOL)
    assert column(low, "q_label") == column(table, "q_label")


def test_nemo_layout_equals_direct_forward(models_dir, texts):
    ckpt = models_dir / "nemo"
    spec = ModelSpec("zq", "nemo_quality", str(ckpt), batch_tokens=400)
    check_model(spec)
    model = load_model(spec, device="cpu")
    assert model.max_tokens == 96, "the NeMo config's max_len is the default token limit"
    table = model.score(pa.array(texts))
    assert_probs(table, "zq", DirectNemo(ckpt)(texts, 96))


def test_nemo_tokenizer_falls_back_to_base_model(models_dir, texts):
    ckpt = models_dir / "nemo_base_tok"
    assert not (ckpt / "tokenizer.json").exists()
    spec = ModelSpec("zq", "nemo_quality", str(ckpt))
    check_model(spec)
    table = load_model(spec).score(pa.array(texts[:12]))
    base = json.loads((ckpt / "config.json").read_text())["base_model"]
    assert_probs(table, "zq", DirectNemo(ckpt, tokenizer=base)(texts[:12], 96))


@pytest.mark.parametrize("kind", ["hf", "nemo_quality"])
def test_max_chars_and_max_tokens(models_dir, texts, kind):
    folder = models_dir / ("cls" if kind == "hf" else "nemo")
    direct = (lambda ts, n, cut=None: [None if r is None else softmax(r) for r in direct_hf(folder, ts, n, cut)]) \
        if kind == "hf" else DirectNemo(folder)
    cut = load_model(ModelSpec("m", kind, str(folder), max_chars=60)).score(pa.array(texts))
    assert_probs(cut, "m", direct(texts, 96 if kind != "hf" else 128, 60))
    short = load_model(ModelSpec("m", kind, str(folder), max_tokens=12)).score(pa.array(texts))
    assert_probs(short, "m", direct(texts, 12))
    full = load_model(ModelSpec("m", kind, str(folder))).score(pa.array(texts))
    changed = [a != b for a, b in zip(column(short, "m_prob_high"), column(full, "m_prob_high"))]
    assert sum(changed) > 10, "truncation changes the scores of long texts"


def test_batching_and_order_do_not_change_results(models_dir, texts):
    path = str(models_dir / "cls")
    one = load_model(ModelSpec("q", "hf", path, batch_tokens=1)).score(pa.array(texts))  # one row per batch
    big = load_model(ModelSpec("q", "hf", path, batch_tokens=1 << 20)).score(pa.array(texts))  # one batch
    for name in ("q_prob_high", "q_prob_medium", "q_prob_low"):
        a, b = column(one, name), column(big, name)
        assert [x is None for x in a] == [x is None for x in b]
        np.testing.assert_allclose([x for x in a if x is not None], [x for x in b if x is not None], atol=ATOL)
    perm = np.random.default_rng(3).permutation(len(texts))
    chunked = pa.chunked_array([pa.array([texts[i] for i in perm[:17]], pa.large_string()),
                                pa.array([texts[i] for i in perm[17:]], pa.large_string())])
    shuffled = load_model(ModelSpec("q", "hf", path, batch_tokens=700)).score(chunked)
    assert column(shuffled, "q_label") == [column(big, "q_label")[i] for i in perm]
    np.testing.assert_allclose(np.array(column(shuffled, "q_score"), dtype=float),
                               np.array([column(big, "q_score")[i] for i in perm], dtype=float), atol=ATOL)


def _windows(n, capacity, stride):
    if n <= capacity:
        return [(0, n)]
    starts = list(range(0, n - capacity, stride)) + [n - capacity]
    return [(s, capacity) for s in starts]


@pytest.mark.parametrize("kind", ["hf_reg", "hf_cls", "nemo_quality"])
def test_windows_max_equals_best_direct_window(models_dir, texts, kind):
    from transformers import AutoTokenizer

    folder = models_dir / {"hf_reg": "reg", "hf_cls": "cls", "nemo_quality": "nemo"}[kind]
    label = "Medium" if kind != "hf_reg" else None
    spec = ModelSpec("w", "nemo_quality" if kind == "nemo_quality" else "hf", str(folder), label=label,
                     max_tokens=16, windows="max", batch_tokens=256)
    table = load_model(spec).score(pa.array(texts))
    tok = AutoTokenizer.from_pretrained(folder)
    cls_id, sep_id = tok.cls_token_id, tok.sep_token_id
    nemo = DirectNemo(folder) if kind == "nemo_quality" else None
    if nemo is None:
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    n_windows = 0
    for i, t in enumerate(texts):
        got = table.slice(i, 1).to_pylist()[0]
        if t is None:
            assert got["w_score"] is None
            continue
        content = tok(t, add_special_tokens=False)["input_ids"]
        outs = []
        for s, n in _windows(len(content), 14, 7):
            ids = [cls_id, *content[s:s + n], sep_id]
            if nemo is not None:
                outs.append(nemo.ids(ids))
            else:
                with torch.inference_mode():
                    logits = model(input_ids=torch.tensor([ids])).logits[0].double().numpy()
                outs.append(logits if kind == "hf_reg" else softmax(logits))
        n_windows += len(outs)
        scores = [o[0] if kind == "hf_reg" else o[1] for o in outs]
        best = outs[int(np.argmax(scores))]
        assert got["w_score"] == pytest.approx(max(scores), abs=ATOL)
        if kind == "hf_reg":
            assert got["w_int_score"] == int(round(min(max(best[0], 0), 5)))
        else:
            assert got["w_label"] == LABELS[int(np.argmax(best))]
            assert got["w_prob_low"] == pytest.approx(best[2], abs=ATOL)
    assert n_windows > 3 * len(texts), "long texts were cut into many windows"


def test_prepare_and_run_are_separable(models_dir, texts):
    """A stage may tokenize the next batch (in a thread) while the model runs this one."""
    from concurrent.futures import ThreadPoolExecutor

    model = load_model(ModelSpec("q", "hf", str(models_dir / "cls"), batch_tokens=500))
    first, second = pa.array(texts[:20]), pa.array(texts[20:])
    with ThreadPoolExecutor(1) as pool:
        later = pool.submit(model.prepare, second)
        a = model.run(model.prepare(first))
        b = model.run(later.result())
    whole, parts = model.score(pa.array(texts)), pa.concat_tables([a, b])
    assert column(parts, "q_label") == column(whole, "q_label")
    np.testing.assert_allclose(np.array(column(parts, "q_prob_low"), dtype=float),
                               np.array(column(whole, "q_prob_low"), dtype=float), atol=ATOL)  # nan == nan
    assert model.run(model.prepare(pa.array([None, None], pa.string()))).equals(model.outputs.empty(2))


def test_bf16_autocast_runs_close_to_fp32(models_dir, texts):
    """dtype auto is fp32 on CPU; bfloat16 runs the autocast path (the one CUDA uses by default)."""
    path = str(models_dir / "reg")
    fp32 = load_model(ModelSpec("e", "hf", path), device="cpu")
    assert fp32.autocast is None and fp32.batch_tokens == 2048
    bf16 = load_model(ModelSpec("e", "hf", path, dtype="bf16"), device="cpu")
    assert bf16.autocast is torch.bfloat16
    a = np.array(column(fp32.score(pa.array(texts)), "e_score"), dtype=float)
    b = np.array(column(bf16.score(pa.array(texts)), "e_score"), dtype=float)
    assert np.isnan(a[21]) and np.isnan(b[21])
    ok = ~np.isnan(a)
    assert not np.array_equal(a[ok], b[ok]), "bf16 arithmetic differs from fp32"
    assert np.abs(b[ok] - a[ok]).max() < 0.5 and np.corrcoef(a[ok], b[ok])[0, 1] > 0.98


def test_max_tokens_past_the_positions_is_refused(models_dir):
    from curate.models.spec import ModelLoadError

    with pytest.raises(ModelLoadError, match="max_tokens 512 is more than the model's 128 positions"):
        load_model(ModelSpec("q", "hf", str(models_dir / "cls"), max_tokens=512))
    # DeBERTa's relative positions take longer inputs than its max_position_embeddings
    assert load_model(ModelSpec("q", "nemo_quality", str(models_dir / "nemo"), max_tokens=300)).max_tokens == 300


# ---- on a CUDA GPU (skipped elsewhere: CI has none; bench/bench_gpu.py runs the full-size comparison) ----
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda_only
@pytest.mark.parametrize("folder,kind,name", [("reg", "hf", "e_score"), ("cls", "hf", "e_prob_high"),
                                               ("nemo", "nemo_quality", "e_prob_high")])
def test_cuda_fp32_equals_cpu_and_autocast_stays_close(models_dir, texts, folder, kind, name):
    path = str(models_dir / folder)
    cpu = load_model(ModelSpec("e", kind, path, dtype="float32"), device="cpu").score(pa.array(texts))
    gpu = load_model(ModelSpec("e", kind, path, dtype="float32"), device="cuda")
    auto = load_model(ModelSpec("e", kind, path), device="cuda")
    assert gpu.device == "cuda:0" and auto.autocast in (torch.bfloat16, torch.float16) and auto.batch_tokens == 65536
    a, b = (np.array(column(t, name), dtype=float) for t in (cpu, gpu.score(pa.array(texts))))
    c = np.array(column(auto.score(pa.array(texts)), name), dtype=float)
    ok = ~np.isnan(a)
    assert list(ok) == list(~np.isnan(b)) == list(~np.isnan(c))
    np.testing.assert_allclose(b[ok], a[ok], atol=1e-4)
    assert np.abs(c[ok] - a[ok]).max() < 0.5 and np.corrcoef(a[ok], c[ok])[0, 1] > 0.98


@cuda_only
def test_cuda_overlapped_batches_equal_one_call(models_dir, texts):
    """The classify stage's loop (the next batch tokenized while the GPU runs this one) gives what one call gives."""
    from curate.models.overlap import scored_batches

    model = load_model(ModelSpec("e", "nemo_quality", str(models_dir / "nemo"), dtype="float32"), device="cuda")
    table = pa.table({"id": [str(i) for i in range(len(texts))], "text": texts})
    parts = pa.concat_tables(s for _, s in scored_batches(model, (table.slice(i, 7) for i in range(0, len(texts), 7))))
    whole = model.score(pa.array(texts))
    assert column(parts, "e_label") == column(whole, "e_label")
    np.testing.assert_allclose(np.array(column(parts, "e_score"), dtype=float),
                               np.array(column(whole, "e_score"), dtype=float), atol=1e-5)
