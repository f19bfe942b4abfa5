"""Ranker batches as Ray tasks: on a cluster (``--ray ADDRESS``) or a loopback Ray
started inside this process (``--ray local``).

The driver keeps every decision that shapes the results: batches are cut, ordered and
cached by the engine exactly as in a serial run, and this executor only decides how many
run at once and what to do when a node goes away. So a run on any cluster gives
byte-identical results to a serial one.

* **One model per worker process.** The ranker goes to Ray's object store once; a worker
  process fetches it for its first batch and keeps it (:data:`_WORKER_RANKERS`, keyed by
  the ranker's name and fingerprint), so a neural model is loaded once per process, not
  once per batch, and its text memo carries over from batch to batch. GPU tasks keep their
  process too (Ray's default for them is a new process per task).
* **Ray places the tasks** (``SPREAD``): a node that is busy with another job gets fewer,
  a node that joins mid-run gets its share as soon as it registers.
* **How many tasks in flight**: twice what the cluster runs at once (one per CPU, or, for
  a GPU ranker, as many as its GPUs hold at ``gpus_per_task`` each), looked up again
  every second. The second half waits in Ray's queue: a worker never idles between
  batches, and an autoscaler (KubeRay's) sees demand it can add nodes for. ``--ray-tasks
  N`` fixes the number instead.
* **GPUs**: a task asks Ray for ``gpus_per_task`` GPUs (a fraction shares one card); Ray
  sets ``CUDA_VISIBLE_DEVICES`` in the worker to the cards it assigned, so a ranker on
  ``cuda`` (the first visible card) runs on the worker's own card.
* **Lost nodes**: each task first says which node it runs on. The driver waits at most a
  second at a time and asks the cluster which nodes are alive; the batches of a node the
  cluster declares dead (killed, or frozen and failing its health checks) run again
  elsewhere at once, without waiting for their connections to time out. Ray's own task
  retries are off, so the run counts the retries (at most :data:`RETRIES` a batch) and
  warns once per lost node, in one line; Ray's own report of the node's death (dozens of
  lines of the raylet's log) is not printed.
* **Connecting** is :mod:`abnirml.evaluation.execution.ray_connect`'s: every failure in bounded time
  and one line.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError, install_hint
from abnirml.evaluation.execution.parallel import (
    WorkerFailure,
    raised_if_failed,
    scored_counting_usage,
)
from abnirml.evaluation.execution.ray_connect import (
    AUTH_FIX,
    connect,
    connection_problem,
    held_stderr,
    start_loopback,
)
from abnirml.rankers.base import Pair, Ranker
from abnirml.rankers.support.http_client import Usage, usage_counter

__all__ = ["AUTH_FIX", "RayExecutor", "RayRecord", "connection_problem", "start_loopback"]

#: times one batch is submitted again after its worker or node died
RETRIES = 3
#: seconds to wait, after a task died with its worker, for the cluster to say whether its
#: node died too (its health check runs every few seconds)
LOST_NODE_WAIT_S = 30.0
#: seconds the driver waits for a task before it looks at the cluster again
POLL_S = 1.0
#: tasks in flight per slot that can run at once: the rest wait in Ray's queue
QUEUED_PER_SLOT = 2
#: rankers with a model (those that ``preload``) one worker process keeps, the most
#: recently used: a run scores its rankers one after the other, and a learned ranker's fold
#: models one after the other
WORKER_RANKERS = 2
#: rankers without a model (lexical ones: their statistics, no load) kept besides, so that
#: scoring them never pushes out a model the process loaded ahead of its batches
LIGHT_RANKERS = 8
#: Ray's errors that mean a task's worker process or node went away, not the ranker failed
LOST_WORKER_ERRORS = ("WorkerCrashedError", "NodeDiedError", "ObjectLostError",
                      "OwnerDiedError", "LocalRayletDiedError", "ObjectFetchTimedOutError")


@dataclass
class RayRecord:
    """What run.json's ``scoring.ray`` says about where the batches ran."""

    address: str
    resolved_address: str = ""
    nodes: int = 0
    task_slots: int = 0
    tasks_in_flight: int = 0
    gpus_per_task: float | None = None
    tasks_per_node: dict[str, int] = field(default_factory=dict)
    worker_processes: set[tuple[str, int]] = field(default_factory=set)
    #: (node, pid, ranker key) → times that process fetched that ranker, as it reported
    fetches: dict[tuple[str, int, str], int] = field(default_factory=dict)
    retried_tasks: int = 0
    nodes_joined: list[dict[str, str]] = field(default_factory=list)
    nodes_lost: list[dict[str, str]] = field(default_factory=list)
    node_addresses: dict[str, str] = field(default_factory=dict)   # node id → ip:port

    def as_dict(self) -> dict[str, Any]:
        return {"address": self.address,
                "resolved_address": self.resolved_address or self.address,
                "nodes": self.nodes, "task_slots": self.task_slots,
                "tasks_in_flight": self.tasks_in_flight,
                "gpus_per_task": self.gpus_per_task,
                "tasks_per_node": dict(sorted(self.tasks_per_node.items())),
                "worker_processes": len(self.worker_processes),
                "ranker_copies": sum(self.fetches.values()),
                "retried_tasks": self.retried_tasks,
                "nodes_joined": list(self.nodes_joined),
                "nodes_lost": list(self.nodes_lost),
                "node_addresses": {node: self.node_addresses[node]
                                   for node in sorted(self.tasks_per_node)
                                   if node in self.node_addresses}}


# -- in the worker process -----------------------------------------------------------------

_WORKER_RANKERS: OrderedDict[str, Ranker] = OrderedDict()
#: ranker key → times this worker process fetched it (more than once only after eviction)
_WORKER_FETCHES: dict[str, int] = {}


def worker_ranker(key: str, boxed: Sequence[Any]) -> tuple[Ranker, bool]:
    """The ranker this worker process keeps under ``key``, fetched from the object store
    (``boxed[0]``, a reference Ray does not resolve on its own) only the first time; and
    whether it was fetched now."""
    ranker = _WORKER_RANKERS.get(key)
    if ranker is not None:
        _WORKER_RANKERS.move_to_end(key)
        return ranker, False
    import ray

    ranker = ray.get(boxed[0])
    _WORKER_RANKERS[key] = ranker
    _WORKER_FETCHES[key] = _WORKER_FETCHES.get(key, 0) + 1
    _evict()
    return ranker, True


def _holds_model(ranker: object) -> bool:
    return callable(getattr(ranker, "preload", None))


def _evict() -> None:
    """Drop the least recently used rankers beyond :data:`WORKER_RANKERS` with a model
    and :data:`LIGHT_RANKERS` without: each kind counts against its own limit only."""
    for heavy, limit in ((True, WORKER_RANKERS), (False, LIGHT_RANKERS)):
        kept = [k for k, r in _WORKER_RANKERS.items() if _holds_model(r) == heavy]
        for key in kept[:max(0, len(kept) - limit)]:
            del _WORKER_RANKERS[key]


def _score_task(key: str, boxed: Sequence[Any], batch: Sequence[Pair]
                ) -> Iterator[Any]:
    """A Ray task, as a generator: first the node it runs on (so the driver knows what to
    run again if that node dies), then (pid, times this process has fetched the ranker,
    the scores or the ranker's failure, what a served ranker counted while scoring the
    batch — the worker's copy counts its requests, the driver's would say 0)."""
    import ray

    yield ray.get_runtime_context().get_node_id()
    ranker, _ = worker_ranker(key, boxed)
    result, spent = scored_counting_usage(ranker, batch)
    yield os.getpid(), _WORKER_FETCHES.get(key, 0), result, spent


def _warm_task(key: str, boxed: Sequence[Any]) -> None:
    """A Ray task sent ahead of the batches: fetch the ranker and load its model
    (``preload``, then ``model``, which waits for the load), so that the worker process is
    ready when its first batch comes."""
    ranker, _ = worker_ranker(key, boxed)
    preload = getattr(ranker, "preload", None)
    if preload is not None:
        preload()
        getattr(ranker, "model", None)


# -- in the driver -------------------------------------------------------------------------


class _Keeper(threading.Thread):
    """Starts ``--ray local``'s Ray while the run builds its samples, then stays alive
    until the executor closes: the Ray processes it starts die with the thread that
    started them (Linux's parent-death signal is per thread)."""

    def __init__(self, executor: RayExecutor, warm: Sequence[Ranker]):
        super().__init__(name="abnirml-ray-start", daemon=True)
        self.executor = executor
        self.warm = list(warm)
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.release = threading.Event()

    def run(self) -> None:
        try:
            ray = self.executor._ray()
            self.executor._warm_up(ray, self.warm)
        except BaseException as exc:       # reported by the executor, in the main thread
            self.error = exc
        finally:
            self.ready.set()
        self.release.wait()



@dataclass
class _Attempt:
    index: int                  # the batch
    node: str | None = None     # where it runs, once the task said so


class RayExecutor:
    """Batches as Ray tasks, yielded in batch order; see the module docstring."""

    name = "ray"
    counts_returns = True     # run() hands over each batch as its task returns

    def __init__(self, address: str = "local", tasks: int | None = None,
                 gpus_per_task: float | None = None):
        if tasks is not None and tasks < 1:
            raise ConfigError(f"--ray-tasks must be ≥ 1, got {tasks}")
        if gpus_per_task is not None and not 0 < gpus_per_task <= 64:
            raise ConfigError(f"--ray-gpus must be > 0 (a fraction shares a GPU), got "
                              f"{gpus_per_task}")
        self.address = address
        self.tasks = tasks
        self.gpus_per_task = gpus_per_task
        self.record = RayRecord(address)
        self._started = False      # this executor called ray.init (and shuts it down)
        self._nodes: dict[str, str] = {}     # node id → "ip:port" of every node seen alive
        self._shipped: dict[str, tuple[Ranker, Any]] = {}    # ranker key → (ranker, ref)
        self._loud: Callable[[], None] = lambda: None    # undoes quiet_node_reports
        self._keeper: _Keeper | None = None
        self._warming: list[Any] = []      # warm-up tasks (kept: their results are unused)

    # -- connecting ---------------------------------------------------------------------

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ConfigError(f"--ray needs Ray: {install_hint('ray')}") from None
        if not ray.is_initialized():
            if self.address == "local":
                start_loopback(ray)
                self.record.resolved_address = "local"
            else:
                self.record.resolved_address = connect(ray, self.address)
            self._started = True
        if not self._nodes:
            self._nodes = alive_nodes(ray)
            self.record.nodes = len(self._nodes)
            self.record.node_addresses.update(self._nodes)
            self._loud = quiet_node_reports(ray)
        return ray

    def prepare(self, rankers: Sequence[Ranker]) -> None:
        """Start what the batches will need while the run builds its samples: join the
        cluster (``--ray local``: start its Ray, in a thread of its own, since that takes
        seconds) and have each task slot's worker process fetch the first rankers that load
        a model and load it, as the in-process path preloads them. ``rankers``: those that
        will score (nothing cached). Errors are reported when the first batch is scored."""
        if not rankers or self._keeper is not None or self._nodes:
            return
        warm = [r for r in rankers if callable(getattr(r, "preload", None))][:WORKER_RANKERS]
        if self.address == "local":
            self._keeper = _Keeper(self, warm)
            self._keeper.start()
            return
        ray = self._ray()      # a cluster that cannot be joined is said now, before any work
        with contextlib.suppress(Exception):    # a failed warm-up leaves it to the batches
            self._warm_up(ray, warm)

    def _warm_up(self, ray: Any, rankers: Sequence[Ranker]) -> None:
        """One warm-up task per task slot for each ranker (see :func:`_warm_task`)."""
        if not rankers:
            return
        remote = ray.remote(**self._options(streaming=False))(_warm_task)
        slots = sum(self.slots(ray).values())
        for ranker in rankers:
            key, boxed = self._ship(ray, ranker)
            self._warming += [remote.remote(key, boxed) for _ in range(slots)]

    def _options(self, streaming: bool) -> dict[str, Any]:
        options: dict[str, Any] = {"max_retries": 0, "scheduling_strategy": "SPREAD"}
        if streaming:
            options["num_returns"] = "streaming"
        if self.gpus_per_task:
            # Ray's default for a GPU task is a new worker process each time (max_calls=1),
            # which would load the model again for every batch
            options.update(num_gpus=self.gpus_per_task, max_calls=0)
        return options

    def _started_ray(self) -> Any:
        """Ray, joined or started: by :meth:`prepare`'s thread (waited for, and its
        error raised here), else now."""
        keeper = self._keeper
        if keeper is not None and threading.current_thread() is not keeper:
            keeper.ready.wait()
            if keeper.error is not None:
                error, keeper.error = keeper.error, None
                raise error
        return self._ray()

    @property
    def where(self) -> str:
        """The cluster as messages name it: the address joined (``auto`` resolved)."""
        return self.record.resolved_address or self.address

    def close(self) -> None:
        """Disconnect, and stop the Ray this executor started (``--ray local`` leaves no
        process behind); a Ray the caller started stays as it was."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.ready.wait()
        self._shipped.clear()
        self._warming.clear()
        self._loud()
        try:
            if self._started:
                import ray

                self._started = False
                with held_stderr():
                    ray.shutdown()
        finally:
            if keeper is not None:
                keeper.release.set()

    def report(self) -> dict[str, Any] | None:
        """run.json's ``scoring.ray``, once something ran on Ray."""
        return self.record.as_dict() if self.record.nodes else None

    # -- scoring ------------------------------------------------------------------------

    def slots(self, ray: Any) -> dict[str, int]:
        """Node id → tasks it runs at once: its CPUs, or for a GPU ranker how many
        ``gpus_per_task`` shares its GPUs hold; nodes with none are left out."""
        slots = {}
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            resources = node.get("Resources") or {}
            count = (resources.get("GPU", 0) / self.gpus_per_task + 1e-9
                     if self.gpus_per_task else resources.get("CPU", 0))
            if int(count) >= 1:
                slots[node["NodeID"]] = int(count)
        if not slots and self.gpus_per_task:
            raise ConfigError(f"--ray: each task asks for {self.gpus_per_task:g} GPU and no "
                              f"node of the cluster at {self.where} has that many; start its "
                              "nodes with GPUs (ray start --num-gpus N) or score on CPUs "
                              "(--device cpu)")
        return slots

    def _in_flight(self, slots: dict[str, int]) -> int:
        """Tasks to keep submitted: ``--ray-tasks``, else :data:`QUEUED_PER_SLOT` per slot."""
        if self.tasks is not None:
            return self.tasks
        return max(1, QUEUED_PER_SLOT * sum(slots.values()))

    def _ship(self, ray: Any, ranker: Ranker) -> tuple[str, list[Any]]:
        """The key workers keep ``ranker`` under, and its object-store reference boxed in
        a list (so that Ray hands the task the reference, not a fresh copy of the ranker).
        The same ranker object is put once per executor."""
        cacheable = getattr(ranker, "cacheable", True)
        key = f"{ranker.name}\0{ranker.fingerprint}" if cacheable else f"id:{id(ranker)}"
        shipped = self._shipped.get(key)
        if shipped is None or shipped[0] is not ranker:
            from abnirml.plugins import file_plugin_modules

            # A ranker class from a ``--plugin FILE`` lives in a module no worker can
            # import; pickling that module by value sends its code along with the ranker.
            for module in file_plugin_modules():
                ray.cloudpickle.register_pickle_by_value(module)
            shipped = self._shipped[key] = (ranker, ray.put(ranker))
        if not cacheable:      # no identity to share: unique to this object and driver
            key = f"{key}:{shipped[1].hex()}"
        return key, [shipped[1]]

    def run(self, ranker: Ranker, batches: Sequence[Sequence[Pair]],
            returned: Callable[[int, np.ndarray | WorkerFailure], None] | None = None
            ) -> Iterator[np.ndarray]:
        """Each batch's scores in batch order; ``returned(batch number, result)`` as each
        task comes back, in whatever order they finish (the engine caches it then)."""
        ray = self._started_ray()
        check_device(ranker, self.gpus_per_task)
        remote = ray.remote(**self._options(streaming=True))(_score_task)
        slots = self.slots(ray)
        self.record.task_slots = max(self.record.task_slots, sum(slots.values()))
        self.record.gpus_per_task = self.gpus_per_task
        key, boxed = self._ship(ray, ranker)

        def submit(batch: list[Pair], generation: int) -> Any:
            # After a node is lost, tasks go out under a new scheduling class (a request
            # for ``generation`` bytes of memory, nothing on any node): Ray's driver
            # queues a class's tasks behind its lease requests, and those it sent to the
            # lost node's raylet can hang until the connection times out
            chosen = remote.options(memory=generation) if generation else remote
            return chosen.remote(key, boxed, batch)

        yield from _Scheduler(self, ray, submit, key, batches, returned,
                              self._in_flight(slots), usage_counter(ranker)).results()

    # -- the cluster's nodes ------------------------------------------------------------

    def _lost(self) -> set[str]:
        return {lost["node"] for lost in self.record.nodes_lost}

    def look(self, ray: Any) -> tuple[set[str], int | None]:
        """Compare the cluster's live nodes with those seen before: record nodes that
        joined, warn once for each that was lost. The nodes lost now, and the tasks to
        keep in flight for the cluster as it is now (None when it has no slot)."""
        import warnings

        alive = alive_nodes(ray)
        for node, where in alive.items():
            if node not in self._nodes:
                self._nodes[node] = where
                self.record.node_addresses[node] = where
                self.record.nodes_joined.append({"node": node, "address": where})
        lost = {n for n in self._nodes if n not in alive} - self._lost()
        for node in sorted(lost):
            where = self._nodes[node]
            self.record.nodes_lost.append({"node": node, "address": where})
            warnings.warn(f"Ray node {node} ({where}) was lost during scoring; its "
                          "unfinished batches ran again on the other nodes", stacklevel=2)
        try:
            slots = self.slots(ray)
        except ConfigError:        # every GPU node gone: wait for the autoscaler
            slots = {}
        limit = self._in_flight(slots) if slots or self.tasks else None
        return lost, limit

    def note_lost_nodes(self, ray: Any, suspects: set[str], wait: float) -> None:
        """After tasks died with their workers on ``suspects``: give the cluster up to
        ``wait`` seconds to say whether those nodes died (and warn about them) or only a
        worker process did."""
        deadline = time.monotonic() + wait
        while True:
            self.look(ray)
            if suspects <= self._lost() or time.monotonic() >= deadline:
                return
            time.sleep(0.5)


class _Scheduler:
    """One run's batches through Ray: keeps ``limit`` tasks in flight, collects them as
    they return, and runs again the batches of workers and nodes that went away."""

    def __init__(self, executor: RayExecutor, ray: Any, submit: Callable[[list[Pair], int], Any],
                 key: str, batches: Sequence[Sequence[Pair]],
                 returned: Callable[[int, np.ndarray | WorkerFailure], None] | None,
                 limit: int, usage: Usage | None = None):
        self.executor = executor
        self.record = executor.record
        self.ray = ray
        self.submit_task = submit
        self.key = key                                # the ranker's, in the workers
        self.batches = batches
        self.returned = returned
        self.limit = limit
        self.usage = usage          # the driver's ranker's counts, where workers' add up
        self.pending: dict[Any, _Attempt] = {}        # task's generator → attempt
        self.again: list[int] = []                    # batches to submit before new ones
        self.failures = [0] * len(batches)            # times each batch's worker died
        self.done: dict[int, np.ndarray | WorkerFailure] = {}
        self.suspects: set[str] = set()   # nodes whose workers died under a task
        self.generation = 0               # nodes lost so far: see RayExecutor.run's submit

    def results(self) -> Iterator[np.ndarray]:
        submitted = emitted = 0
        looked = time.monotonic()
        try:
            while emitted < len(self.batches):
                if time.monotonic() - looked >= POLL_S:
                    self._look()
                    looked = time.monotonic()
                while len(self.pending) < self.limit and (self.again
                                                          or submitted < len(self.batches)):
                    if self.again:
                        self._submit(self.again.pop(0))
                    else:
                        self._submit(submitted)
                        submitted += 1
                if emitted not in self.done:
                    self._collect()
                while emitted in self.done:
                    yield raised_if_failed(self.done.pop(emitted))
                    emitted += 1
            if self.suspects - self.executor._lost():
                self.executor.note_lost_nodes(self.ray, self.suspects, LOST_NODE_WAIT_S)
        finally:
            self._cancel_all()

    def _submit(self, index: int) -> None:
        task = self.submit_task(list(self.batches[index]), self.generation)
        self.pending[task] = _Attempt(index)
        self.record.tasks_in_flight = max(self.record.tasks_in_flight, len(self.pending))

    def _collect(self) -> None:
        """Wait up to :data:`POLL_S` for a task to say something, and take in what every
        ready task said."""
        tasks = list(self.pending)
        ready, _ = self.ray.wait(tasks, num_returns=1, timeout=POLL_S)
        if not ready:
            return
        ready, _ = self.ray.wait(tasks, num_returns=len(tasks), timeout=0)
        for task in ready:
            self._advance(task)

    def _advance(self, task: Any) -> None:
        from ray import exceptions as rx

        attempt = self.pending[task]
        try:
            value = self.ray.get(next(task))
        except StopIteration:        # ended without its result: its worker went away
            self._worker_lost(task, attempt, "the task ended without a result")
            return
        except rx.RayTaskError as exc:     # the task could not run (unpickling, imports)
            if type(exc).__name__ in LOST_WORKER_ERRORS:
                self._worker_lost(task, attempt, type(exc).__name__)
                return
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            lines = str(cause).strip().splitlines()
            raise ScoringError(f"--ray: a task could not run on the cluster at "
                               f"{self.executor.where} "
                               f"({type(cause).__name__}: {lines[-1] if lines else ''}"[:300]
                               + "); every node needs the same environment as the driver "
                               "(abnirml, its extras and plugins)") from None
        except rx.RayError as exc:
            if type(exc).__name__ not in LOST_WORKER_ERRORS:
                raise
            self._worker_lost(task, attempt, type(exc).__name__)
            return
        if attempt.node is None:           # the task's first word: where it runs
            attempt.node = str(value)
            if attempt.node in self.executor._lost():
                self._run_again(task, attempt)
            return
        pid, fetches, result, spent = value
        if spent and self.usage is not None:
            self.usage.add(**spent)
        del self.pending[task]
        self.done[attempt.index] = result
        node = attempt.node
        self.record.tasks_per_node[node] = self.record.tasks_per_node.get(node, 0) + 1
        self.record.worker_processes.add((node, int(pid)))
        self.record.fetches[node, int(pid), self.key] = int(fetches)
        if self.returned is not None:
            self.returned(attempt.index, result)

    def _worker_lost(self, task: Any, attempt: _Attempt, why: str) -> None:
        """The task's worker process or node went away: run the batch again (at most
        :data:`RETRIES` times), and find out whether its node is gone."""
        if attempt.node is not None:
            self.suspects.add(attempt.node)
        self._run_again(task, attempt, why)
        self._look()

    def _run_again(self, task: Any, attempt: _Attempt, why: str = "its node was lost") -> None:
        index = attempt.index
        self.pending.pop(task, None)
        self.failures[index] += 1
        if self.failures[index] > RETRIES:
            raise ScoringError(f"--ray: batch {index + 1} failed {self.failures[index]} "
                               f"times on the cluster at {self.executor.where}: "
                               f"{why}")
        self.record.retried_tasks += 1
        self.again.append(index)

    def _look(self) -> None:
        """Ask the cluster which nodes are alive: the batches on a node it lost run again
        now (and those not yet started anywhere are submitted afresh: they may be queued
        on the lost node); nodes that joined raise the tasks kept in flight."""
        lost, limit = self.executor.look(self.ray)
        if limit is not None:
            self.limit = limit
        if not lost:
            return
        self.generation += 1
        for task, attempt in list(self.pending.items()):
            if attempt.node in lost:
                self._run_again(task, attempt)
            elif attempt.node is None:
                self._cancel(task)
                del self.pending[task]
                self.again.append(attempt.index)
        self.again.sort()

    def _cancel(self, task: Any) -> None:
        with contextlib.suppress(Exception):     # already finished or gone
            self.ray.cancel(task)

    def _cancel_all(self) -> None:
        """An interruption or an error: stop what is still queued or running."""
        for task in list(self.pending):
            self._cancel(task)
        self.pending.clear()


def alive_nodes(ray: Any) -> dict[str, str]:
    """Node id → ``ip:port`` of every node the cluster counts alive."""
    return {n["NodeID"]: f"{n.get('NodeManagerAddress', '?')}:{n.get('NodeManagerPort', '?')}"
            for n in ray.nodes() if n.get("Alive")}


#: how the reports of a dead node that Ray's driver prints begin: the cluster's notice that
#: it marked the node dead, and the tail of the raylet's log that each of the node's agent
#: processes publishes when its raylet dies
NODE_REPORTS = ("The node with node id", "Raylet is terminated")


def quiet_node_reports(ray: Any) -> Callable[[], None]:
    """Stop Ray's driver from printing the reports a dead node's agents publish to every
    driver (the last lines of its raylet's log, in colour, once per agent): abnirml says
    in one line which node was lost (:meth:`RayExecutor.look`). Every other message Ray
    prints as before. Returns what undoes it."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return lambda: None
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "abnirml_quiet", False):
        return lambda: None

    def printed(data: dict[str, Any], ignore_prefix: bool) -> None:
        lines = [str(line).lstrip() for line in data.get("lines") or ()]
        if data.get("pid") == "raylet" and any(line.startswith(NODE_REPORTS)
                                               for line in lines):
            return
        original(data, ignore_prefix)

    printed.abnirml_quiet = True        # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = printed

    def undo() -> None:
        if ray_worker.print_to_stdstream is printed:
            ray_worker.print_to_stdstream = original
    return undo


def check_device(ranker: Ranker, gpus_per_task: float | None) -> None:
    """A GPU ranker on Ray must use ``cuda`` (the worker's first visible card, which Ray
    sets to the card it assigned): ``cuda:1`` would name a card the worker cannot see."""
    device = str(getattr(ranker, "device", "") or "")
    if gpus_per_task and device.startswith("cuda:") and device != "cuda:0":
        raise ConfigError(f"ranker {ranker.name}: --ray gives each task its own GPU as "
                          f"'cuda'; use --device cuda instead of {device!r}")
