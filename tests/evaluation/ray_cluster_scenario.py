"""The runs test_ray_cluster.py checks, made inside a private network namespace.

``python ray_cluster_scenario.py OUT`` (started by the test through ``unshare``) brings up
loopback, starts a Ray cluster with token auth, head first, and runs one small battery:

* serially (the results every other run must match);
* ``join``: on the head alone, the worker node started once the head's batches are under
  way (``ray status`` is read then: the demand waiting for a node); the head's batches wait
  until the new node has scored one, so the run cannot end before it is used;
* ``cluster``: ``--ray auto`` following ``RAY_ADDRESS``, the token read from a file;
* ``local``: ``--ray local`` while ``RAY_ADDRESS`` names the cluster;
* ``wrong-token``, ``auto-wrong-token``, ``token-missing``: refused before ``ray.init`` is
  ever called (the driver notes each call of it);
* ``gpu``: half a GPU a task (the worker node claims two GPUs);
* ``sigterm``: SIGTERM to the driver while it scores;
* ``frozen``: the worker node stopped (SIGSTOP) while it scores and the head's batches
  wait; resumed once the cluster has marked it dead, so that its agents report the dead
  raylet to the driver while it still runs; then the head's batches go on;
* ``killed``: on a fresh worker node, which is killed (SIGKILL) while it scores and the
  head's batches wait.

Each run's folder, exit status, stdout and stderr land in OUT (``summary.json``); the test
compares them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks._ray_loopback import (  # noqa: E402
    RAY_BIN,
    SRC,
    LoopbackCluster,
    loopback_up,
    reap_children,
    write_delayed_ranker,
)

# Ray's sockets live under its temp dir, and a socket path may not exceed 107 bytes
DRIVER_TMP = tempfile.mkdtemp(prefix="rayd-", dir="/tmp")
BATTERY = ["--probe", "mmp:*", "--no-cache", "--quiet", "--no-effectiveness",
           "--batch-size", "10", "--ranker", "bm25", "--ranker", "ql"]
#: the driver: abnirml's command line, noting each call of ray.init in ABNIRML_TEST_INITS
DRIVER = """
import os, sys
import ray

_init = ray.init


def noted_init(*args, **kwargs):
    with open(os.environ["ABNIRML_TEST_INITS"], "a") as handle:
        handle.write("ray.init\\n")
    return _init(*args, **kwargs)


ray.init = noted_init
sys.argv[0] = "abnirml"
from abnirml.cli import main
sys.exit(main())
"""


def abnirml(out: Path, name: str, plugin: Path, ranker: str, *extra: str,
            env: dict[str, str] | None = None, background: bool = False):
    inits = out / f"{name}.inits"
    command = [sys.executable, str(out / "driver.py"), "run", *BATTERY, "--plugin",
               str(plugin), "--ranker", ranker, "--out", str(out / name), *extra]
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("RAY_", "ABNIRML_TEST"))}
    environment.update({"PYTHONPATH": str(SRC), "HOME": str(out / "driver-home"),
                        "RAY_TMPDIR": DRIVER_TMP, "ABNIRML_TEST_INITS": str(inits),
                        **(env or {})})
    (out / "driver-home").mkdir(exist_ok=True)
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.started = time.monotonic()    # type: ignore[attr-defined]
    process.inits = inits                 # type: ignore[attr-defined]
    return process if background else finished(name, process)


def finished(name: str, process: subprocess.Popen, timeout: float = 400) -> dict:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        stderr += f"\n(killed after {timeout} s)"
    inits = process.inits                 # type: ignore[attr-defined]
    return {"name": name, "code": process.returncode, "stdout": stdout, "stderr": stderr,
            "ray_init_calls": inits.read_text().count("ray.init") if inits.exists() else 0,
            "seconds": round(time.monotonic() - process.started, 1)}  # type: ignore[attr-defined]


def batches(log: Path, node: str | None = None) -> list[list[str]]:
    """The batch lines of the stand-in ranker's log (``NODE CUDA PID``), of one node."""
    lines = [line.split() for line in log.read_text().splitlines()]
    return [f for f in lines if f and f[0] != "load" and f[0] != "released"
            and (node is None or f[0] == node)]


def wait_for(condition, process: subprocess.Popen, timeout: float = 240) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def ray_status(cluster: LoopbackCluster, timeout: float = 120) -> str:
    """``ray status`` once it lists a pending demand (the head's autoscaler monitor updates
    it every few seconds), or as it is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run([str(RAY_BIN), "status", f"--address={cluster.address}"],
                              env={**os.environ, **cluster.auth_env(),
                                   "HOME": str(cluster.root)},
                              capture_output=True, text=True, timeout=180)
        demands = done.stdout.partition("Pending Demands:")[2]
        if "pending tasks" in demands or time.monotonic() > deadline:
            return done.stdout
        time.sleep(1)


def main(out: Path) -> None:
    loopback_up()
    out.mkdir(parents=True, exist_ok=True)
    (out / "driver.py").write_text(DRIVER)
    plugin = write_delayed_ranker(out)
    log = out / "batches.log"
    log.write_text("")
    summary: dict = {"runs": []}
    runs = summary["runs"]
    runs.append(abnirml(out, "serial", plugin, "delayed"))
    cluster = LoopbackCluster(out / "ray-cluster",
                              env={"ABNIRML_TEST_LOG": str(log), "ABNIRML_TEST_NODE": "head"},
                              worker_env={"ABNIRML_TEST_NODE": "worker"}, worker_gpus=2)
    try:
        started = time.monotonic()
        cluster.start(worker=False)
        summary["cluster_start_s"] = round(time.monotonic() - started, 1)
        summary["address"] = cluster.address
        summary["worker_address"] = f"127.0.0.1:{cluster.worker_port}"
        auth = cluster.auth_env()

        join = abnirml(out, "join", plugin, "delayed+delay=0.2+gate=worker", "--ray",
                       cluster.address, env=auth, background=True)
        wait_for(lambda: len(batches(log, "head")) + log.read_text().count("load head") >= 2,
                 join)
        summary["join_status"] = ray_status(cluster)
        cluster.start_worker()
        runs.append(finished("join", join))
        summary["join_batches"] = batches(log)
        summary["join_loads"] = [line.split() for line in log.read_text().splitlines()
                                 if line.startswith("load ")]

        token_file = out / "ray-token"
        token_file.write_text(cluster.token + "\n")
        log.write_text("")
        runs.append(abnirml(out, "cluster", plugin, "delayed+delay=0.05", "--ray", "auto",
                            env={"RAY_ADDRESS": cluster.address, "RAY_AUTH_MODE": "token",
                                 "RAY_AUTH_TOKEN_PATH": str(token_file)}))
        summary["cluster_log"] = log.read_text().splitlines()
        # RAY_ADDRESS names the cluster and its current-cluster file is where Ray looks;
        # --ray local must start its own Ray all the same (no token: joining would fail)
        runs.append(abnirml(out, "local", plugin, "delayed", "--ray", "local",
                            env={"RAY_ADDRESS": cluster.address,
                                 "RAY_TMPDIR": str(cluster.ray_dir)}))
        wrong = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 32}
        runs.append(abnirml(out, "wrong-token", plugin, "delayed", "--ray", cluster.address,
                            env=wrong))
        runs.append(abnirml(out, "auto-wrong-token", plugin, "delayed", "--ray", "auto",
                            env={**wrong, "RAY_ADDRESS": cluster.address}))
        runs.append(abnirml(out, "token-missing", plugin, "delayed", "--ray",
                            cluster.address, env={"RAY_AUTH_MODE": "token",
                                                  "RAY_AUTH_TOKEN_PATH": str(out / "nothing")}))
        # the worker node claims two GPUs (Ray takes its word): half a GPU a task
        log.write_text("")
        runs.append(abnirml(out, "gpu", plugin, "delayed", "--ray", cluster.address,
                            "--ray-gpus", "0.5", env=auth))
        summary["gpu_log"] = log.read_text().splitlines()

        log.write_text("")
        term = abnirml(out, "sigterm", plugin, "delayed+delay=0.3", "--ray", cluster.address,
                       env=auth, background=True)
        wait_for(lambda: len(batches(log)) >= 3, term)
        term.send_signal(signal.SIGTERM)
        runs.append(finished("sigterm", term, timeout=120))

        log.write_text("")
        frozen = abnirml(out, "frozen", plugin, "delayed+delay=1+wait=head+gate=released",
                         "--ray", cluster.address, env=auth, background=True)
        wait_for(lambda: len(batches(log, "worker")) >= 2, frozen)
        cluster.signal_worker(signal.SIGSTOP)
        summary["frozen_after"] = len(batches(log))
        summary["frozen_worker_address"] = f"127.0.0.1:{cluster.worker_port}"
        time.sleep(15)            # the cluster marks it dead after 3 missed 1 s checks
        cluster.signal_worker(signal.SIGCONT)    # its raylet exits, its agents report it
        time.sleep(5)
        summary["frozen_running_when_resumed"] = frozen.poll() is None
        with open(log, "a") as handle:
            handle.write("released\n")
        runs.append(finished("frozen", frozen))

        cluster.start_worker()
        summary["killed_worker_address"] = f"127.0.0.1:{cluster.worker_port}"
        log.write_text("")
        killed = abnirml(out, "killed", plugin, "delayed+delay=0.3+wait=head+gate=released",
                         "--ray", cluster.address, env=auth, background=True)
        wait_for(lambda: len(batches(log, "worker")) >= 3, killed)
        cluster.kill_worker()
        summary["killed_after"] = len(batches(log))
        with open(log, "a") as handle:
            handle.write("released\n")
        runs.append(finished("killed", killed))
    finally:
        summary["lingering_groups"] = cluster.stop()
        time.sleep(1)
        reap_children()
        shutil.rmtree(DRIVER_TMP, ignore_errors=True)
        # the namespace's /proc: every process but this one is one the runs left behind
        summary["processes_left"] = sorted(_command(int(p)) for p in os.listdir("/proc")
                                           if p.isdigit() and int(p) != os.getpid())
        (out / "summary.json").write_text(json.dumps(summary, indent=1))


def _command(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:3]
        command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        return f"{pid} {' '.join(stat)} {command.strip()[:120]}"
    except OSError:
        return f"{pid} (gone)"


if __name__ == "__main__":
    main(Path(sys.argv[1]))
