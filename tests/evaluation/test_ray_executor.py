"""The Ray executor's decisions that need no cluster: settings, slots, the ranker a worker
process keeps, and batches cached as their tasks return.

The real cluster is in test_ray_cluster.py; connecting in test_ray_connect.py."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution import ray_executor
from abnirml.evaluation.execution.ray_executor import RayExecutor, RayRecord, worker_ranker
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.evaluation.execution.workspace import SessionSettings
from abnirml.rankers.support.cache import ScoreCache, text_hash
from tests.helpers import one_error_line


@pytest.mark.parametrize(("args", "expected"), [
    (["--ray", "local", "--ray-tasks", "0"], "--ray-tasks must be ≥ 1, got 0"),
    (["--ray-tasks", "4"], "--ray-tasks and --ray-gpus describe Ray tasks; give --ray too"),
    (["--ray", "local", "--ray-gpus", "0"], "must be > 0"),
    (["--ray", "local", "--ray-gpus", "nan"], "must be > 0"),
])
def test_ray_task_options_are_checked_before_anything_loads(capsys, args, expected):
    assert expected in one_error_line(capsys, "run", "--quiet", "--no-cache", *args)


def test_session_settings_check_ray_tasks_and_gpus():
    with pytest.raises(ConfigError, match=r"--ray-tasks\) must be ≥ 1"):
        SessionSettings(ray_address="local", ray_tasks=0).check()
    assert SessionSettings().gpus_per_task() is None
    assert SessionSettings(device="cuda").gpus_per_task() == 1.0
    assert SessionSettings(device="cuda", ray_gpus=0.25).gpus_per_task() == 0.25
    assert dataclasses.replace(SessionSettings(), ray_tasks=3).ray_tasks == 3


def test_the_api_refuses_a_ray_task_count_that_is_not_an_integer(tmp_path):
    from abnirml import RunConfig, run

    config = RunConfig(rankers=["bm25"], probes=["mmp:*"], out=None,
                       session=SessionSettings(cache=None, progress=False,
                                               ray_address="local", ray_tasks="8"))
    with pytest.raises(ConfigError, match=r"RunConfig\.session\.ray_tasks must be an integer"):
        run(config)


def test_executor_arguments_are_checked():
    with pytest.raises(ConfigError, match="--ray-tasks must be ≥ 1"):
        RayExecutor("local", tasks=0)
    with pytest.raises(ConfigError, match="--ray-gpus must be > 0"):
        RayExecutor("local", gpus_per_task=-1)


class _Echo:
    name, fingerprint = "echo", "echo-v1"

    def score(self, pairs):
        return [float(len(d)) for _, d in pairs]


class _OutOfOrder:
    """An executor whose tasks return last-first, and which is interrupted before it has
    yielded anything in order: what an interrupted Ray run looks like to the engine."""

    name = "out-of-order"
    counts_returns = True

    def run(self, ranker, batches, returned=None):
        for number in reversed(range(1, len(batches))):
            returned(number, np.asarray(ranker.score(batches[number]), dtype=np.float64))
        raise KeyboardInterrupt
        yield  # a generator, like the real executors


def test_batches_are_cached_as_their_tasks_return_not_in_order(tmp_path):
    """Batches 2… came back before batch 1 when the run was interrupted: they are in the
    cache, so the rerun scores only batch 1."""
    pairs = [("q", f"document {'x' * i}") for i in range(10)]
    with ScoreCache(tmp_path / "scores.sqlite") as cache:
        scorer = Scorer(cache, batch_size=3, progress=False, executor=_OutOfOrder())
        with pytest.raises(KeyboardInterrupt):
            scorer.score(_Echo(), pairs)
        assert scorer.scored == 7                                 # batches 2, 3, 4
        keys = [(text_hash(q), text_hash(d)) for q, d in pairs]
        found = cache.lookup("echo-v1", keys)
    assert sorted(keys.index(k) for k in found) == list(range(3, 10))
    with ScoreCache(tmp_path / "scores.sqlite") as cache:
        rerun = Scorer(cache, batch_size=3, progress=False)
        assert list(rerun.score(_Echo(), pairs)) == [float(len(d)) for _, d in pairs]
        assert (rerun.scored, rerun.reused) == (3, 7)


class _FakeRay:
    """What :meth:`RayExecutor.slots` reads of a cluster: ``ray.nodes()``."""

    def __init__(self, *resources):
        self._nodes = [{"NodeID": f"n{i}", "Alive": alive, "Resources": r}
                       for i, (r, alive) in enumerate(resources)]

    def nodes(self):
        return self._nodes


def test_slots_count_cpus_or_gpu_shares_of_live_nodes():
    cluster = _FakeRay(({"CPU": 8.0}, True), ({"CPU": 16.0, "GPU": 2.0}, True),
                       ({"CPU": 4.0, "GPU": 4.0}, False), ({"CPU": 0.0}, True))
    assert RayExecutor("head:6379").slots(cluster) == {"n0": 8, "n1": 16}
    assert RayExecutor("head:6379", gpus_per_task=1).slots(cluster) == {"n1": 2}
    assert RayExecutor("head:6379", gpus_per_task=0.5).slots(cluster) == {"n1": 4}
    assert RayExecutor("head:6379", gpus_per_task=0.3).slots(cluster) == {"n1": 6}
    with pytest.raises(ConfigError, match="each task asks for 4 GPU and no node of the "
                                          "cluster at head:6379 has that many"):
        RayExecutor("head:6379", gpus_per_task=4).slots(cluster)


class _Store:
    """Ray's object store as a worker process sees it: ``get`` of a reference, counted."""

    def __init__(self, objects):
        self.objects = objects
        self.fetched = []

    def get(self, ref):
        self.fetched.append(ref)
        return self.objects[ref]


class _Neural:
    """A ranker with a model to load (it has ``preload``), named for the assertions."""

    def __init__(self, name: str):
        self.name = name

    def preload(self) -> None:
        pass

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Neural) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


@pytest.fixture
def worker_process(monkeypatch):
    def with_store(objects):
        store = _Store(objects)
        monkeypatch.setitem(sys.modules, "ray", store)
        monkeypatch.setattr(ray_executor, "_WORKER_RANKERS",
                            type(ray_executor._WORKER_RANKERS)())
        monkeypatch.setattr(ray_executor, "_WORKER_FETCHES", {})
        return store
    return with_store


def test_a_worker_process_fetches_each_ranker_once_and_keeps_the_latest(worker_process):
    a, b, c = _Neural("A"), _Neural("B"), _Neural("C")
    store = worker_process({"a": a, "b": b, "c": c})
    assert worker_ranker("A", ["a"]) == (a, True)
    assert worker_ranker("A", ["a"]) == (a, False)       # kept: no second fetch
    assert worker_ranker("B", ["b"]) == (b, True)
    assert worker_ranker("A", ["a"]) == (a, False)       # A used last: B goes next
    assert worker_ranker("C", ["c"]) == (c, True)
    assert list(ray_executor._WORKER_RANKERS) == ["A", "C"]
    assert worker_ranker("B", ["b"]) == (b, True)
    assert store.fetched == ["a", "b", "c", "b"]
    assert ray_executor._WORKER_FETCHES == {"A": 1, "B": 2, "C": 1}   # B: again, once evicted


def test_rankers_without_a_model_never_push_out_one_loaded_ahead(worker_process):
    """A model loaded by a warm-up task stays while the run scores its lexical rankers
    first (BM25 and QL before the neural one): those count against their own limit."""
    neural = _Neural("N")
    lexical = {f"l{i}": f"lexical {i}" for i in range(ray_executor.LIGHT_RANKERS + 1)}
    store = worker_process({"n": neural, **lexical})
    assert worker_ranker("N", ["n"]) == (neural, True)          # the warm-up's fetch
    for ref in lexical:
        assert worker_ranker(ref.upper(), [ref])[1]
    assert worker_ranker("N", ["n"]) == (neural, False)         # still loaded
    assert store.fetched.count("n") == 1
    assert "L0" not in ray_executor._WORKER_RANKERS              # the oldest light one went
    assert len(ray_executor._WORKER_RANKERS) == ray_executor.LIGHT_RANKERS + 1


class _Put:
    """``ray.put``: a new reference each call."""

    def __init__(self):
        self.count = 0

    def put(self, obj):
        self.count += 1
        return _Ref(f"ref{self.count}")


@dataclasses.dataclass(frozen=True)
class _Ref:
    id: str

    def hex(self):
        return self.id


def test_a_ranker_is_put_once_and_kept_under_its_name_and_fingerprint():
    """Workers keep a ranker under its name and fingerprint (what identifies its scores),
    so a rebuilt copy of the same ranker reuses the model a worker loaded; a ranker that
    cannot be identified (``cacheable = False``) is never shared."""
    ray, executor = _Put(), RayExecutor("head:6379")
    echo = _Echo()
    key, boxed = executor._ship(ray, echo)
    assert key == "echo\0echo-v1" and boxed == [_Ref("ref1")]
    assert executor._ship(ray, echo) == (key, boxed) and ray.count == 1
    rebuilt = _Echo()
    assert executor._ship(ray, rebuilt)[0] == key and ray.count == 2
    anonymous = _Echo()
    anonymous.cacheable = False
    other = _Echo()
    other.cacheable = False
    first, second = executor._ship(ray, anonymous)[0], executor._ship(ray, other)[0]
    assert first != second and key not in (first, second)


def test_run_json_says_where_batches_ran():
    record = RayRecord("auto", resolved_address="10.0.0.5:6379", nodes=2, task_slots=16,
                       tasks_in_flight=32, tasks_per_node={"n2": 3, "n1": 5},
                       worker_processes={("n1", 10), ("n1", 11), ("n2", 12)},
                       fetches={("n1", 10, "a"): 1, ("n1", 11, "a"): 1, ("n2", 12, "a"): 2},
                       node_addresses={"n1": "10.0.0.5:1", "n2": "10.0.0.6:1",
                                       "n3": "10.0.0.7:1"},
                       nodes_joined=[{"node": "n2", "address": "10.0.0.6:1"}])
    assert record.as_dict() == {
        "address": "auto", "resolved_address": "10.0.0.5:6379", "nodes": 2,
        "task_slots": 16, "tasks_in_flight": 32, "gpus_per_task": None,
        "tasks_per_node": {"n1": 5, "n2": 3}, "worker_processes": 3, "ranker_copies": 4,
        "retried_tasks": 0, "nodes_joined": [{"node": "n2", "address": "10.0.0.6:1"}],
        "nodes_lost": [], "node_addresses": {"n1": "10.0.0.5:1", "n2": "10.0.0.6:1"}}


def test_tasks_in_flight_are_twice_the_slots_unless_fixed():
    """Twice what runs at once: the rest waits in Ray's queue, where an autoscaler sees it."""
    assert RayExecutor("head:6379")._in_flight({"n0": 8, "n1": 16}) == 48
    assert RayExecutor("head:6379", tasks=5)._in_flight({"n0": 8}) == 5
    assert RayExecutor("head:6379")._in_flight({}) == 1
