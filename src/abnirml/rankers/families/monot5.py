"""monoT5: a sequence-to-sequence model asked whether a document is relevant to a query.

``monot5:<hub name or directory>[+max_length=N][+batch_size=N][+true=TOKEN+false=TOKEN]
[+dtype=fp32|fp16|bf16][+max_tokens=N][+revision=R]``,
e.g. ``monot5:castorini/monot5-base-msmarco``.

The input is ``Query: {q} Document: {d} Relevant:``; the score is the log-probability of the
"true" token against "false" at the first decoding step (a log-softmax over those two
logits only). When the input is longer than ``max_length`` the *document* is shortened, so
the closing ``Relevant:`` prompt is always seen (truncating the whole string would cut it).
``+true=yes+false=no`` serves models trained with other target words (e.g. mT5 variants).

Pairs are scored in token-budget batches (``+max_tokens``, rows sorted by token count;
``+batch_size`` caps the rows), tokenized by a background thread ahead of the model (see
:mod:`~abnirml.rankers.support.device_batching`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abnirml.rankers.base import Pair, RankerSpec
from abnirml.rankers.families.t5_answer import T5AnswerScorer
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    Row,
    TokenBudgetRanker,
)
from abnirml.rankers.support.hf import ModelRef, resolve_model, set_pickle_policy

if TYPE_CHECKING:
    from abnirml.rankers.built_in import MonoT5Params

DEFAULT_MAX_LENGTH = 512


class MonoT5Ranker(TokenBudgetRanker):
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu",
                 max_length: int = DEFAULT_MAX_LENGTH, batch_size: int | None = None,
                 true_token: str = "true", false_token: str = "false",
                 settings: DeviceSettings | None = None):
        self.name = name
        self.device = device
        self.settings = settings or DeviceSettings(device=self.device, max_batch=batch_size)
        self.t5 = T5AnswerScorer(ref, name, self.settings, true_token, false_token)
        self.tokenizer = self.t5.tokenizer
        self.model = self.t5.model
        self.max_length = max_length
        self.pad_values = self.t5.pad_values
        self.hints = self.settings.hints()
        self.fingerprint = (f"MonoT5[{self.t5.identity}]"
                            f"[max_length={max_length},true={true_token},false={false_token}]"
                            + self.settings.fingerprint)

    def _input_ids(self, query: str, doc: str, tok: Any = None) -> list[int]:
        tok = tok or self.tokenizer
        ids = tok(f"Query: {query} Document: {doc} Relevant:").input_ids
        if len(ids) <= self.max_length:
            return list(ids)
        head = tok(f"Query: {query} Document:", add_special_tokens=False).input_ids
        tail = tok("Relevant:").input_ids          # ends with the end-of-sequence token
        body = tok(doc, add_special_tokens=False).input_ids
        room = max(self.max_length - len(head) - len(tail), 0)
        return (list(head) + list(body[:room]) + list(tail))[-self.max_length:]

    def _rows(self, pairs: list[Pair]) -> list[Row]:
        rows = []
        with self.borrowed_tokenizer() as tokenizer:
            for query, doc in pairs:
                ids = self._input_ids(query, doc, tokenizer)
                rows.append({"input_ids": ids, "attention_mask": [1] * len(ids)})
        return rows

    def _forward(self, tensors: dict[str, Any], pairs: Sequence[Pair]) -> Any:
        return self.t5.torch.log_softmax(self.t5.answer_logits(tensors), dim=-1)[:, 0]


def from_spec(spec: RankerSpec, p: MonoT5Params, env: Any) -> MonoT5Ranker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="monot5:castorini/monot5-base-msmarco")
    settings = env.device_settings(p, name)
    return MonoT5Ranker(
        ref, name, device=settings.device,
        max_length=p.max_length,
        settings=settings,
        true_token=p.true or "true", false_token=p.false or "false")
