"""Figures of `make demo` (issue 18): install size and time, cold and warm run, where the time goes.

* install: with ``--install``, a fresh clone of this checkout runs ``make demo-setup``
  (a new ``.venv`` with the ``demo`` extra); the wall time and ``du`` of that ``.venv`` are
  printed. Without it, the size of an existing ``.venv`` here is printed, if there is one.
* cold run: the demo command of the Makefile in a fresh process with an empty score cache
  and figure cache; warm rerun: the same command again over the filled caches.
* inside each run: sample building (all probes) and each ranker's scoring time, taken by
  wrapping the engine's two entry points (``build_table``, ``Scorer.score``) in the child.

Wall and CPU seconds are both printed: on a shared machine the wall time depends on what
else runs, the CPU time far less. Run: ``python benchmarks/demo_timing.py [--install]``.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, print_table

RANKERS = ["bm25", "ql", "tfidf", "biencoder", "wmd:glove", "knrm", "lgbm"]


def demo_args(out: Path, cache: Path) -> list[str]:
    """The arguments of the Makefile's `make demo` command (plus a private cache)."""
    args = ["run", "--collection", "demo"]
    for ranker in RANKERS:
        args += ["--ranker", ranker]
    return [*args, "--probe", "all", "--transfer-data", "demo", "--quiet", "--cache",
            str(cache), "--out", str(out)]


def child(report: str, argv: list[str]) -> int:
    """Run the `abnirml` command in this process with the engine's steps timed."""
    start = time.perf_counter()
    from abnirml.evaluation.execution import experiment, scoring

    timings: dict[str, dict[str, float]] = {"build": {}, "score": {}}
    build, score = experiment.build_table, scoring.Scorer.score

    def timed_build(probe, context):
        began = time.perf_counter()
        try:
            return build(probe, context)
        finally:
            timings["build"][probe.name] = time.perf_counter() - began

    def timed_score(self, ranker, pairs):
        began = time.perf_counter()
        try:
            return score(self, ranker, pairs)
        finally:
            spent = timings["score"].get(ranker.name, 0.0)
            timings["score"][ranker.name] = spent + time.perf_counter() - began

    experiment.build_table = timed_build
    scoring.Scorer.score = timed_score
    from abnirml.cli import main

    code = main(argv)
    timings["total"] = {"wall": time.perf_counter() - start}
    Path(report).write_text(json.dumps(timings), encoding="utf-8")
    return code


def run_demo(out: Path, cache: Path, figures: Path) -> dict:
    report = out.parent / f"{out.name}.timings.json"
    env = {**os.environ, "ABNIRML_FIGURE_CACHE": str(figures),
           "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", str(report),
                    *demo_args(out, cache)], check=True, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timings = json.loads(report.read_text(encoding="utf-8"))
    timings["process"] = {"wall": wall, "cpu": (after.ru_utime - before.ru_utime)
                          + (after.ru_stime - before.ru_stime)}
    return timings


def install(tmp: Path) -> tuple[float, str]:
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    began = time.perf_counter()
    subprocess.run(["make", "--no-print-directory", "demo-setup"], cwd=clone, check=True)
    seconds = time.perf_counter() - began
    return seconds, venv_size(clone / ".venv")


def venv_size(venv: Path) -> str:
    if not venv.is_dir():
        return "–"
    du = subprocess.run(["du", "-sh", str(venv)], capture_output=True, text=True, check=True)
    return du.stdout.split()[0]


def device() -> str:
    model = platform.processor() or "CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} cores, load average {load:.1f} at the start"


def main() -> None:
    print(f"device: {device()}")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if "--install" in sys.argv:
            seconds, size = install(tmp)
            print(f"install (fresh clone, make demo-setup): {seconds:.0f} s, .venv {size}")
        else:
            print(f".venv here: {venv_size(REPO / '.venv')} (pass --install for a fresh one)")
        cache, figures = tmp / "scores.sqlite", tmp / "figures"
        cold = run_demo(tmp / "cold", cache, figures)
        warm = run_demo(tmp / "warm", cache, figures)
        shutil.rmtree(figures, ignore_errors=True)
    rows = [("whole command, wall / CPU (s)",
             f"{cold['process']['wall']:.1f} / {cold['process']['cpu']:.1f}",
             f"{warm['process']['wall']:.1f} / {warm['process']['cpu']:.1f}"),
            ("sample building, all probes (s)", sum(cold["build"].values()),
             sum(warm["build"].values()))]
    rows += [(f"scoring {name} (s)", seconds, warm["score"].get(name, 0.0))
             for name, seconds in cold["score"].items()]
    print_table("make demo: cold run (empty caches) and warm rerun", ["figure", "cold", "warm"],
                rows)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    main()
