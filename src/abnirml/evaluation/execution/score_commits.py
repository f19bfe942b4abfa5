"""Committing a ranker's finished batches to the score cache on a thread of their own.

On an accelerator the scoring thread's time per pair decides how fast the device is fed:
hashing both texts, binding each score to its ranker and texts (a checksum per row), and
SQLite's inserts cost more per pair than a fast model's forward pass. So the scoring thread
only hands a finished batch over; one background thread hashes its texts (each distinct text
once per process, :func:`~abnirml.rankers.support.cache.text_hashes`), makes the row checks and
inserts the rows in one transaction, batch after batch in the order given — and SQLite's own
work runs there without holding the interpreter's lock.

What an interruption may lose is unchanged: a batch is handed over as soon as its scores
are checked, :meth:`BackgroundCommits.close` waits for every batch handed over (also when
scoring stopped on an error or Ctrl-C), and at most ``depth`` batches wait at a time (the
scoring thread waits when the commits fall behind). A commit that fails (a full disk) stops
the next hand-over, or :meth:`BackgroundCommits.finish`, with its error.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence

import numpy as np

from abnirml.rankers.base import Pair
from abnirml.rankers.support.cache import ScoreCache, text_hashes

DEPTH = 2      # batches handed over and not yet committed, at most


class BackgroundCommits:
    """Batches of one ranker's scores committed in order by one background thread."""

    def __init__(self, cache: ScoreCache, fingerprint: str, depth: int = DEPTH):
        self.cache = cache
        self.fingerprint = fingerprint
        self._jobs: queue.Queue[tuple[Sequence[Pair], np.ndarray] | None] = queue.Queue(
            maxsize=max(1, depth))
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._failed = False       # once a commit failed, nothing more is written
        self.committed = 0         # pairs committed

    def put(self, pairs: Sequence[Pair], scores: np.ndarray) -> None:
        """Hand over one batch's checked scores (waits while ``depth`` batches wait)."""
        self._raise_failure()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="abnirml-commit",
                                            daemon=True)
            self._thread.start()
        self._jobs.put((pairs, scores))

    def finish(self) -> None:
        """Wait for every batch handed over; raise a commit's error here."""
        self.close()
        self._raise_failure()

    def close(self) -> None:
        """Wait for every batch handed over to be committed (or to fail); never raises."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._failed:
                continue
            pairs, scores = job
            try:
                self.commit(pairs, scores)
            except BaseException as exc:        # handed to the scoring thread
                self._failed = True
                self._failure = exc

    def commit(self, pairs: Sequence[Pair], scores: np.ndarray) -> None:
        """One batch in one transaction: its texts' hashes, row checks and rows."""
        queries = text_hashes([q for q, _ in pairs])
        documents = text_hashes([d for _, d in pairs])
        self.cache.store_columns(self.fingerprint, queries, documents, scores)
        self.committed += len(pairs)
