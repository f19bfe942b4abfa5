"""A real two-node Ray cluster with token auth, on loopback: results byte-identical to a
serial run, every node used, ``--ray local`` undisturbed by ``RAY_ADDRESS``, a refused
token in one line, a worker node killed mid-run survived and named, nothing left running.

The runs happen in ``ray_cluster_scenario.py``, inside a private network and process
namespace (see ``benchmarks/_ray_loopback.py``); this file checks what they left.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is an optional extra (abnirml[ray])")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks._ray_loopback import in_private_network  # noqa: E402

SCENARIO = Path(__file__).with_name("ray_cluster_scenario.py")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    out = tmp_path_factory.mktemp("ray-cluster")
    done = in_private_network([str(SCENARIO), str(out)], timeout=900)
    if done is None:
        pytest.skip("the loopback Ray cluster runs in a private network namespace "
                    "(unshare --user --net --pid), which this machine does not allow")
    summary_file = out / "summary.json"
    assert summary_file.exists(), f"the scenario failed:\n{done.stdout}\n{done.stderr}"[-4000:]
    summary = json.loads(summary_file.read_text())
    summary["runs"] = {run["name"]: run for run in summary["runs"]}
    return out, summary


def _ray_record(out: Path, name: str) -> dict:
    return json.loads((out / name / "run.json").read_text())["scoring"]["ray"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cluster", "local", "gpu", "killed"])
def test_results_are_byte_identical_to_a_serial_run(scenario, name):
    out, summary = scenario
    run = summary["runs"][name]
    assert run["code"] == 0, run["stderr"]
    for file in ("results.jsonl", "scores.npz"):
        assert (out / name / file).read_bytes() == (out / "serial" / file).read_bytes(), file


@pytest.mark.slow
def test_the_cluster_run_used_both_nodes_on_loopback(scenario):
    out, summary = scenario
    record = _ray_record(out, "cluster")
    assert record["address"] == summary["address"]
    assert record["nodes"] == 2 and record["tasks_in_flight"] == 4      # 2 CPUs a node
    assert len(record["tasks_per_node"]) == 2
    assert all(count > 0 for count in record["tasks_per_node"].values())
    assert sorted(record["node_addresses"]) == sorted(record["tasks_per_node"])
    assert all(a.startswith("127.0.0.1:") for a in record["node_addresses"].values())
    assert summary["worker_address"] in record["node_addresses"].values()
    assert record["retried_tasks"] == 0 and record["nodes_lost"] == []
    assert summary["runs"]["cluster"]["stderr"] == ""


@pytest.mark.slow
def test_ray_local_ignores_ray_address_and_the_current_cluster_file(scenario):
    out, summary = scenario
    assert summary["runs"]["local"]["stderr"] == ""
    local, cluster = _ray_record(out, "local"), _ray_record(out, "cluster")
    assert local["address"] == "local" and local["nodes"] == 1
    (node,) = local["tasks_per_node"]
    assert node not in cluster["tasks_per_node"]                   # a Ray of its own
    assert local["node_addresses"][node].startswith("127.0.0.1:")


@pytest.mark.slow
def test_gpu_tasks_run_where_the_gpus_are_on_the_card_ray_assigned(scenario):
    """Only the worker node has GPUs (two): at half a GPU a task, four tasks in flight,
    all on it, each seeing the card Ray gave it as its only visible device."""
    out, summary = scenario
    record = _ray_record(out, "gpu")
    assert record["gpus_per_task"] == 0.5 and record["tasks_in_flight"] == 4
    assert list(record["node_addresses"].values()) == [summary["worker_address"]]
    batches = summary["gpu_batches"]
    assert batches and {line.split()[0] for line in batches} == {"worker"}
    assert {line.split()[1] for line in batches} <= {"0", "1"}


@pytest.mark.slow
def test_a_refused_token_is_one_line_naming_the_fix(scenario):
    _, summary = scenario
    run = summary["runs"]["wrong-token"]
    assert run["code"] == 2
    lines = run["stderr"].splitlines()
    assert len(lines) == 1, run["stderr"]
    assert lines[0].startswith(f"abnirml: error: the Ray cluster at {summary['address']} "
                               "refused abnirml's token")
    for variable in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        assert variable in lines[0]


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_is_retried_and_named(scenario):
    out, summary = scenario
    run = summary["runs"]["killed"]
    record = _ray_record(out, "killed")
    (lost,) = record["nodes_lost"]
    assert lost["address"] == summary["worker_address"]
    assert record["tasks_per_node"][lost["node"]] >= 1     # it ran batches before it died
    assert record["retried_tasks"] >= 1
    assert run["stderr"].splitlines() == [
        f"abnirml: warning: Ray node {lost['node']} ({lost['address']}) was lost during "
        "scoring; its unfinished batches ran again on the other nodes"]


@pytest.mark.slow
def test_no_ray_process_is_left_running(scenario):
    _, summary = scenario
    assert summary["lingering_groups"] == []
    assert summary["processes_left"] == []
