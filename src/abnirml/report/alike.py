"""Say a repeated finding once: two probes with the same numbers, two rankers with the same card.

Lexical rankers often behave alike — BM25 and TF-IDF differ from a neural ranker on the same
probes by the same amounts — and some probes measure one thing twice (two characteristics
that pair the same documents give the same samples). A first screen that repeats such an
item reads as more evidence than there is. So, after the findings are chosen:

* within one card, a finding whose numbers (score, interval, difference, samples, queries)
  print exactly like an earlier one's is folded into it: the earlier item names both probes;
* a ranker whose card repeats findings of an earlier ranker's card (at least
  :data:`MIN_SHARED`, each score within :data:`ALIKE` of that ranker's) names them in one
  line — it behaves like that ranker there — and lists only its other findings.

Renders nothing itself; :mod:`abnirml.report.findings` draws the cards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ALIKE = 0.05
"""Two rankers' scores on a probe this close read as the same behaviour (the contrasts'
"no preference" margin)."""
MIN_SHARED = 2
"""Shared findings that make a card "behave like" an earlier one (all of them when the
card has fewer)."""


@dataclass(frozen=True)
class Alike:
    """A card that would repeat an earlier ranker's: which ranker, on which probes, and how
    far apart their scores are at most."""

    ranker: str
    like: str
    probes: tuple[str, ...]       # the findings the two cards share
    spread: float                 # largest |own score − like's score| over the probes


def fold_same_numbers(entries: Sequence[Any]) -> list[Any]:
    """A card's findings with each one whose ``numbers`` print like an earlier one's folded
    into that one (its probe added to the earlier finding's ``also``)."""
    kept: list[Any] = []
    for entry in entries:
        twin = next((i for i, k in enumerate(kept) if k.numbers == entry.numbers), None)
        if twin is None:
            kept.append(entry)
        else:
            kept[twin] = dataclasses.replace(kept[twin],
                                             also=(*kept[twin].also, entry.probe))
    return kept


def alike_cards(found: Mapping[str, Sequence[Any]],
                scores: Mapping[tuple[str, str], float]) -> dict[str, Alike]:
    """Ranker → the earlier ranker whose card it would largely repeat: at least
    :data:`MIN_SHARED` of its findings (folded ones included) are findings of that ranker's
    card too, each with a score within :data:`ALIKE` of that ranker's (``scores``:
    (probe, ranker) → the row's score); ``probes`` are those shared findings, which the card
    names in one line instead of listing them again. A card that repeats another is never
    itself the one a later card is said to repeat."""
    out: dict[str, Alike] = {}
    rankers = list(found)
    for i, ranker in enumerate(rankers):
        mine = [p for f in found[ranker] for p in (f.probe, *f.also)]
        if not mine:
            continue
        best: Alike | None = None
        for like in rankers[:i]:
            if like in out:
                continue
            theirs = _probes(found[like])
            shared = [p for p in mine if p in theirs and (p, ranker) in scores
                      and (p, like) in scores
                      and abs(scores[(p, ranker)] - scores[(p, like)]) <= ALIKE]
            if len(shared) >= min(MIN_SHARED, len(mine)) and (
                    best is None or len(shared) > len(best.probes)):
                gaps = [abs(scores[(p, ranker)] - scores[(p, like)]) for p in shared]
                best = Alike(ranker, like, tuple(shared), max(gaps))
        if best is not None:
            out[ranker] = best
    return out


def _probes(entries: Sequence[Any]) -> frozenset[str]:
    return frozenset(p for f in entries for p in (f.probe, *f.also))
