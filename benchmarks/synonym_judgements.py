"""Every substitution ``qvp:synonym`` (WordNet) can make on TREC DL 2019, for judging by hand.

The probe replaces one content word of a query, picked at random among the words that have a
synonym; each such word has exactly one replacement (its most used synonym). So the
substitutions the probe can make on a text set are all ``(word, replacement)`` choices of its
synonym source, which is what this lists, in two DL19 sets:

* ``query``: the 43 judged queries, the text the probe varies;
* ``passage``: the first sentence of each query's three top BM25 passages
  (``runs/bm25.run``), DL19 text of the same topics, which gives enough substitutions to
  judge; these were judged while the rule was chosen;
* ``held-out``: the same for the passages at BM25 ranks 4 to 6, judged only after the rule
  was fixed, so their rate is not one the rule was fitted to.

The judged file (``docs/synonym-judgements.tsv``) has one row per substitution: set, text
id, the word's character offset, word, synonym, varied text, verdict (``kept``: the varied
text asks / says the same thing; ``changed``: a wrong sense, a register shift that changes
what is asked, a broken name or fixed phrase, or a non-word), and a short reason.
``tests/probes/query_variation/test_synonyms.py`` checks that the file lists exactly what the
rule produces, so the judged set cannot drift from the code.

    PYTHONPATH=src python benchmarks/synonym_judgements.py            # rates from the file
    PYTHONPATH=src python benchmarks/synonym_judgements.py --update   # add unjudged rows
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import require_dl19

JUDGED = Path(__file__).resolve().parents[1] / "docs" / "synonym-judgements.tsv"
COLUMNS = ("set", "id", "at", "word", "synonym", "varied", "verdict", "reason")
#: passage sets by BM25 rank: ranks 1-3 were judged while the rule was chosen, ranks 4-6
#: only once it was fixed (a held-out check of the rate)
PASSAGE_SETS = (("passage", 1, 3), ("held-out", 4, 6))
TOP_PASSAGES = max(last for _, _, last in PASSAGE_SETS)
SETS = ("query", *(name for name, _, _ in PASSAGE_SETS))
VERDICTS = ("kept", "changed")
#: a sentence ends at ., ? or ! followed by a space and a capital letter or digit
SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z0-9])")


def texts(dl19: Path) -> Iterator[tuple[str, str, str]]:
    """``(set, id, text)``: the queries, then the first sentence of each query's top BM25
    passages (id ``qid/docno``; a sentence already listed is not repeated), in queries.tsv
    order."""
    queries = [line.split("\t", 1) for line in
               (dl19 / "queries.tsv").read_text(encoding="utf-8").splitlines()]
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in (dl19 / "runs" / "bm25.run").read_text(encoding="utf-8").splitlines():
        qid, _, docno, place, *_ = line.split()
        if int(place) <= TOP_PASSAGES:
            ranked.setdefault(qid, []).append((int(place), docno))
    top = {qid: sorted(pairs) for qid, pairs in ranked.items()}
    wanted = {docno for pairs in top.values() for _, docno in pairs}
    passages: dict[str, str] = {}
    with (dl19 / "passages.tsv").open(encoding="utf-8") as handle:
        for line in handle:
            docno, text = line.rstrip("\n").split("\t", 1)
            if docno in wanted:
                passages[docno] = text
    for qid, text in queries:
        yield "query", qid, text
    seen: set[str] = set()
    for name, first_rank, last_rank in PASSAGE_SETS:
        for qid, _query in queries:
            for rank, docno in top.get(qid, []):
                if not first_rank <= rank <= last_rank:
                    continue
                first = SENTENCE_END.split(passages.get(docno, "").strip(), maxsplit=1)[0]
                if first and first not in seen:                # near-duplicate passages
                    seen.add(first)
                    yield name, f"{qid}/{docno}", first


def substitutions(source, dl19: Path) -> list[tuple[str, ...]]:
    """``(set, id, at, word, synonym, varied text)`` for every choice ``source`` offers
    (``at``: the word's character offset in the text)."""
    from abnirml.text.casing import match_case

    rows: list[tuple[str, ...]] = []
    for kind, key, text in texts(dl19):
        for (start, end), found in source(text).choices:
            word = text[start:end]
            varied = text[:start] + match_case(word, found) + text[end:]
            rows.append((kind, key, str(start), word, found, varied))
    return rows


def wordnet_source():
    from abnirml.probes.query_variation.synonyms import WordNetSynonyms
    from abnirml.text.stopwords import load_stopwords
    from abnirml.text.wordnet import load_wordnet

    wordnet = load_wordnet()
    if wordnet is None:
        return None
    return WordNetSynonyms(wordnet, load_stopwords())


def read_judged(path: Path = JUDGED) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="rewrite the judged file with the rule's rows, keeping verdicts")
    args = parser.parse_args()
    dl19 = require_dl19()
    source = wordnet_source()
    if dl19 is None or source is None:
        print("skipped: needs TREC DL 2019 and the WordNet database")
        return
    rows = substitutions(source, dl19)
    judged = {tuple(r[c] for c in COLUMNS[:5]): r for r in read_judged()} \
        if JUDGED.is_file() else {}
    if args.update:
        with JUDGED.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(COLUMNS)
            for row in rows:
                old = judged.get(row[:5], {})
                writer.writerow((*row, old.get("verdict", ""), old.get("reason", "")))
        print(f"{len(rows)} substitutions → {JUDGED}")
        return
    for kind in (*SETS, "all"):
        verdicts = [judged.get(row[:5], {}).get("verdict", "") for row in rows
                    if kind in ("all", row[0])]
        kept = verdicts.count("kept")
        print(f"{kind:8} substitutions {len(verdicts):3}  judged "
              f"{sum(v in VERDICTS for v in verdicts):3}  kept {kept:3}  "
              f"{100 * kept / max(1, len(verdicts)):.0f} %")


if __name__ == "__main__":
    main()
