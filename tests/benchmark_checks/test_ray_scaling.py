"""The Ray scaling benchmark times work, not shortcuts: a mode whose run scored from a
cache, scored other values than the serial run, lost batches, fetched the ranker more
than once per worker process or left a node of the cluster idle is refused."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from benchmarks.ray_scaling import SPIN_RANKER, check_work


def _run(tmp_path, name, scores, ray=None, **counts):
    out = tmp_path / name
    out.mkdir()
    np.savez(out / "scores.npz", score1_0=np.asarray(scores, dtype=np.float64),
             score2_0=np.zeros(len(scores)))
    return {"out": out, "ray": ray, "counts": {"unique_pairs": 4, "scored": 4,
                                                "from_cache": 0, **counts}}


def _ray(per_node, processes=2, copies=2):
    return {"tasks_per_node": per_node, "worker_processes": processes,
            "ranker_copies": copies}


@pytest.fixture
def runs(tmp_path):
    scores = [0.1, 0.2, 0.3, 0.4]
    return {"serial": [_run(tmp_path, "s", scores)],
            "local": [_run(tmp_path, "l", scores, _ray({"a": 3}))],
            "cluster": [_run(tmp_path, "c", scores, _ray({"a": 2, "b": 1}))]}


def test_runs_that_did_the_work_pass(runs):
    lines = check_work("spin", runs, 0.0, 3)
    assert lines[0].startswith("spin: 4 pairs scored in every run (none cached)")
    assert "worker processes / ranker copies 2/2, 2/2" in lines[1]


@pytest.mark.parametrize(("change", "refusal"), [
    (lambda r: r["local"][0]["counts"].update(from_cache=4, scored=0), "not every pair"),
    (lambda r: r["cluster"][0]["ray"]["tasks_per_node"].update(a=3, b=0), "not every node"),
    (lambda r: r["cluster"][0]["ray"]["tasks_per_node"].pop("b"), "batches returned"),
    (lambda r: r["local"][0]["ray"].update(ranker_copies=3), "ranker copies"),
])
def test_runs_that_skipped_work_are_refused(runs, change, refusal):
    changed = copy.deepcopy(runs)
    change(changed)
    with pytest.raises(SystemExit, match=refusal):
        check_work("spin", changed, 0.0, 3)


def test_other_scores_than_serial_are_refused(runs, tmp_path):
    runs["cluster"] = [_run(tmp_path, "other", [0.1, 0.2, 0.3, 0.5], _ray({"a": 2, "b": 1}))]
    with pytest.raises(SystemExit, match=r"scores differ from serial's by 0\.1"):
        check_work("spin", runs, 0.0, 3)
    check_work("spin", runs, 0.2, 3)          # within a tolerance given for float32 models


def test_the_cpu_bound_ranker_computes_its_chain():
    """The stand-in's score is the end of its hash chain: more rounds, another score."""
    namespace: dict = {}
    source = SPIN_RANKER.replace("from abnirml.rankers.registry import register",
                                 "register = lambda name, factory: None")
    exec(compile(source, "spin_ranker.py", "exec"), namespace)
    spin = namespace["Spin"]
    pairs = [("q", "d"), ("q", "e")]
    assert spin(10).score(pairs) == spin(10).score(pairs)
    assert spin(10).score(pairs) != spin(11).score(pairs)
    assert all(0 <= s < 1 for s in spin(10).score(pairs))
