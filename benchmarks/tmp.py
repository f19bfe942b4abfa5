"""Throughput of the textual-manipulation probes on TREC DL 2019 (judged passages with text).

Prints documents per second for
  * the spaCy step (parsing every judged passage once, batched through ``nlp.pipe``),
  * each manipulation probe on its own (after the shared parses exist),
  * the whole battery (every tmp probe, spaCy included, building every sample),
  * the battery end to end with BM25 (sampling, scoring, statistics).

Usage: ``python benchmarks/tmp.py [--data ../shared/data/trec-dl-2019] [--sample N]``
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-dl-2019"


def _row(label: str, documents: int, seconds: float) -> str:
    rate = documents / seconds if seconds > 0 else float("inf")
    return f"| {label} | {documents:,} | {seconds:.2f} | {rate:,.0f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, help="judged pairs to use (default: all)")
    args = parser.parse_args(argv)
    if not (args.data / "queries.tsv").is_file():
        print(f"skipped: TREC DL 2019 files not found at {args.data}")
        return 0

    from abnirml.data.collection import load_collection
    from abnirml.pipeline import RunConfig, SessionSettings, run
    from abnirml.probes.base import ProbeContext, build_table
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.manipulation.probes import available, judged_pairs, spacy_parses
    from abnirml.text.nlp import load_pipeline

    options = {"tmp.sample": args.sample} if args.sample else {}
    collection = load_collection(str(args.data))
    start = time.perf_counter()
    load_pipeline()
    load_seconds = time.perf_counter() - start

    context = ProbeContext(collection=collection,
                           settings=resolve_options(dict(options)).settings)
    pairs = judged_pairs(context)
    documents = len({docno for _, docno, _ in pairs})
    start = time.perf_counter()
    spacy_parses(context)
    spacy_seconds = time.perf_counter() - start

    rows = [_row("spaCy parse (unique judged passages)", documents, spacy_seconds)]
    battery = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for probe in available():
            start = time.perf_counter()
            build_table(probe, context)
            seconds = time.perf_counter() - start
            battery += seconds
            rows.append(_row(probe.name, len(pairs), seconds))
        rows.append(_row(f"whole battery, {len(available())} probes (documents × probes)",
                         len(pairs) * len(available()), battery + spacy_seconds))
        rows.append(_row("whole battery, per judged document", len(pairs),
                         battery + spacy_seconds))

        start = time.perf_counter()
        run(RunConfig(collection=str(args.data), rankers=["bm25"], probes=["tmp"], out=None,
                      options=dict(options), session=SessionSettings(cache=None, progress=False)))
        end_to_end = time.perf_counter() - start
    rows.append(_row("end to end with BM25 (run(), per judged document)", len(pairs), end_to_end))

    print(f"TREC DL 2019: {len(pairs):,} judged pairs with text, {documents:,} unique passages; "
          f"spaCy pipeline loaded in {load_seconds:.1f} s (not counted below)")
    print()
    print("| step | documents | seconds | documents/s |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
