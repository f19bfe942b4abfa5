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


def sliding_windows(count: int, window: int, step: int) -> list[tuple[int, int]]:
    """The (start, end) slices a sliding-window re-ranking permutes, in call order.

    RankGPT and rank_llm re-rank a candidate list back to front: the last ``window``
    candidates first, then the window ``step`` places higher, until the window reaches the
    top. Each call's permutation is applied before the next window is cut, so a strong passage
    can climb from the bottom of the list to the top in one pass. 100 candidates with a window
    of 20 and a step of 10 take 9 calls: (80, 100), (70, 90), …, (0, 20).
    """
    if window < 1 or step < 1:
        raise ValueError("window and step must be at least 1")
    if count <= window:
        return [(0, count)] if count > 0 else []
    slices = []
    end, start = count, count - window
    while end > 0 and start + step != 0:
        start = max(start, 0)
        slices.append((start, end))
        end, start = end - step, start - step
    return slices


def sliding_window_order(ranker: ListwiseRanker, query: str, passages: Sequence[str],
                         window: int, step: int) -> Permutation:
    """Indices of ``passages`` best first after one back-to-front sliding-window pass of
    ``ranker`` (each window ranked in one ``rank_windows`` call, in rank_llm's order)."""
    order = list(range(len(passages)))
    for start, end in sliding_windows(len(passages), window, step):
        inside = order[start:end]
        [permutation] = ranker.rank_windows(
            [Window(query, tuple(passages[i] for i in inside))])
        permutation = checked_permutation(ranker.name, permutation, len(inside))
        order[start:end] = [inside[i] for i in permutation]
    return tuple(order)
