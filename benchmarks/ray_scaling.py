"""Parallel efficiency of the Ray executor on a two-node loopback cluster.

A latency-bound stand-in ranker (a fixed delay per batch, no computation: what a remote
model server or a GPU at full load looks like from the driver) scores the same batches
serially and with 16 Ray tasks in flight over two nodes of 8 CPUs each. Efficiency =
serial wall / (16 × Ray wall); 1.0 means the scheduler keeps all 16 tasks busy and adds
nothing. Ray's worker processes start once, in a warm-up round on other pairs, as they
would once per run; the timed rounds reuse them. The cluster runs in a private network
namespace (see ``_ray_loopback.py``).

``--dl19`` measures instead how the DL19 battery's run divides between scoring (what the
cluster divides) and the driver's sample building and statistics, with BM25.

Run: ``python benchmarks/ray_scaling.py [--delay 0.5] [--batches 96] [--dl19]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._ray_loopback import (
    INSIDE,
    LoopbackCluster,
    in_private_network,
    loopback_up,
    write_delayed_ranker,
)

TASKS = 16


def pairs(round_name: str, batches: int, batch_size: int) -> list[tuple[str, str]]:
    return [(f"query {round_name} {i // batch_size}", f"passage {round_name} {i}")
            for i in range(batches * batch_size)]


def timed_round(executor: object, ranker: object, batch: list, batch_size: int) -> float:
    from abnirml.evaluation.scoring import Scorer
    from abnirml.rankers.cache import ScoreCache

    with ScoreCache(None) as cache:
        scorer = Scorer(cache, batch_size=batch_size, progress=False, executor=executor)
        started = time.perf_counter()
        scorer.score(ranker, batch)
        return time.perf_counter() - started


def inside(delay: float, batches: int) -> None:
    loopback_up()
    with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
        root = Path(tmp)
        plugin = write_delayed_ranker(root)
        from abnirml.evaluation.parallel import SerialExecutor
        from abnirml.plugins import load_plugins, plugin_sources

        load_plugins(plugin_sources([str(plugin)]), entry_points=False)
        module = sys.modules[next(m for m in sys.modules if "delayed_ranker" in m)]
        ranker = module.Delayed(delay)
        batch_size = 4
        serial = timed_round(SerialExecutor(), ranker, pairs("serial", batches, batch_size),
                             batch_size)
        with LoopbackCluster(root / "cluster", cpus=TASKS // 2) as cluster:
            os.environ.update(cluster.auth_env())
            from abnirml.evaluation.ray_executor import RayExecutor

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
    from abnirml.evaluation import scoring
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
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per batch")
    parser.add_argument("--batches", type=int, default=96, help="batches per round")
    parser.add_argument("--dl19", action="store_true",
                        help="instead: the DL19 battery's scoring against the rest of its run")
    args = parser.parse_args()
    if os.environ.get(INSIDE):
        dl19_split() if args.dl19 else inside(args.delay, args.batches)
        return
    done = in_private_network([__file__, "--delay", str(args.delay),
                               "--batches", str(args.batches),
                               *(["--dl19"] if args.dl19 else [])], timeout=1800)
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
