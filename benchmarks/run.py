"""Run every benchmark and print their tables (``make bench``).

Each benchmark runs in its own process, so memory figures and imports do not leak between
them. Benchmarks that need ../shared/data print a skip line when it is absent.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: (script, arguments) in the order docs/performance.md lists them.
BENCHMARKS: list[tuple[str, list[str]]] = [
    ("core.py", []),
    ("memory.py", []),
    ("scale.py", []),        # ~8 min: 2 M synthetic passages, two probe sets
    ("bm25_peers.py", []),
    ("rankers.py", []),
    ("length_sort.py", []),
    ("tmp.py", []),
    ("transfer.py", []),
    ("axioms.py", []),
    ("ir_axioms_agreement.py", []),
    ("bootstrap.py", []),
    ("served_concurrency.py", []),
    ("gpu.py", []),          # prints "skipped" without CUDA
    ("demo_timing.py", []),
]


def main() -> int:
    failures = 0
    for script, args in BENCHMARKS:
        path = HERE / script
        if not path.is_file():
            continue
        print(f"\n# {script}", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, str(path), *args])
        print(f"\n({script}: {time.perf_counter() - start:.0f} s, exit {code})", flush=True)
        failures += code != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
