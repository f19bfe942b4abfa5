"""monoT5: a sequence-to-sequence model asked whether a document is relevant to a query.

``monot5:<hub name or directory>[+max_length=N][+batch_size=N][+true=TOKEN+false=TOKEN]
[+revision=R]``, e.g. ``monot5:castorini/monot5-base-msmarco``.

The input is ``Query: {q} Document: {d} Relevant:``; the score is the log-probability of the
"true" token against "false" at the first decoding step (a log-softmax over those two
logits only). When the input is longer than ``max_length`` the *document* is shortened, so
the closing ``Relevant:`` prompt is always seen (truncating the whole string would cut it).
``+true=yes+false=no`` serves models trained with other target words (e.g. mT5 variants).
"""

from __future__ import annotations

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec
from abnirml.rankers.hf import ModelRef, load_pretrained, model_identity, resolve_model
from abnirml.rankers.torch_support import (
    BatchedTorchRanker,
    import_or_explain,
    import_torch,
    neural_hints,
    positive_int,
    resolve_device,
)

DEFAULT_BATCH = 16
DEFAULT_MAX_LENGTH = 512


class MonoT5Ranker(BatchedTorchRanker):
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu",
                 max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = DEFAULT_BATCH,
                 true_token: str = "true", false_token: str = "false"):
        self._torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        self.name = name
        self.device = resolve_device(device, name)
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForSeq2SeqLM.from_pretrained, ref, name)
        start = model.config.decoder_start_token_id
        if start is None:
            raise ConfigError(f"ranker {name}: the model defines no decoder start token")
        self.decoder_start = int(start)
        self.token_ids = (self._single_token(true_token), self._single_token(false_token))
        if self.token_ids[0] == self.token_ids[1]:
            raise ConfigError(f"ranker {name}: {true_token!r} and {false_token!r} map to the "
                              "same token")
        self.model = model.to(self.device).eval()
        self.max_length = max_length
        self.batch_size = batch_size
        self.hints = neural_hints(batch_size, calls_per_commit=2)
        self.fingerprint = (f"MonoT5[{model_identity(ref, model.config)}]"
                            f"[max_length={max_length},true={true_token},false={false_token}]")

    def _single_token(self, word: str) -> int:
        ids = self.tokenizer(word, add_special_tokens=False).input_ids
        if len(ids) != 1:
            raise ConfigError(f"ranker {self.name}: the tokenizer splits {word!r} into "
                              f"{len(ids)} tokens; name a single-token word with +true=/+false=")
        if ids[0] == self.tokenizer.unk_token_id:
            raise ConfigError(f"ranker {self.name}: {word!r} is not in the model's vocabulary")
        return int(ids[0])

    def _input_ids(self, query: str, doc: str) -> list[int]:
        tok = self.tokenizer
        ids = tok(f"Query: {query} Document: {doc} Relevant:").input_ids
        if len(ids) <= self.max_length:
            return list(ids)
        head = tok(f"Query: {query} Document:", add_special_tokens=False).input_ids
        tail = tok("Relevant:").input_ids          # ends with the end-of-sequence token
        body = tok(doc, add_special_tokens=False).input_ids
        room = max(self.max_length - len(head) - len(tail), 0)
        return (list(head) + list(body[:room]) + list(tail))[-self.max_length:]

    def _score_batch(self, pairs: list[Pair]) -> np.ndarray:
        torch = self._torch
        rows = [self._input_ids(q, d) for q, d in pairs]
        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, :len(row)] = 1
        decoder = torch.full((len(rows), 1), self.decoder_start, dtype=torch.long)
        logits = self.model(input_ids=input_ids.to(self.device),
                            attention_mask=mask.to(self.device),
                            decoder_input_ids=decoder.to(self.device)).logits[:, 0, :].float()
        pair_logits = logits[:, list(self.token_ids)]
        return torch.log_softmax(pair_logits, dim=-1)[:, 0].double().cpu().numpy()


def from_spec(spec: RankerSpec, env) -> MonoT5Ranker:
    spec.check_params({"max_length", "batch_size", "revision", "true", "false"})
    name = spec.canonical
    ref = resolve_model(spec.argument, name, spec.param("revision"),
                        example="monot5:castorini/monot5-base-msmarco")
    return MonoT5Ranker(
        ref, name, device=env.device,
        max_length=positive_int(spec.param("max_length"), DEFAULT_MAX_LENGTH, name, "max_length"),
        batch_size=positive_int(spec.param("batch_size"), env.batch_size or DEFAULT_BATCH, name,
                                "batch_size"),
        true_token=spec.param("true", "true") or "true",
        false_token=spec.param("false", "false") or "false")
