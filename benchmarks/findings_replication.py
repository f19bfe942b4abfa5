"""Do the report's key findings hold on queries they were not found on?

The first screen's thresholds (|d_z| ≥ 0.8, |score| ≥ 0.2, a contrast of ≥ 0.15 from each
ranker of the group) were set by hand on the demo collection. This benchmark judges them on
data they were not set on: the 43 TREC DL 2019 queries, split into two halves by query id
(alternate ids in numeric order), each half run with the same rankers and probes. Findings
found on one half are checked on the other:

* a ranker's finding (one ranker's large effect, :func:`~abnirml.report.findings.key_findings`)
  *holds* when the other half's row has a score of the same sign whose interval excludes 0;
* a contrast (the ranker differs from a group, :mod:`abnirml.report.contrasts`) *holds*
  when on the other half the ranker's score still lies on the same side of every group
  member's score by at least the contrast threshold.

Precision is the share that hold, in both directions (found on A, checked on B, and back).

    PYTHONPATH=src python benchmarks/findings_replication.py [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, require_dl19

RANKERS = ("bm25", "ql", "tfidf")
PROBES = ("mmp", "tmp")


def halves(dl19: Path, out: Path) -> dict[str, Path]:
    """The two query-id files: alternate ids of the numerically sorted judged queries."""
    ids = sorted((line.split("\t", 1)[0] for line in
                  (dl19 / "queries.tsv").read_text(encoding="utf-8").splitlines()), key=int)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, chosen in (("A", ids[0::2]), ("B", ids[1::2])):
        files[name] = out / f"{name}.txt"
        files[name].write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return files


def run_half(dl19: Path, queries: Path, folder: Path) -> None:
    if (folder / "results.jsonl").is_file():
        return
    command = [sys.executable, "-m", "abnirml", "run", "--collection", str(dl19), "--queries",
               str(queries), *[a for r in RANKERS for a in ("--ranker", r)],
               *[a for p in PROBES for a in ("--probe", p)], "--out", str(folder),
               "--no-cache", "--quiet", "--no-effectiveness"]
    subprocess.run(command, check=True, cwd=REPO)


def read(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any], Any]:
    from abnirml.report.analyses import _store
    from abnirml.run_folder import RunFolder

    run = RunFolder(folder)
    return run.read_records(), run.read_run_info(), _store(folder)


def holds_effect(row: dict[str, Any] | None, up: bool) -> bool:
    if row is None or row.get("score") is None:
        return False
    low, high = row.get("ci_low"), row.get("ci_high")
    beyond = (low is not None and low > 0) if up else (high is not None and high < 0)
    return (row["score"] > 0) == up and beyond


def check(found_in: str, other: str, runs: dict[str, Any]) -> dict[str, tuple[int, int]]:
    from abnirml.report.contrasts import MIN_CONTRAST
    from abnirml.report.findings import first_screen, key_findings

    records, info, store = runs[found_in]
    there = {(r["probe"], r["ranker"]): r for r in runs[other][0] if r["subset"] == "all"}
    here = {(r["probe"], r["ranker"]): r for r in records if r["subset"] == "all"}
    largest = [f for fs in key_findings(records, info).values() for f in fs]
    effects = sum(holds_effect(there.get((f.probe, f.ranker)),
                               here[(f.probe, f.ranker)]["score"] > 0) for f in largest)
    screen = first_screen(records, info, (), store)
    contrasts = [f for fs in screen.found.values() for f in fs] if screen.by_contrast else []
    held = 0
    from abnirml.report import contrasts as module

    for c in module.candidates(records, _pairs(store)):
        if not any(f.ranker == c.ranker and f.probe == c.probe for f in contrasts):
            continue
        own = there.get((c.probe, c.ranker))
        sign = 1.0 if c.difference > 0 else -1.0
        held += own is not None and all(
            (o := there.get((c.probe, g))) is not None
            and sign * (own["score"] - o["score"]) >= MIN_CONTRAST for g in c.group)
    return {"effects": (effects, len(largest)), "contrasts": (held, len(contrasts))}


def _pairs(store: Any) -> Any:
    from abnirml.evaluation.analyses.compare import ranker_pairs
    from abnirml.report.findings import screening_stats

    return ranker_pairs(store, screening_stats(store.stats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(REPO / "out" / "findings-replication"))
    args = parser.parse_args()
    dl19 = require_dl19()
    if dl19 is None:
        return
    out = Path(args.out)
    files = halves(dl19, out)
    runs = {}
    for name, queries in files.items():
        run_half(dl19, queries, out / name)
        runs[name] = read(out / name)
    print("| found on → checked on | ranker findings that hold | contrasts that hold |")
    print("|---|---|---|")
    total = {"effects": [0, 0], "contrasts": [0, 0]}
    for found_in, other in (("A", "B"), ("B", "A")):
        counts = check(found_in, other, runs)
        cells = []
        for kind in ("effects", "contrasts"):
            held, count = counts[kind]
            total[kind][0] += held
            total[kind][1] += count
            cells.append(f"{held}/{count}")
        print(f"| {found_in} → {other} | " + " | ".join(cells) + " |")
    print("| both | " + " | ".join(f"{h}/{n} ({100 * h / max(1, n):.0f} %)"
                                    for h, n in total.values()) + " |")


if __name__ == "__main__":
    main()
