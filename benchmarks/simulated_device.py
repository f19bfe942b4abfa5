"""A simulated accelerator behind the real scoring engine: does the host feed the device?

The stand-in replaces only the model's forward pass of a cross-encoder (randomly initialised
micro BERT, real bert-base-uncased vocabulary): each padded batch is queued to one "device"
thread that sleeps — releasing the GIL, as a GPU leaves the host free — for the time the
accelerator would take for the batch's padded tokens (rows × width), and the scores are a
future that the engine waits for when it fetches them (once per chunk, as on CUDA).
Everything else is the real engine: sample deduplication, the score cache's lookups and
commits, length sorting, tokenization ahead, token-budget packing and padding.

Calibration: :data:`H100_BERT_BASE_BF16_S_PER_TOKEN` is 6.8 s (a BERT-base cross-encoder in
bf16 on an H100 over the 56,209 unique pairs of the DL19 battery below) divided by the
padded tokens the engine forms for those pairs. ``--speedup F`` simulates a device F times
faster per token (MiniLM-L6 on the same card: about 4).

It prints the engine's wall time over the simulated device time, the CPU time per pair on
the calling (scoring) thread, the rates the host can tokenize at and the device consumes at,
which resource binds when the ratio is over 1.10 and — with an empty token store — this
host's time to tokenize the unique texts measured alone and the target it sets
(R ≤ 1.10 × max(device, tokenization) / device), and ends with the line
``engine / simulated device: R``. It proves it did the work: every pair reached the device
once and the cache, every text was read back or tokenized during the run, and the device
was sent exactly the tokens the pairs are made of (their attention masks summed).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.rankers.support.device_batching import FetchedEarly

#: 6.8 s / 5,509,699 padded tokens: BERT-base bf16 on an H100 over the DL19 battery's pairs
H100_BERT_BASE_BF16_S_PER_TOKEN = 6.8 / 5_509_699
TARGET = 1.10


class SimulatedDevice:
    """One device queue: jobs run one after another on a thread that only sleeps.

    The device keeps its own clock, as a GPU runs queued kernels back to back: a batch
    queued while the device is busy starts when the previous one ends, one queued while it
    is idle starts when it is queued, and its scores are ready at that start plus its time.
    The thread sleeps until then, so the time it takes to wake up is never added to the
    device's work. The gaps while nothing was queued are the host's fault, and counted."""

    def __init__(self, seconds_per_token: float):
        self.seconds_per_token = seconds_per_token
        self.busy_s = 0.0          # nominal device time of every batch queued
        self.tokens = 0            # padded tokens (rows × width) of every batch
        self.real_tokens = 0       # the pairs' own tokens among them (the attention mask)
        self.rows = 0
        self.batches = 0
        self.first_batch_at: float | None = None
        self.last_done_at: float | None = None
        self.idle_s = 0.0          # time the device had nothing queued, between batches
        self.waits = 0             # how many times that happened
        self.finished = 0          # batches done, in queue order
        self._progress = threading.Condition()
        self._jobs: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="simulated-device", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        free_at: float | None = None       # when the work queued so far ends
        while True:
            job = self._jobs.get()
            if job is None:
                return
            seconds, done, queued_at = job
            if free_at is not None and queued_at > free_at:
                self.idle_s += queued_at - free_at
                self.waits += 1
            free_at = max(queued_at, free_at or queued_at) + seconds
            delay = free_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self.last_done_at = time.perf_counter()
            with self._progress:
                self.finished += 1
                self._progress.notify_all()
            done.set()

    def synchronize(self) -> None:
        """Wait for every batch queued so far: what a copy to the host queued now waits
        for, as on a CUDA stream, which runs in order."""
        target = self.batches
        with self._progress:
            self._progress.wait_for(lambda: self.finished >= target)

    def fetch_early(self, scores: _PendingScores) -> FetchedEarly:
        """The ranker's ``_fetch_early``: the copy queued right behind the batch, so reading
        the scores waits for that batch alone."""
        return FetchedEarly(scores, scores)

    def forward(self, tensors: dict[str, Any], items: list[Any]) -> _PendingScores:
        """What the ranker's ``_forward`` returns: scores that are ready once the device has
        worked through everything queued before them and this batch's tokens."""
        rows, width = tensors["input_ids"].shape
        seconds = rows * width * self.seconds_per_token
        mask = tensors.get("attention_mask")
        self.real_tokens += (int(np.count_nonzero(mask.numpy())) if mask is not None
                             else rows * width)
        if self.first_batch_at is None:
            self.first_batch_at = time.perf_counter()
        self.tokens += rows * width
        self.rows += rows
        self.batches += 1
        self.busy_s += seconds
        done = threading.Event()
        self._jobs.put((seconds, done, time.perf_counter()))
        return _PendingScores(rows, done, self)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()


class _PendingScores:
    """Duck-types the tensor the engine fetches: ``.double().cpu().numpy()`` waits for the
    device as a CUDA tensor's copy to the host does — for every batch queued until then,
    the stream running in order — unless the ranker queued the copy early
    (:meth:`SimulatedDevice.fetch_early`): then reading waits for this batch alone."""

    def __init__(self, rows: int, done: threading.Event, device: SimulatedDevice):
        self.rows = rows
        self.done = done
        self.device = device

    def synchronize(self) -> None:      # the event a copy queued early records
        self.done.wait()

    def double(self) -> _PendingScores:
        return self

    def cpu(self) -> _PendingScores:
        self.device.synchronize()
        return self

    def numpy(self) -> np.ndarray:
        return np.zeros(self.rows, dtype=np.float64)


def simulated_ranker(model_dir: Path, device: SimulatedDevice, max_tokens: int) -> Any:
    """The cross-encoder of ``model_dir`` fed as on an accelerator (its token budget, its
    engine call size), with the forward pass replaced by ``device``."""
    from abnirml.rankers.base import RankerHints
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.device_batching import ENGINE_PAIRS

    ranker: Any = build_ranker(f"cross-encoder:{model_dir}+max_tokens={max_tokens}",
                               RankerEnv())
    ranker.hints = RankerHints(batch_size=ENGINE_PAIRS, sort_by_length=True, own_batches=True)
    ranker.fingerprint += "[simulated]"
    ranker._ready()
    ranker._forward = device.forward
    ranker._queue_ahead = lambda: True      # the forward pass is asynchronous, as on a GPU
    ranker._fetch_early = device.fetch_early
    return ranker


def host_rates(ranker: Any, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """Texts per second the ranker's tokenizer stores (one batch call over the battery's
    unique texts not yet stored; inf when all are), and pairs per second one ``_prepare``
    pass over every pair reaches with every text stored (lookups, lengths, packing,
    padding) — the two rates the host feeds a device at."""
    store, _ = ranker._joiner
    texts = [t for t in dict.fromkeys(t for pair in pairs for t in pair) if t not in store.index]
    start = time.perf_counter()
    if texts:
        store.view(texts)
    tokenize = len(texts) / (time.perf_counter() - start) if texts else float("inf")
    return tokenize, feed_rate(ranker, pairs)


def tokenization_alone(ranker: Any, pairs: list[tuple[str, str]]) -> tuple[float, int]:
    """Seconds this host takes to tokenize the battery's unique texts into an empty
    in-memory store, measured alone (nothing else running), in the chunks a run tokenizes
    them in; and how many texts that was."""
    from abnirml.rankers.support.device_batching import CHUNK_PAIRS
    from abnirml.rankers.support.token_store import TokenStore

    store, _ = ranker._joiner
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    alone = TokenStore(store.fingerprint, store.encode)
    start = time.perf_counter()
    for s in range(0, len(texts), CHUNK_PAIRS):
        alone.view(texts[s:s + CHUNK_PAIRS])
    seconds = time.perf_counter() - start
    assert alone.tokenized == len(texts)            # every text went through the tokenizer
    return seconds, len(texts)


def pair_tokens(ranker: Any, pairs: list[tuple[str, str]]) -> int:
    """The battery's own tokens (special tokens included, padding not) as the ranker's
    template joins each pair: what the device must have been sent."""
    from abnirml.rankers.support.pair_join import JoinedPairs

    store, template = ranker._joiner
    return int(JoinedPairs.of(store, template, pairs, ranker.max_length).lengths.sum())


def feed_rate(ranker: Any, pairs: list[tuple[str, str]]) -> float:
    """Pairs per second of one ``_prepare`` pass over every pair, in engine-call pieces."""
    start = time.perf_counter()
    for s in range(0, len(pairs), 8_192):
        ranker._prepare(pairs[s:s + 8_192])
    return len(pairs) / (time.perf_counter() - start)


def simulate(pairs: list[tuple[str, str]], model_dir: Path, work: Path, speedup: float,
             max_tokens: int, ramp: bool = True, stored: bool = False) -> float:
    """Score ``pairs`` through the engine on the simulated device; print the figures and
    return engine wall / simulated device time. ``ramp=False`` feeds whole chunks from the
    start (no small first pieces), to measure what the ramp gives. ``stored=True`` starts
    with every text's token ids in the token store (as a run finds them in
    ``tokens.sqlite`` once any earlier run or ranker used this tokenizer on these texts);
    else the store starts empty and the texts are tokenized while the device works."""
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.support import device_batching
    from abnirml.rankers.support.cache import ScoreCache
    from abnirml.rankers.support.token_store import TokenStore

    if not ramp:
        device_batching.RAMP_PIECES = ()

    device = SimulatedDevice(H100_BERT_BASE_BF16_S_PER_TOKEN / speedup)
    ranker = simulated_ranker(model_dir, device, max_tokens)
    store, template = ranker._joiner
    disk = None
    if stored:     # an earlier run's tokens.sqlite: written here, read back during the run
        from abnirml.rankers.support.token_store import TokenDisk

        (work / "tokens.sqlite").unlink(missing_ok=True)
        earlier_disk = TokenDisk(work / "tokens.sqlite")
        earlier = TokenStore(store.fingerprint, store.encode, earlier_disk)
        earlier.view(list(dict.fromkeys(t for pair in pairs for t in pair)))
        earlier_disk.close()
        disk = TokenDisk(work / "tokens.sqlite")
    fresh = TokenStore(store.fingerprint, store.encode, disk)    # nothing in memory yet
    ranker._joiner = (fresh, template)
    cache_path = work / "simulated.sqlite"
    cache_path.unlink(missing_ok=True)
    cpu_start = time.process_time()
    with ScoreCache(cache_path) as cache:
        start, engine_cpu = time.perf_counter(), time.thread_time()
        Scorer(cache, progress=False).score(ranker, pairs)
        wall, engine_cpu = time.perf_counter() - start, time.thread_time() - engine_cpu
        assert cache.count() == len(pairs)      # every pair scored and committed
    cpu = time.process_time() - cpu_start
    device.close()
    assert device.rows == len(pairs)            # every pair went through the device once
    texts = len({t for pair in pairs for t in pair})
    # every text was read back from tokens.sqlite, or tokenized, during the run
    assert (fresh.loaded, fresh.tokenized) == ((texts, 0) if stored else (0, texts))
    ratio = wall / device.busy_s
    disk_feed = None
    if disk is not None:      # the feed as in the run: every text's ids read back from disk
        ranker._joiner = (TokenStore(fresh.fingerprint, fresh.encode, disk), template)
        disk_feed = feed_rate(ranker, pairs)
        disk.close()
    ranker._joiner = (TokenStore(fresh.fingerprint, fresh.encode), template)
    tokenize, feed = host_rates(ranker, pairs)
    # the device was sent each pair's own tokens, every one of them: the run did the work
    sent = pair_tokens(ranker, pairs)
    assert device.real_tokens == sent, (device.real_tokens, sent)
    tokenize_s = None
    if not stored:
        ranker._joiner = (TokenStore(fresh.fingerprint, fresh.encode), template)
        tokenize_s, _ = tokenization_alone(ranker, pairs)
    consume = len(pairs) / device.busy_s
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    startup = (device.first_batch_at or start) - start
    print(f"pairs: {len(pairs):,}; padded tokens: {device.tokens:,} in {device.batches:,} "
          f"batches (token budget {max_tokens:,})")
    print(f"simulated device: {device.busy_s:.2f} s ({consume:,.0f} pairs/s; BERT-base bf16 "
          f"on an H100 × {speedup:g})")
    tail = start + wall - (device.last_done_at or start + wall)
    print(f"engine wall: {wall:.2f} s (host CPU {cpu:.2f} s, the engine's thread {engine_cpu:.2f} "
          f"s; first batch reached the device after {startup:.2f} s)")
    print(f"calling thread: {1e6 * engine_cpu / len(pairs):.2f} µs CPU per pair "
          f"({len(pairs) / max(engine_cpu, 1e-9):,.0f} pairs per CPU-s); the device's "
          f"{sent:,} tokens of the pairs all sent ({device.tokens:,} with padding)")
    print(f"device idle: {startup:.2f} s before the first batch, {device.idle_s:.2f} s between "
          f"batches ({device.waits:,} waits), {tail:.2f} s after the last")
    print(f"token store: {'tokens.sqlite of an earlier run' if stored else 'empty'}; during "
          f"the run {fresh.tokenized:,} texts tokenized, {fresh.loaded:,} read back")
    read_back = ("" if disk_feed is None else
                 f", reading every text's ids from tokens.sqlite {disk_feed:,.0f} pairs/s")
    print(f"host: {cores} cores, load average {load:.1f}; tokenizing unique texts "
          f"{tokenize:,.0f} texts/s; feed with every text in memory {feed:,.0f} pairs/s"
          f"{read_back}")
    if ratio > TARGET:
        texts_per_pair = fresh.tokenized / len(pairs)
        if texts_per_pair and tokenize / texts_per_pair < consume:
            print(f"binds: host tokenization ({tokenize:,.0f} texts/s on {cores} cores, "
                  f"{texts_per_pair:.2f} new texts per pair < the device's {consume:,.0f} "
                  "pairs/s): more cores, a slower device, or texts already stored")
        elif min(feed, disk_feed or feed) < consume:
            print(f"binds: the host feed ({min(feed, disk_feed or feed):,.0f} pairs/s"
                  f"{'' if disk_feed is None else ' reading stored ids back'} < the "
                  f"device's {consume:,.0f} pairs/s)")
        elif startup > max(device.idle_s, tail):
            print(f"binds: start-up ({startup:.2f} s before the device's first batch)")
        elif tail > device.idle_s:
            print(f"binds: the last commit ({tail:.2f} s after the device's last batch)")
        else:
            print(f"binds: the host between device batches ({device.idle_s:.2f} s idle): "
                  f"{cpu:.2f} host CPU-s in {wall:.2f} s, {engine_cpu:.2f} on the engine's "
                  "thread (hashing texts, committing scores), the rest mostly feeding "
                  "(reading stored ids, joining, packing)")
    if tokenize_s is not None:
        bound = TARGET * max(device.busy_s, tokenize_s) / device.busy_s
        print(f"tokenization alone: {tokenize_s:.2f} s for the {texts:,} unique texts "
              f"({texts / tokenize_s:,.0f} texts/s on {cores} cores, nothing else running); "
              f"target: R ≤ {TARGET:.2f} × max(device, tokenization) / device = {bound:.3f}")
    else:
        print(f"target: R ≤ {TARGET:.2f} (every text's ids stored)")
    print(f"engine / simulated device: {ratio:.3f}")
    return ratio
