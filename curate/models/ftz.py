"""fastText's binary model format (`.bin` / quantized `.ftz`), read into numpy arrays for `lid_kernel`.

Only what supervised prediction needs: the arguments, the dictionary (words, labels and their counts, the
pruned n-gram buckets of a quantized model), the input matrix (product-quantized or dense) and the dense
output matrix. Layout as fastText 0.9 writes it (`FastText::saveModel`): magic and version, `Args`,
`Dictionary`, a quantized-input flag, the input matrix, a quantized-output flag, the output matrix.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAGIC, VERSION = 793712314, 12
LOSS_HS = 1   # fastText: hs = 1, ns, softmax, ova
KSUB = 256   # centroids per sub-quantizer


@dataclass(frozen=True)
class FastTextModel:
    dim: int
    minn: int
    maxn: int
    bucket: int
    loss: int
    word_ngrams: int
    nwords: int
    words: list[bytes]          # the words, by id
    labels: list[str]           # the labels, by id (`__label__xx`)
    label_counts: np.ndarray    # int64, for the hierarchical softmax's tree
    word_types: np.ndarray      # int8 per word (0: word)
    prune: np.ndarray           # int32 per bucket: its row after nwords, -1 when pruned away; None: no pruning
    codes: np.ndarray | None    # uint8 (rows, nsubq): product-quantized input rows (None: dense)
    centroids: np.ndarray | None
    norms: np.ndarray | None    # float32 per quantized row: the factor its centroids are added with (1 without qnorm)
    nsubq: int
    dsub: int
    lastdsub: int
    dense_input: np.ndarray | None
    output: np.ndarray          # float32 (labels, dim)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at).copy()
        self.at += out.nbytes
        return out

    def cstring(self) -> bytes:
        end = self.data.index(b"\0", self.at)
        value, self.at = self.data[self.at:end], end + 1
        return value


def read_model(path: str) -> FastTextModel:
    with open(path, "rb") as handle:
        r = _Reader(handle.read())
    magic, version = r.take("ii")
    if magic != MAGIC or version > VERSION:
        raise ValueError(f"{path}: not a fastText model this reader knows (magic {magic}, version {version})")
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, _model, bucket, minn, maxn, _lr_update = r.take("12i")
    r.take("d")
    size, nwords, nlabels, _ntokens, prune_size = r.take("iiiqq")
    names, counts, types = [], np.empty(size, np.int64), np.empty(size, np.int8)
    for i in range(size):
        names.append(r.cstring())
        counts[i], types[i] = r.take("qb")
    prune = None
    if prune_size >= 0:
        pairs = r.array(np.int32, 2 * prune_size).reshape(-1, 2)
        prune = np.full(bucket, -1, np.int32)
        prune[pairs[:, 0]] = pairs[:, 1]
    quant_input = r.take("?")
    codes = centroids = dense = norms = None
    nsubq = dsub = lastdsub = 0
    if quant_input:
        qnorm, rows, cols, codesize = r.take("?qqi")
        codes = r.array(np.uint8, codesize)
        pq_dim, nsubq, dsub, lastdsub = r.take("iiii")
        centroids = r.array(np.float32, pq_dim * KSUB)
        codes = codes.reshape(rows, nsubq)
        if pq_dim != cols or cols != dim:
            raise ValueError(f"{path}: inconsistent product quantizer ({pq_dim} vs {cols})")
        norms = np.ones(rows, np.float32)
        if qnorm:  # each row's norm, quantized with a one-dimensional quantizer
            norm_codes = r.array(np.uint8, rows)
            if r.take("iiii") != (1, 1, 1, 1):
                raise ValueError(f"{path}: unexpected norm quantizer")
            norms = r.array(np.float32, KSUB)[norm_codes]
    else:
        rows, cols = r.take("qq")
        dense = r.array(np.float32, rows * cols).reshape(rows, cols)
    if r.take("?"):
        raise ValueError(f"{path}: a quantized output matrix (qout) is not supported")
    rows, cols = r.take("qq")
    output = r.array(np.float32, rows * cols).reshape(rows, cols)
    return FastTextModel(dim, minn, maxn, bucket, loss, word_ngrams, nwords, names[:nwords],
                         [n.decode("utf-8", "replace") for n in names[nwords:]], counts[nwords:], types[:nwords], prune,
                         codes, centroids, norms, nsubq, dsub, lastdsub, dense, output)


def hs_tree(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) children of the hierarchical softmax's Huffman tree over the labels' counts, built as
    fastText builds it (`HierarchicalSoftmaxLoss::buildTree`); leaves are the labels, -1 children."""
    osz = len(counts)
    count = np.full(2 * osz - 1, 10**15, np.int64)
    count[:osz] = counts
    left = np.full(2 * osz - 1, -1, np.int64)
    right = np.full(2 * osz - 1, -1, np.int64)
    leaf, node = osz - 1, osz
    for i in range(osz, 2 * osz - 1):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return left, right
