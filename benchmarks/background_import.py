"""Cold runs: importing the ranker's libraries beside sample building vs after it, on CPU.

A cold ``abnirml run`` with the packaged all-MiniLM-L6-v2 bi-encoder (which imports torch,
transformers and sentence-transformers only when it must score) on the demo collection,
each run in a fresh interpreter with an empty score cache: with the background import
(default) and with ``ABNIRML_BACKGROUND_IMPORT=off``, alternating, ``--repeats`` times each.
Prints both medians and the saving; ``results.jsonl`` must be identical.

Run: ``python benchmarks/background_import.py [--repeats 3] [--probe 'mmp:*']``.
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


def cold_run(work: Path, label: str, probes: list[str], background: bool) -> tuple[float, bytes]:
    out = work / f"out-{label}"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"),
               ABNIRML_FIGURE_CACHE=str(work / f"figures-{label}"),
               ABNIRML_BACKGROUND_IMPORT="on" if background else "off")
    command = [sys.executable, "-m", "abnirml", "run", "--collection", "demo", "--ranker",
               "biencoder", *(a for p in probes for a in ("--probe", p)), "--no-cache",
               "--quiet", "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"run failed:\n{done.stderr[-3000:]}")
    return wall, (out / "results.jsonl").read_bytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probe", action="append", default=None)
    args = parser.parse_args(argv)
    probes = args.probe or ["mmp:*", "tmp:shuffle-words", "axiom:rennings-tfc1"]
    print(f"device: CPU ({os.cpu_count()} cores, shared); abnirml run --collection demo "
          f"--ranker biencoder --probe {' --probe '.join(probes)} --no-cache, cold each time",
          flush=True)
    times: dict[bool, list[float]] = {True: [], False: []}
    results: set[bytes] = set()
    with tempfile.TemporaryDirectory(prefix="abnirml-bgimport-") as tmp:
        for i in range(args.repeats):
            for background in (False, True):
                label = f"{'bg' if background else 'fg'}{i}"
                wall, result = cold_run(Path(tmp), label, probes, background)
                times[background].append(wall)
                results.add(result)
                print(f"background import {'on ' if background else 'off'}: {wall:.1f} s",
                      flush=True)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"\nmedian cold run: import after sample building {off:.1f} s, in the background "
          f"{on:.1f} s: {off - on:+.1f} s saved ({off / on:.2f}×); results.jsonl "
          f"{'identical' if len(results) == 1 else 'DIFFER'} across all runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
