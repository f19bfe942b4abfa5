"""Ranker batches as Ray tasks: on a cluster (``--ray ADDRESS``) or a loopback Ray
started inside this process (``--ray local``).

The driver keeps every decision that shapes the results: batches are cut, ordered and
cached by the engine exactly as in a serial run, and this executor only decides where
each batch runs. So a run on any cluster gives byte-identical results to a serial one.

* **How many tasks in flight**: one per CPU of the cluster, or, for a GPU ranker, as many
  as its GPUs hold at ``gpus_per_task`` each (``--ray-tasks N`` overrides). Fewer starve
  the cluster; far more only queue in Ray's scheduler and hold batches in memory.
* **Every node busy**: each task is placed on the node with the fewest tasks in flight
  for its size. Ray's default fills the driver's node first (where the ranker's object
  is), and with short batches the other nodes' workers are still starting when the run
  ends.
* **GPUs**: a task asks Ray for ``gpus_per_task`` GPUs (a fraction shares one card); Ray
  sets ``CUDA_VISIBLE_DEVICES`` in the worker to the cards it assigned, so a ranker on
  ``cuda`` (the first visible card) runs on the worker's own card.
* **Lost nodes**: Ray's own task retries are off; a batch whose worker or node died is
  submitted again here (at most :data:`RETRIES` times), so the run can count the retries,
  name the node it lost and warn about it in one line.
* **Connecting**: Ray's C++ client prints the same line each second while it retries, and
  ends with "Failed to connect"; its output is held back while connecting and read for the
  real cause (a refused token, a version mismatch), reported in one line with the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError, install_hint
from abnirml.evaluation.parallel import (
    WorkerFailure,
    available_cores,
    check_reachable,
    raised_if_failed,
    score_or_failure,
)
from abnirml.rankers.base import Pair, Ranker

#: times one batch is submitted again after its worker or node died
RETRIES = 3
#: seconds to wait, after a task died with its node, for the cluster to mark the node dead
LOST_NODE_WAIT_S = 30.0

AUTH_FIX = ("set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, a file holding it) to the token "
            "the cluster was started with ('ray get-auth-token' on its head) and "
            "RAY_AUTH_MODE=token; a cluster started without token auth needs "
            "RAY_AUTH_MODE=disabled")


@dataclass
class RayRecord:
    """What run.json's ``scoring.ray`` says about where the batches ran."""

    address: str
    nodes: int = 0
    tasks_in_flight: int = 0
    gpus_per_task: float | None = None
    tasks_per_node: dict[str, int] = field(default_factory=dict)
    retried_tasks: int = 0
    nodes_lost: list[dict[str, str]] = field(default_factory=list)
    node_addresses: dict[str, str] = field(default_factory=dict)   # node id → ip:port

    def as_dict(self) -> dict[str, Any]:
        return {"address": self.address, "nodes": self.nodes,
                "tasks_in_flight": self.tasks_in_flight,
                "gpus_per_task": self.gpus_per_task,
                "tasks_per_node": dict(sorted(self.tasks_per_node.items())),
                "retried_tasks": self.retried_tasks, "nodes_lost": list(self.nodes_lost),
                "node_addresses": {node: self.node_addresses[node]
                                   for node in sorted(self.tasks_per_node)
                                   if node in self.node_addresses}}


def _score_task(ranker: Ranker, batch: Sequence[Pair]) -> tuple[str, np.ndarray | WorkerFailure]:
    """A Ray task: the node it ran on, and the batch's scores or the ranker's failure."""
    import ray

    return ray.get_runtime_context().get_node_id(), score_or_failure(ranker, batch)


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
        self._nodes: dict[str, str] = {}     # node id → "ip:port", alive at the start

    # -- connecting ---------------------------------------------------------------------

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ConfigError(f"--ray needs Ray: {install_hint('ray')}") from None
        if not ray.is_initialized():
            if self.address == "local":
                start_loopback(ray)
            else:
                connect(ray, self.address)
            self._started = True
        if not self._nodes:
            self._nodes = alive_nodes(ray)
            self.record.nodes = len(self._nodes)
            self.record.node_addresses.update(self._nodes)
        return ray

    def close(self) -> None:
        """Disconnect, and stop the Ray this executor started (``--ray local`` leaves no
        process behind); a Ray the caller started stays as it was."""
        if self._started:
            import ray

            self._started = False
            with held_stderr():
                ray.shutdown()

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
                              f"node of the cluster at {self.address} has that many; start "
                              "its nodes with GPUs (ray start --num-gpus N) or score on "
                              "CPUs (--device cpu)")
        return slots

    def run(self, ranker: Ranker, batches: Sequence[Sequence[Pair]],
            returned: Callable[[int, np.ndarray | WorkerFailure], None] | None = None
            ) -> Iterator[np.ndarray]:
        """Each batch's scores in batch order; ``returned(batch number, result)`` as each
        task comes back, in whatever order they finish (the engine caches it then)."""
        ray = self._ray()
        from abnirml.plugins import file_plugin_modules

        # A ranker class from a ``--plugin FILE`` lives in a module no worker can import;
        # pickling that module by value sends its code along with the ranker.
        for module in file_plugin_modules():
            ray.cloudpickle.register_pickle_by_value(module)
        check_device(ranker, self.gpus_per_task)
        # SPREAD: Ray's default packs tasks onto the driver's node first, and with short
        # batches the other nodes' workers are still starting when the run ends.
        options: dict[str, Any] = {"max_retries": 0}
        if self.gpus_per_task:
            options["num_gpus"] = self.gpus_per_task
        remote = ray.remote(_score_task)
        slots = self.slots(ray)
        limit = self.tasks if self.tasks is not None else max(1, sum(slots.values()))
        self.record.tasks_in_flight = limit
        self.record.gpus_per_task = self.gpus_per_task
        load = dict.fromkeys(slots, 0)      # node → its tasks in flight
        ranker_ref = ray.put(ranker)
        pending: dict[Any, tuple[int, str | None]] = {}     # task → (batch, node asked)
        attempts = [0] * len(batches)
        done: dict[int, np.ndarray | WorkerFailure] = {}

        def submit(index: int) -> None:
            node = least_loaded(load, slots, self._lost())
            strategy = {} if node is None else {"scheduling_strategy": node_affinity(node)}
            if node is not None:
                load[node] += 1
            task = remote.options(**options, **strategy).remote(ranker_ref,
                                                                 list(batches[index]))
            pending[task] = index, node

        submitted = emitted = 0
        while emitted < len(batches):
            while submitted < len(batches) and len(pending) < limit:
                submit(submitted)
                submitted += 1
            if emitted not in done:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index, asked = pending.pop(ref)
                    if asked is not None:
                        load[asked] -= 1
                    result = self._result(ray, ref, index, attempts)
                    if result is None:         # its node or worker died: submit it again
                        submit(index)
                        continue
                    node, done[index] = result
                    self.record.tasks_per_node[node] = \
                        self.record.tasks_per_node.get(node, 0) + 1
                    if returned is not None:
                        returned(index, done[index])
            while emitted in done:
                yield raised_if_failed(done.pop(emitted))
                emitted += 1
        if self.record.retried_tasks:
            self._note_lost_nodes(ray, wait=LOST_NODE_WAIT_S)

    def _result(self, ray: Any, ref: Any, index: int,
                attempts: list[int]) -> tuple[str, np.ndarray | WorkerFailure] | None:
        """The task's (node, result), or None when it should run again: its worker or node
        died (at most :data:`RETRIES` times per batch)."""
        from ray import exceptions as rx

        try:
            return ray.get(ref)
        except (rx.WorkerCrashedError, rx.NodeDiedError, rx.ObjectLostError,
                rx.OwnerDiedError, rx.LocalRayletDiedError) as exc:
            attempts[index] += 1
            if attempts[index] > RETRIES:
                raise ScoringError(f"--ray: batch {index + 1} failed {attempts[index]} times "
                                   f"on the cluster at {self.address}: {type(exc).__name__}"
                                   ) from None
            self.record.retried_tasks += 1
            self._note_lost_nodes(ray)
            return None
        except rx.RayTaskError as exc:     # the task could not run (unpickling, imports)
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            lines = str(cause).strip().splitlines()
            raise ScoringError(f"--ray: a task could not run on the cluster at {self.address}"
                               f" ({type(cause).__name__}: {lines[-1] if lines else ''}"[:300]
                               + "); every node needs the same environment as the driver "
                               "(abnirml, its extras and plugins)") from None

    def _lost(self) -> set[str]:
        return {lost["node"] for lost in self.record.nodes_lost}

    def _note_lost_nodes(self, ray: Any, wait: float = 0.0) -> None:
        """Warn once for each node that was alive at the start and is gone now; with
        ``wait``, give the cluster that long to notice a node that died (its health check
        runs every few seconds)."""
        import time
        import warnings

        deadline = time.monotonic() + wait
        while True:
            alive = alive_nodes(ray)
            lost = [n for n in self._nodes if n not in alive and n not in self._lost()]
            for node in lost:
                where = self._nodes[node]
                self.record.nodes_lost.append({"node": node, "address": where})
                warnings.warn(f"Ray node {node} ({where}) was lost during scoring; its "
                              "unfinished batches ran again on the other nodes", stacklevel=2)
            if self.record.nodes_lost or time.monotonic() >= deadline:
                return
            time.sleep(0.5)


def least_loaded(load: dict[str, int], slots: dict[str, int], lost: set[str]) -> str | None:
    """The node with the fewest tasks in flight for its size (ties: the smaller id), so
    every node is kept busy in proportion to what it can run; None when none is left."""
    nodes = [n for n in load if n not in lost]
    return min(nodes, key=lambda n: (load[n] / slots[n], n)) if nodes else None


def node_affinity(node: str) -> Any:
    """Ask Ray for ``node``, softly: if it is gone, Ray runs the task elsewhere."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id=node, soft=True)


def alive_nodes(ray: Any) -> dict[str, str]:
    """Node id → ``ip:port`` of every node the cluster counts alive."""
    return {n["NodeID"]: f"{n.get('NodeManagerAddress', '?')}:{n.get('NodeManagerPort', '?')}"
            for n in ray.nodes() if n.get("Alive")}


def check_device(ranker: Ranker, gpus_per_task: float | None) -> None:
    """A GPU ranker on Ray must use ``cuda`` (the worker's first visible card, which Ray
    sets to the card it assigned): ``cuda:1`` would name a card the worker cannot see."""
    device = str(getattr(ranker, "device", "") or "")
    if gpus_per_task and device.startswith("cuda:") and device != "cuda:0":
        raise ConfigError(f"ranker {ranker.name}: --ray gives each task its own GPU as "
                          f"'cuda'; use --device cuda instead of {device!r}")


def start_loopback(ray: Any) -> None:
    """``ray.init`` of a new single-node Ray in this process, bound to 127.0.0.1.

    ``address="local"`` never joins a cluster named in ``RAY_ADDRESS`` or in the file an
    earlier ``ray start`` left behind. On Linux Ray replaces a loopback node address with
    the machine's network address (so other machines could join); the switch it keeps for
    single-machine platforms keeps it on loopback instead."""
    constants = ray._private.ray_constants
    saved = constants.ENABLE_RAY_CLUSTER, os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    constants.ENABLE_RAY_CLUSTER = False
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"     # for the processes it starts
    try:
        with held_stderr() as held:
            try:
                ray.init(address="local", num_cpus=available_cores(),
                         _node_ip_address="127.0.0.1", include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            except Exception as exc:
                raise ConfigError(f"--ray local: Ray did not start: "
                                  f"{problem_line(exc, held.text())}") from None
    finally:
        constants.ENABLE_RAY_CLUSTER = saved[0]
        if saved[1] is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = saved[1]


def connect(ray: Any, address: str) -> None:
    """Join the cluster at ``address`` as its driver, or one ConfigError naming why not."""
    check_reachable(address)
    with held_stderr() as held:
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as exc:
            raise ConfigError(connection_problem(address, exc, held.text())) from None


def connection_problem(address: str, exc: BaseException, output: str) -> str:
    """The one line that says why joining ``address`` failed: Ray's own error names only
    the address ("Failed to connect to Ray cluster"), the cause is in what it printed."""
    text = f"{exc}\n{output}"
    if "InvalidAuthToken" in text or "Unauthenticated" in text:
        return (f"the Ray cluster at {address} refused abnirml's token (missing or not the "
                f"cluster's): {AUTH_FIX}")
    if "token" in str(exc).lower() and "RAY_AUTH" in str(exc):
        return (f"Ray token auth is on (RAY_AUTH_MODE=token) but no token was found for the "
                f"cluster at {address}: {AUTH_FIX}")
    if "version mismatch" in text.lower():
        return (f"cannot join the Ray cluster at {address}: its Ray or Python version differs "
                "from this one; every node and the driver need the same environment")
    return f"cannot join the Ray cluster at {address}: {problem_line(exc, output)}"


def problem_line(exc: BaseException, output: str) -> str:
    """The exception's first line, with Ray's last error line when the exception says
    nothing more than that it failed."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    said = [line.strip() for line in output.splitlines() if " E " in line or "Error" in line]
    detail = f" ({said[-1][-200:]})" if said else ""
    return f"{type(exc).__name__}: {first}{detail}"[:400]


class _Held:
    def __init__(self, path: str):
        self.path = path

    def text(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-20000:]
        except OSError:
            return ""


@contextmanager
def held_stderr() -> Iterator[_Held]:
    """Route this process's stderr (file descriptor 2, where Ray's C++ client writes) to a
    temporary file for the duration; :meth:`_Held.text` reads what was written."""
    import sys
    import tempfile

    sys.stderr.flush()
    with tempfile.NamedTemporaryFile(prefix="abnirml-ray-", suffix=".log") as handle:
        held = _Held(handle.name)
        try:
            saved = os.dup(2)
        except OSError:          # no stderr at all: nothing to hold back
            yield held
            return
        os.dup2(handle.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
