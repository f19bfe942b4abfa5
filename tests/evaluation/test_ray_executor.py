"""The Ray executor's decisions that need no cluster: settings, node choice, the one line a
failed connection becomes, and batches cached as their tasks return.

The real two-node cluster is in test_ray_cluster.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.ray_executor import (
    AUTH_FIX,
    RayExecutor,
    connection_problem,
    least_loaded,
)
from abnirml.evaluation.scoring import Scorer
from abnirml.evaluation.workspace import SessionSettings
from abnirml.rankers.cache import ScoreCache, text_hash
from tests.helpers import one_error_line

GCS_RETRY_LINE = ("[2026-01-01 00:00:00,000 W 1 1] gcs_client.cc:210: Failed to get cluster "
                  "ID from GCS server: Unauthenticated: RPC error: InvalidAuthToken: "
                  "Authentication token is missing or incorrect\n")


def test_a_refused_token_names_the_variables_that_fix_it():
    line = connection_problem("10.0.0.5:6379",
                              ConnectionError("Failed to connect to Ray cluster at "
                                              "10.0.0.5:6379"), GCS_RETRY_LINE * 20)
    assert line == (f"the Ray cluster at 10.0.0.5:6379 refused abnirml's token (missing or "
                    f"not the cluster's): {AUTH_FIX}")
    assert "\n" not in line
    for variable in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        assert variable in line


def test_other_connection_failures_are_one_line_with_their_cause():
    mismatch = connection_problem("head:6379", RuntimeError(
        "Version mismatch: The cluster was started with:\n    Ray: 2.50.0\n"), "")
    assert mismatch.startswith("cannot join the Ray cluster at head:6379: its Ray or Python "
                               "version differs")
    other = connection_problem("head:6379", ConnectionError("Failed to connect\nmore"),
                               "[x E 1 1] raylet.cc:1: Something broke: details\n")
    assert other == ("cannot join the Ray cluster at head:6379: ConnectionError: Failed to "
                     "connect ([x E 1 1] raylet.cc:1: Something broke: details)")


def test_tasks_go_to_the_least_loaded_node_for_its_size():
    slots = {"big": 4, "small": 2}
    load = dict.fromkeys(slots, 0)
    order = []
    for _ in range(6):
        node = least_loaded(load, slots, set())
        load[node] += 1
        order.append(node)
    assert order == ["big", "small", "big", "big", "small", "big"]   # ties: the smaller id
    assert load == slots                        # full: each node holds what it can run
    assert least_loaded(load, slots, {"big"}) == "small"
    assert least_loaded(load, slots, {"big", "small"}) is None


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
