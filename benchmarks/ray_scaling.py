"""What scoring on Ray costs and gains: serial, ``--ray local`` and a two-node loopback
cluster, measured in one run, for two rankers.

* **the bi-encoder on the demo battery** (``--collection demo --probe all --ranker
  biencoder``): the model is loaded once per Ray worker process, so ``--ray local`` should
  cost little more than a serial run (target: at most 1.3 × its wall time);
* **a CPU-bound plugin ranker** (each pair's score is the end of a chain of BLAKE2 hashes,
  pure Python) on ``mmp:*`` in batches of 4: two nodes should score it about twice as fast
  as one process (target: at least 1.6 × faster than serial).

Each node of the cluster is pinned to one CPU core of this machine (``taskset``), as if
each were a machine of its own with one core; ``--ray local`` and the serial run may use
every core. The cluster runs in a private network namespace (see ``_ray_loopback.py``).
Every run is a whole ``abnirml run`` in its own process (``--no-cache``: everything is
scored); the modes alternate, in reverse order every other round, after one untimed
warm-up run. The work is checked, not assumed: every run's scores must equal the serial
run's (the hash chain exactly, the bi-encoder to float32 rounding), every pair must have
been computed (none from a cache), the Ray runs must account for every batch in their
``scoring.ray`` record, each Ray worker process must have fetched the ranker at most once,
and the cluster runs must have used both nodes.

``--latency`` measures instead the parallel efficiency of a latency-bound stand-in (a fixed
delay per batch) with 16 tasks in flight over two nodes of 8 CPU slots; ``--dl19`` how the
DL19 battery's run divides between scoring (what the cluster divides) and the driver's
sample building and statistics, with BM25.

Run: ``python benchmarks/ray_scaling.py [--rounds 2] [--hash-rounds 250000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._ray_loopback import (
    INSIDE,
    SRC,
    LoopbackCluster,
    in_private_network,
    loopback_up,
    write_delayed_ranker,
)

TASKS = 16
MODES = ("serial", "local", "cluster")
BIENCODER = ["--collection", "demo", "--probe", "all", "--transfer-data", "demo",
             "--ranker", "biencoder"]
CPU_BOUND = ["--collection", "demo", "--probe", "mmp:*", "--batch-size", "4"]
COMMON = ["--no-cache", "--quiet", "--no-effectiveness"]
#: the largest score difference allowed between modes: the bi-encoder's float32 embeddings,
#: computed in other batches by other processes, round differently in the last bits
BIENCODER_TOLERANCE = 1e-5

#: runs ``abnirml run`` on its arguments, timing the engine's scoring calls, and writes
#: ``{"code", "scoring_s"}`` to the file named first
TIMED_CLI = """
import json, sys, time
from abnirml.evaluation.execution import scoring
spent = [0.0]
score = scoring.Scorer.score


def timed(self, ranker, pairs):
    started = time.perf_counter()
    try:
        return score(self, ranker, pairs)
    finally:
        spent[0] += time.perf_counter() - started


scoring.Scorer.score = timed
from abnirml.cli import main

code = main(sys.argv[2:])
with open(sys.argv[1], "w") as handle:
    json.dump({"code": code, "scoring_s": spent[0]}, handle)
sys.exit(code)
"""

SPIN_RANKER = '''
"""A CPU-bound stand-in ranker: a pair's score is the end of a chain of BLAKE2 hashes of
its texts (``+rounds=N`` links), pure Python, the same in every process."""
import hashlib

from abnirml.rankers.registry import register


class Spin:
    name = "spin"

    def __init__(self, rounds):
        self.rounds = rounds
        self.fingerprint = f"spin-v1-{rounds}"

    def score(self, pairs):
        scores = []
        for query, document in pairs:
            digest = f"{query}\\0{document}".encode()
            for _ in range(self.rounds):
                digest = hashlib.blake2b(digest, digest_size=32).digest()
            scores.append(int.from_bytes(digest[:6], "big") / 2**48)
        return scores


register("spin", lambda spec, env: Spin(int(spec.param("rounds") or 250000)))
'''


def _environment(home: Path, tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({"PYTHONPATH": str(SRC), "HOME": str(home), "RAY_TMPDIR": str(tmp),
                "ABNIRML_PROGRESS": "0", **(extra or {})})
    return env


def one_run(args: list[str], out: Path, env: dict[str, str]) -> dict[str, Any]:
    """``abnirml run ARGS --out OUT`` in its own process: wall and scoring seconds, and what
    its run.json says it scored."""
    timing = out.with_suffix(".json")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", TIMED_CLI, str(timing), "run", *args,
                           "--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=3600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"abnirml run failed ({done.returncode}): {done.stderr[-3000:]}")
    info = json.loads((out / "run.json").read_text())
    return {"wall_s": wall, "scoring_s": json.loads(timing.read_text())["scoring_s"],
            "counts": info["counts"], "ray": info.get("scoring", {}).get("ray"), "out": out,
            "stderr": done.stderr}


def score_arrays(out: Path) -> dict[str, Any]:
    import numpy as np

    with np.load(out / "scores.npz", allow_pickle=False) as scores:
        return {k: scores[k] for k in scores.files if k.startswith("score")}


def check_work(label: str, runs: dict[str, list[dict]], tolerance: float,
               batches: int | None) -> list[str]:
    """The checks that the timed runs did the work (SystemExit on the first that fails);
    lines saying what was checked."""
    import numpy as np

    serial = runs["serial"][0]
    reference = score_arrays(serial["out"])
    pairs = serial["counts"]["unique_pairs"]
    worst = 0.0
    for mode, mode_runs in runs.items():
        for run in mode_runs:
            counts = run["counts"]
            if counts["from_cache"] != 0 or counts["unique_pairs"] != pairs \
                    or counts["scored"] != pairs:
                raise SystemExit(f"{label} {mode}: not every pair was scored: {counts}")
            arrays = score_arrays(run["out"])
            if sorted(arrays) != sorted(reference):
                raise SystemExit(f"{label} {mode}: other score arrays than serial's")
            for key, values in arrays.items():
                difference = float(np.max(np.abs(values - reference[key]), initial=0.0))
                worst = max(worst, difference)
            if worst > tolerance:
                raise SystemExit(f"{label} {mode}: scores differ from serial's by {worst:g}")
            ray = run["ray"]
            if mode == "serial":
                continue
            returned = sum(ray["tasks_per_node"].values())
            if batches is not None and returned != batches:
                raise SystemExit(f"{label} {mode}: {returned} batches returned, {batches} cut")
            if ray["ranker_copies"] > ray["worker_processes"]:
                raise SystemExit(f"{label} {mode}: {ray['ranker_copies']} ranker copies for "
                                 f"{ray['worker_processes']} worker processes")
            if mode == "cluster" and (len(ray["tasks_per_node"]) != 2
                                      or min(ray["tasks_per_node"].values()) < 1):
                raise SystemExit(f"{label} cluster: not every node scored: "
                                 f"{ray['tasks_per_node']}")
    ray_runs = [r["ray"] for m in ("local", "cluster") for r in runs[m]]
    return [f"{label}: {pairs:,} pairs scored in every run (none cached); largest score "
            f"difference from serial {worst:.1e}",
            f"{label}: Ray batches returned per run "
            f"{sorted({sum(r['tasks_per_node'].values()) for r in ray_runs})}; worker "
            f"processes / ranker copies "
            + ", ".join(f"{r['worker_processes']}/{r['ranker_copies']}" for r in ray_runs)]


def compare(rounds: int, hash_rounds: int) -> None:
    """Serial, --ray local and the two-node cluster, alternating, for both rankers."""
    loopback_up()
    from abnirml.evaluation.execution.parallel import available_cores

    cores = available_cores()
    pin = shutil.which("taskset") is not None and cores >= 2
    with tempfile.TemporaryDirectory(prefix="ray-bench-", dir="/tmp") as tmp:
        root = Path(tmp)
        home, ray_tmp = root / "home", root / "t"
        home.mkdir()
        ray_tmp.mkdir()
        plugin = root / "spin_ranker.py"
        plugin.write_text(SPIN_RANKER)
        spin = [*CPU_BOUND, "--plugin", str(plugin), "--ranker", f"spin+rounds={hash_rounds}"]
        plain = _environment(home, ray_tmp)
        one_run([*BIENCODER, *COMMON], root / "warm-up", plain)     # content caches warm
        cluster = LoopbackCluster(root / "cluster", cpus=1,
                                  cores={"head": 0, "worker": 1} if pin else None)
        started = time.perf_counter()
        cluster.start()
        cluster_start = time.perf_counter() - started
        joined = _environment(home, ray_tmp, cluster.auth_env())
        settings = {"serial": ([], plain), "local": (["--ray", "local"], plain),
                    "cluster": (["--ray", cluster.address], joined)}
        results: dict[str, dict[str, list[dict]]] = {
            "biencoder": {m: [] for m in MODES}, "cpu-bound": {m: [] for m in MODES}}
        try:
            for number in range(rounds):
                order = MODES if number % 2 == 0 else tuple(reversed(MODES))
                for mode in order:
                    extra, env = settings[mode]
                    for label, args in (("biencoder", BIENCODER), ("cpu-bound", spin)):
                        out = root / f"{label}-{mode}-{number}"
                        results[label][mode].append(one_run([*args, *COMMON, *extra], out, env))
                        print(f"  round {number + 1}: {label} {mode}: "
                              f"{results[label][mode][-1]['wall_s']:.1f} s", flush=True)
        finally:
            left = cluster.stop()
        checks = (check_work("bi-encoder", results["biencoder"], BIENCODER_TOLERANCE, None)
                  + check_work("CPU-bound", results["cpu-bound"], 0.0, 58))  # 229 pairs / 4
    report(results, rounds, hash_rounds, cores, pin, cluster_start, checks, left)


def report(results: dict[str, dict[str, list[dict]]], rounds: int, hash_rounds: int,
           cores: int, pinned: bool, cluster_start: float, checks: list[str],
           left: list[int]) -> None:
    from benchmarks.common import print_table

    def median(label: str, mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[label][mode])

    rows = []
    for label in results:
        for mode in MODES:
            walls = [r["wall_s"] for r in results[label][mode]]
            rows.append([label, mode, ", ".join(f"{w:.1f}" for w in walls),
                         median(label, mode, "wall_s"), median(label, mode, "scoring_s"),
                         median(label, mode, "wall_s") / median(label, "serial", "wall_s")])
    print(f"\nRay scaling, {rounds} round(s) alternating, {cores} cores here; the cluster: two "
          f"nodes of 1 CPU slot" + (", each pinned to its own core" if pinned else
                                    " (not pinned: taskset or a second core is missing)")
          + f", started in {cluster_start:.1f} s")
    print_table("whole runs (median of the rounds)",
                ["ranker", "mode", "wall s, each round", "wall s", "scoring s",
                 "wall / serial"], rows)
    local_ratio = median("biencoder", "local", "wall_s") / median("biencoder", "serial", "wall_s")
    speedup = median("cpu-bound", "serial", "wall_s") / median("cpu-bound", "cluster", "wall_s")
    scoring_speedup = (median("cpu-bound", "serial", "scoring_s")
                       / median("cpu-bound", "cluster", "scoring_s"))
    print(f"\nbi-encoder demo battery, --ray local / serial wall: {local_ratio:.2f} "
          f"(target ≤ 1.3) {'ok' if local_ratio <= 1.3 else 'MISSED'}")
    print(f"CPU-bound ranker ({hash_rounds:,} hash rounds a pair), serial / two-node cluster "
          f"wall: {speedup:.2f} × (target ≥ 1.6) {'ok' if speedup >= 1.6 else 'MISSED'}; "
          f"scoring alone {scoring_speedup:.2f} ×")
    print("\nwork checked:")
    for line in checks:
        print(f"  {line}")
    print(f"  Ray processes left after the cluster stopped: {len(left)}")


def pairs(round_name: str, batches: int, batch_size: int) -> list[tuple[str, str]]:
    return [(f"query {round_name} {i // batch_size}", f"passage {round_name} {i}")
            for i in range(batches * batch_size)]


def timed_round(executor: object, ranker: object, batch: list, batch_size: int) -> float:
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.support.cache import ScoreCache

    with ScoreCache(None) as cache:
        scorer = Scorer(cache, batch_size=batch_size, progress=False, executor=executor)
        started = time.perf_counter()
        scorer.score(ranker, batch)
        return time.perf_counter() - started


def latency(delay: float, batches: int) -> None:
    """Parallel efficiency of a latency-bound stand-in: serial wall / (16 × Ray wall)."""
    loopback_up()
    with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
        root = Path(tmp)
        plugin = write_delayed_ranker(root)
        from abnirml.evaluation.execution.parallel import SerialExecutor
        from abnirml.plugins import load_plugins, plugin_sources

        load_plugins(plugin_sources([str(plugin)]), entry_points=False)
        module = sys.modules[next(m for m in sys.modules if "delayed_ranker" in m)]
        ranker = module.Delayed(delay)
        batch_size = 4
        serial = timed_round(SerialExecutor(), ranker, pairs("serial", batches, batch_size),
                             batch_size)
        with LoopbackCluster(root / "cluster", cpus=TASKS // 2) as cluster:
            os.environ.update(cluster.auth_env())
            from abnirml.evaluation.execution.ray_executor import RayExecutor

            executor = RayExecutor(cluster.address, tasks=TASKS)
            try:
                timed_round(executor, ranker, pairs("warm-up", TASKS * 2, batch_size),
                            batch_size)
                runs = [timed_round(executor, ranker, pairs(f"r{i}", batches, batch_size),
                                    batch_size) for i in range(3)]
                record = executor.report()
            finally:
                executor.close()
    ray_wall = sorted(runs)[1]
    efficiency = serial / (TASKS * ray_wall)
    per_node = sorted((record or {}).get("tasks_per_node", {}).values())
    print(f"Ray executor, {batches} batches × {delay:g} s stand-in delay, {TASKS} tasks in "
          f"flight over 2 loopback nodes")
    print(f"  serial wall            {serial:8.2f} s")
    print(f"  Ray wall (median of 3) {ray_wall:8.2f} s   runs: "
          + ", ".join(f"{r:.2f}" for r in runs))
    print(f"  ideal Ray wall         {serial / TASKS:8.2f} s")
    print(f"  tasks per node (all rounds): {per_node}")
    print(f"  parallel efficiency    {efficiency:8.3f}   (target ≥ 0.8)")


def dl19_split() -> None:
    """The DL19 battery with BM25 through the loopback cluster: how much of the run is
    scoring (what Ray divides) and how much the driver's sample building and statistics."""
    from benchmarks.common import require_dl19

    dl19 = require_dl19()
    if dl19 is None:
        return
    loopback_up()
    from abnirml.evaluation.execution import scoring
    from abnirml.pipeline import RunConfig, SessionSettings, run

    spent = [0.0]
    score = scoring.Scorer.score

    def timed_score(self: object, ranker: object, pairs: list) -> object:
        started = time.perf_counter()
        try:
            return score(self, ranker, pairs)  # type: ignore[arg-type]
        finally:
            spent[0] += time.perf_counter() - started

    scoring.Scorer.score = timed_score  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp, \
            LoopbackCluster(Path(tmp) / "cluster") as cluster:
        os.environ.update(cluster.auth_env())
        started = time.perf_counter()
        output = run(RunConfig(collection=str(dl19), rankers=["bm25"], probes=["all"],
                               out=None, session=SessionSettings(
                                   cache=None, progress=False, ray_address=cluster.address)))
        total = time.perf_counter() - started
    counts = output.run_info["counts"]
    nodes = sorted(output.run_info["scoring"]["ray"]["tasks_per_node"].values())
    print(f"DL19 battery, BM25, two loopback nodes of 2 CPUs: {counts['samples']:,} samples, "
          f"{counts['unique_pairs']:,} unique pairs, tasks per node {nodes}")
    print(f"  whole run {total:7.1f} s; scoring through Ray {spent[0]:6.1f} s "
          f"({spent[0] / total:.0%}); sample building and statistics on the driver "
          f"{total - spent[0]:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2,
                        help="timed rounds of the three modes (alternating order)")
    parser.add_argument("--hash-rounds", type=int, default=250000,
                        help="BLAKE2 hashes per pair of the CPU-bound ranker")
    parser.add_argument("--latency", action="store_true",
                        help="instead: parallel efficiency of a latency-bound stand-in")
    parser.add_argument("--delay", type=float, default=0.5,
                        help="with --latency: seconds per batch")
    parser.add_argument("--batches", type=int, default=96,
                        help="with --latency: batches per round")
    parser.add_argument("--dl19", action="store_true",
                        help="instead: the DL19 battery's scoring against the rest of its run")
    args = parser.parse_args()
    if os.environ.get(INSIDE):
        if args.dl19:
            dl19_split()
        elif args.latency:
            latency(args.delay, args.batches)
        else:
            compare(args.rounds, args.hash_rounds)
        return
    forwarded = ["--rounds", str(args.rounds), "--hash-rounds", str(args.hash_rounds),
                 "--delay", str(args.delay), "--batches", str(args.batches),
                 *(["--dl19"] if args.dl19 else []), *(["--latency"] if args.latency else [])]
    done = in_private_network([__file__, *forwarded], timeout=3 * 3600)
    if done is None:
        print("skipped: the loopback cluster needs a private network namespace (unshare "
              "--user --net --pid), which this machine does not allow")
        return
    print(done.stdout, end="")
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        sys.exit(done.returncode)


if __name__ == "__main__":
    main()
