"""`make demo` warm rerun: this checkout against an earlier commit, measured in one run.

#13's CPU target is a warm rerun of ``make demo`` (every score cached, the same ``--out``)
at least 3× faster than before #13. Timing the two code bases on different days on a
shared machine says little, so this script does both in one process: it exports the
baseline commit's ``src/`` with ``git archive`` into a temporary folder, then for each code
base runs the demo command cold (empty score cache, parse store, model folder and figure
cache of its own) and warm (same caches, same ``--out``), each in a fresh interpreter, end
to end. Warm runs alternate between the code bases, ``--repeats`` times (default 3), and
the table gives medians of wall and CPU seconds (the child's user + system time: on a
shared machine the CPU time depends far less on the load than the wall time does).

Both code bases read the *same* collection files: this checkout's demo folder is passed as
``--collection PATH`` to both (the baseline accepts a directory), so a demo trimmed or
grown since the baseline does not skew the comparison; the output says which folder. It
also checks that this checkout's warm rerun writes the same ``results.jsonl`` as its cold
run (the baseline has fewer probes, so its file differs by design).

Run: ``python benchmarks/demo_warm.py [--baseline COMMIT] [--repeats 3] [--profile]``
(default baseline: the parent of the first #13 commit). ``--profile`` writes a cProfile of
this checkout's last warm run and prints its top entries.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the commit before #13 (parent of "Torch rankers: one device-batching piece …")
BEFORE_13 = "a1d5062cac481217960918eefd91eecefd49abdc"
#: the demo collection both code bases read: this checkout's files
DEMO_FOLDER = ROOT / "src" / "abnirml" / "data" / "demo"
RANKERS = ["bm25", "ql", "tfidf", "biencoder", "wmd:glove", "knrm", "lgbm"]


def demo_command(collection: Path) -> list[str]:
    """The Makefile's demo command over the collection folder ``collection``."""
    args = ["run", "--collection", str(collection)]
    for ranker in RANKERS:
        args += ["--ranker", ranker]
    return [*args, "--probe", "all", "--transfer-data", "demo", "--quiet"]


def export_src(commit: str, into: Path) -> Path:
    """``src/`` of ``commit`` as plain files under ``into`` (nothing in the repo changes)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def demo_run(src: Path, work: Path, out: Path, command: list[str],
             profile: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one demo run of the package under ``src`` in a fresh
    interpreter; its caches (scores, parses, models, figures) live under ``work``."""
    env = dict(os.environ, PYTHONPATH=str(src), ABNIRML_CACHE=str(work / "scores.sqlite"),
               ABNIRML_FIGURE_CACHE=str(work / "figures"), ABNIRML_MODELS=str(work / "models"),
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    argv = [sys.executable]
    if profile is not None:
        argv += ["-m", "cProfile", "-o", str(profile)]
    argv += ["-m", "abnirml", *command, "--out", str(out)]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"demo run failed ({src}):\n{done.stderr[-3000:]}")
    return wall, cpu


def _cpu_name() -> str:
    """The CPU model (from /proc/cpuinfo on Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> str:
    try:
        return "load average " + " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "load average unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BEFORE_13)
    parser.add_argument("--against", default=None,
                        help="a commit to compare instead of this checkout's working tree")
    parser.add_argument("--collection", type=Path, default=DEMO_FOLDER,
                        help="the collection folder both code bases read (default: this "
                             "checkout's demo folder)")
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per code base")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    collection = args.collection.resolve()
    command = demo_command(collection)
    print(f"device: CPU, {_cpu_name()}, {os.cpu_count()} "
          f"cores (shared), {_load()} at start\nbaseline {args.baseline[:10]} vs "
          f"{'commit ' + args.against[:10] if args.against else 'this checkout'}; both read "
          f"the same collection files: --collection {collection}\ndemo command: abnirml "
          + " ".join(command), flush=True)
    with tempfile.TemporaryDirectory(prefix="abnirml-demo-warm-") as tmp:
        work = Path(tmp)
        now = ROOT / "src" if args.against is None else export_src(args.against, work / "now")
        trees = {"before": export_src(args.baseline, work / "before"), "now": now}
        cold: dict[str, tuple[float, float]] = {}
        warm: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for name, src in trees.items():
            cold[name] = demo_run(src, work / f"{name}-work", work / f"{name}-out", command)
            print(f"{name}: cold {cold[name][0]:.1f} s wall, {cold[name][1]:.1f} s CPU",
                  flush=True)
        cold_results = (work / "now-out" / "results.jsonl").read_bytes()
        for i in range(args.repeats):
            for name, src in trees.items():
                last = i == args.repeats - 1
                profile = work / "now.prof" if args.profile and last and name == "now" else None
                warm[name].append(demo_run(src, work / f"{name}-work", work / f"{name}-out",
                                           command, profile))
                print(f"{name}: warm {warm[name][-1][0]:.1f} s wall, "
                      f"{warm[name][-1][1]:.1f} s CPU", flush=True)
        same = cold_results == (work / "now-out" / "results.jsonl").read_bytes()
        wall = {n: statistics.median(w for w, _ in warm[n]) for n in trees}
        cpu = {n: statistics.median(c for _, c in warm[n]) for n in trees}
        print(f"\n{_load()} at the end\n\n| code | cold wall / CPU s | warm wall s (median "
              f"of {args.repeats}) | warm CPU s (median) |\n|---|---|---|---|")
        for name in trees:
            print(f"| {name} | {cold[name][0]:.1f} / {cold[name][1]:.1f} | {wall[name]:.1f} | "
                  f"{cpu[name]:.1f} |")
        print(f"\nwarm rerun speed-up: {wall['before'] / wall['now']:.2f}× wall, "
              f"{cpu['before'] / cpu['now']:.2f}× CPU (target ≥ 3×); this checkout's warm "
              f"results.jsonl is {'byte-identical to' if same else 'DIFFERENT from'} its "
              "cold one")
        if args.profile:
            import pstats

            pstats.Stats(str(work / "now.prof")).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
