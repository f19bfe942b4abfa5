"""Every WordNet synonym ``qvp:synonym`` could put into a TREC DL 2019 query, judged by hand,
and the precision/coverage frontier of the rules that choose among them.

The probe replaces one content word of a query, picked at random among the words that have a
synonym. The candidates are the single words of every WordNet sense of the word, in its own
part of speech, inflected like it (see ``abnirml.probes.query_variation.synonyms``); a rule
keeps at most one per word. The judged file (``docs/synonym-judgements.tsv``) lists every
candidate on the 43 DL19 queries: text id, the word's character offset, word, synonym (as
written), varied query, whether the rule emits it (``yes``/``no``), the verdict (``kept``: the
varied query asks the same thing; ``changed``: a wrong sense, a register shift that changes
what is asked, a broken name or fixed phrase, or a non-word) and a short reason.
``tests/probes/query_variation/test_synonyms.py`` checks that the file lists exactly the
candidates and the rule's choices, so the judged set cannot drift from the code.

    PYTHONPATH=src python benchmarks/synonym_judgements.py            # frontier from the file
    PYTHONPATH=src python benchmarks/synonym_judgements.py --update   # rewrite, keep verdicts
    PYTHONPATH=src python benchmarks/synonym_judgements.py \
        --held-out dl20=DL20_QUERIES.tsv --held-out dl21=DL21_QUERIES.tsv

``--held-out NAME=FILE`` (``qid<TAB>text`` lines, e.g. the judged queries of anserini-tools'
``topics.dl20.txt``) adds, per rule, its precision on those queries from the judgements in
``docs/synonym-judgements-held-out.tsv`` (rows of set NAME); a substitution nobody judged is
counted apart, never as kept.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import require_dl19

JUDGED = Path(__file__).resolve().parents[1] / "docs" / "synonym-judgements.tsv"
HELD_OUT = JUDGED.with_name("synonym-judgements-held-out.tsv")
COLUMNS = ("id", "at", "word", "synonym", "varied", "emitted", "verdict", "reason")
VERDICTS = ("kept", "changed")


def queries(folder: Path) -> list[tuple[str, str]]:
    """``qid<TAB>text`` lines of ``folder/queries.tsv`` (or of ``folder``, a file)."""
    path = folder if folder.is_file() else folder / "queries.tsv"
    return [tuple(line.split("\t", 1)) for line in  # type: ignore[misc]
            path.read_text(encoding="utf-8").splitlines()]


def candidates(source: Any, dl19: Path) -> list[dict[str, Any]]:
    """Every candidate of every content word the probe may replace, with what the frontier
    reads: the first sense of the word that lists the synonym, whether the tag-count rule
    offers it, the GloVe cosine of the two words and the MiniLM cosine of the two queries
    (when ``source`` has a context check), and whether the rule emits it."""
    from abnirml.probes.query_variation.synonyms import WORDNET_POS, _content_tokens
    from abnirml.text.casing import match_case

    net, check = source.wordnet, source.context
    rows = []
    for qid, query in queries(dl19):
        doc = source.parse(query)
        emitted = set(source(query).choices)
        for token in _content_tokens(doc, source.stopwords):
            if source.in_collocation(doc, token.i):
                continue
            pos, lemma = WORDNET_POS[token.pos_], token.lemma_.lower()
            start, end = token.idx, token.idx + len(token.text)
            usual = {form for _, form in source.candidates(token, everyone=False)}
            found = source.candidates(token, everyone=True)
            varied = [query[:start] + match_case(token.text, form) + query[end:]
                      for _, form in found]
            cosines = check.query_cosines(query, varied) if check and found else []
            for k, (synonym, form) in enumerate(found):
                sense = next(i for i, offset in enumerate(net.senses(lemma, pos))
                             if synonym in net.words(pos, offset))
                offset = net.senses(lemma, pos)[sense]
                own = net.senses(synonym, pos).index(offset)
                counts = net.sense_counts(synonym, pos)
                tagged = net.sense_counts(lemma, pos)[sense]
                rows.append({"id": qid, "at": str(start), "word": token.text,
                             "pos": token.pos_,
                             "synonym": form, "varied": varied[k],
                             "emitted": "yes" if ((start, end), form) in emitted else "no",
                             "key": (qid, start), "sense": sense, "usual": form in usual,
                             # the sense is among the synonym's first two in index order,
                             # and among its two most tagged, tagged ≥ 1/20 as often
                             "mutual": own < 2 and net.tagged_senses(lemma, pos) > 0,
                             "intermediate": tagged > 0 and 20 * counts[own] >= tagged
                             and sorted(range(len(counts)),
                                        key=lambda i: (-counts[i], i)).index(own) < 2,
                             "glove": check.word_cosine(lemma, synonym) if check else None,
                             "minilm": cosines[k] if check else None})
    return rows


def read_judged(path: Path = JUDGED) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _best(rows: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool],
          by: str | None) -> list[dict[str, Any]]:
    """The rows a rule emits: those it keeps, at most one per word (the highest ``by``, or
    the first in WordNet's order for ``"first"``) when ``by`` is given, every kept row
    otherwise."""
    chosen: dict[Any, dict[str, Any]] = {}
    out = []
    for row in rows:
        if not keep(row):
            continue
        if by is None:
            out.append(row)
        elif row["key"] not in chosen or (by != "first" and row[by] > chosen[row["key"]][by]):
            chosen[row["key"]] = row
    return out + list(chosen.values())


def frontier(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The rules compared on docs/query-variations.md, each with the rows it emits."""
    def glove(row: dict[str, Any]) -> float:
        return -1.0 if row["glove"] is None else row["glove"]

    rules: list[tuple[str, list[dict[str, Any]]]] = [
        ("every sense, every synonym", _best(rows, lambda r: True, None)),
        ("(ceiling: every candidate judged kept)",
         _best(rows, lambda r: r.get("verdict") == "kept", None)),
        ("first sense, every synonym", _best(rows, lambda r: r["sense"] == 0, None)),
        ("first sense, tagged word, sense among the synonym's first two (first synonym)",
         _best(rows, lambda r: r["sense"] == 0 and r["mutual"], "first")),
        ("first sense, tagged word, sense among the synonym's first two",
         _best(rows, lambda r: r["sense"] == 0 and r["mutual"], None)),
        ("first sense, synonym tagged in it ≥ 1/20 as often, among its two most tagged",
         _best(rows, lambda r: r["sense"] == 0 and r["intermediate"], None)),
        ("usual sense of both words (tag counts; the fallback)",
         _best(rows, lambda r: r["usual"], None))]
    def close(word: float = -1.0, query: float = -1.0,
              first: bool = False) -> Callable[[dict[str, Any]], bool]:
        return lambda r: (glove(r) >= word and (query < 0 or r["minilm"] >= query)
                          and (not first or r["sense"] == 0))

    for low in (0.5, 0.6, 0.7):
        rules.append((f"first sense, GloVe ≥ {low}", _best(rows, close(low, first=True), None)))
        rules.append((f"every sense, GloVe ≥ {low}, closest",
                      _best(rows, close(low), "glove")))
    for low in (0.85, 0.9, 0.94):
        rules.append((f"every sense, MiniLM ≥ {low}, closest",
                      _best(rows, close(query=low), "minilm")))
    for word, query in ((0.5, 0.9), (0.5, 0.92), (0.6, 0.85), (0.6, 0.9), (0.7, 0.9)):
        rules.append((f"every sense, GloVe ≥ {word}, MiniLM ≥ {query}, closest",
                      _best(rows, close(word, query), "minilm")))
    return rules


def context_source():
    from abnirml.probes.query_variation.synonyms import WordNetSynonyms, load_context_check
    from abnirml.text.stopwords import load_stopwords
    from abnirml.text.wordnet import load_wordnet

    wordnet, check = load_wordnet(), load_context_check()
    if wordnet is None or check is None:
        return None
    return WordNetSynonyms(wordnet, load_stopwords(), context=check)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="rewrite the judged file with the candidates, keeping verdicts")
    parser.add_argument("--held-out", action="append", default=[], metavar="NAME=FILE",
                        help="queries the rules were not chosen on, judged in " + HELD_OUT.name)
    args = parser.parse_args()
    dl19 = require_dl19()
    source = context_source()
    if dl19 is None or source is None:
        print("skipped: needs TREC DL 2019, the WordNet database, GloVe and MiniLM")
        return
    rows = candidates(source, dl19)
    judged = {tuple(r[c] for c in COLUMNS[:4]): r for r in read_judged()} \
        if JUDGED.is_file() else {}
    if args.update:
        with JUDGED.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(COLUMNS)
            for row in rows:
                old = judged.get(tuple(row[c] for c in COLUMNS[:4]), {})
                writer.writerow((*(row[c] for c in COLUMNS[:6]), old.get("verdict", ""),
                                 old.get("reason", "")))
        print(f"{len(rows)} candidates → {JUDGED}")
        return
    for row in rows:
        row["verdict"] = judged.get(tuple(row[c] for c in COLUMNS[:4]), {}).get("verdict", "")
    if args.held_out:
        held_out_table(rows, source, args.held_out)
        return
    print("| rule | substitutions | kept | % | queries varied (of 43) |\n|---|---|---|---|---|")
    for name, chosen in frontier(rows):
        kept = sum(r["verdict"] == "kept" for r in chosen)
        print(f"| {name} | {len(chosen)} | {kept} | {100 * kept / max(1, len(chosen)):.0f} | "
              f"{len({r['id'] for r in chosen})} |")


def held_out_table(tuned: list[dict[str, Any]], source: Any, sets: list[str]) -> None:
    """Each rule's precision on DL19 (where it was chosen) and on each held-out set."""
    verdicts: dict[tuple[str, str, str, str], str] = {}
    with HELD_OUT.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            verdicts[(row["set"], row["id"], row["at"], row["synonym"])] = row["verdict"]
    columns = [("DL19 (tuned)", frontier(tuned))]
    for item in sets:
        name, _, path = item.partition("=")
        rows = candidates(source, Path(path))
        for row in rows:
            row["verdict"] = verdicts.get((name, row["id"], row["at"], row["synonym"]), "")
        columns.append((f"{name} (held out)", frontier(rows)))
    print("| rule | " + " | ".join(c for c, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for i, (rule, _) in enumerate(columns[0][1]):
        cells = []
        for _, rules in columns:
            chosen = rules[i][1]
            kept = sum(r["verdict"] == "kept" for r in chosen)
            open_ = sum(r["verdict"] == "" for r in chosen)
            cell = f"{kept}/{len(chosen)} ({100 * kept / max(1, len(chosen)):.0f} %)"
            cells.append(cell + (f", {open_} unjudged" if open_ else ""))
        print(f"| {rule} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
