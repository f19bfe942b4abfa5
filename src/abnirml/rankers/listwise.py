"""Listwise rankers: a third contract beside :class:`~abnirml.rankers.base.Ranker` and
:class:`~abnirml.rankers.pairwise.PairwiseRanker`.

A listwise ranker (RankGPT, RankZephyr, FIRST, or any pointwise ranker presented as a list)
never gives a document a score of its own: it reads a query and an ordered window of
passages and returns a permutation of that window. Its verdict on two documents therefore
depends on where each sits in the prompt, so the engine probes it by placing a sample's two
documents inside a list at positions (i, j) and again at (j, i) (see
:mod:`abnirml.evaluation.listwise_probing`).

``rank_windows(windows)`` is the batched form the engine calls: one permutation per window,
each a tuple of input indices, best first, covering every index exactly once. A ranker that
also has a continuous margin per passage (FIRST's identifier logits) may return it through
``window_margins``; it is optional.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from abnirml.errors import ScoringError


@dataclass(frozen=True)
class Window:
    """One listwise request: a query and its passages in prompt order (index 0 first)."""

    query: str
    passages: tuple[str, ...]


Permutation = tuple[int, ...]


@runtime_checkable
class ListwiseRanker(Protocol):
    name: str
    fingerprint: str
    #: how many passages one call may hold (the sliding window's size for re-ranking)
    window_size: int

    def rank_windows(self, windows: Sequence[Window]) -> list[Permutation]:
        """For each window, the input indices best first (a permutation of range(len))."""
        ...


def is_listwise(ranker: Any) -> bool:
    return callable(getattr(ranker, "rank_windows", None))


def checked_permutation(ranker_name: str, permutation: Sequence[int], size: int) -> Permutation:
    """A ranker's reply as a permutation of ``range(size)``, or a one-line scoring error."""
    result = tuple(int(i) for i in permutation)
    if sorted(result) != list(range(size)):
        raise ScoringError(f"ranker {ranker_name} returned {list(result)[:12]} for a window of "
                           f"{size} passages: expected each index 0..{size - 1} exactly once")
    return result
