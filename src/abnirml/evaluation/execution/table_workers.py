"""Building probes' sample tables on every core: forked worker processes, one probe each.

Sample building is Python work per document (manipulations, axiom mining, measures) that
one core does probe after probe; on a DL19 battery it takes longer than scoring every pair
on an accelerator. The probes of a run are independent — each draws its randomness from
``context.rng(its name)`` and reads the collection — so each can be built in a process of
its own and its table handed back (pickled): the tables are the same whichever process
built them, in whatever order.

The processes are forked from the loaded workspace (the collection, analyzer and options
in memory, shared copy-on-write) at one moment chosen by the caller, while the process runs
a single thread: a fork copies only the forking thread, and a lock another thread held at
that moment (an import in progress, a model loading) would never be released in the child.
So :meth:`TableWorkers.start` forks before the background imports and model loads start,
and starts nothing when other threads already run (the tables are then built here, as
before). Each worker builds the probes it is sent one at a time, the parent sending the
next probe to the first worker that is free; a table a worker cannot hand back (a plugin's
table holding a closure), a probe that fails there, or a worker that dies is built again in
this process, so errors, tracebacks and one-line messages are what a serial build gives.
Warnings a probe raises in a worker are raised again here.

``ABNIRML_SAMPLE_WORKERS`` sets how many processes (``1`` builds every table in this
process). By default there is one per core this process may use when it may use at least
:data:`MIN_CORES`; on fewer cores the tables are built here: each worker builds the inputs
its probes share (the family's measures, parses, vectors) once more, and on two cores
already busy that costs more than the second core gives back (measured on the DL19 battery:
two workers took 1.25–1.4 times as long as one process).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import threading
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from abnirml.probes.base import Probe, ProbeContext, SampleTable, build_table

ENV = "ABNIRML_SAMPLE_WORKERS"
MIN_CORES = 4      # by default, workers only on a host with this many cores or more


def worker_count(probes: int) -> int:
    """How many worker processes to fork for ``probes`` probes: ``ABNIRML_SAMPLE_WORKERS``
    when set (a positive integer), else the cores this process may use when there are at
    least :data:`MIN_CORES` of them (else 1); never more than the probes."""
    from abnirml.errors import ConfigError
    from abnirml.evaluation.execution.parallel import available_cores

    raw = os.environ.get(ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(f"{ENV} must be a positive whole number, got {raw!r}")
        wanted = int(raw)
    else:
        cores = available_cores()
        wanted = cores if cores >= MIN_CORES else 1
    return max(1, min(wanted, probes))


class TableWorkers:
    """Forked processes that build sample tables of ``probes`` under ``context``."""

    def __init__(self, probes: Sequence[Probe], connections: list[Connection],
                 processes: list[Any]):
        self.probes = list(probes)
        self._connections = connections
        self._processes = processes
        self.built_here: list[str] = []      # probes built in this process after all

    @classmethod
    def start(cls, probes: Sequence[Probe], context: ProbeContext,
              count: int | None = None) -> TableWorkers | None:
        """Fork ``count`` workers (default :func:`worker_count`) that can build ``probes``'
        tables, or None when one process suffices or forking is not safe now (another
        thread runs, or the platform cannot fork)."""
        count = worker_count(len(probes)) if count is None else min(count, len(probes))
        if count < 2 or threading.active_count() > 1:
            return None
        if "fork" not in multiprocessing.get_all_start_methods():
            return None
        fork = multiprocessing.get_context("fork")
        connections, processes = [], []
        parent = os.getpid()
        for _ in range(count):
            here, there = fork.Pipe()
            process = fork.Process(target=_serve, args=(there, list(probes), context, parent),
                                   name="abnirml-samples", daemon=True)
            process.start()
            there.close()
            connections.append(here)
            processes.append(process)
        return cls(probes, connections, processes)

    def build(self, probes: Sequence[Probe], context: ProbeContext,
              done: Callable[[Probe], None] = lambda probe: None) -> dict[str, SampleTable]:
        """Every table of ``probes`` (each one of the probes the workers were started
        with), in the order of ``probes``; ``done(probe)`` as each is finished."""
        index = {probe.name: i for i, probe in enumerate(self.probes)}
        todo = deque(p for p in probes if p.name in index)
        tables: dict[str, SampleTable] = {}
        again: list[Probe] = [p for p in probes if p.name not in index]
        busy: dict[Connection, Probe] = {}
        idle = list(self._connections)
        last: dict[Connection, str] = {}        # the family each worker built last
        started: set[str] = set()               # families some worker has begun
        registry: dict[Any, Any] = {}
        while todo or busy:
            while todo and idle:
                connection = idle.pop()
                probe = _next_probe(todo, last.get(connection), started)
                last[connection] = probe.family
                started.add(probe.family)
                try:
                    connection.send(index[probe.name])
                except OSError:            # the worker is gone
                    again.append(probe)
                    continue
                busy[connection] = probe
            if not busy:
                break
            for ready in wait(list(busy)):
                answered = next(c for c in busy if c is ready)
                probe = busy.pop(answered)
                try:
                    answer = pickle.loads(answered.recv_bytes())
                except (EOFError, OSError, pickle.UnpicklingError):
                    again.append(probe)         # the worker died: this one is rebuilt here
                    continue
                idle.append(answered)
                table, caught = answer
                for message, category, filename, lineno in caught:
                    warnings.warn_explicit(message, category, filename, lineno,
                                           registry=registry)
                if table is None:
                    again.append(probe)
                else:
                    tables[probe.name] = table
                    done(probe)
        for probe in again:
            self.built_here.append(probe.name)
            tables[probe.name] = build_table(probe, context)
            done(probe)
        return {probe.name: tables[probe.name] for probe in probes}

    def close(self) -> None:
        """Stop the workers (they also stop on their own when this process ends)."""
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.send(None)
            connection.close()
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
        self._connections, self._processes = [], []

    def __enter__(self) -> TableWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _next_probe(todo: deque[Probe], family: str | None, started: set[str]) -> Probe:
    """The next probe for a worker that last built one of ``family``: the first waiting
    probe of that family (the worker has the family's shared inputs, its memos, built
    already); else the first waiting probe of a family no worker has begun (so no two
    workers build one family's shared inputs while another family waits: on the DL19
    battery that is 0.17 s for ``mmp:*`` and 0.25 s for the axioms per worker); else the
    first waiting probe."""
    for wanted in (lambda p: p.family == family, lambda p: p.family not in started):
        for i, probe in enumerate(todo):
            if wanted(probe):
                del todo[i]
                return probe
    return todo.popleft()


def _serve(connection: Connection, probes: list[Probe], context: ProbeContext,
           parent: int) -> None:
    """A worker: build each probe it is sent, answer ``(table or None, warnings)``; end
    when told to, when the pipe closes, or when the parent process is gone."""
    from abnirml.evaluation.execution.parallel import _exit_with_parent

    _exit_with_parent(parent)
    while True:
        try:
            number = connection.recv()
        except (EOFError, OSError):
            os._exit(0)
        if number is None:
            os._exit(0)
        with warnings.catch_warnings(record=True) as caught:
            try:
                table: SampleTable | None = build_table(probes[number], context)
            except BaseException:      # built again in the parent, which reports it
                table = None
        # a probe built again in the parent raises its warnings there
        noted = ([] if table is None else
                 [(str(w.message), w.category, w.filename, w.lineno) for w in caught])
        try:
            payload = pickle.dumps((table, noted), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:              # a table (or a warning category) that cannot travel
            payload = pickle.dumps((None, []), protocol=pickle.HIGHEST_PROTOCOL)
        connection.send_bytes(payload)
