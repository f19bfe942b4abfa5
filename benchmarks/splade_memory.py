"""Peak memory of SPLADE on the DL19 ``mmp:*`` battery of the first 10 queries (target ≤ 2 GB).

The battery runs ``abnirml run --ranker splade --probe 'mmp:*' --no-cache`` in a child
process (its peak resident set, VmHWM, is its own) on a copy of TREC DL 2019 cut to its
first 10 queries by id: queries, judgments and runs filtered, passages linked, not copied.
The scores' digest is printed so that two code versions can be checked for identical
results (run once with each on ``PYTHONPATH``).

Run: ``python benchmarks/splade_memory.py [--queries 10] [--ranker splade]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import CLI_WITH_PEAK_RSS, print_table, require_dl19


def first_queries(dl19: Path, folder: Path, count: int) -> Path:
    """``dl19`` restricted to its first ``count`` query ids, in ``folder``."""
    lines = (dl19 / "queries.tsv").read_text(encoding="utf-8").splitlines()
    kept = sorted(lines, key=lambda line: line.split("\t", 1)[0])[:count]
    qids = {line.split("\t", 1)[0] for line in kept}
    (folder / "runs").mkdir(parents=True)
    (folder / "queries.tsv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (folder / "passages.tsv").symlink_to((dl19 / "passages.tsv").resolve())
    for source in [dl19 / "qrels.txt", *sorted((dl19 / "runs").glob("*.run"))]:
        rows = [row for row in source.read_text(encoding="utf-8").splitlines()
                if row.split(maxsplit=1)[:1] and row.split(maxsplit=1)[0] in qids]
        (folder / source.relative_to(dl19)).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def results_digest(out: Path) -> str:
    """sha256 of the run's scores (the arrays of ``scores.npz``, not the zip's timestamps),
    ``results.jsonl`` and ``calibration.json``: equal digests, identical results."""
    import numpy as np

    digest = hashlib.sha256()
    with np.load(out / "scores.npz") as scores:
        for name in sorted(scores.files):
            digest.update(name.encode() + scores[name].tobytes())
    for name in ("results.jsonl", "calibration.json"):
        digest.update((out / name).read_bytes())
    return digest.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--ranker", default="splade")
    parser.add_argument("--probe", default="mmp:*")
    args = parser.parse_args(argv)
    dl19 = require_dl19()
    if dl19 is None:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        data = first_queries(dl19, Path(tmp) / f"dl19-q{args.queries}", args.queries)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", CLI_WITH_PEAK_RSS, "run", "--collection", str(data),
             "--ranker", args.ranker, "--probe", args.probe, "--no-cache", "--quiet",
             "--out", f"{tmp}/out"], capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            return 1
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        info = json.loads(Path(f"{tmp}/out/run.json").read_text())
        digest = results_digest(Path(f"{tmp}/out"))
    print_table(f"{args.ranker} on DL19 {args.probe}, first {args.queries} queries, one run",
                ["figure", "value", "target"],
                [["peak resident memory (GB)", report["peak_kib"] * 1024 / 1e9, "≤ 2.0"],
                 ["wall time (s)", seconds, "–"],
                 ["unique pairs", info["counts"]["unique_pairs"], "–"],
                 ["results digest (scores, results, calibration)", digest, "–"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
