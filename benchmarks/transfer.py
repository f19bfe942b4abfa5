"""Dataset-transfer probes on the shared corpora: sample building (spaCy) and scoring speed.

Prints, per probe with data in ``--data``: the pairs in the files, samples, discards, the
time to build the samples and how many new texts spaCy parsed (the parse cache is shared, so
a probe after its sibling parses less); then per ranker the unique (query, document) pairs
of all the probes and the scoring rate. ``--max-pairs N`` caps every probe (a seeded choice)
for a quick look; ``--biencoder`` adds the packaged all-MiniLM-L6-v2 (the `biencoder` ranker).

Usage: ``python benchmarks/transfer.py [--data ../shared/data] [--max-pairs N] [--biencoder]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PROBES = ("dtp:paraphrase-mrpc", "dtp:fluency-jfleg", "dtp:fluency-jfleg-spellchecked",
          "dtp:simplicity-turkcorpus", "dtp:simplicity-asset")


def _table(title: str, header: list[str], rows: list[list[object]]) -> None:
    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:,.1f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(fmt(c) for c in row) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--max-pairs", type=int, help="cap every probe at N pairs")
    parser.add_argument("--biencoder", action="store_true", help="also score with MiniLM")
    args = parser.parse_args(argv)
    if not (args.data / "mrpc").is_dir():
        print(f"skipped: transfer corpora not found under {args.data}")
        return 0

    from abnirml.data.collection import load_collection
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.probes.base import ProbeContext, build_table
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.probe_registry import select_probes
    from abnirml.probes.transfer.pairs import feature_store
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.rankers.support.cache import ScoreCache
    from abnirml.text.nlp import load_pipeline

    start = time.perf_counter()
    load_pipeline()
    print(f"spaCy pipeline loaded in {time.perf_counter() - start:.1f} s")
    options: dict[str, object] = {"dtp.data": str(args.data)}
    if args.max_pairs:
        options["dtp.max_pairs"] = args.max_pairs
    context = ProbeContext(collection=None, settings=resolve_options(options).settings)
    store = feature_store(context)
    rows: list[list[object]] = []
    pairs: set[tuple[str, str]] = set()
    for probe in select_probes(list(PROBES)):
        parsed = store.parsed
        start = time.perf_counter()
        table = build_table(probe, context)
        seconds = time.perf_counter() - start
        discards = sum(v for k, v in table.skipped.items() if k not in ("capped", "no-data"))
        if table.skipped.get("no-data"):
            rows.append([probe.name, "no data", "", "", "", "", ""])
            continue
        total = len(table) + sum(v for k, v in table.skipped.items() if k != "no-data")
        new = store.parsed - parsed
        rows.append([probe.name, total, len(table), discards, seconds, new,
                     new / seconds if seconds else 0.0])
        for i in range(len(table)):
            sample = table.sample(i)
            pairs.update({(sample.query, sample.doc1), (sample.query, sample.doc2)})
    _table("Building samples (spaCy parses each distinct text once)",
           ["probe", "pairs", "samples", "discarded", "seconds", "texts parsed", "texts/s"],
           rows)

    dl19 = args.data / "trec-dl-2019"
    collection = load_collection(str(dl19) if (dl19 / "queries.tsv").is_file() else "demo")
    env = RankerEnv(collection=collection)
    rankers = [build_ranker("bm25", env), build_ranker("ql", env)]
    env.collection_stats()
    if args.biencoder:
        rankers.append(build_ranker("biencoder", env))
    unique = sorted(pairs)
    score_rows: list[list[object]] = []
    for ranker in rankers:
        with ScoreCache(None) as cache:
            scorer = Scorer(cache, progress=False)
            start = time.perf_counter()
            scorer.score(ranker, unique)
            seconds = time.perf_counter() - start
        score_rows.append([ranker.name, len(unique), seconds, len(unique) / seconds])
    _table(f"Scoring the unique (query, document) pairs ({collection.name} statistics)",
           ["ranker", "pairs", "seconds", "pairs/s"], score_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
