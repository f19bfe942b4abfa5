"""The precision of ``bias:literal-match``'s replacements in their passages, on TREC DL 2019.

The probe replaces every passage word that is a query word, used as the same part of
speech, by the synonym the run's synonym rule picks for it in the query. Whether a
replacement keeps the meaning depends on the rule's choice *and* on the passage: the
noun "cost" → "price" is right in "the cost of concrete" and wrong in "cost-effective".
``docs/literal-match-judgements.tsv`` holds a seeded sample of 80 replaced occurrences
judged by hand in their passages (``kept``: the passage says the same thing; ``changed``: a
wrong sense, a broken fixed phrase, a verb the tagger read as the query's noun, or a broken
construction) with a short reason.

This script lists the replacements the current code makes on DL19, draws the same sample
(``--draw`` rewrites the file's rows with empty verdicts, for a new judgement) and prints the
precision over the judged rows the code still makes — so a change to the synonym rule shows
up as judged rows the code no longer makes, instead of silently changing the figure.

    PYTHONPATH=src python benchmarks/literal_match_judgements.py
    PYTHONPATH=src python benchmarks/literal_match_judgements.py --draw   # a new sample
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import require_dl19

JUDGED = Path(__file__).resolve().parents[1] / "docs" / "literal-match-judgements.tsv"
COLUMNS = ("id", "qid", "docno", "grade", "word", "synonym", "context", "verdict", "reason")
SAMPLE, SEED = 80, 48


def replacements(dl19: Path) -> list[dict[str, Any]]:
    """Every replaced occurrence: qid, docno, grade, word, synonym and 90 characters around."""
    from abnirml.data.collection import load_collection
    from abnirml.probes.base import ProbeContext, build_table
    from abnirml.probes.bias import probes as bias
    from abnirml.probes.family_registry import resolve_options
    from abnirml.text.tokenize import term_spans

    context = ProbeContext(collection=load_collection(str(dl19)),
                           settings=resolve_options({}).settings)
    table = build_table(bias.BiasProbe(bias.BY_KEY["literal-match"]), context)
    samples = [table.sample(i) for i in range(len(table))]
    tags = bias._word_tags(context, list(dict.fromkeys(s.doc2 for s in samples)))
    rows: list[dict[str, Any]] = []
    for s in samples:
        found, at = bias._query_replacements(context, s.query), tags[s.doc2]
        for a, b in term_spans(s.doc2):
            word = s.doc2[a:b]
            if word.lower() in found and at.get(a) == found[word.lower()][1]:
                rows.append({"qid": s.meta["qid"], "docno": s.meta["docno"],
                             "grade": s.meta["grade"], "word": word,
                             "synonym": found[word.lower()][0],
                             "context": " ".join(s.doc2[max(0, a - 90):b + 90].split())})
    return rows


def key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(row[k]) for k in ("qid", "docno", "word", "synonym", "context"))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draw", action="store_true", help="rewrite the file with a new "
                        "sample and empty verdicts")
    args = parser.parse_args(argv)
    dl19 = require_dl19()
    if dl19 is None:
        return 0
    rows = replacements(dl19)
    print(f"{len(rows):,} replaced occurrences in {len({(r['qid'], r['docno']) for r in rows}):,}"
          f" passages; (word, synonym): "
          f"{sorted({(r['word'].lower(), r['synonym']) for r in rows})}")
    if args.draw:
        chosen = random.Random(SEED).sample(rows, min(SAMPLE, len(rows)))
        with JUDGED.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(COLUMNS)
            for i, row in enumerate(chosen):
                writer.writerow([i, *(row[k] for k in COLUMNS[1:7]), "", ""])
        print(f"wrote {len(chosen)} rows to judge → {JUDGED}")
        return 0
    with JUDGED.open(encoding="utf-8", newline="") as handle:
        judged = list(csv.DictReader(handle, delimiter="\t"))
    made = {key(r) for r in rows}
    still = [r for r in judged if key(r) in made]
    kept = sum(r["verdict"] == "kept" for r in still)
    low, high = wilson(kept, len(still)) if still else (math.nan, math.nan)
    print(f"judged rows the code still makes: {len(still)} of {len(judged)}; meaning kept in "
          f"{kept} of them ({100 * kept / max(len(still), 1):.1f} %, Wilson 95 % "
          f"{100 * low:.1f}–{100 * high:.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
