"""The runs test_ray_cluster.py checks, made inside a private network namespace.

``python ray_cluster_scenario.py OUT`` (started by the test through ``unshare``) brings up
loopback, starts a two-node Ray cluster with token auth and runs one small battery:
serially, on the cluster, with ``--ray local`` while ``RAY_ADDRESS`` names the cluster,
with a wrong token, with half a GPU a task (the worker node claims two GPUs), and on
the cluster while its worker node is killed. Each run's folder,
exit status and stderr land in OUT (``summary.json``); the test compares them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks._ray_loopback import (  # noqa: E402
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


def abnirml(out: Path, name: str, plugin: Path, delay: float, *extra: str,
            env: dict[str, str] | None = None, background: bool = False):
    command = [sys.executable, "-m", "abnirml", "run", *BATTERY, "--plugin", str(plugin),
               "--ranker", f"delayed+delay={delay}", "--out", str(out / name), *extra]
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("RAY_", "ABNIRML_TEST"))}
    environment.update({"PYTHONPATH": str(SRC), "HOME": str(out / "driver-home"),
                        "RAY_TMPDIR": DRIVER_TMP, **(env or {})})
    (out / "driver-home").mkdir(exist_ok=True)
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.started = time.monotonic()    # type: ignore[attr-defined]
    return process if background else finished(name, process)


def finished(name: str, process: subprocess.Popen, timeout: float = 300) -> dict:
    stdout, stderr = process.communicate(timeout=timeout)
    return {"name": name, "code": process.returncode, "stdout": stdout, "stderr": stderr,
            "seconds": round(time.monotonic() - process.started, 1)}  # type: ignore[attr-defined]


def main(out: Path) -> None:
    loopback_up()
    out.mkdir(parents=True, exist_ok=True)
    plugin = write_delayed_ranker(out)
    log = out / "batches.log"
    summary: dict = {"runs": []}
    runs = summary["runs"]
    runs.append(abnirml(out, "serial", plugin, 0))
    cluster = LoopbackCluster(out / "ray-cluster",
                              env={"ABNIRML_TEST_LOG": str(log),
                                                    "ABNIRML_TEST_NODE": "head"},
                              worker_env={"ABNIRML_TEST_NODE": "worker"}, worker_gpus=2)
    try:
        started = time.monotonic()
        cluster.start()
        summary["cluster_start_s"] = round(time.monotonic() - started, 1)
        summary["address"] = cluster.address
        summary["worker_address"] = f"127.0.0.1:{cluster.worker_port}"
        auth = cluster.auth_env()
        runs.append(abnirml(out, "cluster", plugin, 0.05, "--ray", cluster.address, env=auth))
        # RAY_ADDRESS names the cluster and its current-cluster file is where Ray looks;
        # --ray local must start its own Ray all the same (no token: joining would fail)
        runs.append(abnirml(out, "local", plugin, 0, "--ray", "local",
                            env={"RAY_ADDRESS": cluster.address,
                                 "RAY_TMPDIR": str(cluster.ray_dir)}))
        runs.append(abnirml(out, "wrong-token", plugin, 0, "--ray", cluster.address,
                            env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 32,
                                 # Ray's own retry budget: 3 one-second tries, not 20
                                 "RAY_gcs_server_port_wait_time_s": "3"}))
        # the worker node claims two GPUs (Ray takes its word): half a GPU a task
        log.write_text("")
        runs.append(abnirml(out, "gpu", plugin, 0, "--ray", cluster.address,
                            "--ray-gpus", "0.5", env=auth))
        summary["gpu_batches"] = log.read_text().splitlines()
        log.write_text("")
        killed = abnirml(out, "killed", plugin, 0.3, "--ray", cluster.address, env=auth,
                         background=True)
        deadline = time.monotonic() + 120
        while (log.read_text().count("worker") < 3 and killed.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
        cluster.kill_worker()
        summary["killed_after"] = log.read_text().count("\n")
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
