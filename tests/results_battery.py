"""A fixed battery whose results must not move when code is reorganised.

The demo collection with the three lexical rankers and every probe family (the transfer
probes with the demo's transfer data), fixed seed and δ calibration, in-memory cache: the run
``make demo`` makes with the default rankers. The HTML report tests read the same run
(the session-wide ``demo_battery`` fixture of tests/conftest.py builds it once).
``digests`` reduces results.jsonl to one SHA-256 per probe, so a failing comparison names the
probes whose records changed instead of dumping 100 kB.

Regenerate the stored digests (only when a change of results is intended)::

    PYTHONPATH=src python -m tests.results_battery
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden" / "demo_results.json"


def run_battery(out: Path, collection: str = "demo") -> Path:
    """Run the battery into ``out``; returns the results.jsonl path."""
    from abnirml.pipeline import RunConfig, SessionSettings, run

    run(RunConfig(collection=collection, rankers=["bm25", "ql", "tfidf"], probes=["all"],
                  out=str(out), seed=0, options={"dtp.data": "demo"},
                  session=SessionSettings(cache=None, progress=False)))
    return out / "results.jsonl"


def digests(results: Path) -> dict[str, str]:
    """probe name → SHA-256 of that probe's result lines, in file order."""
    lines: dict[str, list[str]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        lines.setdefault(json.loads(line)["probe"], []).append(line)
    return {probe: hashlib.sha256("\n".join(rows).encode()).hexdigest()
            for probe, rows in lines.items()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = digests(run_battery(Path(tmp) / "out"))
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(found)} probe digests → {GOLDEN}")
