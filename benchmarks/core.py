"""Core engine figures on TREC DL 2019 with BM25 (issue 2):

* pairs scored per second (pure BM25 on the battery's unique pairs, and end to end);
* cold-cache vs warm-cache wall time of the whole battery;
* unique (q, d) pairs scored / pair slots requested (deduplication).

Run: ``python benchmarks/core.py`` (or ``make bench``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table, require_dl19, timed


def main(probes: tuple[str, ...] = ("all",)) -> None:
    dl19 = require_dl19()
    if dl19 is None:
        return
    from abnirml.data.collection import load_collection
    from abnirml.data.stats import CollectionStats
    from abnirml.pipeline import RunConfig, SessionSettings, run
    from abnirml.rankers.families.lexical import BM25
    from abnirml.text.analyzer import Analyzer

    with tempfile.TemporaryDirectory() as tmp:
        def battery(cache: str) -> object:
            return run(RunConfig(collection=str(dl19), rankers=["bm25"], probes=list(probes),
                                 out=None, options={"transfer_data": None},
                                 session=SessionSettings(cache=cache, progress=False)))

        cold_times = []
        output = None
        for i in range(3):
            seconds, output = timed(lambda i=i: battery(f"{tmp}/cold{i}.sqlite"), repeats=1)
            cold_times.append(seconds)
        cold = sorted(cold_times)[1]
        warm, _ = timed(lambda: battery(f"{tmp}/cold0.sqlite"), repeats=3)

    counts = output.run_info["counts"]
    # Pure model time: the same unique pairs through BM25 with a fresh analyser (no memo).
    collection = load_collection(str(dl19))
    stats = CollectionStats.build(collection.doc_texts(), Analyzer())
    pairs = _unique_pairs(output)

    def pure() -> None:
        ranker = BM25(stats)
        object.__setattr__(stats.analyzer, "_memo", {})
        ranker.score(pairs)

    pure_seconds, _ = timed(pure, repeats=3)
    rows = [
        ["BM25 pairs/s (pure scoring, unique pairs)", f"{len(pairs) / pure_seconds:,.0f}", "–"],
        ["BM25 pairs/s end to end (cold battery)", f"{counts['unique_pairs'] / cold:,.0f}", "–"],
        ["cold battery wall (s)", cold, "–"],
        ["warm battery wall (s)", warm, "–"],
        ["cold / warm", cold / warm, "(see the bi-encoder row)"],
        ["engine wall / pure BM25 time", cold / pure_seconds, "≤ 1.10 (neural models)"],
        ["unique pairs / pair slots", counts["unique_pairs"] / counts["pair_slots"], "–"],
        ["samples", counts["samples"], "–"],
        ["pair slots", counts["pair_slots"], "–"],
        ["unique pairs", counts["unique_pairs"], "–"],
    ]
    print_table(f"Core engine, DL19, BM25, probes {' '.join(probes)} (median of 3)",
                ["figure", "value", "target"], rows)
    neural_cache_ratio(dl19)


def neural_cache_ratio(dl19: Path) -> None:
    """Cold vs warm cache for the packaged bi-encoder on the DL19 measure-and-match battery.

    A warm rerun imports no torch and loads no weights: every score comes from the cache.
    """
    from abnirml.pipeline import RunConfig, SessionSettings, run

    with tempfile.TemporaryDirectory() as tmp:
        def battery() -> object:
            return run(RunConfig(collection=str(dl19), rankers=["biencoder"], probes=["mmp:*"],
                                 session=SessionSettings(cache=f"{tmp}/bi.sqlite", progress=False)))

        cold, output = timed(battery, repeats=1)
        warm, _ = timed(battery, repeats=3)
    unique = output.run_info["counts"]["unique_pairs"]
    print_table("Bi-encoder (packaged all-MiniLM-L6-v2), DL19 mmp:* battery, cold vs warm cache",
                ["figure", "value", "target"],
                [["unique pairs", unique, "–"], ["cold wall (s)", cold, "–"],
                 ["warm wall (s, median of 3)", warm, "–"],
                 ["cold / warm", cold / warm, "≥ 20"],
                 ["cold pairs/s", unique / cold, "–"]])


def _unique_pairs(output) -> list[tuple[str, str]]:
    result = output.result
    pairs: dict[tuple[str, str], None] = {}
    for table in result.tables.values():
        texts = table.texts
        for q, d in zip(table.query.tolist(), table.doc1.tolist(), strict=True):
            pairs[(texts[q], texts[d])] = None
        for q, d in zip(table.query.tolist(), table.doc2.tolist(), strict=True):
            pairs[(texts[q], texts[d])] = None
    return list(pairs)


if __name__ == "__main__":
    main()
