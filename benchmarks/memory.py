"""Peak memory of the full DL19 battery with every lexical ranker (target < 2 GiB).

The battery runs in a child process so that its peak resident set (VmHWM) is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CLI_WITH_PEAK_RSS, print_table, require_dl19


def main() -> None:
    dl19 = require_dl19()
    if dl19 is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CLI_WITH_PEAK_RSS, "run", "--collection", str(dl19),
             "--ranker", "bm25", "--ranker", "ql", "--ranker", "tfidf", "--probe", "all",
             "--no-cache", "--quiet", "--out", f"{tmp}/out"], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            return
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        info = json.loads(Path(f"{tmp}/out/run.json").read_text())
    peak_gib = report["peak_kib"] / 1024 / 1024
    counts = info["counts"]
    print_table("Full DL19 battery (every probe) with BM25, QL and TF-IDF, one run",
                ["figure", "value", "target"],
                [["peak resident memory (GiB)", peak_gib, "< 2"],
                 ["wall time (s)", seconds, "–"],
                 ["samples", counts["samples"], "–"],
                 ["pair slots", counts["pair_slots"], "–"],
                 ["unique pairs", counts["unique_pairs"], "–"],
                 ["unique pairs / pair slots", counts["unique_pairs"] / counts["pair_slots"],
                  "–"]])


if __name__ == "__main__":
    main()
