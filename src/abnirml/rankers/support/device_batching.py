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
* **Tokenization in large chunks, ahead** (:func:`prefetched`). One tokenizer call covers a
  whole chunk of pairs (an engine call: 1,024 pairs on CPU, 8,192 on an accelerator), never
  one model batch: the fast tokenizers split a large batch on all cores in Rust with the GIL
  released, while per-call Python overhead is paid once per chunk. Two background threads
  prepare the next chunks while the device computes the current one, across engine calls
  (:meth:`TokenBudgetRanker.score_batches`), so only the first chunk's tokenization is on
  the critical path (that chunk is prepared alone, nothing competing with it). Token ids are
  kept as flat arrays (:class:`TokenColumns`) and each batch is padded by one NumPy gather,
  not pair by pair. On CUDA the padded tensors are pinned and copied with
  ``non_blocking=True``, so the host never waits on a copy either. Scores are fetched once
  per chunk, so the device queue does not drain between batches, and on an accelerator the
  next chunk is queued before they are fetched, so it does not drain between chunks either,
  nor while the engine commits a finished call's scores; on CUDA each batch's copy to the
  host is queued right behind the batch, so fetching a chunk never waits for the chunk
  queued after it (a stream runs in order).

:class:`TokenBudgetModel` ties these together: a subclass says how to tokenize items into
rows (:meth:`~TokenBudgetModel._rows`) and how to score one padded batch
(:meth:`~TokenBudgetModel._forward`); ordering, packing, prefetching, precision and putting
scores back in the caller's order are done here. :class:`TokenBudgetRanker` is that model over
(query, document) pairs as an engine ranker (cross-encoder, monoT5, ColBERT, SPLADE, ``lm:``);
the pairwise rankers (duoT5, ``lm-pairwise:``) use the model over triples.
:class:`DeviceSettings` is built from the shared parameters (``dtype``, ``max_tokens``,
``batch_size``) as the family's record checked them, for every family alike.

* **Attention kernels chosen for varying widths** (:func:`attention_scope`). Token-budget
  batches come in many widths (about 90 on the DL19 battery), and on CUDA torch's default
  choice for half precision is cuDNN's attention, which builds a plan for every new input
  shape: most forward passes of a run would pay one. On an H200, MiniLM-L6 in bf16 over that
  battery took 4.29 s with the default backends and 0.74 s with cuDNN's attention left out,
  so on CUDA every forward pass runs with flash, memory-efficient and math attention only
  (:data:`CUDA_ATTENTION`). Elsewhere torch's own choice stands.
"""

from __future__ import annotations

import contextlib
import copy
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Protocol

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerHints, checked_scores
from abnirml.rankers.support.torch_support import import_torch, positive_int, resolve_device

DTYPES = ("fp32", "fp16", "bf16")
CPU_MAX_TOKENS = 8_192
ACCELERATOR_MAX_TOKENS = 65_536
CHUNK_PAIRS = 8_192           # at most this many pairs per tokenizer call
#: two threads: while one chunk's stored ids are read (SQLite, the interpreter's lock
#: released) or its texts tokenized (Rust, on every core), the other chunk is joined and
#: padded; with one, a device fed from stored ids waited for each chunk's reads
PREFETCH_WORKERS = 2
PREFETCH_DEPTH = 2            # chunks tokenized ahead of the device
#: the first chunks of a stream are at most these many items, so the device starts after
#: tokenizing 1,024 pairs rather than a whole chunk (see :func:`ramped_pieces`)
RAMP_PIECES: tuple[int, ...] = (1_024, 2_048, 4_096)
ENGINE_PAIRS = 8_192          # pairs per engine call (one cache commit each) on a GPU
CPU_ENGINE_PAIRS = 1_024      # on CPU: smaller, so progress bars still move
CPU_LLM_ENGINE_PAIRS = 64     # causal LMs on CPU: far slower per pair still
DEVICE_PARAMS = frozenset({"dtype", "max_tokens", "batch_size"})
#: the scaled-dot-product attention backends forward passes may use on CUDA: not cuDNN's,
#: whose per-shape plans cost more than the attention itself on varying batch widths
CUDA_ATTENTION: tuple[str, ...] = ("flash", "efficient", "math")
#: our names → ``torch.nn.attention.SDPBackend`` members
SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "math": "MATH", "cudnn": "CUDNN_ATTENTION"}

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


def attention_backends(device: str) -> tuple[str, ...] | None:
    """The attention backends forward passes on ``device`` are restricted to (names of
    :data:`SDPA_BACKENDS`), or None where torch's own choice stands (off CUDA)."""
    return CUDA_ATTENTION if device.startswith("cuda") else None


def attention_scope(device: str) -> contextlib.AbstractContextManager[Any]:
    """A context in which scaled-dot-product attention uses :func:`attention_backends`
    (``torch.nn.attention.sdpa_kernel``); a context that changes nothing off CUDA, on a
    torch without ``sdpa_kernel``, or when this torch knows none of the backends. Backends
    this torch does not know are left out of the list."""
    names = attention_backends(device)
    if names is None:
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return contextlib.nullcontext()
    backends = [getattr(SDPBackend, SDPA_BACKENDS[n]) for n in names
                if hasattr(SDPBackend, SDPA_BACKENDS[n])]
    return sdpa_kernel(backends) if backends else contextlib.nullcontext()


class DeviceParams(Protocol):
    """The parameters device settings are built from, as every token-budget family declares
    them (``ModelParams`` in :mod:`~abnirml.rankers.built_in`), already checked."""

    @property
    def dtype(self) -> str | None: ...

    @property
    def max_tokens(self) -> int | None: ...

    @property
    def batch_size(self) -> int | None: ...


@dataclass(frozen=True)
class DeviceSettings:
    """How a torch ranker uses its device: where, in which precision, how much per step.

    ``max_batch`` caps the rows of one batch on top of the token budget (``+batch_size``);
    ``None`` lets the budget alone decide. ``checked``: the run has checked ``device``
    already (:meth:`RankerEnv.device_for <abnirml.rankers.registry.RankerEnv.device_for>`);
    otherwise :func:`cast_model` checks it when the model loads.
    """

    device: str = "cpu"
    dtype: str = "fp32"
    max_tokens: int = CPU_MAX_TOKENS
    max_batch: int | None = None
    checked: bool = field(default=False, compare=False)

    @classmethod
    def for_params(cls, params: DeviceParams, device: str, ranker: str, *,
                   default_batch: int | None = None, checked: bool = False,
                   accelerator_tokens: int = ACCELERATOR_MAX_TOKENS) -> DeviceSettings:
        """The settings a family's checked parameters ask for on the resolved ``device``:
        ``dtype`` (else the device's default), ``max_tokens`` (else the device's budget) and
        ``batch_size`` (else ``default_batch``, the run's ``--batch-size``; else no cap).
        ``checked``: the run has checked ``device`` (``RankerEnv.device_checked``).

        ``accelerator_tokens`` is the default budget off CPU: a family whose activations per
        token are unusually large (SPLADE's vocabulary-wide logits) asks for less."""
        dtype = parse_dtype(params.dtype, device, ranker)
        max_tokens = params.max_tokens if params.max_tokens is not None else (
            CPU_MAX_TOKENS if device == "cpu" else accelerator_tokens)
        max_batch = params.batch_size
        if max_batch is None and default_batch:
            max_batch = positive_int(str(default_batch), 1, ranker, "batch_size")
        return cls(device, dtype, max_tokens, max_batch, checked)

    @property
    def fingerprint(self) -> str:
        return dtype_fingerprint(self.dtype)

    def describe(self) -> dict[str, Any]:
        """What run.json's ``device`` section says of a ranker run with these settings: the
        device, the precision, the token budget and the attention backends (``"torch
        default"`` where the choice is torch's)."""
        backends = attention_backends(self.device)
        return {"device": self.device, "dtype": self.dtype, "max_tokens": self.max_tokens,
                **({} if self.max_batch is None else {"max_batch": self.max_batch}),
                "attention": "torch default" if backends is None else list(backends)}

    def hints(self, cpu_pairs: int = CPU_ENGINE_PAIRS) -> RankerHints:
        """Engine calls larger than a model batch: the ranker packs its own batches, so the
        engine only decides how often the score cache commits (and the progress bar moves).
        ``cpu_pairs`` lets a family whose pairs are slow on a CPU (a causal LM: seconds per
        pair) commit more often, so an interrupted run loses minutes, not hours."""
        pairs = cpu_pairs if self.device == "cpu" else ENGINE_PAIRS
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


def packed_batches(lengths: np.ndarray, max_tokens: int,
                   max_batch: int | None = None) -> list[np.ndarray]:
    """The batches :func:`token_budget_batches` forms
    (shortest rows first, ties by position; a batch grows while ``rows × longest ≤
    max_tokens`` and ``rows ≤ max_batch``), found per batch by a binary search rather
    than per row."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be ≥ 1")
    order = np.argsort(lengths, kind="stable")
    ordered = np.asarray(lengths, dtype=np.int64)[order]
    n = len(order)
    cap = n if max_batch is None else max_batch
    batches = []
    start = 0
    while start < n:
        window = min(n - start, cap, max_tokens // max(int(ordered[start]), 1) + 1)
        cost = np.arange(1, window + 1, dtype=np.int64) * ordered[start:start + window]
        take = max(1, int(np.searchsorted(cost, max_tokens, side="right")))
        batches.append(order[start:start + take])
        start += take
    return batches


def ramped_pieces(batches: Sequence[Sequence[Any]], chunk: int,
                  ramp: Sequence[int] = RAMP_PIECES) -> list[tuple[int, Sequence[Any]]]:
    """``(batch number, items)`` pieces of ``batches`` in order: each batch cut into pieces
    of at most ``chunk`` items, the first pieces of the stream at most ``ramp[0]``,
    ``ramp[1]``, … items.

    Only the first piece's tokenization is on the device's critical path (the rest is
    tokenized while the device works), so a small first piece starts the device sooner: a
    whole 8,192-pair chunk takes about a second to tokenize on one core, the first 1,024
    pairs an eighth of that, and the following pieces grow while the device is busy. A batch
    no larger than ``ramp[0]`` (every engine call on a CPU) is one piece, as before.
    """
    pieces: list[tuple[int, Sequence[Any]]] = []
    for number, batch in enumerate(batches):
        start = 0
        while True:
            step = min(chunk, ramp[len(pieces)]) if len(pieces) < len(ramp) else chunk
            pieces.append((number, batch[start:start + step]))
            start += step
            if start >= len(batch):
                break
    return pieces


def prefetched(items: Iterable[Any], prepare: Callable[[Any], Any], depth: int = 4,
               workers: int = PREFETCH_WORKERS) -> Generator[Any, None, None]:
    """``prepare(item)`` for each item, yielded in order, computed up to ``depth`` items ahead
    by ``workers`` threads, so the consumer's work (the device) overlaps the preparation
    (tokenizing: the fast tokenizers release the GIL while they split text).

    An exception in ``prepare`` is raised in the consumer at that item's position; closing
    the iterator early cancels what has not started.
    """
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="abnirml-prep")
    pending: deque[Any] = deque()
    source = iter(items)
    try:
        for number, item in enumerate(source):
            pending.append(pool.submit(prepare, item))
            if number == 0:
                # the first item alone, on every core: it is what the consumer waits for
                wait(pending)
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


class TokenColumns:
    """Tokenized rows stored flat: per key one int64 array of every row's ids end to end.

    A list of per-pair dicts of Python lists costs Python work per pair at every step
    (building, measuring, padding); flat arrays with row offsets let :meth:`padded` build a
    batch with one NumPy gather whatever its size. ``input_ids`` gives each row's length;
    every key has rows of the same lengths.
    """

    def __init__(self, flat: dict[str, np.ndarray], lengths: np.ndarray):
        self.flat = flat
        self.lengths = lengths
        self.offsets = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths) > 1:
            np.cumsum(lengths[:-1], out=self.offsets[1:])

    def __len__(self) -> int:
        return len(self.lengths)

    @classmethod
    def from_lists(cls, columns: dict[str, Sequence[Sequence[int]]]) -> TokenColumns:
        """From a tokenizer's batch output: key → one id list per row."""
        from itertools import chain

        ids = columns["input_ids"]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        total = int(lengths.sum())
        flat = {key: np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=total)
                for key, rows in columns.items()}
        return cls(flat, lengths)

    @classmethod
    def from_rows(cls, rows: Sequence[Row]) -> TokenColumns:
        keys = list(rows[0]) if rows else ["input_ids"]
        return cls.from_lists({k: [row[k] for row in rows] for k in keys})

    def padded(self, rows: Sequence[int], pad_values: dict[str, int],
               left: bool = False) -> dict[str, np.ndarray]:
        """Rows ``rows`` padded to their longest, ``[len(rows), width]`` int64 per key;
        padding goes on the right, or on the left with ``left=True`` (decoders that read
        the last position)."""
        index = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[index]
        width = int(lengths.max()) if len(index) else 0
        column = np.arange(width, dtype=np.int64)[None, :]
        shift = (width - lengths)[:, None] if left else 0
        keep = (column >= shift) if left else (column < lengths[:, None])
        source = (self.offsets[index][:, None] + column - shift)[keep]
        out = {}
        for key, flat in self.flat.items():
            array = np.full((len(index), width), pad_values.get(key, 0), dtype=np.int64)
            array[keep] = flat[source]
            out[key] = array
        return out


class Picked(Sequence[Any]):
    """``items[indices]`` without building the list: a batch's items, read only by the few
    rankers whose forward pass needs the text."""

    def __init__(self, items: Sequence[Any], indices: np.ndarray):
        self.items = items
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.items[int(j)] for j in self.indices[i]]
        return self.items[int(self.indices[i])]


@dataclass
class PreparedBatch:
    """One padded batch: the caller's item indices, the host tensors to feed the model and the
    items themselves (for rankers whose forward pass needs the text, e.g. ColBERT's queries).
    ``pairs`` holds whatever items the model scores: (query, document) pairs, or triples."""

    indices: np.ndarray
    tensors: dict[str, Any]
    pairs: Sequence[Any]


class TokenBudgetModel:
    """Token-budget scoring of *items* (pairs, or duoT5-style triples) with tokenization ahead.

    Subclasses set ``name``, ``settings`` (a :class:`DeviceSettings`) and implement
    :meth:`_rows` (tokenize a chunk of items in as few tokenizer calls as possible: a
    :class:`TokenColumns`, or one row of equal-length id lists per item; ``input_ids`` gives
    a row's length) and :meth:`_forward` (one padded batch of tensors already on the device →
    one float score per item). ``pad_values`` gives the padding id per row key (0 when
    absent); ``pad_left`` pads on the left. A subclass whose rows are not one per item (SPLADE
    encodes each distinct document once) overrides :meth:`_prepare` instead of :meth:`_rows`.
    This class is not a ranker by itself: :class:`TokenBudgetRanker` exposes it as one, and
    pairwise rankers expose it as ``preferences``.
    """

    name: str
    settings: DeviceSettings
    tokenizer: Any                       # the family's Hugging Face tokenizer
    pad_values: dict[str, int]
    pad_left: bool = False
    chunk: int = CHUNK_PAIRS

    def _rows(self, items: list[Any]) -> TokenColumns | list[Row]:
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

    def _forward(self, tensors: dict[str, Any], items: Sequence[Any]) -> Any:
        raise NotImplementedError

    def _host_tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """NumPy batch arrays as torch tensors, pinned on CUDA (so the copy is asynchronous)."""
        torch = import_torch(self.name)
        tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}
        if self.settings.device.startswith("cuda"):
            tensors = {k: v.pin_memory() for k, v in tensors.items()}
        return tensors

    def _prepare(self, items: Sequence[Any]) -> list[PreparedBatch]:
        """Tokenize one chunk of items (one tokenizer call) and pack it into padded, pinned
        token-budget batches; indices are positions in ``items``."""
        items = list(items)
        if not items:
            return []
        tokens = self._rows(items)
        if not isinstance(tokens, TokenColumns):
            tokens = TokenColumns.from_rows(tokens)
        batches = []
        for group in token_budget_batches(tokens.lengths.tolist(), self.settings.max_tokens,
                                          self.settings.max_batch):
            tensors = self._host_tensors(tokens.padded(group, self.pad_values,
                                                       left=self.pad_left))
            batches.append(PreparedBatch(np.asarray(group, dtype=np.int64), tensors,
                                         [items[i] for i in group]))
        return batches

    def _prepare_joined(self, items: Sequence[Any], joined: Any) -> list[PreparedBatch]:
        """Pack and pad one chunk whose rows are already known as stored ids
        (:class:`~abnirml.rankers.support.pair_join.JoinedPairs`): the same batches and tensors as
        :meth:`_prepare` would build, by NumPy gathers alone."""
        pad = self.pad_values.get("input_ids", 0)
        batches = []
        for group in packed_batches(joined.lengths, self.settings.max_tokens,
                                    self.settings.max_batch):
            tensors = self._host_tensors(joined.padded(group, pad))
            batches.append(PreparedBatch(group, tensors, Picked(items, group)))
        return batches

    def _compute(self, prepared: list[PreparedBatch], size: int) -> np.ndarray:
        """Scores of one prepared chunk, in the chunk's order."""
        return self._collect(self._submit(prepared), size)

    def _submit(self, prepared: list[PreparedBatch]) -> list[tuple[np.ndarray, Any]]:
        """Queue every batch of one prepared chunk on the device: (indices, pending scores)
        per batch. On an accelerator this returns at once (copies and kernels are queued)."""
        device = self.settings.device
        non_blocking = device.startswith("cuda")
        pending = []
        with attention_scope(device):
            for batch in prepared:
                tensors = {k: v.to(device, non_blocking=non_blocking)
                           for k, v in batch.tensors.items()}
                pending.append((batch.indices,
                                self._fetch_early(self._forward(tensors, batch.pairs))))
        return pending

    def _fetch_early(self, scores: Any) -> Any:
        """A batch's scores with their copy to the host queued now, right behind the
        batch's own kernels (:class:`FetchedEarly`), on CUDA; anything else as it is.

        A CUDA stream runs in order: a copy queued when the scores are read would wait for
        every batch queued after this one too — with the next chunk queued ahead, for that
        whole chunk — and the device would run dry while the host commits."""
        if not getattr(scores, "is_cuda", False):
            return scores
        torch = import_torch(self.name)
        host = scores.double().to("cpu", non_blocking=True)    # into pinned memory
        ready = torch.cuda.Event()
        ready.record()
        return FetchedEarly(host, ready)

    @staticmethod
    def _collect(pending: list[tuple[np.ndarray, Any]], size: int) -> np.ndarray:
        """Fetch one submitted chunk's scores (waiting for the device), in the chunk's order.
        Results are fetched once per chunk, so the device queue never drains while the host
        waits for one batch's scores."""
        out = np.empty(size, dtype=np.float64)
        for indices, scores in pending:
            out[indices] = _to_numpy(scores)
        return out

    def _queue_ahead(self) -> bool:
        """Whether the forward pass is asynchronous (an accelerator), so the next chunk is
        queued before the current one's scores are fetched: the device never waits for the
        host between chunks, nor while the caller commits a finished engine call. On a CPU
        the forward pass is the computation itself, so queuing ahead would only delay the
        scores the caller commits."""
        return self.settings.device != "cpu"

    def _score_items(self, items: Sequence[Any]) -> np.ndarray:
        """Scores of ``items`` in their order; many items are cut into chunks of similar
        length (by characters, the only length known before tokenizing)."""
        if len(items) <= self.chunk:
            return next(self._stream([items]))
        order = sorted(range(len(items)), key=lambda i: (sum(map(len, items[i])), i))
        chunks = [order[s:s + self.chunk] for s in range(0, len(order), self.chunk)]
        out = np.empty(len(items), dtype=np.float64)
        for idx, scores in zip(chunks, self._stream([[items[i] for i in c] for c in chunks]),
                               strict=True):
            out[idx] = scores
        return out

    def _stream(self, batches: Sequence[Sequence[Any]]) -> Iterator[np.ndarray]:
        """Scores of each batch of items, in order; the next batches are tokenized in the
        background while the device scores the current one, across batches.
        Batches are split into chunks of at most ``chunk`` items (one tokenizer call each),
        the first ones smaller (:func:`ramped_pieces`). On an accelerator one chunk stays
        queued on the device while the previous one's scores are fetched and yielded, so the
        caller's work between batches (committing scores) overlaps the device."""
        torch = import_torch(self.name)
        self._ready()
        pieces = ramped_pieces(batches, self.chunk, RAMP_PIECES)
        ahead = 1 if self._queue_ahead() else 0
        parts, filled = list[Any](), 0
        queued: deque[tuple[int, int, list[tuple[np.ndarray, Any]]]] = deque()
        failure: Exception | None = None
        stream = prefetched((p for _, p in pieces), self._prepare, depth=PREFETCH_DEPTH)
        try:
            with torch.inference_mode():
                for entry in chain(zip(pieces, stream, strict=True), [None]):
                    if entry is not None:
                        (number, piece), prepared = entry
                        try:
                            queued.append((number, len(piece), self._submit(prepared)))
                        except Exception as exc:      # out of memory, say: the batches
                            failure = exc             # finished before it still go out
                    last = entry is None or failure is not None
                    while len(queued) > (0 if last else ahead):
                        done, size, pending = queued.popleft()
                        parts.append(self._collect(pending, size))
                        filled += size
                        if filled == len(batches[done]):     # its batch's last piece
                            yield _finish(self.name, parts, filled)
                            parts, filled = [], 0
                    if failure is not None:
                        raise failure
        finally:
            stream.close()      # stop tokenizing ahead when the caller stops early

    def _ready(self) -> None:
        """Load what scoring needs before worker threads use it (subclasses override)."""


class TokenBudgetRanker(TokenBudgetModel):
    """A :class:`TokenBudgetModel` over (query, document) pairs, seen by the engine as a
    ranker: ``score`` and the streamed ``score_batches`` the serial executor prefers.
    Subclasses also set ``fingerprint`` and ``hints`` (usually ``settings.hints()``)."""

    fingerprint: str
    hints: RankerHints

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self._score_items(pairs)

    def score_batches(self, batches: Sequence[Sequence[Pair]]) -> Iterator[np.ndarray]:
        """Scores of each batch of pairs, in order; the next batches are tokenized in the
        background while the device scores the current one, across batches — the engine's
        serial executor calls this, so tokenization stays ahead across its calls too."""
        return self._stream(batches)


def _finish(name: str, parts: list[np.ndarray], size: int) -> np.ndarray:
    scores = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return checked_scores(name, scores, size)


class FetchedEarly:
    """A batch's scores being copied to the host (``host``, filled once ``ready`` — an event
    with ``synchronize()`` — has passed): reading them waits for their own batch alone."""

    def __init__(self, host: Any, ready: Any):
        self.host = host
        self.ready = ready

    def numpy(self) -> np.ndarray:
        self.ready.synchronize()
        return np.asarray(self.host.numpy(), dtype=np.float64)


def _to_numpy(scores: Any) -> np.ndarray:
    if isinstance(scores, np.ndarray):
        return scores.astype(np.float64, copy=False)
    if isinstance(scores, FetchedEarly):
        return scores.numpy()
    as_numpy: np.ndarray = scores.double().cpu().numpy()
    return as_numpy


def cast_model(model: Any, settings: DeviceSettings, ranker: str = "") -> Any:
    """Move ``model`` to the settings' device and dtype, in eval mode (checking a device that
    was named but not yet checked: see ``resolve_device(lazy=True)``)."""
    device = settings.device
    if device != "cpu" and not settings.checked:
        resolve_device(device, ranker or "model")
    return model.to(device=device, dtype=torch_dtype(settings.dtype)).eval()
