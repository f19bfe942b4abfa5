"""Keeping an accelerator busy: half precision, token-budget batches, tokenization ahead.

One reusable piece for every PyTorch ranker that reads (query, document) pairs jointly or
per document. Why each part exists:

* **dtype** (``+dtype=fp32|fp16|bf16``). Half precision roughly doubles a GPU's throughput.
  The default is fp32 on CPU and MPS (where half precision is slow or partial) and, on CUDA,
  bf16 where the card supports it (its exponent range matches fp32, so logits do not
  overflow), else fp16. Half-precision outputs are cast to float64 before the engine's
  NaN/inf guard sees them, so the guard still applies. fp32 leaves a ranker's fingerprint as
  it always was (old caches stay valid); fp16 and bf16 add ``[dtype=…]`` to it.
* **Token budget** (``+max_tokens=N``). A padded batch costs ``rows × longest row`` tokens, so
  batches are packed by that product rather than by a fixed pair count: many short pairs or
  few long ones per step, always near the budget. Rows are sorted by their *token* count
  (characters are a poor proxy across languages, numbers and URLs). The default suits the
  device: 8,192 tokens on CPU, 65,536 on an accelerator.
* **Tokenization ahead** (:func:`prefetched`). Worker threads tokenize and pad the next
  windows of pairs while the device computes the current one (Hugging Face's fast
  tokenizers release the GIL while they split text); on CUDA the padded tensors are pinned
  and copied with ``non_blocking=True``, so the host never waits on a copy either. Scores
  are fetched once per window, so the device queue does not drain between batches.

:class:`TokenBudgetRanker` ties these together: a subclass says how to tokenize pairs into
rows (:meth:`~TokenBudgetRanker._rows`) and how to score one padded batch
(:meth:`~TokenBudgetRanker._forward`); ordering, packing, prefetching, precision and putting
scores back in the caller's order are done here. :class:`DeviceSettings` parses the shared
spec parameters (``dtype``, ``max_tokens``, ``batch_size``) once for every family.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerHints, RankerSpec, checked_scores
from abnirml.rankers.torch_support import import_torch, positive_int, resolve_device

DTYPES = ("fp32", "fp16", "bf16")
CPU_MAX_TOKENS = 8_192
ACCELERATOR_MAX_TOKENS = 65_536
WINDOW_PAIRS = 512            # pairs tokenized per prefetch step
PREFETCH_WORKERS = min(8, max(1, (os.cpu_count() or 2) // 2))   # tokenizing threads
ENGINE_PAIRS = 8_192          # pairs per engine call (one cache commit each) on a GPU
CPU_ENGINE_PAIRS = 1_024      # on CPU: smaller, so progress bars still move
DEVICE_PARAMS = frozenset({"dtype", "max_tokens", "batch_size"})

Row = dict[str, list[int]]


def default_dtype(device: str) -> str:
    """fp32 off CUDA; on CUDA bf16 where supported, else fp16."""
    if not device.startswith("cuda"):
        return "fp32"
    torch = import_torch("dtype")
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def parse_dtype(value: str | None, device: str, ranker: str) -> str:
    """The dtype name a ranker runs in: ``value`` checked, or the device's default."""
    if value is None or value == "":
        return default_dtype(device)
    name = value.strip().lower()
    aliases = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
    name = aliases.get(name, name)
    if name not in DTYPES:
        raise ConfigError(f"ranker {ranker}: dtype must be fp32, fp16 or bf16, got {value!r}")
    return name


def torch_dtype(name: str) -> Any:
    torch = import_torch("dtype")
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def dtype_fingerprint(dtype: str) -> str:
    """The fingerprint suffix for ``dtype``: empty for fp32, so fp32 caches stay valid."""
    return "" if dtype == "fp32" else f"[dtype={dtype}]"


@dataclass(frozen=True)
class DeviceSettings:
    """How a torch ranker uses its device: where, in which precision, how much per step.

    ``max_batch`` caps the rows of one batch on top of the token budget (``+batch_size``);
    ``None`` lets the budget alone decide.
    """

    device: str = "cpu"
    dtype: str = "fp32"
    max_tokens: int = CPU_MAX_TOKENS
    max_batch: int | None = None

    @classmethod
    def from_spec(cls, spec: RankerSpec, env: Any, device: str) -> DeviceSettings:
        """Read ``+dtype``, ``+max_tokens`` and ``+batch_size`` (or ``--batch-size``)."""
        name = spec.canonical
        dtype = parse_dtype(spec.param("dtype"), device, name)
        default_tokens = CPU_MAX_TOKENS if device == "cpu" else ACCELERATOR_MAX_TOKENS
        max_tokens = positive_int(spec.param("max_tokens"), default_tokens, name, "max_tokens")
        raw_batch = spec.param("batch_size")
        if raw_batch is None and getattr(env, "batch_size", None):
            raw_batch = str(env.batch_size)
        max_batch = None if raw_batch is None else positive_int(raw_batch, 1, name, "batch_size")
        return cls(device, dtype, max_tokens, max_batch)

    @property
    def fingerprint(self) -> str:
        return dtype_fingerprint(self.dtype)

    def hints(self) -> RankerHints:
        """Engine calls larger than a model batch: the ranker packs its own batches, so the
        engine only decides how often the score cache commits (and the progress bar moves)."""
        pairs = CPU_ENGINE_PAIRS if self.device == "cpu" else ENGINE_PAIRS
        return RankerHints(batch_size=pairs, sort_by_length=True, own_batches=True)


def token_budget_batches(lengths: Sequence[int], max_tokens: int,
                         max_batch: int | None = None) -> list[list[int]]:
    """Indices of ``lengths`` grouped into batches, shortest rows first.

    Rows are ordered by token length (ties by position, so the result is deterministic);
    a batch grows while ``rows × longest row ≤ max_tokens`` and, when given, ``rows ≤
    max_batch``. A single row longer than the budget still forms its own batch.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be ≥ 1")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        width = max(longest, lengths[index])
        full = current and ((len(current) + 1) * width > max_tokens
                            or (max_batch is not None and len(current) >= max_batch))
        if full:
            batches.append(current)
            current, width = [], lengths[index]
        current.append(index)
        longest = width
    if current:
        batches.append(current)
    return batches


def prefetched(items: Iterable[Any], prepare: Callable[[Any], Any], depth: int = 4,
               workers: int = PREFETCH_WORKERS) -> Iterator[Any]:
    """``prepare(item)`` for each item, yielded in order, computed up to ``depth`` items ahead
    by ``workers`` threads, so the consumer's work (the device) overlaps the preparation
    (tokenizing: the fast tokenizers release the GIL while they split text).

    An exception in ``prepare`` is raised in the consumer at that item's position; closing
    the iterator early cancels what has not started.
    """
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="abnirml-prep")
    pending: deque[Any] = deque()
    source = iter(items)
    try:
        for item in source:
            pending.append(pool.submit(prepare, item))
            if len(pending) > max(1, depth):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def pad_rows(rows: Sequence[Row], pad_values: dict[str, int]) -> dict[str, np.ndarray]:
    """Right-pad each key of ``rows`` to the longest row: ``[len(rows), width]`` int64."""
    keys = list(rows[0])
    width = max(len(row[keys[0]]) for row in rows)
    out: dict[str, np.ndarray] = {}
    for key in keys:
        array = np.full((len(rows), width), pad_values.get(key, 0), dtype=np.int64)
        for i, row in enumerate(rows):
            values = row[key]
            array[i, :len(values)] = values
        out[key] = array
    return out


@dataclass
class PreparedBatch:
    """One padded batch: the caller's pair indices and the host tensors to feed the model."""

    indices: list[int]
    tensors: dict[str, Any]


class TokenBudgetRanker:
    """Base for torch rankers scored in token-budget batches with tokenization ahead.

    Subclasses set ``name``, ``fingerprint``, ``hints``, ``settings`` (a
    :class:`DeviceSettings`) and implement :meth:`_rows` (tokenize pairs: one row of equal-length
    id lists per pair; ``input_ids`` gives its length) and :meth:`_forward` (one padded batch
    of tensors already on the device → one float score per row). ``pad_values`` gives the
    padding id per row key (0 when absent).
    """

    name: str
    fingerprint: str
    hints: RankerHints
    settings: DeviceSettings
    pad_values: dict[str, int]
    window: int = WINDOW_PAIRS

    def _rows(self, pairs: list[Pair]) -> list[Row]:
        raise NotImplementedError

    @contextlib.contextmanager
    def borrowed_tokenizer(self) -> Iterator[Any]:
        """A copy of ``self.tokenizer`` that no other thread uses meanwhile.

        Fast tokenizers keep truncation and padding settings as mutable state on the shared
        Rust object, so two threads tokenizing with different settings (ColBERT's queries and
        documents) could silently use each other's; copies are made once and reused.
        """
        spare = self.__dict__.setdefault("_spare_tokenizers", [])
        try:
            tokenizer = spare.pop()
        except IndexError:
            tokenizer = copy.deepcopy(self.tokenizer)
        try:
            yield tokenizer
        finally:
            spare.append(tokenizer)

    def _forward(self, tensors: dict[str, Any], pairs: list[Pair]) -> Any:
        raise NotImplementedError

    def _prepare(self, pairs: Sequence[Pair], window: list[int]) -> list[PreparedBatch]:
        """Tokenize one window of pairs and pack it into padded, pinned token-budget batches."""
        torch = import_torch(self.name)
        rows = self._rows([pairs[i] for i in window])
        lengths = [len(row["input_ids"]) for row in rows]
        pin = self.settings.device.startswith("cuda")
        batches = []
        for group in token_budget_batches(lengths, self.settings.max_tokens,
                                          self.settings.max_batch):
            padded = pad_rows([rows[j] for j in group], self.pad_values)
            tensors = {k: torch.from_numpy(v) for k, v in padded.items()}
            if pin:
                tensors = {k: v.pin_memory() for k, v in tensors.items()}
            batches.append(PreparedBatch([window[j] for j in group], tensors))
        return batches

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        torch = import_torch(self.name)
        out = np.empty(len(pairs), dtype=np.float64)
        # Windows follow a cheap character order so each one holds pairs of similar length;
        # inside a window, batches are packed by exact token counts.
        order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]) + len(pairs[i][1]), i))
        windows = [order[s:s + self.window] for s in range(0, len(order), self.window)]
        device = self.settings.device
        non_blocking = device.startswith("cuda")
        with torch.inference_mode():
            for prepared in prefetched(windows, lambda w: self._prepare(pairs, w)):
                pending = []
                for batch in prepared:
                    tensors = {k: v.to(device, non_blocking=non_blocking)
                               for k, v in batch.tensors.items()}
                    pending.append((batch.indices,
                                    self._forward(tensors, [pairs[i] for i in batch.indices])))
                # Results are fetched once per window, so the device queue never drains
                # while the host waits for one batch's scores.
                for indices, scores in pending:
                    out[indices] = _to_numpy(scores)
        return checked_scores(self.name, out, len(pairs))


def _to_numpy(scores: Any) -> np.ndarray:
    if isinstance(scores, np.ndarray):
        return scores.astype(np.float64, copy=False)
    return scores.double().cpu().numpy()


def cast_model(model: Any, settings: DeviceSettings, ranker: str = "") -> Any:
    """Move ``model`` to the settings' device and dtype, in eval mode (checking a device that
    was named but not yet checked: see ``resolve_device(lazy=True)``)."""
    device = settings.device
    if device != "cpu":
        resolve_device(device, ranker or "model")
    return model.to(device=device, dtype=torch_dtype(settings.dtype)).eval()
