"""Cross-encoders (monoBERT-style): query and document read jointly by a sequence classifier.

``cross-encoder:<hub name or directory>[+output=logit|prob][+max_length=N][+batch_size=N]
[+dtype=fp32|fp16|bf16][+max_tokens=N][+revision=R]``, e.g.
``cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2``.

The score is the relevance logit. Heads with one output use it directly (``prob`` applies a
sigmoid); heads with two outputs (non-relevant, relevant — monoBERT's layout) use the log-odds
``logit[1] − logit[0]``, which orders documents exactly as the softmax probability of the
relevant class does (``prob`` returns that probability). Larger heads are rejected.

A model *directory* is identified by its content hash and its limits are read from its JSON
files, so the weights (and torch) are loaded only when a pair is actually scored: a fully
cached rerun never pays for them. Hub names are loaded up front (their identity is the
commit the loaded configuration reports).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    PreparedBatch,
    TokenBudgetRanker,
    TokenColumns,
    cast_model,
)
from abnirml.rankers.support.hf import (
    ModelRef,
    check_weights_safe,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.torch_support import import_or_explain, import_torch

if TYPE_CHECKING:
    from abnirml.rankers.built_in import CrossEncoderParams

DEFAULT_MAX_LENGTH = 512
OUTPUTS = ("logit", "prob")


class CrossEncoderRanker(TokenBudgetRanker):
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu", output: str = "logit",
                 max_length: int = DEFAULT_MAX_LENGTH, batch_size: int | None = None,
                 settings: DeviceSettings | None = None, token_store: Path | None = None):
        if output not in OUTPUTS:
            raise ConfigError(f"ranker {name}: output must be logit or prob, got {output!r}")
        _require("transformers", name)
        self.name = name
        self.ref = ref
        self.settings = settings or DeviceSettings(device=device, max_batch=batch_size)
        self.output = output
        self.token_store_path = token_store
        self._joiner: tuple[Any, Any] | None = None     # (TokenStore, PairTemplate)
        self._tokenizer: Any = None
        self._model: Any = None
        self._preloading: threading.Thread | None = None
        if ref.path is not None:
            check_weights_safe(ref.path, name)      # refuse pickles now, not mid-run
            config, limit = _read_local_limits(ref, name)
            identity = model_identity(ref)
        else:
            config = self.model.config
            limit = getattr(self.tokenizer, "model_max_length", None)
            identity = model_identity(ref, config)
        self.labels = _label_count(config)
        if self.labels not in (1, 2):
            raise ConfigError(f"ranker {name}: the model has {self.labels} output labels; "
                              "a cross-encoder needs 1 (relevance) or 2 (non-relevant, relevant)")
        positions = _get(config, "max_position_embeddings") or max_length
        self.max_length = int(min(max_length, limit or max_length, positions))
        self.hints = self.settings.hints()
        self.fingerprint = (f"CrossEncoder[{identity}]"
                            f"[output={output},max_length={self.max_length}]"
                            + self.settings.fingerprint)

    def preload(self) -> None:
        """Load the tokenizer and model in a background thread (a cold run overlaps this
        with sample building); scoring waits for it. A failed preload is ignored: the
        first use loads again and reports the error as usual."""
        if self._model is not None or self._preloading is not None:
            return

        def load() -> None:
            try:
                self.tokenizer   # noqa: B018
                self.model       # noqa: B018
            except Exception:
                pass

        self._preloading = threading.Thread(target=load, name="abnirml-preload", daemon=True)
        self._preloading.start()

    def _await_preload(self) -> None:
        loader = self._preloading
        if loader is not None and loader is not threading.current_thread():
            loader.join()
            self._preloading = None

    @property
    def tokenizer(self) -> Any:
        self._await_preload()
        if self._tokenizer is None:
            transformers = import_or_explain("transformers", self.name, "neural")
            self._tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained,
                                              self.ref, self.name)
            self.pad_values = {"input_ids": int(self._tokenizer.pad_token_id or 0)}
        return self._tokenizer

    @property
    def model(self) -> Any:
        self._await_preload()
        if self._model is None:
            import_torch(self.name)
            transformers = import_or_explain("transformers", self.name, "neural")
            model = load_pretrained(
                transformers.AutoModelForSequenceClassification.from_pretrained, self.ref,
                self.name)
            self._model = cast_model(model, self.settings, self.name)
        return self._model

    def _prepare(self, items: Any) -> list[PreparedBatch]:
        """A chunk's batches joined from stored ids when the tokenizer's pair encoding is a
        join of the two texts' ids (:mod:`~abnirml.rankers.support.pair_join`), else tokenized."""
        if self._joiner is None or not items:
            return super()._prepare(items)
        from abnirml.rankers.support.pair_join import JoinedPairs

        store, template = self._joiner
        joined = JoinedPairs.of(store, template, items, self.max_length)
        return self._prepare_joined(items, joined)

    def _rows(self, pairs: list[Pair]) -> TokenColumns:
        with self.borrowed_tokenizer() as tokenizer:
            encoded = tokenizer([q for q, _ in pairs], [d for _, d in pairs], truncation=True,
                                max_length=self.max_length)
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in encoded]
        return TokenColumns.from_lists({k: encoded[k] for k in keys})

    def _forward(self, tensors: dict[str, Any], pairs: Sequence[Pair]) -> Any:
        torch = import_torch(self.name)
        logits = self.model(**tensors).logits.float()
        if self.labels == 1:
            relevance = logits[:, 0]
            return torch.sigmoid(relevance) if self.output == "prob" else relevance
        if self.output == "prob":
            return torch.softmax(logits, dim=-1)[:, 1]
        return logits[:, 1] - logits[:, 0]

    def _ready(self) -> None:
        self.tokenizer   # noqa: B018 — load before the prefetch thread needs it
        self.model       # noqa: B018
        if self._joiner is None:
            from abnirml.rankers.support.pair_join import PairTemplate
            from abnirml.rankers.support.token_store import shared_store

            template = PairTemplate.from_tokenizer(self.tokenizer)
            if template is not None:
                self._joiner = (shared_store(self.tokenizer, self.token_store_path), template)


def _require(module: str, ranker: str) -> None:
    """Check that ``module`` is installed without importing it."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        import_or_explain(module, ranker, "neural")


def _get(config: Any, key: str) -> Any:
    return config.get(key) if isinstance(config, dict) else getattr(config, key, None)


def _label_count(config: Any) -> int:
    """Labels as transformers counts them: ``id2label`` when present, else ``num_labels``."""
    id2label = _get(config, "id2label")
    if id2label:
        return len(id2label)
    return int(_get(config, "num_labels") or 2)


def _read_local_limits(ref: ModelRef, ranker: str) -> tuple[dict[str, Any], int | None]:
    """``config.json`` and the tokenizer's ``model_max_length`` of a model directory."""
    assert ref.path is not None
    try:
        config = json.loads((ref.path / "config.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"ranker {ranker}: cannot read {ref.path / 'config.json'}: "
                          f"{exc}") from None
    limit = None
    tokenizer_config = ref.path / "tokenizer_config.json"
    if tokenizer_config.is_file():
        try:
            value = json.loads(tokenizer_config.read_text("utf-8")).get("model_max_length")
            limit = int(value) if isinstance(value, (int, float)) and value < 1e9 else None
        except (OSError, ValueError):
            limit = None
    return config, limit


def from_spec(spec: RankerSpec, p: CrossEncoderParams, env: Any) -> CrossEncoderRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2")
    # The default dtype on CUDA asks torch whether the card has bf16, so the device is
    # checked up front then; with an explicit +dtype it is checked when the model loads.
    settings = env.device_settings(p, name, lazy=p.dtype is not None)
    return CrossEncoderRanker(
        ref, name, device=settings.device, output=p.output, max_length=p.max_length,
        settings=settings,
        token_store=getattr(env, "token_store", None))
