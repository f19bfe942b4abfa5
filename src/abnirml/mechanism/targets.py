"""Patch targets: what patching needs from each transformer ranker family.

A target turns a (query, document) into the input its model reads (:class:`Encoded`),
names the model's transformer layers and the attention output projections (whose input is
the concatenation of the heads' outputs), and scores a batch of equal-length rows with the
ranker's own scoring head. The Hugging Face model is the one the ranker already loaded:
patching adds forward hooks to it and never builds a second model stack.

Which stream is patched: bi-encoders and SPLADE encode the document alone, so the patched
stream is the document encoder's and the query representation is computed once, untouched;
cross-encoders, monoT5 (its encoder) and ``lm:`` rankers read query and document together.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError
from abnirml.mechanism.alignment import (
    ROLE_DOC,
    ROLE_QUERY,
    ROLE_SPECIAL,
    Encoded,
    NotAlignable,
    roles_from_spans,
)

#: Attention output projections by architecture, tried in order inside each layer.
PROJECTIONS = ("attention.output.dense", "attention.out_lin", "layer.0.SelfAttention.o",
               "self_attn.o_proj", "attn.c_proj", "attention.o_proj", "attn.out_proj")
#: Where the list of transformer layers sits in the model, tried in order.
LAYER_LISTS = ("encoder.layer", "transformer.layer", "block", "layers", "h", "encoder.layers")
MONOT5_TEMPLATE = "Query: {query} Document: {document} Relevant:"
FAMILIES = "biencoder, cross-encoder, splade, monot5, lm"


@dataclass
class Parts:
    """The modules hooks go on: the layers (their outputs are the residual stream) and each
    layer's attention output projection (its input holds the heads side by side)."""

    layers: list[Any]
    projections: list[Any]
    heads: int


def find_parts(model: Any, ranker: str) -> Parts:
    """The layers and attention projections of a Hugging Face transformer ``model``."""
    import torch

    layers = None
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) and any(
                name == path or name.endswith("." + path) for path in LAYER_LISTS):
            layers = list(module)
            break
    if layers is None:
        raise ConfigError(f"ranker {ranker}: cannot find the transformer layers of "
                          f"{type(model).__name__} (looked for {', '.join(LAYER_LISTS)})")
    projections = []
    for layer in layers:
        for path in PROJECTIONS:
            try:
                projections.append(layer.get_submodule(path))
                break
            except AttributeError:
                continue
        else:
            raise ConfigError(f"ranker {ranker}: cannot find the attention output projection "
                              f"in {type(layer).__name__} (looked for {', '.join(PROJECTIONS)})")
    config = model.config
    heads = next((int(getattr(config, key)) for key in ("num_attention_heads", "num_heads",
                                                         "n_head", "n_heads")
                  if getattr(config, key, None)), 0)
    if heads <= 0:
        raise ConfigError(f"ranker {ranker}: the model configuration names no head count")
    return Parts(layers, projections, heads)


class PatchTarget:
    """Common parts; subclasses encode inputs and score rows."""

    name: str
    ranker: Any
    device: Any
    parts: Parts
    tokenizer: Any

    def prepare(self, query: str) -> None:
        """Compute what does not depend on the patched stream (a query representation);
        called before any hook is installed."""

    def encode(self, query: str, doc: str) -> Encoded:
        raise NotImplementedError

    def scores(self, ids: Any, extras: dict[str, Any]) -> Any:
        """Scores (float64 tensor ``[rows]``) of equal-length rows ``ids`` ``[rows, length]``."""
        raise NotImplementedError

    def query_terms(self, query: str, encoded: Encoded | None = None) -> frozenset[int]:
        """The query's token ids: those at the query positions of ``encoded`` when the input
        has a query segment (the tokens the model reads there), else the query tokenized
        alone (bi-encoders and SPLADE)."""
        if encoded is not None:
            inside = {i for i, r in zip(encoded.ids, encoded.roles, strict=True)
                      if r == ROLE_QUERY}
            if inside:
                return frozenset(inside)
        ids = self.tokenizer(query, add_special_tokens=False)["input_ids"]
        special = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        return frozenset(int(i) for i in ids if i not in special)

    def filler_id(self, word: str) -> int:
        """The single token of ``word`` (with or without a leading space)."""
        for text in (word, " " + word):
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) == 1:
                return int(ids[0])
        raise ConfigError(f"ranker {self.name}: the filler {word!r} is not a single token of "
                          "its tokenizer; choose another with --filler")

    @property
    def model_dtype(self) -> Any:
        return next(self.parts.layers[0].parameters()).dtype


def _special_roles(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    """``special`` for the tokens the tokenizer adds around a text ([CLS], [SEP], <s>, …);
    a [MASK] or unknown token written in the text itself is a document token."""
    textual = {getattr(tokenizer, "mask_token_id", None), getattr(tokenizer, "unk_token_id", None)}
    structural = set(getattr(tokenizer, "all_special_ids", []) or []) - textual
    return [ROLE_SPECIAL if i in structural else ROLE_DOC for i in ids]


class BiEncoderTarget(PatchTarget):
    """The document encoder of a sentence-transformers bi-encoder."""

    def __init__(self, ranker: Any):
        self.ranker = ranker
        self.name = ranker.name
        self.st = ranker.model
        self.device = ranker.device
        self.tokenizer = self.st.tokenizer
        self.parts = find_parts(self.st[0].auto_model, self.name)
        self._query: Any = None

    def prepare(self, query: str) -> None:
        self._query = self.ranker._query_embeddings([query])[0].double()

    def encode(self, query: str, doc: str) -> Encoded:
        from abnirml.rankers.families.biencoder import with_prefix

        prepare = getattr(self.st, "preprocess", None) or self.st.tokenize
        features = prepare([with_prefix(self.ranker.doc_prefix, doc)])
        ids = [int(i) for i in features["input_ids"][0]]
        extras = {k: [int(x) for x in v[0]] for k, v in features.items()
                  if k == "token_type_ids"}
        return Encoded(ids, _special_roles(self.tokenizer, ids), extras)

    def scores(self, ids: Any, extras: dict[str, Any]) -> Any:
        torch = self.ranker._torch
        features = {"input_ids": ids, "attention_mask": torch.ones_like(ids), **extras}
        emb = self.st(features)["sentence_embedding"].float()
        if self.ranker.similarity == "cos":
            emb = torch.nn.functional.normalize(emb, p=2, dim=1)
        return (emb.double() * self._query).sum(dim=-1)


class SpladeTarget(PatchTarget):
    """The document encoder of SPLADE (masked-LM logits, max-pooled)."""

    def __init__(self, ranker: Any):
        self.ranker = ranker
        self.name = ranker.name
        self.device = ranker.device
        self.tokenizer = ranker.tokenizer
        self.parts = find_parts(ranker.model, self.name)
        self._query: Any = None

    def prepare(self, query: str) -> None:
        self._query = self.ranker._queries([query])[0].double()

    def encode(self, query: str, doc: str) -> Encoded:
        ids = self.tokenizer(doc, truncation=True, max_length=self.ranker.max_length)["input_ids"]
        return Encoded(list(ids), _special_roles(self.tokenizer, ids))

    def scores(self, ids: Any, extras: dict[str, Any]) -> Any:
        torch = self.ranker._torch
        vectors = self.ranker._vectors({"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                                       self.ranker.doc_top_k)
        return (vectors.double() * self._query).sum(dim=-1)


class CrossEncoderTarget(PatchTarget):
    """A cross-encoder reading ``[CLS] query [SEP] document [SEP]``."""

    def __init__(self, ranker: Any):
        self.ranker = ranker
        self.name = ranker.name
        self.tokenizer = ranker.tokenizer
        model = ranker.model
        self.device = next(model.parameters()).device
        self.parts = find_parts(model, self.name)

    def encode(self, query: str, doc: str) -> Encoded:
        encoded = self.tokenizer(query, doc, truncation=True, max_length=self.ranker.max_length)
        ids = list(encoded["input_ids"])
        try:
            sequence = encoded.sequence_ids()
        except (AttributeError, ValueError):      # a slow tokenizer has no sequence ids
            sequence = None
        if sequence is None:
            roles = _special_roles(self.tokenizer, ids)   # slow tokenizer: doc = every token
            types = encoded.get("token_type_ids")
            if types is not None:
                roles = [ROLE_SPECIAL if r == ROLE_SPECIAL else (ROLE_DOC if t else ROLE_QUERY)
                         for r, t in zip(roles, types, strict=True)]
        else:
            roles = [ROLE_SPECIAL if s is None else (ROLE_QUERY if s == 0 else ROLE_DOC)
                     for s in sequence]
        extras = {"token_type_ids": list(encoded["token_type_ids"])} \
            if "token_type_ids" in encoded else {}
        return Encoded(ids, roles, extras)

    def scores(self, ids: Any, extras: dict[str, Any]) -> Any:
        tensors = {"input_ids": ids, "attention_mask": ids.new_ones(ids.shape), **extras}
        return self.ranker._forward(tensors, []).double()


class PromptTarget(PatchTarget):
    """Rankers reading one filled prompt (monoT5's encoder, ``lm:``); roles from character
    offsets, so the tokenizer must be a fast one."""

    template: str
    max_length: int

    def encode(self, query: str, doc: str) -> Encoded:
        text, spans = fill_template(self.template, query, doc)
        try:
            encoded = self.tokenizer(text, return_offsets_mapping=True)
        except NotImplementedError:
            raise ConfigError(f"ranker {self.name}: patching needs a fast tokenizer (for "
                              "character offsets)") from None
        ids = list(encoded["input_ids"])
        if len(ids) > self.max_length:
            raise NotAlignable(f"the prompt has {len(ids)} tokens, more than max_length "
                               f"{self.max_length} (the ranker would shorten the document)")
        return Encoded(ids, roles_from_spans(encoded["offset_mapping"], spans))

    def scores(self, ids: Any, extras: dict[str, Any]) -> Any:
        tensors = {"input_ids": ids, "attention_mask": ids.new_ones(ids.shape)}
        return self.ranker._forward(tensors, []).double()


class MonoT5Target(PromptTarget):
    """monoT5's encoder (the decoder reads the patched encoder states unchanged)."""

    def __init__(self, ranker: Any):
        self.ranker = ranker
        self.name = ranker.name
        self.tokenizer = ranker.tokenizer
        self.device = next(ranker.model.parameters()).device
        self.parts = find_parts(ranker.model.get_encoder(), self.name)
        self.parts.heads = int(ranker.model.config.num_heads)
        self.template = MONOT5_TEMPLATE
        self.max_length = ranker.max_length


class CausalLMTarget(PromptTarget):
    """A decoder-only ranker (``lm:``) reading its filled prompt."""

    def __init__(self, ranker: Any):
        self.ranker = ranker
        self.name = ranker.name
        self.tokenizer = ranker.tokenizer
        self.device = next(ranker.lm.model.parameters()).device
        self.parts = find_parts(ranker.lm.model, self.name)
        self.template = ranker.prompts.template
        self.max_length = ranker.max_length


def fill_template(template: str, query: str, doc: str) -> tuple[str, list[tuple[int, int, int]]]:
    """The filled ``template`` and the character spans (start, end, role) of every query
    and document occurrence in it (the document is never searched for ``{query}``)."""
    text, spans = "", []
    for piece in re.split(r"(\{query\}|\{document\})", template):
        if piece in ("{query}", "{document}"):
            value, role = (query, ROLE_QUERY) if piece == "{query}" else (doc, ROLE_DOC)
            spans.append((len(text), len(text) + len(value), role))
            text += value
        else:
            text += piece
    return text, spans


def target_for(ranker: Any) -> PatchTarget:
    """The patch target of a built ranker, or one line saying why it has none."""
    from abnirml.rankers.families.biencoder import BiEncoderRanker
    from abnirml.rankers.families.causal_lm import CausalLMRanker
    from abnirml.rankers.families.cross_encoder import CrossEncoderRanker
    from abnirml.rankers.families.monot5 import MonoT5Ranker
    from abnirml.rankers.families.splade import SpladeRanker

    kinds = ((BiEncoderRanker, BiEncoderTarget), (SpladeRanker, SpladeTarget),
             (CrossEncoderRanker, CrossEncoderTarget), (MonoT5Ranker, MonoT5Target),
             (CausalLMRanker, CausalLMTarget))
    for ranker_type, target_type in kinds:
        if isinstance(ranker, ranker_type):
            return target_type(ranker)
    raise ConfigError(f"ranker {getattr(ranker, 'name', ranker)}: patching needs a transformer "
                      f"ranker ({FAMILIES}); this one is a {type(ranker).__name__}")
