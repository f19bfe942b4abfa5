"""Cross-encoders (monoBERT-style): query and document read jointly by a sequence classifier.

``cross-encoder:<hub name or directory>[+output=logit|prob][+max_length=N][+batch_size=N]
[+revision=R]``, e.g. ``cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2``.

The score is the relevance logit. Heads with one output use it directly (``prob`` applies a
sigmoid); heads with two outputs (non-relevant, relevant — monoBERT's layout) use the log-odds
``logit[1] − logit[0]``, which orders documents exactly as the softmax probability of the
relevant class does (``prob`` returns that probability). Larger heads are rejected.
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

DEFAULT_BATCH = 32
DEFAULT_MAX_LENGTH = 512
OUTPUTS = ("logit", "prob")


class CrossEncoderRanker(BatchedTorchRanker):
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu", output: str = "logit",
                 max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = DEFAULT_BATCH):
        torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        if output not in OUTPUTS:
            raise ConfigError(f"ranker {name}: output must be logit or prob, got {output!r}")
        self.name = name
        self.device = resolve_device(device, name)
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        model = load_pretrained(transformers.AutoModelForSequenceClassification.from_pretrained,
                                ref, name)
        self.labels = int(model.config.num_labels)
        if self.labels not in (1, 2):
            raise ConfigError(f"ranker {name}: the model has {self.labels} output labels; "
                              "a cross-encoder needs 1 (relevance) or 2 (non-relevant, relevant)")
        self.model = model.to(self.device).eval()
        limit = getattr(self.tokenizer, "model_max_length", max_length) or max_length
        positions = getattr(model.config, "max_position_embeddings", max_length) or max_length
        self.max_length = int(min(max_length, limit, positions))
        self.output = output
        self.batch_size = batch_size
        self.hints = neural_hints(batch_size, calls_per_commit=2)
        self.fingerprint = (f"CrossEncoder[{model_identity(ref, model.config)}]"
                            f"[output={output},max_length={self.max_length}]")
        self._torch = torch

    def _score_batch(self, pairs: list[Pair]) -> np.ndarray:
        torch = self._torch
        encoded = self.tokenizer([q for q, _ in pairs], [d for _, d in pairs], padding=True,
                                 truncation=True, max_length=self.max_length,
                                 return_tensors="pt").to(self.device)
        logits = self.model(**encoded).logits.float()
        if self.labels == 1:
            relevance = logits[:, 0]
            result = torch.sigmoid(relevance) if self.output == "prob" else relevance
        elif self.output == "prob":
            result = torch.softmax(logits, dim=-1)[:, 1]
        else:
            result = logits[:, 1] - logits[:, 0]
        return result.double().cpu().numpy()


def from_spec(spec: RankerSpec, env) -> CrossEncoderRanker:
    spec.check_params({"output", "max_length", "batch_size", "revision"})
    name = spec.canonical
    ref = resolve_model(spec.argument, name, spec.param("revision"),
                        example="cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2")
    return CrossEncoderRanker(
        ref, name, device=env.device, output=spec.param("output", "logit") or "logit",
        max_length=positive_int(spec.param("max_length"), DEFAULT_MAX_LENGTH, name, "max_length"),
        batch_size=positive_int(spec.param("batch_size"), env.batch_size or DEFAULT_BATCH, name,
                                "batch_size"))
