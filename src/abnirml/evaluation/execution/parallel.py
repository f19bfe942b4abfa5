"""Where ranker batches run: in this process, in worker processes, or on a Ray cluster.

The engine hands an executor the list of batches still missing from the cache and writes
each batch's scores to the cache as it comes back, in order, so every executor gives the
same results as a serial run and an interruption loses at most the batches in flight.

* :class:`SerialExecutor` — the default.
* :class:`ProcessExecutor` — ``--workers N``: N forked processes share the already-built
  ranker (no pickling of models on Linux); suited to CPU-bound rankers.
* :class:`~abnirml.evaluation.execution.ray_executor.RayExecutor` — ``--ray [ADDRESS]``: the ranker
  is put in Ray's object store once and batches run as remote tasks, as many in flight as
  the cluster has CPUs (or GPUs); ``ADDRESS`` joins an existing cluster, ``local`` starts
  a loopback Ray in-process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from abnirml.errors import AbnirmlError, ConfigError, ScoringError, user_line
from abnirml.rankers.base import Pair, Ranker

_WORKER_RANKER: Ranker | None = None


@dataclass(frozen=True)
class WorkerFailure:
    """What a ranker raised in a worker process, in a form that crosses the boundary.

    A traceback cannot be pickled, and multiprocessing and Ray re-raise a worker's exception
    in the parent with the parent's frames, so ``file:line`` would name their code instead
    of the user's. The worker notes it while it still has the traceback.
    """

    type_name: str
    message: str
    where: str              # " (file:line)" of the raising frame, or ""
    traceback_text: str
    user_facing: bool       # an AbnirmlError: reported as its one line, as in-process

    @classmethod
    def of(cls, exc: Exception) -> WorkerFailure:
        import traceback

        return cls(type(exc).__name__, str(exc), user_line(exc),
                   "".join(traceback.format_exception(exc)), isinstance(exc, AbnirmlError))


class WorkerError(Exception):
    """A ranker's exception from a worker process (``--workers``, ``--ray``); its text ends
    with the worker's traceback, since that is where the bug is."""

    def __init__(self, failure: WorkerFailure):
        super().__init__(f"{failure.type_name}: {failure.message}\n\nraised in a worker "
                         f"process:\n{failure.traceback_text}")
        self.failure = failure


def score_or_failure(ranker: Ranker, batch: Sequence[Pair]) -> np.ndarray | WorkerFailure:
    """A worker's job: the batch's scores, or what went wrong (never raises)."""
    from abnirml.rankers.base import checked_scores

    try:    # checked here: converted to floats first, text would pass as numbers
        return checked_scores(ranker.name, ranker.score(batch), len(batch))
    except SystemExit as exc:   # would end the worker, not the run: report it instead
        return WorkerFailure("SystemExit", f"ranker {ranker.name}: score() called "
                             f"sys.exit({exc.code!r}){user_line(exc)}; a ranker must return "
                             "scores or raise an exception, not end the process", "", "", True)
    except Exception as exc:
        return WorkerFailure.of(exc)


def raised_if_failed(result: np.ndarray | WorkerFailure) -> np.ndarray:
    """The scores, or the worker's failure raised here: abnirml's own errors as a one-line
    :class:`ScoringError` with the same message, anything else as :class:`WorkerError`."""
    if not isinstance(result, WorkerFailure):
        return result
    if result.user_facing:
        raise ScoringError(result.message)
    raise WorkerError(result)


class ScoringExecutor(Protocol):
    name: str

    def run(self, ranker: Ranker, batches: Sequence[Sequence[Pair]]) -> Iterator[np.ndarray]:
        """Scores of each batch, yielded in batch order."""
        ...


class SerialExecutor:
    name = "serial"

    def run(self, ranker: Ranker, batches: Sequence[Sequence[Pair]]) -> Iterator[np.ndarray]:
        # Rankers that can prepare the next batches while scoring the current one (token-
        # budget rankers tokenize ahead) get the whole sequence at once.
        streamed = getattr(ranker, "score_batches", None)
        if streamed is not None:
            yield from streamed(batches)
            return
        for batch in batches:
            yield ranker.score(batch)


def _exit_with_parent(parent: int, interval: float = 0.2) -> None:
    """Pool initializer: end this worker as soon as the parent process is gone.

    A SIGKILLed parent cannot stop its pool, and the orphaned workers would keep
    computing batches nobody will read (for up to a minute, measured). A daemon thread
    watching the parent's pid — the child is re-parented when it dies — exits instead.

    Ctrl-C reaches every process of the terminal's process group; the workers ignore it,
    so only the parent reacts (it says the run was interrupted and stops the pool) and no
    worker prints a KeyboardInterrupt traceback of its own.
    """
    import os
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="abnirml-parent-watch", daemon=True).start()


def _score_in_worker(batch: Sequence[Pair]
                     ) -> tuple[np.ndarray | WorkerFailure, dict[str, int] | None]:
    assert _WORKER_RANKER is not None
    return scored_counting_usage(_WORKER_RANKER, batch)


def scored_counting_usage(ranker: Ranker, batch: Sequence[Pair]
                          ) -> tuple[np.ndarray | WorkerFailure, dict[str, int] | None]:
    """The batch's scores (or failure), and what a served ranker counted while scoring it
    (None for others): in a worker (``--workers``, ``--ray``) its copy of the ranker counts
    its requests, the parent's would say 0, so the worker sends them back."""
    from abnirml.rankers.support.http_client import usage_counter

    counter = usage_counter(ranker)
    before = counter.counts() if counter is not None else None
    result = score_or_failure(ranker, batch)
    return result, (counter.since(before) if counter is not None and before is not None
                    else None)


class ProcessExecutor:
    """Forked worker processes; the ranker is inherited, batches and scores are pickled."""

    name = "processes"

    def __init__(self, workers: int):
        if workers < 1:
            raise ConfigError(f"--workers must be ≥ 1, got {workers}")
        if "fork" not in multiprocessing.get_all_start_methods():
            raise ConfigError("--workers needs the 'fork' start method (Linux or macOS)")
        self.workers = workers
        self._capped_said = False

    def processes_for(self, batches: int) -> int:
        """How many processes to fork: no more than the batches to score or the CPU cores
        this process may use (more only compete for the same cores); said once per run."""
        cores = available_cores()
        count = max(1, min(self.workers, batches, cores))
        if count < self.workers and not self._capped_said:
            self._capped_said = True
            import warnings

            warnings.warn(f"--workers {self.workers}: using {count} worker processes "
                          f"({cores} CPU core(s) available, {batches} batch(es) to score)",
                          stacklevel=2)
        return count

    def run(self, ranker: Ranker, batches: Sequence[Sequence[Pair]]) -> Iterator[np.ndarray]:
        global _WORKER_RANKER
        processes = self.processes_for(len(batches)) if batches else 1
        if processes == 1:
            yield from SerialExecutor().run(ranker, batches)
            return
        _WORKER_RANKER = ranker
        try:
            yield from _scored_in_pool(processes, batches, ranker)
        finally:
            _WORKER_RANKER = None


def _scored_in_pool(processes: int, batches: Sequence[Sequence[Pair]], ranker: Ranker
                    ) -> Iterator[np.ndarray]:
    """Each batch's scores, in order, from ``processes`` forked workers.

    ``concurrent.futures`` rather than ``multiprocessing.Pool``: when a worker dies (the
    kernel's out-of-memory killer, a crash in native code, a library that cannot run after
    a fork) ``Pool`` starts a replacement and waits for ever for the lost batch, while the
    executor marks itself broken and every pending batch fails, so the run stops with one
    line instead of hanging.
    """
    import os
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from abnirml.rankers.support.http_client import usage_counter

    counter = usage_counter(ranker)
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(processes, mp_context=context, initializer=_exit_with_parent,
                               initargs=(os.getpid(),))
    finished = False
    try:
        pending = [pool.submit(_score_in_worker, batch) for batch in batches]
        workers = _worker_processes(pool)
        for future in pending:
            try:
                result, spent = future.result()
            except BrokenProcessPool:
                raise ScoringError(
                    f"a --workers process died while scoring ({_how_workers_ended(workers)}); "
                    "scores already in the cache are kept: rerun with fewer --workers, a "
                    "smaller --batch-size, or without --workers") from None
            if spent and counter is not None:
                counter.add(**spent)
            yield raised_if_failed(result)
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            # Ctrl-C, an error or a closed generator: batches still running are not waited
            # for (``shutdown`` would), their processes are ended now
            workers = _worker_processes(pool)
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers:
                if process.is_alive():
                    process.kill()


def _worker_processes(pool: object) -> list[multiprocessing.process.BaseProcess]:
    """The executor's worker processes, read from its process table: ``concurrent.futures``
    keeps it private (an empty list where a Python version lacks it)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _how_workers_ended(workers: list[multiprocessing.process.BaseProcess]) -> str:
    """How the workers that did not exit cleanly ended, e.g. ``killed by SIGKILL``.

    The executor notices a death before the dead process is reaped, and it ends the other
    workers itself, so each is given a moment to report its exit.
    """
    for process in workers:
        process.join(timeout=2)
    ends = sorted({_how_ended(process.exitcode) for process in workers
                   if process.exitcode not in (None, 0)})
    return ", ".join(ends) if ends else "a worker exited"


def _how_ended(exitcode: int) -> str:
    import signal

    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


RAY_CONNECT_TIMEOUT_S = 10.0


def check_reachable(address: str, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Fail within ``timeout`` seconds when nothing listens at a ``host:port`` address.

    ``ray.init`` retries an unreachable address for minutes; a plain TCP connection
    answers quickly. Addresses without a port (``auto``) are left to Ray.
    """
    import socket

    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address} "
                          f"({exc.strerror or exc}); is 'ray start --head' running there?"
                          ) from None


def check_ray_address(address: object, where: str = "--ray") -> None:
    """ConfigError unless ``address`` is ``local``, ``auto``, ``HOST:PORT`` or
    ``ray://HOST[:PORT]`` (checked before any data loads; Ray itself would fail with a
    traceback on ``ray://::::``)."""
    if not isinstance(address, str):
        raise ConfigError(f"{where} must be an address string such as 'ray://head:10001', "
                          f"'head:6379', 'auto' or 'local', got {type(address).__name__} "
                          f"{address!r}"[:200])
    if address in ("local", "auto"):
        return
    import urllib.parse

    scheme, sep, target = address.rpartition("://")
    problem = ""
    if sep and scheme != "ray":
        problem = f"the scheme {scheme!r} is not ray://"
    else:
        try:
            parts = urllib.parse.urlsplit("//" + target)
            port = parts.port
        except ValueError as exc:
            problem = str(exc)
        else:
            if not parts.hostname or parts.path or parts.query or parts.fragment:
                problem = "expected HOST:PORT"
            elif port is None and not sep:
                problem = "a HOST:PORT address needs its port"
    if problem:
        raise ConfigError(f"{where} {address!r} is not a Ray address ({problem}); expected "
                          "'ray://head:10001', 'head:6379', 'auto' or 'local'")
