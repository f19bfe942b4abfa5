"""Pairwise preference rankers: a second contract beside :class:`~abnirml.rankers.base.Ranker`.

A pairwise ranker answers "is d1 more relevant than d2 to q?" with a probability,
``prefer(query, d1, d2) -> P(d1 ≻ d2)``; ``preferences(triples)`` is the batched form the
engine calls. Such models never give a document a score of its own, so the engine probes
them directly (see :mod:`abnirml.evaluation.analyses.preference_probing`).

* ``duot5:<hub name or directory>[+max_length=512][+batch_size=N][+dtype=…]
  [+max_tokens=N][+true=…+false=…][+rerank_depth=10][+revision=R]`` — duoT5:
  ``Query: q Document0: d1 Document1: d2 Relevant:``; P = softmax over the "true"/"false"
  logits of the first decoded token.
* ``lm-pairwise:<hub name or directory>[+template=default|FILE][+yes=yes+no=no]
  [+max_length=1024][+batch_size=N][+dtype=…][+max_tokens=N][+rerank_depth=10]
  [+revision=R]`` — a causal LM asked a yes/no question about the two documents (template
  fields ``{query}``, ``{document1}``, ``{document2}``); P = softmax over the yes/no logits
  of the next token.

Both score triples in token-budget batches (``+max_tokens``, rows sorted by token count;
``+batch_size`` caps the rows), the prompts of an engine call filled and tokenized in one call
by a background thread while the model scores the previous batches (see
:mod:`~abnirml.rankers.support.device_batching`). When a prompt is too long the two documents share
the room that the fixed text leaves (short documents are kept whole); the prompt itself is
never cut. ``+rerank_depth`` is how many candidates the effectiveness aggregation compares
all-pairs; it does not change any preference, so it is not part of the fingerprint.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import RankerHints, RankerSpec, digest
from abnirml.rankers.support.device_batching import (
    CPU_LLM_ENGINE_PAIRS,
    DeviceSettings,
    TokenBudgetModel,
    TokenColumns,
)
from abnirml.rankers.support.hf import ModelRef, resolve_model, set_pickle_policy

if TYPE_CHECKING:
    from abnirml.rankers.built_in import DuoT5Params, LMPairwiseParams

Triple = tuple[str, str, str]
DEFAULT_RERANK_DEPTH = 10
DUOT5_TEMPLATE = "Query: {query} Document0: {document1} Document1: {document2} Relevant:"
LM_TEMPLATES = {
    "default": "Query: {query}\nDocument A: {document1}\nDocument B: {document2}\n"
               "Is Document A more relevant to the query than Document B? Answer yes or no.\n"
               "Answer:",
}


@runtime_checkable
class PairwiseRanker(Protocol):
    name: str
    fingerprint: str

    def preferences(self, triples: Sequence[Triple]) -> np.ndarray:
        """P(d1 ≻ d2) for each (query, d1, d2), float64 in [0, 1]."""
        ...


def is_pairwise(ranker: Any) -> bool:
    return callable(getattr(ranker, "preferences", None))


class _PairwiseBase(TokenBudgetModel):
    """Token-budget batches of triples, tokenized ahead (see
    :mod:`~abnirml.rankers.support.device_batching`); subclasses implement ``_rows`` and
    ``_forward`` over triples. Not a pointwise ranker: ``score`` refuses."""

    fingerprint: str
    hints: RankerHints
    rerank_depth: int

    def prefer(self, query: str, d1: str, d2: str) -> float:
        return float(self.preferences([(query, d1, d2)])[0])

    def preferences(self, triples: Sequence[Triple]) -> np.ndarray:
        return self._score_items(triples)

    def preference_batches(self, batches: Sequence[Sequence[Triple]]) -> Iterator[np.ndarray]:
        """Preferences of each batch of triples, the next batches tokenized in the background
        (the engine's serial executor streams through this, as through ``score_batches``)."""
        return self._stream(batches)

    def score(self, pairs: Sequence[Any]) -> np.ndarray:
        raise ConfigError(f"ranker {self.name} is a pairwise preference ranker: it compares two "
                          "documents and has no per-document score; use it with `abnirml run`")


class DuoT5Ranker(_PairwiseBase):
    def __init__(self, ref: ModelRef, name: str, settings: DeviceSettings | None = None,
                 max_length: int = 512, true_token: str = "true", false_token: str = "false",
                 rerank_depth: int = DEFAULT_RERANK_DEPTH):
        from abnirml.rankers.families.causal_lm import PromptEncoder
        from abnirml.rankers.families.t5_answer import T5AnswerScorer

        self.name = name
        settings = settings or DeviceSettings()
        self.device = settings.device
        self.dtype_name = settings.dtype
        self.t5 = T5AnswerScorer(ref, name, settings, true_token, false_token)
        self.tokenizer = self.t5.tokenizer
        self.model = self.t5.model
        self.prompts = PromptEncoder(self.tokenizer, DUOT5_TEMPLATE, ("document1", "document2"),
                                     max_length)
        self.settings = settings
        self.pad_values = self.t5.pad_values
        self.rerank_depth = rerank_depth
        self.hints = settings.hints()
        self.fingerprint = (f"DuoT5[{self.t5.identity}][max_length={max_length},"
                            f"dtype={self.dtype_name},true={true_token},false={false_token}]")

    def _rows(self, triples: list[Triple]) -> TokenColumns:
        with self.borrowed_tokenizer() as tokenizer:
            return self.prompts.columns([(q, (a, b)) for q, a, b in triples], tokenizer)

    def _forward(self, tensors: dict[str, Any], triples: Sequence[Triple]) -> Any:
        return self.t5.torch.softmax(self.t5.answer_logits(tensors), dim=-1)[:, 0]


class CausalLMPairwiseRanker(_PairwiseBase):
    def __init__(self, ref: ModelRef, name: str, template: str = LM_TEMPLATES["default"],
                 yes: str = "yes", no: str = "no", settings: DeviceSettings | None = None,
                 max_length: int = 1024, rerank_depth: int = DEFAULT_RERANK_DEPTH):
        from abnirml.rankers.families.causal_lm import (
            CausalLMScorer,
            PromptEncoder,
            check_template,
            single_token,
        )

        check_template(template, name, ("query", "document1", "document2"), "text")
        self.name = name
        settings = settings or DeviceSettings()
        self.lm = CausalLMScorer(ref, name, "lm", settings)
        self.token_ids = (single_token(self.lm.tokenizer, yes, name, "yes"),
                          single_token(self.lm.tokenizer, no, name, "no"))
        if self.token_ids[0] == self.token_ids[1]:
            raise ConfigError(f"ranker {name}: {yes!r} and {no!r} are the same token")
        self.prompts = PromptEncoder(self.lm.tokenizer, template, ("document1", "document2"),
                                     max_length)
        self.settings = settings
        self.tokenizer = self.lm.tokenizer
        self.pad_values = self.lm.pad_values
        self.rerank_depth = rerank_depth
        self.hints = settings.hints(cpu_pairs=CPU_LLM_ENGINE_PAIRS)
        self.fingerprint = (f"CausalLMPairwise[{self.lm.identity}][template={digest(template)},"
                            f"max_length={max_length},dtype={self.lm.dtype_name},"
                            f"yes={yes},no={no}]")

    pad_left = True     # the next-token logits are read at the last position

    def _rows(self, triples: list[Triple]) -> TokenColumns:
        with self.borrowed_tokenizer() as tokenizer:
            return self.prompts.columns([(q, (a, b)) for q, a, b in triples], tokenizer)

    def _forward(self, tensors: dict[str, Any], triples: Sequence[Triple]) -> Any:
        logits = self.lm.forward(tensors, self.token_ids)
        return self.lm.torch.softmax(logits, dim=-1)[:, 0]


def _common(spec: RankerSpec, env: Any, params: Any) -> dict[str, Any]:
    return {
        "settings": env.device_settings(params, spec.canonical),
        "max_length": params.max_length, "rerank_depth": params.rerank_depth,
    }


def duot5_from_spec(spec: RankerSpec, p: DuoT5Params, env: Any) -> DuoT5Ranker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="duot5:castorini/duot5-base-msmarco")
    return DuoT5Ranker(ref, name, true_token=p.true or "true", false_token=p.false or "false",
                       **_common(spec, env, p))


def lm_pairwise_from_spec(spec: RankerSpec, p: LMPairwiseParams,
                          env: Any) -> CausalLMPairwiseRanker:
    from abnirml.rankers.families.causal_lm import load_template

    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="lm-pairwise:Qwen/Qwen2.5-0.5B-Instruct")
    template = load_template(p.template, name, ("query", "document1", "document2"),
                             LM_TEMPLATES)
    return CausalLMPairwiseRanker(ref, name, template=template, yes=p.yes or "yes",
                                  no=p.no or "no", **_common(spec, env, p))
