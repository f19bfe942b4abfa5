"""The three ranker contracts the engine probes, seen alike by the conformance checks: what
items a ranker of each kind takes, how it is called, and what a well-formed answer is.

A pointwise ranker scores (query, document) pairs; a pairwise one gives P(d1 ≻ d2) for
(query, d1, d2) triples; a listwise one permutes windows of passages. Each answer becomes a
float64 array, one row per item, so batch independence and determinism are compared the same
way for all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.rankers.base import Pair

#: passages per window the listwise checks send (every window the same size)
WINDOW = 4


@dataclass(frozen=True)
class Contract:
    kind: str
    method: str
    item: str

    def items(self, pairs: Sequence[Pair]) -> list[Any]:
        """What this kind of ranker takes, made from (query, document) pairs: the pairs
        themselves, each pair against the next document of its query, or windows of a
        query's documents. The last item repeats the first (a batch may repeat an item)."""
        if self.kind == "pointwise":
            made: list[Any] = list(pairs)
        else:
            by_query: dict[str, list[str]] = {}
            for query, doc in pairs:
                by_query.setdefault(query, []).append(doc)
            if self.kind == "pairwise":
                made = [(q, docs[i], docs[(i + 1) % len(docs)])
                        for q, docs in by_query.items() for i in range(len(docs))]
            else:
                from abnirml.rankers.listwise import Window

                made = [Window(q, tuple(docs[i:i + WINDOW]))
                        for q, docs in by_query.items()
                        for i in range(0, len(docs) - WINDOW + 1, WINDOW)]
        return [*made, made[0]] if made else made

    def call(self, ranker: Any, items: Sequence[Any]) -> Any:
        return getattr(ranker, self.method)(list(items))

    def problem(self, answer: Any, items: Sequence[Any]) -> str | None:
        """What is wrong with ``answer`` to ``items``, or None."""
        n = len(items)
        if self.kind == "listwise":
            if not isinstance(answer, (list, tuple)) or len(answer) != n:
                return f"rank_windows() of {n} windows returned {answer!r:.80}"
            for window, permutation in zip(items, answer, strict=True):
                size = len(window.passages)
                if sorted(int(i) for i in permutation) != list(range(size)):
                    return (f"rank_windows() returned {list(permutation)} for a window of "
                            f"{size} passages: not a permutation of 0..{size - 1}")
            return None
        if not isinstance(answer, np.ndarray):
            return f"{self.method}() returned {type(answer).__name__}, not a numpy array"
        if answer.dtype != np.float64:
            return f"{self.method}() returned dtype {answer.dtype}, not float64"
        if answer.shape != (n,):
            return f"{self.method}() of {n} {self.item}s returned shape {answer.shape}"
        bad = np.flatnonzero(~np.isfinite(answer))
        if bad.size:
            return (f"{bad.size} {self.method}() values are not finite, e.g. "
                    f"{answer[bad[0]]} for the {self.item} {_shown(items[bad[0]])}")
        if self.kind == "pairwise" and ((answer < 0) | (answer > 1)).any():
            return f"preferences() gave values outside [0, 1], e.g. {answer.max()!r}"
        return None

    def as_rows(self, answer: Any) -> np.ndarray:
        """The answer as a float64 array with one row per item, for comparisons."""
        if self.kind == "listwise":
            return np.array([list(p) for p in answer], dtype=np.float64).reshape(len(answer),
                                                                                 -1)
        return np.asarray(answer, dtype=np.float64)


POINTWISE = Contract("pointwise", "score", "pair")
PAIRWISE = Contract("pairwise", "preferences", "triple")
LISTWISE = Contract("listwise", "rank_windows", "window")


def contract_of(ranker: Any) -> Contract | None:
    """The contract ``ranker`` follows (listwise, then pairwise, then pointwise), or None."""
    for contract in (LISTWISE, PAIRWISE, POINTWISE):
        if callable(getattr(ranker, contract.method, None)):
            return contract
    return None


def _shown(item: Any) -> str:
    text = item.passages if hasattr(item, "passages") else item[1:]
    return repr(text)[:60]
