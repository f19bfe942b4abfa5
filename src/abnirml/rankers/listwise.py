"""Listwise rankers: a third contract beside :class:`~abnirml.rankers.base.Ranker` and
:class:`~abnirml.rankers.pairwise.PairwiseRanker`.

A listwise ranker (RankGPT, RankZephyr, FIRST, or any pointwise ranker presented as a list)
never gives a document a score of its own: it reads a query and an ordered window of
passages and returns a permutation of that window. Its verdict on two documents therefore
depends on where each sits in the prompt, so the engine probes it by placing a sample's two
documents inside a list at positions (i, j) and again at (j, i) (see
:mod:`abnirml.evaluation.analyses.listwise_probing`).

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


#: passages per probe list (a sample's two documents and k − 2 of the query's candidates)
DEFAULT_LIST_SIZE = 10
#: RankGPT's sliding window: 20 passages per call, moved up 10 places at a time
DEFAULT_WINDOW = 20
DEFAULT_STEP = 10


def list_size(ranker: Any) -> int:
    """How many passages the engine puts in one probe list for ``ranker`` (``list_size``,
    a ``+list_size`` parameter of the listwise families; default :data:`DEFAULT_LIST_SIZE`)."""
    return int(getattr(ranker, "list_size", DEFAULT_LIST_SIZE))


def window_step(ranker: Any) -> int:
    """The sliding window's step for ``ranker``: its ``step``, else half its window."""
    step = getattr(ranker, "step", None)
    return int(step) if step else max(1, int(ranker.window_size) // 2)


def usage(ranker: Any) -> dict[str, int] | None:
    """What a served ranker reports it cost (``usage()``: ``requests``, ``prompt_tokens``,
    ``completion_tokens``), as non-negative integers; None for a ranker without counters."""
    counter = getattr(ranker, "usage", None)
    if not callable(counter):
        return None
    try:
        counts = counter()
    except Exception:      # a counter must never end a run whose scores are computed
        return None
    if not isinstance(counts, dict):
        return None
    out: dict[str, int] = {}
    for key, value in counts.items():
        if isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool) \
                and value >= 0:
            out[key] = value
    return out or None


class ListwiseOf:
    """A pointwise ranker presented as a listwise one: each window sorted by the wrapped
    ranker's scores, best first; equal scores keep their input order (a stable sort), so a
    tie is decided by position exactly as a listwise model's would be.

    It is the oracle that makes listwise probing testable — its verdict on two documents is
    the wrapped ranker's wherever their scores differ — and it shows what presenting a
    model's documents as a list changes (only ties, here). Every distinct (query, passage)
    of one ``rank_windows`` call is scored once. The window, step and list size decide which
    windows are asked, not how one is ranked, so the fingerprint is the wrapped ranker's.
    """

    def __init__(self, inner: Any, name: str, window_size: int = DEFAULT_WINDOW,
                 step: int = DEFAULT_STEP, list_size: int = DEFAULT_LIST_SIZE):
        self.inner = inner
        self.name = name
        self.window_size = window_size
        self.step = step
        self.list_size = list_size
        self.fingerprint = f"ListwiseOf[{inner.fingerprint}]"

    def usage(self) -> dict[str, int] | None:
        """What the wrapped ranker reports it cost (a served one), for run.json."""
        return usage(self.inner)

    @property
    def usage_counter(self) -> object:
        return getattr(self.inner, "usage_counter", None)

    def rank_windows(self, windows: Sequence[Window]) -> list[Permutation]:
        import numpy as np

        from abnirml.rankers.base import checked_scores

        pairs = list(dict.fromkeys((w.query, p) for w in windows for p in w.passages))
        scores = checked_scores(self.inner.name, self.inner.score(pairs), len(pairs)) \
            if pairs else np.zeros(0)
        lookup = dict(zip(pairs, scores.tolist(), strict=True))
        out: list[Permutation] = []
        for window in windows:
            values = [lookup[(window.query, p)] for p in window.passages]
            out.append(tuple(sorted(range(len(values)), key=lambda i: -values[i])))
        return out


def listwise_of_from_spec(spec: Any, p: Any, env: Any) -> ListwiseOf:
    """Registry factory for ``listwise-of:<inner spec>``: parameters other than the
    listwise ones go to the wrapped ranker, as ``maxp:`` does."""
    from abnirml.errors import ConfigError
    from abnirml.rankers.base import is_query_routed
    from abnirml.rankers.registry import build

    if not spec.argument:
        raise ConfigError("listwise-of needs the pointwise ranker to present as a list, e.g. "
                          "listwise-of:bm25")
    inner = build(spec.wrapped({"window", "step", "list_size"}), env).ranker
    if not callable(getattr(inner, "score", None)) or is_listwise(inner) \
            or callable(getattr(inner, "preferences", None)) or is_query_routed(inner):
        raise ConfigError(f"listwise-of:{spec.argument}: {inner.name} is not a plain "
                          "pointwise ranker (listwise-of wraps rankers that score one "
                          "document at a time, without per-query models)")
    check_window(spec.canonical, p.window, p.step)
    return ListwiseOf(inner, spec.canonical, p.window, p.step, p.list_size)


def check_window(name: str, window: int, step: int) -> None:
    """A step longer than the window would leave candidates between two windows unranked."""
    if step > window:
        from abnirml.errors import ConfigError

        raise ConfigError(f"ranker {name}: step={step} must not exceed window={window} (a "
                          "longer step skips the candidates between two windows)")
