"""`make demo` warm rerun: this checkout against an earlier commit, measured in one run.

#13's CPU target is a warm rerun of ``make demo`` (every score cached, the same ``--out``)
at least 3× faster than before #13. Timing the two code bases on different days on a
shared machine says little, so this script does both in one process: it exports the
baseline commit's ``src/`` with ``git archive`` into a temporary folder, then for each code
base runs the demo command cold (empty score cache, model folder and figure cache of its
own) and warm (same caches, same ``--out``), each in a fresh interpreter, end to end.
``--repeats N`` adds further warm runs, alternating between the code bases, and reports
medians. It also checks that this checkout's warm rerun writes the same ``results.jsonl`` as its
cold run (the baseline has fewer probes, so its file differs by design).

Run: ``python benchmarks/demo_warm.py [--baseline COMMIT] [--repeats 1] [--profile]``
(default baseline: the parent of the first #13 commit). ``--profile`` writes a cProfile of
this checkout's last warm run and prints its top entries.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the commit before #13 (parent of "Torch rankers: one device-batching piece …")
BEFORE_13 = "a1d5062cac481217960918eefd91eecefd49abdc"
DEMO = ["run", "--collection", "demo", "--ranker", "bm25", "--ranker", "ql", "--ranker",
        "tfidf", "--ranker", "biencoder", "--ranker", "wmd:glove", "--ranker", "knrm",
        "--ranker", "lgbm", "--probe", "all", "--transfer-data", "demo", "--quiet"]


def export_src(commit: str, into: Path) -> Path:
    """``src/`` of ``commit`` as plain files under ``into`` (nothing in the repo changes)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def demo_run(src: Path, work: Path, out: Path, profile: Path | None = None) -> float:
    """Wall seconds of one demo run of the package under ``src`` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(src), ABNIRML_CACHE=str(work / "scores.sqlite"),
               ABNIRML_FIGURE_CACHE=str(work / "figures"), ABNIRML_MODELS=str(work / "models"),
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", str(profile)]
    command += ["-m", "abnirml", *DEMO, "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"demo run failed ({src}):\n{done.stderr[-3000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BEFORE_13)
    parser.add_argument("--against", default=None,
                        help="a commit to compare instead of this checkout's working tree")
    parser.add_argument("--repeats", type=int, default=1, help="warm runs per code base")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    print(f"device: CPU ({os.cpu_count()} cores, shared); baseline {args.baseline[:10]} vs "
          "this checkout; demo command: abnirml " + " ".join(DEMO), flush=True)
    with tempfile.TemporaryDirectory(prefix="abnirml-demo-warm-") as tmp:
        work = Path(tmp)
        now = ROOT / "src" if args.against is None else export_src(args.against, work / "now")
        trees = {"before": export_src(args.baseline, work / "before"), "now": now}
        cold, warm = {}, {name: [] for name in trees}
        for name, src in trees.items():
            cold[name] = demo_run(src, work / f"{name}-work", work / f"{name}-out")
            print(f"{name}: cold {cold[name]:.1f} s", flush=True)
        cold_results = (work / "now-out" / "results.jsonl").read_bytes()
        for i in range(args.repeats):
            for name, src in trees.items():
                last = i == args.repeats - 1
                profile = work / "now.prof" if args.profile and last and name == "now" else None
                warm[name].append(demo_run(src, work / f"{name}-work", work / f"{name}-out",
                                           profile))
                print(f"{name}: warm {warm[name][-1]:.1f} s", flush=True)
        same = cold_results == (work / "now-out" / "results.jsonl").read_bytes()
        before, now = (statistics.median(warm[n]) for n in ("before", "now"))
        print(f"\n| code | cold s | warm s (median of {args.repeats}) |\n|---|---|---|")
        for name in trees:
            print(f"| {name} | {cold[name]:.1f} | {statistics.median(warm[name]):.1f} |")
        print(f"\nwarm rerun speed-up: {before / now:.2f}× (target ≥ 3×); this checkout's warm "
              f"results.jsonl is {'byte-identical to' if same else 'DIFFERENT from'} its cold one")
        if args.profile:
            import pstats

            pstats.Stats(str(work / "now.prof")).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
