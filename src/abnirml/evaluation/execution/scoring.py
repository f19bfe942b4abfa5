"""Scoring unique (query, document) pairs once per ranker, through the persistent cache.

Pairs already in the cache are never rescored; missing pairs are scored in batches (sorted
by length when the ranker asks for it, which keeps padding low for neural models; on an
accelerator the batches alternate between the longest and the shortest, see
:func:`call_bounds`) and each batch is committed as soon as its scores arrive, so an
interrupted run resumes where it stopped. A ranker with nothing cached is not looked up pair
by pair: its texts are hashed batch by batch, for the commits, while the ranker scores.
Commits run on a thread of their own (:mod:`.score_commits`), so the scoring thread's work
per pair is only handing scores over, and the garbage collector's full passes, which walk
every object of the process, wait until scoring is over (:mod:`.heap_freeze`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from abnirml.errors import ConfigError, ScoringError, ranker_call_error
from abnirml.evaluation.execution.heap_freeze import frozen_heap
from abnirml.evaluation.execution.parallel import (
    ScoringExecutor,
    SerialExecutor,
    WorkerError,
    WorkerFailure,
)
from abnirml.evaluation.execution.score_commits import BackgroundCommits
from abnirml.rankers.base import Pair, Ranker, checked_scores, hints
from abnirml.rankers.support.cache import ScoreCache, text_hashes

#: the last engine call of a ranker whose calls are accelerator-sized holds at most this
#: many pairs (:func:`call_bounds`)
TAIL_PAIRS = 1_024


class Scorer:
    def __init__(self, cache: ScoreCache, batch_size: int | None = None,
                 progress: bool = True, executor: ScoringExecutor | None = None):
        self.cache = cache
        self.batch_size = batch_size
        self.progress = progress
        self.executor = executor or SerialExecutor()
        self.scored = 0        # pairs sent to rankers
        self.reused = 0        # pairs served from the cache
        self.windows_ranked = 0    # listwise windows sent to rankers
        self.windows_reused = 0    # listwise windows served from the cache

    def text_key(self, text: str) -> bytes:
        """The cache's hash of ``text`` (memoised:
        :func:`~abnirml.rankers.support.cache.text_hashes`)."""
        return text_hashes([text])[0]

    def score(self, ranker: Ranker, pairs: Sequence[Pair]) -> np.ndarray:
        """Scores for ``pairs`` (which should be unique) in their order; the process's
        existing objects are left out of the garbage collector's passes meanwhile
        (:mod:`.heap_freeze`), so no full pass stops the threads feeding a device."""
        with frozen_heap():
            return self._score(ranker, pairs)

    def _score(self, ranker: Ranker, pairs: Sequence[Pair]) -> np.ndarray:
        if not callable(getattr(ranker, "score", None)):
            raise ConfigError(f"ranker {ranker.name} is a listwise ranker: it orders a list of "
                              "documents and has no per-document score; use it with "
                              "`abnirml run`")
        # A ranker that cannot be identified (cacheable=False) must neither reuse nor leave
        # scores under a fingerprint another scorer could share.
        cacheable = getattr(ranker, "cacheable", True)
        out = np.empty(len(pairs), dtype=np.float64)
        if cacheable and (not pairs or self.cache.holds_any(ranker.fingerprint)):
            looked_up = list(zip(text_hashes([q for q, _ in pairs]),
                                 text_hashes([d for _, d in pairs]), strict=True))
            found = self.cache.lookup(ranker.fingerprint, looked_up)
            missing: list[int] = []
            for i, key in enumerate(looked_up):
                value = found.get(key)
                if value is None:
                    missing.append(i)
                else:
                    out[i] = value
            order = np.asarray(missing, dtype=np.int64)
        else:
            # nothing cached for this ranker: every pair is scored, and each batch's texts
            # are hashed only for its commit, on the commit thread
            order = np.arange(len(pairs), dtype=np.int64)
        self.reused += len(pairs) - len(order)
        if not len(order):
            return out
        info = hints(ranker)
        if info.sort_by_length:     # stable: pairs of one length keep their order
            order = order[length_order(pairs, order)]
        batch = max(1, info.batch_size if info.own_batches
                    else (self.batch_size or info.batch_size))
        bar = progress_bar(len(order), f"scoring {ranker.name}", self.progress)
        index_batches = [order[start:stop] for start, stop in call_bounds(len(order), batch)]
        pair_batches = [list(map(pairs.__getitem__, idx.tolist())) for idx in index_batches]
        commits = BackgroundCommits(self.cache, ranker.fingerprint) if cacheable else None
        stored: set[int] = set()

        def store(number: int, raw: object) -> None:
            """Check a batch's scores, hand them to the commit thread, move the bar."""
            idx = index_batches[number]
            scores = checked_scores(ranker.name, raw, len(idx))
            out[idx] = scores
            if commits is not None:
                commits.put(pair_batches[number], scores)
            self.scored += len(idx)
            stored.add(number)
            bar.update(len(idx))

        def returned(number: int, raw: object) -> None:
            if not isinstance(raw, WorkerFailure):   # raised in batch order, below
                store(number, raw)

        # An executor whose tasks return out of order (Ray) hands each batch over as it
        # returns, so it is cached at once and an interruption loses only the batches
        # still running; the batches also come back in order, as from every executor.
        results = (self.executor.run(ranker, pair_batches, returned=returned)  # type: ignore[call-arg]
                   if getattr(self.executor, "counts_returns", False)
                   else self.executor.run(ranker, pair_batches))
        try:
            for number, raw in enumerate(results):
                if number not in stored:
                    store(number, raw)
            if len(stored) != len(index_batches):
                raise ScoringError(f"ranker {ranker.name}: the executor returned "
                                   f"{len(stored)} of {len(index_batches)} batches")
            if commits is not None:
                commits.finish()        # every batch committed; a failed commit raises
        except (SystemExit, Exception) as exc:
            error = ranker_call_error(ranker, "score()", "scores", exc)
            if error is None:
                raise          # abnirml's own rankers: a traceback is a bug report
            if isinstance(exc, WorkerError):     # raised in a worker: it noted the line
                failure = exc.failure
                raise ScoringError(f"ranker {ranker.name}: score() failed{failure.where}: "
                                   f"{failure.type_name}: {failure.message}") from None
            raise error from None
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()   # stop worker pools promptly on errors and interrupts
            if commits is not None:
                commits.close()   # what was scored is committed, also on an interruption
            bar.close()
        return out


def length_order(pairs: Sequence[Pair], order: np.ndarray) -> np.ndarray:
    """The positions in ``order`` that sort ``pairs[order]`` by characters (query and
    document together), stably. This runs before a device's first batch: the lengths are
    counted without indexing when ``order`` takes every pair, and sorted by a radix sort
    when they fit 16 bits (a tenth of the time of a comparison sort on 56,000 pairs)."""
    picked = pairs if len(order) == len(pairs) else [pairs[i] for i in order.tolist()]
    lengths = np.fromiter((len(q) + len(d) for q, d in picked), dtype=np.int64,
                          count=len(order))
    if len(lengths) and int(lengths.max()) < 1 << 16:
        lengths = lengths.astype(np.uint16)
    by_length: np.ndarray = np.argsort(lengths, kind="stable")
    return by_length


def call_bounds(count: int, size: int, tail: int = TAIL_PAIRS) -> list[tuple[int, int]]:
    """``(start, stop)`` of each engine call over ``count`` pairs sorted by length, in the
    order the calls are made; calls of at most ``size`` pairs.

    Calls of at least twice ``tail`` pairs (an accelerator's) are ordered for the device:

    * **Alternately from both ends of the length order**, longest first. The host prepares
      pairs at about the same cost whatever their length, while the device's time grows
      with it: shortest first, the device would outrun the host's feed at the start and
      wait, and the feed would idle later; alternating keeps each stretch near the average
      rate, which the feed outpaces. Longest first also shows an out-of-memory error on the
      first call rather than at the end of a long run.
    * **Ending in calls that halve** until they hold at most ``tail`` pairs (…, 3,528,
      1,764, 882, 883): a call's scores are committed once they have all arrived, so
      whatever the last call holds is committed after the device has finished; each halving
      call's commit overlaps the device's work on the next.

    Smaller calls (every call on a CPU) are cut evenly, shortest first, as always. Each call
    is one stretch of the length order, so padding is what it was."""
    if size < 2 * tail or count <= tail:
        return [(start, min(start + size, count)) for start in range(0, count, size)]
    bounds: list[tuple[int, int]] = []
    low, high, longest = 0, count, True
    while high - low > 2 * size:
        if longest:
            bounds.append((high - size, high))
            high -= size
        else:
            bounds.append((low, low + size))
            low += size
        longest = not longest
    start, left = low, high - low
    while left > tail:
        step = left // 2
        bounds.append((start, start + step))
        start, left = start + step, left - step
    bounds.append((start, high))
    return bounds


class ProgressBar(Protocol):
    """What the pipeline uses of a tqdm bar (tqdm itself ships no types)."""

    def update(self, n: int = 1) -> object: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> object: ...

    def close(self) -> object: ...

    def __enter__(self) -> ProgressBar: ...

    def __exit__(self, *exc: object) -> None: ...


def progress_bar(total: int, label: str, enabled: bool, unit: str = "pair") -> ProgressBar:
    """A transient progress bar on stderr (nothing at all when disabled or empty)."""
    from tqdm.auto import tqdm

    bar: ProgressBar = tqdm(total=total, desc=label, unit=unit,
                            disable=not enabled or total == 0, file=sys.stderr,
                            dynamic_ncols=True, leave=False)
    return bar
