"""A real Ray cluster with token auth, on loopback: results byte-identical to a serial run;
the ranker loaded once per worker process; Ray's placement using a node that joins
mid-run, with demand left waiting for an autoscaler; a frozen node and a killed node
survived and named in one line, with none of Ray's raylet dumps; refused tokens and
token files refused before Ray is asked; SIGTERM not blamed on a ranker; ``--ray local``
undisturbed by ``RAY_ADDRESS``; nothing left running.

The runs happen in ``ray_cluster_scenario.py``, inside a private network and process
namespace (see ``benchmarks/_ray_loopback.py``); this file checks what they left.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections import Counter
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
    done = in_private_network([str(SCENARIO), str(out)], timeout=1800)
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


def _loads_and_batches(lines: list[str]) -> tuple[Counter, Counter]:
    """Per worker process (pid) of the stand-in ranker's log: its loads, its batches."""
    fields = [line.split() for line in lines]
    loads = Counter(f[2] for f in fields if f[0] == "load")
    batches = Counter(f[2] for f in fields if f[0] not in ("load", "released"))
    return loads, batches


def _no_ray_report(run: dict) -> None:
    """Nothing of Ray's own reports reached the terminal: stdout holds abnirml's lines."""
    for line in run["stdout"].splitlines():
        assert line.startswith("abnirml: "), run["stdout"]
    for text in (run["stdout"], run["stderr"]):
        for mark in ("(raylet)", "Raylet is terminated", "marked dead", "\x1b["):
            assert mark not in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["join", "cluster", "local", "gpu", "frozen", "killed"])
def test_results_are_byte_identical_to_a_serial_run(scenario, name):
    out, summary = scenario
    run = summary["runs"][name]
    assert run["code"] == 0, run["stderr"]
    for file in ("results.jsonl", "scores.npz"):
        assert (out / name / file).read_bytes() == (out / "serial" / file).read_bytes(), file


@pytest.mark.slow
def test_the_ranker_is_loaded_once_per_worker_process(scenario):
    """Each worker process fetched the ranker once and kept it: one load per process (in
    a warm-up task sent while the samples were built, or with its first batch), however
    many batches it scored (each task used to get a fresh, unloaded copy)."""
    out, summary = scenario
    loads, batches = _loads_and_batches(summary["cluster_log"])
    assert set(batches) <= set(loads) and set(loads.values()) == {1}
    assert max(batches.values()) >= 2 and sum(batches.values()) == 23    # 229 pairs / 10
    record = _ray_record(out, "cluster")
    assert record["worker_processes"] >= len(batches)
    # bm25, ql and the stand-in each went once to each process that scored them
    assert record["ranker_copies"] <= 3 * record["worker_processes"]


@pytest.mark.slow
def test_gpu_tasks_keep_their_process_and_run_on_the_card_ray_assigned(scenario):
    """Only the worker node has GPUs (two): at half a GPU a task, four run at once and
    eight are in flight, all on it, each seeing the card Ray gave it as its only visible
    device; a GPU task's process stays for the next batch (one load per process)."""
    out, summary = scenario
    record = _ray_record(out, "gpu")
    assert record["gpus_per_task"] == 0.5
    assert record["task_slots"] == 4 and record["tasks_in_flight"] == 8
    assert list(record["node_addresses"].values()) == [summary["worker_address"]]
    log = summary["gpu_log"]
    batch_lines = [line.split() for line in log if not line.startswith("load ")]
    assert batch_lines and {f[0] for f in batch_lines} == {"worker"}
    assert {f[1] for f in batch_lines} <= {"0", "1"}
    loads, batches = _loads_and_batches(log)
    assert set(loads.values()) == {1} and sum(batches.values()) > len(batches)


@pytest.mark.slow
def test_a_node_that_joins_mid_run_is_used_and_demand_waits_for_it(scenario):
    """The run began on the head alone, with more tasks in flight than the head runs (Ray's
    status lists them as pending demand, what an autoscaler adds nodes for); the worker
    node started later got batches, and the head's waited until it had."""
    out, summary = scenario
    record = _ray_record(out, "join")
    assert record["nodes"] == 1 and record["task_slots"] == 2
    (joined,) = record["nodes_joined"]
    assert joined["address"] == summary["worker_address"]
    assert record["tasks_per_node"][joined["node"]] >= 1
    assert record["tasks_in_flight"] == 8                  # 2 × the 4 CPUs after the join
    assert {f[0] for f in summary["join_batches"]} == {"head", "worker"}
    demand = re.search(r"Pending Demands:\s*\n\s*\{'CPU': 1\.0\}: (\d+)\+ pending tasks",
                       summary["join_status"])
    assert demand and int(demand.group(1)) >= 1, summary["join_status"]
    assert summary["runs"]["join"]["stderr"] == ""


@pytest.mark.slow
def test_auto_with_a_token_file_runs_on_both_nodes(scenario):
    out, summary = scenario
    record = _ray_record(out, "cluster")
    assert record["address"] == "auto" and record["resolved_address"] == summary["address"]
    assert record["nodes"] == 2 and record["task_slots"] == 4
    assert len(record["tasks_per_node"]) == 2
    assert all(count > 0 for count in record["tasks_per_node"].values())
    assert sorted(record["node_addresses"]) == sorted(record["tasks_per_node"])
    assert all(a.startswith("127.0.0.1:") for a in record["node_addresses"].values())
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
@pytest.mark.parametrize(("name", "named"), [("wrong-token", "{address}"),
                                              ("auto-wrong-token", "{address} (--ray auto)")])
def test_a_refused_token_is_one_line_before_ray_init(scenario, name, named):
    """The cluster's GCS refuses the token at once; ray.init (which would retry it for
    about 20 s) is never called."""
    _, summary = scenario
    run = summary["runs"][name]
    assert run["code"] == 2 and run["ray_init_calls"] == 0
    lines = run["stderr"].splitlines()
    assert len(lines) == 1, run["stderr"]
    where = named.format(address=summary["address"])
    assert lines[0].startswith(f"abnirml: error: the Ray cluster at {where} refused "
                               "abnirml's token")
    for variable in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        assert variable in lines[0]


@pytest.mark.slow
def test_a_missing_token_file_is_named_with_its_path(scenario):
    out, summary = scenario
    run = summary["runs"]["token-missing"]
    assert run["code"] == 2 and run["ray_init_calls"] == 0
    assert run["stderr"].splitlines() == [
        f"abnirml: error: Ray token auth is on (RAY_AUTH_MODE=token) for the Ray cluster at "
        f"{summary['address']}, but RAY_AUTH_TOKEN_PATH names {out / 'nothing'}, which does "
        "not exist; write the cluster's token there ('ray get-auth-token' on its head "
        "prints it) or set RAY_AUTH_TOKEN to it"]


@pytest.mark.slow
def test_sigterm_while_scoring_ends_the_run_and_blames_no_ranker(scenario):
    """Ray's ray.init installs a SIGTERM handler that raises SystemExit in whatever runs;
    the driver keeps its own (the default: the process ends by the signal)."""
    _, summary = scenario
    run = summary["runs"]["sigterm"]
    assert run["code"] == -signal.SIGTERM, run["stderr"]
    assert "sys.exit" not in run["stderr"] and "ranker" not in run["stderr"]


@pytest.mark.slow
def test_a_frozen_node_is_given_up_in_one_line_and_the_run_goes_on(scenario):
    """The worker node stopped (SIGSTOP) while it held batches: once the cluster declared
    it dead they ran again on the head (before, the run waited minutes for connections to
    time out); resumed while the run went on, its agents reported the dead raylet to the
    driver, which printed none of it."""
    out, summary = scenario
    run = summary["runs"]["frozen"]
    assert summary["frozen_running_when_resumed"]
    record = _ray_record(out, "frozen")
    (lost,) = record["nodes_lost"]
    assert lost["address"] == summary["frozen_worker_address"]
    assert summary["frozen_after"] >= 2                     # it scored before it froze
    assert record["retried_tasks"] >= 1                     # and held batches then
    assert run["stderr"].splitlines() == [
        f"abnirml: warning: Ray node {lost['node']} ({lost['address']}) was lost during "
        "scoring; its unfinished batches ran again on the other nodes"]
    _no_ray_report(run)


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_is_retried_and_named(scenario):
    out, summary = scenario
    run = summary["runs"]["killed"]
    record = _ray_record(out, "killed")
    (lost,) = record["nodes_lost"]
    assert lost["address"] == summary["killed_worker_address"]
    assert summary["killed_after"] >= 3                     # it scored before it died
    assert record["retried_tasks"] >= 1
    assert run["stderr"].splitlines() == [
        f"abnirml: warning: Ray node {lost['node']} ({lost['address']}) was lost during "
        "scoring; its unfinished batches ran again on the other nodes"]
    _no_ray_report(run)


@pytest.mark.slow
def test_no_ray_process_is_left_running(scenario):
    _, summary = scenario
    assert summary["lingering_groups"] == []
    assert summary["processes_left"] == []
